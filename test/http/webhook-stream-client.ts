import type { StreamedDelivery as CliStreamed } from "../../packages/sdk/src/cli/listen.js";
import { SseParser } from "../../packages/sdk/src/cli/sse.js";
import type { StreamedDelivery as ServerStreamed } from "../../src/webhooks/stream.js";

/**
 * One message of the webhook stream, its `data` parsed: the merchant command's type, which must be
 * the server's (the SDK package cannot import the server; `npm run typecheck` holds them equal).
 */
export type Streamed = CliStreamed;
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const streamTypesAgree: Same<CliStreamed, ServerStreamed> = true;
void streamTypesAgree;

/** A real client of `GET /api/v1/webhook/stream` (undici fetch), collecting what it receives. */
export async function openStream(base: string, headers: Record<string, string>, query = "") {
  const controller = new AbortController();
  const res = await fetch(`${base}/api/v1/webhook/stream${query}`, { headers, signal: controller.signal });
  const messages: Streamed[] = [];
  /** Messages other than deliveries (`event: end` with why the server ended the stream). */
  const others: { event: string; data: string }[] = [];
  const raw: string[] = [];
  const parser = new SseParser();
  let ended = false;
  const done = (async () => {
    if (!res.ok || !res.body) return;
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body) {
        const text = decoder.decode(chunk as Uint8Array, { stream: true });
        raw.push(text);
        for (const m of parser.push(text)) {
          if (m.event !== "webhook") {
            others.push({ event: m.event, data: m.data });
            continue;
          }
          const data = JSON.parse(m.data) as Streamed;
          if (m.id !== data.id) throw new Error(`SSE id ${m.id} is not the event id ${data.id}`);
          messages.push(data);
        }
      }
    } catch {
      // aborted by the test, or the server closed the connection
    } finally {
      ended = true;
    }
  })();
  return {
    res,
    messages,
    others,
    raw,
    parser,
    get ended() {
      return ended;
    },
    done,
    async close() {
      controller.abort();
      await done;
    },
  };
}
export type OpenStream = Awaited<ReturnType<typeof openStream>>;
