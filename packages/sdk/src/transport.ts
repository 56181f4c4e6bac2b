import { ConnectionError, errorFromResponse, StablegateError, TimeoutError } from "./errors.js";
import { retryDelayMs, type Safety, serverDelaySeconds, shouldRetry } from "./retry.js";

/** What the client reports after every answer it received (each attempt): for logs and metrics. */
export interface ResponseInfo {
  method: string;
  url: string;
  status: number;
  headers: Headers;
  /** `X-Request-Id`. */
  requestId: string | undefined;
  /** 0 for the first attempt, 1 for the first retry, … */
  attempt: number;
  idempotencyKey: string | undefined;
  /** `Idempotent-Replayed: true`: the stored answer of an earlier request with the same key. */
  replayed: boolean;
}

/** Per-call options of every SDK method. */
export interface RequestOptions {
  /** For creating POSTs: your own key (e.g. your order id); a random UUID otherwise. */
  idempotencyKey?: string;
  signal?: AbortSignal;
  timeoutMs?: number;
  maxRetries?: number;
}

export interface TransportConfig {
  baseUrl: string;
  apiKey: string;
  apiSecret: string | undefined;
  fetch: typeof fetch;
  maxRetries: number;
  timeoutMs: number;
  /** The longest server-given wait (`Retry-After`) the client sits out before answering with the error. */
  maxRetryWaitMs: number;
  onResponse: ((info: ResponseInfo) => void) | undefined;
}

export interface ApiRequest {
  method: "GET" | "POST";
  path: string;
  query?: object | undefined;
  /** JSON body; `undefined` sends no body and no Content-Type. */
  body?: unknown;
  /** A creating POST: carries an Idempotency-Key, which makes it safe to repeat. */
  idempotent?: boolean;
}

/** Backoff without a server-given delay: 0.5 s, 1 s, 2 s, … up to 8 s, each with jitter. */
const BACKOFF = { initialDelayMs: 500, maxDelayMs: 8_000 };

type FetchResult = { response: Response; text: string } | { failure: StablegateError };

/** Sends requests with the credentials, timeouts, Idempotency-Key and the retry policy of retry.ts. */
export class Transport {
  constructor(private readonly config: TransportConfig) {}

  async request<T>(req: ApiRequest, options: RequestOptions = {}): Promise<T> {
    const url = this.url(req.path, req.query);
    const idempotencyKey = req.idempotent
      ? (options.idempotencyKey ?? globalThis.crypto.randomUUID())
      : undefined;
    const safety: Safety = req.method === "GET" || idempotencyKey !== undefined ? "safe" : "unsafe";
    const headers: Record<string, string> = { accept: "application/json", apikey: this.config.apiKey };
    if (this.config.apiSecret !== undefined) headers["x-api-secret"] = this.config.apiSecret;
    if (idempotencyKey !== undefined) headers["idempotency-key"] = idempotencyKey;
    let body: string | undefined;
    if (req.body !== undefined) {
      body = JSON.stringify(req.body);
      headers["content-type"] = "application/json";
    }
    const maxRetries = options.maxRetries ?? this.config.maxRetries;
    const timeoutMs = options.timeoutMs ?? this.config.timeoutMs;

    for (let attempt = 0; ; attempt++) {
      const result = await this.attempt(
        url,
        { method: req.method, headers, body },
        timeoutMs,
        options.signal,
      );
      let error: StablegateError;
      let serverSeconds: number | undefined;
      if ("failure" in result) {
        error = result.failure;
      } else {
        const { response, text } = result;
        this.config.onResponse?.({
          method: req.method,
          url,
          status: response.status,
          headers: response.headers,
          requestId: response.headers.get("x-request-id") ?? undefined,
          attempt,
          idempotencyKey,
          replayed: response.headers.get("idempotent-replayed") === "true",
        });
        const parsed = parseJson(text);
        if (response.ok) {
          if (parsed === undefined) {
            throw new StablegateError({
              message: `The answer to ${req.method} ${req.path} is not JSON.`,
              code: "INVALID_RESPONSE",
              status: response.status,
              requestId: response.headers.get("x-request-id") ?? undefined,
              headers: response.headers,
            });
          }
          return parsed as T;
        }
        serverSeconds = serverDelaySeconds(response.headers);
        error = errorFromResponse(response.status, response.headers, parsed, serverSeconds);
      }
      if (attempt >= maxRetries || !shouldRetry({ safety, status: error.status, code: error.code })) {
        throw error;
      }
      // A server asking for a longer wait than the caller allows (a 15-minute rate-limit window):
      // the caller learns it now rather than after a silent wait.
      if (serverSeconds !== undefined && serverSeconds * 1000 > this.config.maxRetryWaitMs) throw error;
      const delay = retryDelayMs(attempt, serverSeconds, BACKOFF);
      await sleep(delay, options.signal);
    }
  }

  private url(path: string, query: object | undefined): string {
    // Appended, not resolved: a base URL with a path (`https://host/gateway`) keeps it.
    const url = new URL(this.config.baseUrl.replace(/\/+$/, "") + path);
    for (const [name, value] of Object.entries(query ?? {})) {
      if (value === undefined || value === null) continue;
      url.searchParams.set(name, value instanceof Date ? value.toISOString() : String(value));
    }
    return url.toString();
  }

  /** One HTTP exchange, its body read in full; a transport failure is returned, not thrown. */
  private async attempt(
    url: string,
    init: { method: string; headers: Record<string, string>; body: string | undefined },
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<FetchResult> {
    signal?.throwIfAborted();
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeoutMs);
    const onAbort = () => controller.abort(signal?.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const response = await this.config.fetch(url, { ...init, signal: controller.signal });
      // The body is part of the answer: a connection dropped while reading it is no answer.
      const text = await response.text();
      return { response, text };
    } catch (cause) {
      if (signal?.aborted) throw signal.reason;
      if (timedOut) {
        return {
          failure: new TimeoutError({
            message: `No answer to ${init.method} ${url} within ${timeoutMs} ms.`,
            code: "TIMEOUT",
            cause,
          }),
        };
      }
      return {
        failure: new ConnectionError({
          message: `Could not reach ${url}: ${cause instanceof Error ? cause.message : String(cause)}`,
          code: "CONNECTION_ERROR",
          cause,
        }),
      };
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    }
  }
}

function parseJson(text: string): unknown {
  if (text === "") return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
