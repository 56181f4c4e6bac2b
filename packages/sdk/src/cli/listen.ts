import { serverDelaySeconds } from "../retry.js";
import { describe } from "./describe.js";
import type { Connection } from "./options.js";
import { SseParser } from "./sse.js";

/** One message of `GET /api/v1/webhook/stream` (its `data`). */
export interface StreamedDelivery {
  id: string;
  type: string;
  transactionStatus: string;
  transactionId: string;
  isTest: boolean;
  createdAt: string;
  headers: Record<string, string>;
  body: string;
}

export interface ForwardResult {
  delivery: StreamedDelivery;
  /** The local answer's status, or null when there was none (refused, timed out). */
  status: number | null;
  error: string | null;
  latencyMs: number;
}

export interface ListenOptions extends Connection {
  /** The local URL every delivery is POSTed to. */
  forwardTo: string;
  /** Resume after this event (as after a reconnect). */
  lastEventId?: string | undefined;
  signal: AbortSignal;
  /** One line per forwarded event (stdout). */
  onLine(line: string): void;
  /** Connection state (stderr). */
  onStatus(line: string): void;
  onForward?(result: ForwardResult): void;
  /** Local answer timeout (default 10 s, as the gateway's own deliveries). */
  forwardTimeoutMs?: number;
  /** First reconnection delay (default: the server's `retry:`, else 1 s); doubles up to `maxBackoffMs` (default 10 s). */
  backoffMs?: number;
  maxBackoffMs?: number;
  fetch?: typeof fetch;
}

/** A refusal that reconnecting cannot fix (credentials, environment, an unknown Last-Event-ID). */
export class ListenError extends Error {
  override name = "ListenError";
}

const SEEN_LIMIT = 10_000;
/**
 * Failed attempts before the first connection after which `listen` gives up: a gateway that was
 * never reached is most likely a wrong `--base-url` or a gateway not started, not a blip (issue
 * #35: it used to retry forever in silence). Once connected, a lost stream is retried forever.
 */
export const FIRST_CONNECT_ATTEMPTS = 4;
/** `connectOnce`'s answer for a stream ended by its maximum lifetime. */
const LIFETIME = "\0lifetime";

/**
 * The gateway's last message (`event: end`): why it ended the stream. `access` (the key pair was
 * revoked or rotated, the merchant suspended, the IP allowlist, the member the pair acts for
 * removed or demoted) cannot be fixed by reconnecting; `lifetime` reconnects at once; anything else
 * (`shutdown`, `unavailable`) reconnects with the backoff.
 */
function endOf(data: string): string {
  let end: { reason?: string; error?: { code?: string; message?: string } } = {};
  try {
    end = JSON.parse(data) as typeof end;
  } catch {
    // not JSON: an end all the same
  }
  if (end.reason === "lifetime") return LIFETIME;
  if (end.reason === "access") {
    const why = end.error ? `${end.error.code}: ${end.error.message}` : "access refused";
    throw new ListenError(`the gateway ended the stream: ${why}`);
  }
  return `ended by the gateway (${end.reason ?? "unknown reason"})`;
}

/**
 * `stablegate-dev listen`: reads the gateway's webhook stream and POSTs each delivery — the exact
 * body bytes and the signed headers — to `forwardTo`, one at a time in stream order, printing one
 * line per event. A dropped stream is reopened with backoff and `Last-Event-ID` (the last event
 * forwarded), so nothing is missed; an id seen twice is not forwarded twice. A stream the gateway
 * ends at its maximum lifetime is reopened at once. Resolves when `signal` aborts; rejects with
 * `ListenError` on a refusal, also one that ends an open stream (the key pair revoked meanwhile).
 */
export async function listen(o: ListenOptions): Promise<void> {
  const fetchImpl = o.fetch ?? fetch;
  const maxBackoff = o.maxBackoffMs ?? 10_000;
  let lastEventId = o.lastEventId;
  let backoff: number | undefined = o.backoffMs;
  let serverRetry: number | undefined;
  const seen = new Set<string>();
  let first = true;
  let failedFirstAttempts = 0;
  /** Set by a 429: how long the gateway asked to wait. */
  let rateLimitedMs: number | undefined;
  while (!o.signal.aborted) {
    let reason: string;
    const connected = Date.now();
    rateLimitedMs = undefined;
    try {
      reason = await connectOnce();
    } catch (err) {
      if (err instanceof ListenError) throw err;
      if (o.signal.aborted) return;
      reason = describe(err);
    }
    if (o.signal.aborted) return;
    if (rateLimitedMs !== undefined) {
      // The gateway answered: it is reachable, only busy. Wait as long as it says, and say so.
      o.onStatus(
        `rate limited by the gateway (${reason}); waiting ${Math.round(rateLimitedMs / 1000)} s (Retry-After) before reconnecting`,
      );
      await sleep(rateLimitedMs, o.signal);
      continue;
    }
    if (first && ++failedFirstAttempts >= FIRST_CONNECT_ATTEMPTS) {
      throw new ListenError(
        `cannot reach the gateway at ${o.baseUrl} (${reason}) after ${failedFirstAttempts} attempts: is it running, and is --base-url (or STABLEGATE_BASE_URL) its URL?`,
      );
    }
    if (reason === LIFETIME) {
      // A planned end (the stream's maximum lifetime): reconnect at once, resuming exactly; with
      // the backoff only when lifetimes are so short that this would be a busy loop.
      if (Date.now() - connected >= 1_000) {
        o.onStatus(
          `stream reached its maximum lifetime; reconnecting${lastEventId ? ` after ${lastEventId}` : ""}`,
        );
        continue;
      }
      reason = "ended by the gateway (lifetime)";
    }
    const wait = backoff ?? serverRetry ?? 1_000;
    o.onStatus(
      `stream lost (${reason}); reconnecting in ${(wait / 1000).toFixed(1)} s` +
        (lastEventId ? `, resuming after ${lastEventId}` : ""),
    );
    await sleep(wait, o.signal);
    backoff = Math.min(maxBackoff, wait * 2);
  }

  /** One connection: returns why it ended (to reconnect), throws ListenError when it must not. */
  async function connectOnce(): Promise<string> {
    const headers: Record<string, string> = {
      apikey: o.apiKey,
      "x-api-secret": o.apiSecret,
      accept: "text/event-stream",
    };
    if (lastEventId) headers["last-event-id"] = lastEventId;
    const res = await fetchImpl(`${o.baseUrl}/api/v1/webhook/stream`, { headers, signal: o.signal });
    if (!res.ok) {
      const text = await res.text().catch(() => "");
      let message = text.slice(0, 200);
      try {
        const body = JSON.parse(text) as { message?: string; error?: { code?: string; message?: string } };
        message = body.error ? `${body.error.code}: ${body.error.message}` : (body.message ?? message);
      } catch {
        // not JSON
      }
      if (res.status === 429) {
        const seconds = serverDelaySeconds(res.headers);
        rateLimitedMs = Math.max(1, Math.ceil(seconds ?? 1)) * 1000;
        return `HTTP 429 ${message}`;
      }
      if (res.status >= 500) return `HTTP ${res.status} ${message}`;
      throw new ListenError(`the gateway refused the stream: HTTP ${res.status} ${message}`);
    }
    if (!res.body) return "no body";
    o.onStatus(
      first
        ? `Ready: forwarding ${o.environment} webhooks from ${o.baseUrl} to ${o.forwardTo} (Ctrl-C to stop)`
        : `reconnected${lastEventId ? ` after ${lastEventId}` : ""}`,
    );
    if (first) {
      // Where the signature comes from: a developer's first question once events arrive (#35).
      o.onStatus(
        "Each delivery keeps the gateway's signature headers: verify it with your webhook secret " +
          "(whsec_…, shown in full only when made or rotated; POST /api/v1/webhook/secret/rotate makes a new one), " +
          "e.g. verifyWebhook(rawBody, headers, secret) from @stablegate/sdk",
      );
    }
    first = false;
    backoff = o.backoffMs; // a good connection resets the backoff
    const parser = new SseParser();
    const decoder = new TextDecoder();
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      const messages = parser.push(decoder.decode(chunk, { stream: true }));
      // Before its first event a stream sends its position (`id: pos_…`): resuming from it after a
      // reconnect misses nothing written meanwhile.
      if (
        parser.lastEventId?.startsWith("pos_") &&
        (lastEventId === undefined || lastEventId.startsWith("pos_"))
      ) {
        lastEventId = parser.lastEventId;
      }
      for (const message of messages) {
        serverRetry = parser.retryMs;
        if (message.event === "end") return endOf(message.data);
        if (message.event !== "webhook") continue;
        const delivery = JSON.parse(message.data) as StreamedDelivery;
        if (!seen.has(delivery.id)) {
          await forward(delivery);
          remember(delivery.id);
        }
        lastEventId = delivery.id;
      }
      serverRetry = parser.retryMs;
    }
    return "closed by the gateway";
  }

  async function forward(d: StreamedDelivery): Promise<void> {
    const started = performance.now();
    let status: number | null = null;
    let error: string | null = null;
    try {
      const res = await fetchImpl(o.forwardTo, {
        method: "POST",
        headers: d.headers,
        body: Buffer.from(d.body, "utf8"),
        redirect: "manual",
        signal: AbortSignal.any([o.signal, AbortSignal.timeout(o.forwardTimeoutMs ?? 10_000)]),
      });
      status = res.status;
      await res.arrayBuffer().catch(() => undefined);
    } catch (err) {
      error = (err as Error).name === "TimeoutError" ? "timed out" : describe(err);
    }
    const latencyMs = Math.round(performance.now() - started);
    o.onForward?.({ delivery: d, status, error, latencyMs });
    o.onLine(formatLine(d, status, error, latencyMs));
  }

  function remember(id: string) {
    if (seen.size >= SEEN_LIMIT) seen.clear();
    seen.add(id);
  }
}

/** `12:00:01  deposit.confirmed  tx_…  → 200  14 ms  whe_…` */
export function formatLine(
  d: StreamedDelivery,
  status: number | null,
  error: string | null,
  latencyMs: number,
): string {
  const time = new Date().toISOString().slice(11, 19);
  const name = d.isTest ? "test" : `${d.type}.${d.transactionStatus}`;
  const answer = status !== null ? String(status) : `error (${error})`;
  return `${time}  ${name.padEnd(22)} ${d.transactionId}  -> ${answer}  ${latencyMs} ms  [${d.id}]`;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}
