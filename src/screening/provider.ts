import { type Dispatcher, request } from "undici";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";

/**
 * One question to the screening provider (docs/screening.md#the-http-interface): `POST <SCREENING_URL>`
 * with `{ address, network, direction }`, answered 2xx with `{ decision: "allow" | "deny", reason? }`.
 * Everything else is a `ProviderError` naming what went wrong, for the operator's policy to decide.
 * The whole exchange (connect, headers, body) is bounded by the timeout, and the body by a size
 * limit, so a slow or hostile provider can neither hang a withdrawal nor fill the memory.
 */

export type ScreeningDirection = "incoming" | "outgoing";

export interface ScreeningQuery {
  /** As the caller gives it (the network's canonical form): the cache key uses it unchanged. */
  address: string;
  /** The currency type, e.g. `USDT-TRC20`. */
  network: CurrencyType;
  /** `incoming`: the sender of a deposit; `outgoing`: a withdrawal or payout destination. */
  direction: ScreeningDirection;
  /** Whose money the check is for: its audit record's merchant and target. Not sent, not in the cache key. */
  subject?: ScreeningSubject;
}

/**
 * What a check is for, as the caller knows it (its audit record, issue #40): the merchant, or what
 * names it — a withdrawal or payout being signed, the deposit address a transfer arrived at.
 */
export interface ScreeningSubject {
  environment: Environment;
  merchantId?: string;
  transactionId?: string;
  depositAddress?: string;
  /** The incoming transfer checked. */
  txHash?: string;
}

/**
 * Records one decision of the provider (answered, from the cache, or by the error policy) in the
 * audit log. A failure to record is an error of the check: nothing moves on an unrecorded decision.
 */
export type ScreeningRecorder = (q: ScreeningQuery, d: ScreeningDecision) => Promise<void>;

export interface ScreeningDecision {
  decision: "allow" | "deny";
  /** The provider's reason (at most 200 characters), or why the policy decided; null: none given. */
  reason: string | null;
  /** `provider`: answered now; `cache`: answered earlier; `policy`: the provider failed; `off`: not configured. */
  source: "provider" | "cache" | "policy" | "off";
}

export interface Screening {
  /** `SCREENING_URL` is configured. */
  readonly enabled: boolean;
  /**
   * A provider failure is the policy's decision, never a rejection; it rejects only when the
   * decision cannot be recorded (`ScreeningRecorder`).
   */
  check(q: ScreeningQuery): Promise<ScreeningDecision>;
}

/** The longest a provider's reason is kept (it reaches logs, webhooks and the dashboard). */
export const MAX_REASON_LENGTH = 200;
/** The most of an answer read: an allow/deny with a reason is far smaller. */
export const MAX_ANSWER_BYTES = 64 * 1024;

export interface ProviderAnswer {
  decision: "allow" | "deny";
  reason: string | null;
}

/** The provider gave no usable answer; `message` says what, without any credential. */
export class ProviderError extends Error {
  override readonly name = "ProviderError";
}

export interface ProviderEndpoint {
  url: string;
  token: string | undefined;
  timeoutMs: number;
  maxAnswerBytes: number;
  /** undici's global dispatcher when absent. */
  dispatcher: Dispatcher | undefined;
}

export async function askProvider(
  endpoint: ProviderEndpoint,
  query: ScreeningQuery,
): Promise<ProviderAnswer> {
  const { timeoutMs } = endpoint;
  // One deadline over everything (connecting included: undici's headers and body timeouts start
  // only once the request is sent).
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), timeoutMs);
  const send = () =>
    request(endpoint.url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json",
        ...(endpoint.token ? { authorization: `Bearer ${endpoint.token}` } : {}),
      },
      body: JSON.stringify({ address: query.address, network: query.network, direction: query.direction }),
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      signal: deadline.signal,
      ...(endpoint.dispatcher ? { dispatcher: endpoint.dispatcher } : {}),
    });
  try {
    let res: Dispatcher.ResponseData;
    try {
      res = await send();
    } catch (err) {
      // A kept-alive connection the provider closed as we reused it: once more, on a new one
      // (a query changes nothing), within the same deadline.
      if (deadline.signal.aborted || !isStaleConnection(err)) throw err;
      res = await send();
    }
    if (res.statusCode < 200 || res.statusCode > 299) {
      discard(res.body);
      throw new ProviderError(`HTTP ${res.statusCode}`);
    }
    return parseAnswer(await readCapped(res.body, endpoint.maxAnswerBytes));
  } catch (err) {
    if (err instanceof ProviderError) throw err;
    if (deadline.signal.aborted || isTimeout(err)) throw new ProviderError(`timeout after ${timeoutMs} ms`);
    throw new ProviderError(`connection error: ${describe(err)}`);
  } finally {
    clearTimeout(timer);
  }
}

async function readCapped(body: Dispatcher.ResponseData["body"], max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > max) {
      discard(body);
      throw new ProviderError(`answer larger than ${max} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** Drops an answer's body unread (destroying it emits an abort error, awaited by nobody). */
function discard(body: Dispatcher.ResponseData["body"]): void {
  body.on("error", () => {});
  body.destroy();
}

function parseAnswer(text: string): ProviderAnswer {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ProviderError("invalid JSON");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new ProviderError("answer is not a JSON object");
  const { decision, reason } = value as { decision?: unknown; reason?: unknown };
  if (decision !== "allow" && decision !== "deny")
    throw new ProviderError(`unknown decision ${JSON.stringify(decision ?? null).slice(0, 40)}`);
  return {
    decision,
    reason: typeof reason === "string" ? cleanReason(reason) : null,
  };
}

function isStaleConnection(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === "UND_ERR_SOCKET" || code === "ECONNRESET" || code === "EPIPE";
}

function isTimeout(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return (
    code === "UND_ERR_HEADERS_TIMEOUT" ||
    code === "UND_ERR_BODY_TIMEOUT" ||
    code === "UND_ERR_CONNECT_TIMEOUT"
  );
}

/** An error's code (`ECONNREFUSED`) or its first line, short. */
function describe(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === "string" && code.length > 0) return code;
  const message = err instanceof Error ? err.message : String(err);
  return (message.split("\n")[0] ?? "").slice(0, 100) || "unknown";
}

/**
 * The provider's reason as stablegate keeps it (it reaches the database, logs, webhooks and the
 * dashboard): control characters (NUL included, which PostgreSQL text refuses) become spaces,
 * whitespace runs one space, at most `MAX_REASON_LENGTH` characters cut on a code point (never
 * half a surrogate pair). Null when nothing is left.
 */
export function cleanReason(raw: string): string | null {
  const flat = raw
    .replace(/[\p{Cc}\u2028\u2029]/gu, " ")
    .replace(/\s+/g, " ")
    .trim();
  const cut = Array.from(flat).slice(0, MAX_REASON_LENGTH).join("");
  return cut.length > 0 ? cut : null;
}
