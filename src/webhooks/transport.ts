import { performance } from "node:perf_hooks";
import type { Agent, Dispatcher } from "undici";
import { createGuardedAgent } from "./guarded-agent.js";
import { type Resolve, SsrfBlockedError, ssrfPolicy, systemResolve } from "./ssrf.js";

/**
 * The HTTP side of a delivery attempt: one POST through the SSRF-guarded undici agent (docs/merchants/webhooks.md#your-webhook-url),
 * no redirects, no proxy, `WEBHOOK_TIMEOUT_MS` overall. One transport (one agent, one pool of
 * keep-alive connections) per process: the delivery pipeline and the manual sender share it.
 */

export const RESPONSE_BODY_LIMIT = 1024;
/** Bytes of an answer we read at most (the rest is dropped with the connection). */
const RESPONSE_READ_LIMIT = 64 * 1024;
const TARGET_CACHE_LIMIT = 10_000;

export interface AttemptOutcome {
  ok: boolean;
  responseStatus: number | null;
  error: string | null;
  latencyMs: number;
  responseBody: string | null;
  url: string | null;
}

export interface TransportOptions {
  timeoutMs: number;
  ssrfAllowCidrs: readonly string[];
  /** `WEBHOOK_ALLOWED_PORTS` (default: its default); a stored URL on another port fails at dial time. */
  allowedPorts?: readonly number[] | undefined;
  /** DNS for deliveries (tests point it at a local DNS server). */
  resolve?: Resolve | undefined;
  /** Attempts in flight at most (default 64): the agent keeps that many connections per receiver. */
  concurrency?: number | undefined;
}

export class WebhookTransport {
  readonly #timeoutMs: number;
  readonly #agent: Agent;
  readonly #targets = new Map<string, { origin: string; path: string }>();

  constructor(options: TransportOptions) {
    this.#timeoutMs = options.timeoutMs;
    this.#agent = createGuardedAgent({
      policy: ssrfPolicy(options.ssrfAllowCidrs, options.resolve ?? systemResolve, options.allowedPorts),
      connectTimeoutMs: options.timeoutMs,
      // One connection per attempt in flight to a receiver (no pipelining: a slow answer must
      // not hold up the others behind it on the same connection).
      connections: Math.max(options.concurrency ?? 64, 16),
    });
  }

  get timeoutMs(): number {
    return this.#timeoutMs;
  }

  async close(): Promise<void> {
    await this.#agent.close();
  }

  /**
   * One POST with the SSRF-guarded dispatcher: no redirects, no proxy, `WEBHOOK_TIMEOUT_MS` overall.
   *
   * Written on undici's dispatch-handler API rather than `request()`: the answer is at most read up
   * to `RESPONSE_READ_LIMIT` and kept up to 1 KB, which needs no Readable stream, async iterator or
   * AbortSignal per attempt — together about a tenth of a worker's CPU per delivery. The overall
   * deadline is one timer that aborts through the request's controller.
   */
  post(url: string, body: string | Buffer, headers: Record<string, string>): Promise<AttemptOutcome> {
    const started = performance.now();
    const timeoutMs = this.#timeoutMs;
    return new Promise<AttemptOutcome>((resolve) => {
      let settled = false;
      let controller: Dispatcher.DispatchController | undefined;
      let status = 0;
      let location: string | undefined;
      let truncated = false;
      const chunks: Buffer[] = [];
      let kept = 0;
      let read = 0;
      const settle = (o: Omit<AttemptOutcome, "latencyMs" | "url">) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ ...o, url, latencyMs: Math.round(performance.now() - started) });
      };
      const fail = (err: unknown) =>
        settle({ ok: false, responseStatus: null, error: describeError(err, timeoutMs), responseBody: null });
      const answered = () => {
        const responseBody = cleanText(Buffer.concat(chunks).toString("utf8"));
        if (status >= 200 && status < 300) {
          settle({ ok: true, responseStatus: status, error: null, responseBody });
          return;
        }
        const error =
          status >= 300 && status < 400
            ? `redirect (HTTP ${status}${location ? ` to ${location.slice(0, 200)}` : ""}) not followed`
            : `HTTP ${status}`;
        settle({ ok: false, responseStatus: status, error, responseBody });
      };
      const timer = setTimeout(() => {
        const err = attemptTimedOut();
        controller?.abort(err);
        fail(err);
      }, timeoutMs);
      let target: { origin: string; path: string };
      try {
        target = this.#target(url);
      } catch (err) {
        fail(err);
        return;
      }
      const handler: Dispatcher.DispatchHandler = {
        onRequestStart(c) {
          controller = c;
          if (settled) c.abort(attemptTimedOut()); // the deadline passed while it waited for a connection
        },
        onResponseStart(_c, statusCode, resHeaders) {
          status = statusCode;
          const l = resHeaders.location;
          location = l === undefined ? undefined : String(l);
        },
        onResponseData(c, chunk) {
          read += chunk.length;
          if (kept < RESPONSE_BODY_LIMIT) {
            chunks.push(chunk.subarray(0, RESPONSE_BODY_LIMIT - kept));
            kept += Math.min(chunk.length, RESPONSE_BODY_LIMIT - kept);
          }
          if (read > RESPONSE_READ_LIMIT && !truncated) {
            // Enough read: the status and the first 1 KB are what is recorded; drop the rest.
            truncated = true;
            c.abort(new Error("answer longer than the read limit"));
          }
        },
        onResponseEnd() {
          answered();
        },
        onResponseError(_c, err) {
          if (truncated) answered();
          else fail(err);
        },
      };
      try {
        this.#agent.dispatch(
          {
            origin: target.origin,
            path: target.path,
            method: "POST",
            headers,
            body,
            headersTimeout: timeoutMs,
            bodyTimeout: timeoutMs,
          },
          handler,
        );
      } catch (err) {
        fail(err);
      }
    });
  }

  /** Origin and path of a URL, parsed once per distinct URL (a worker sends to few). */
  #target(url: string): { origin: string; path: string } {
    let t = this.#targets.get(url);
    if (!t) {
      const u = new URL(url);
      t = { origin: u.origin, path: `${u.pathname}${u.search}` };
      if (this.#targets.size >= TARGET_CACHE_LIMIT) this.#targets.clear();
      this.#targets.set(url, t);
    }
    return t;
  }
}

/** The error of an attempt past its deadline (made only when one is: an Error captures a stack). */
function attemptTimedOut(): Error {
  return Object.assign(new Error("attempt timed out"), { name: "TimeoutError" });
}

function cleanText(s: string): string {
  // PostgreSQL text cannot hold NUL.
  return s.replaceAll(String.fromCharCode(0), "\uFFFD");
}

function describeError(err: unknown, timeoutMs: number): string {
  if (err instanceof SsrfBlockedError) return `blocked: ${err.message}`;
  const e = err as { name?: string; code?: string; message?: string; cause?: unknown };
  if (e.cause instanceof SsrfBlockedError) return `blocked: ${e.cause.message}`;
  if (
    e.name === "TimeoutError" ||
    e.code === "UND_ERR_HEADERS_TIMEOUT" ||
    e.code === "UND_ERR_BODY_TIMEOUT" ||
    e.code === "UND_ERR_CONNECT_TIMEOUT"
  ) {
    return `timeout: no complete answer within ${timeoutMs} ms`;
  }
  const message = e.message ?? String(err);
  return cleanText(e.code ? `${e.code}: ${message}` : message).slice(0, 500);
}
