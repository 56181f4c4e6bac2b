import type { Dispatcher } from "undici";
import { type Clock, systemClock } from "../lib/clock.js";
import type { Logger } from "../observability/logger.js";
import { type Registry, registerScreeningMetrics, type ScreeningMetrics } from "../observability/metrics.js";
import { AnswerCache } from "./cache.js";
import {
  askProvider,
  MAX_ANSWER_BYTES,
  type ProviderAnswer,
  type ProviderEndpoint,
  ProviderError,
  type Screening,
  type ScreeningDecision,
  type ScreeningQuery,
  type ScreeningRecorder,
} from "./provider.js";

/**
 * The optional screening provider (issue #40, docs/screening.md): is this address one we may take
 * funds from (`incoming`) or send funds to (`outgoing`)? Off without `SCREENING_URL`: everything is
 * allowed and nothing is asked. On, each question goes to the provider once per period
 * (`SCREENING_CACHE_SECONDS`), concurrent identical questions share one request, and a provider
 * that fails to answer (error status, bad answer, timeout, unreachable) is decided by the
 * operator's policy `SCREENING_ON_ERROR`: `closed` refuses (default: money is not moved on a
 * check that did not happen), `open` allows; such a decision is logged and never cached. Every
 * decision is recorded in the audit log (`record`, action `screening.decision`).
 */

/** `config.screening` (`SCREENING_*`) with what the process gives: `createScreening({ ...config.screening, logger })`. */
export interface ScreeningOptions {
  /** `SCREENING_URL`; undefined: screening is off. */
  url: string | undefined;
  /** `SCREENING_TOKEN`: `Authorization: Bearer <token>`. */
  token?: string | undefined;
  /** `SCREENING_TIMEOUT_MS` (default 3000): connect, headers and body of one query. */
  timeoutMs?: number;
  /** `SCREENING_ON_ERROR` (default `closed`). */
  onError?: "closed" | "open";
  /** `SCREENING_CACHE_SECONDS` (default 3600; 0: no cache). */
  cacheSeconds?: number;
  /** Most answers kept (default 10 000; the oldest written is evicted). */
  maxCacheEntries?: number;
  /** Most bytes of an answer read (default 64 KiB). */
  maxAnswerBytes?: number;
  logger: Logger;
  /** Where `stablegate_screening_decisions_total` is registered; none: not counted. */
  registry?: Registry;
  /** The cache's time (tests move it). */
  clock?: Clock;
  /** undici dispatcher for the requests (default: the global one). */
  dispatcher?: Dispatcher;
  /** Where every decision is recorded (the audit log; the runtime gives it); none: not recorded. */
  record?: ScreeningRecorder;
}

const DEFAULT_TIMEOUT_MS = 3000;
const DEFAULT_CACHE_SECONDS = 3600;
const DEFAULT_MAX_CACHE_ENTRIES = 10_000;

const OFF: ScreeningDecision = Object.freeze({ decision: "allow", reason: null, source: "off" });

export function createScreening(options: ScreeningOptions): Screening {
  const metrics = options.registry ? registerScreeningMetrics(options.registry) : null;
  if (!options.url) return new OffScreening(metrics);
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const cacheSeconds = options.cacheSeconds ?? DEFAULT_CACHE_SECONDS;
  const maxAnswerBytes = options.maxAnswerBytes ?? MAX_ANSWER_BYTES;
  if (!(Number.isInteger(timeoutMs) && timeoutMs > 0))
    throw new RangeError("timeoutMs must be a positive integer");
  if (!(Number.isFinite(cacheSeconds) && cacheSeconds >= 0)) throw new RangeError("cacheSeconds must be ≥ 0");
  if (!(Number.isInteger(maxAnswerBytes) && maxAnswerBytes > 0))
    throw new RangeError("maxAnswerBytes must be a positive integer");
  return new ProviderScreening(
    { url: options.url, token: options.token, timeoutMs, maxAnswerBytes, dispatcher: options.dispatcher },
    options.onError ?? "closed",
    new AnswerCache<ProviderAnswer>(
      cacheSeconds * 1000,
      options.maxCacheEntries ?? DEFAULT_MAX_CACHE_ENTRIES,
      options.clock ?? systemClock,
    ),
    options.logger,
    metrics,
    options.record ?? null,
  );
}

class OffScreening implements Screening {
  readonly enabled = false;
  constructor(private readonly metrics: ScreeningMetrics | null) {}
  async check(q: ScreeningQuery): Promise<ScreeningDecision> {
    count(this.metrics, q, OFF);
    return { ...OFF };
  }
}

class ProviderScreening implements Screening {
  readonly enabled = true;
  /** The question being asked per key: a concurrent identical check waits for it. */
  readonly #inFlight = new Map<string, Promise<ScreeningDecision>>();

  constructor(
    private readonly endpoint: ProviderEndpoint,
    private readonly onError: "closed" | "open",
    private readonly cache: AnswerCache<ProviderAnswer>,
    private readonly logger: Logger,
    private readonly metrics: ScreeningMetrics | null,
    private readonly record: ScreeningRecorder | null,
  ) {}

  async check(q: ScreeningQuery): Promise<ScreeningDecision> {
    const key = keyOf(q);
    const cached = this.cache.get(key);
    let decision: ScreeningDecision;
    if (cached !== undefined) {
      decision = { ...cached, source: "cache" };
    } else {
      let pending = this.#inFlight.get(key);
      if (pending === undefined) {
        pending = this.#ask(q, key).finally(() => this.#inFlight.delete(key));
        this.#inFlight.set(key, pending);
      }
      decision = { ...(await pending) };
    }
    count(this.metrics, q, decision);
    // Every decision, the cache's too: each is a decision about one movement of money.
    if (this.record) await this.record(q, decision);
    return decision;
  }

  async #ask(q: ScreeningQuery, key: string): Promise<ScreeningDecision> {
    try {
      const answer = await askProvider(this.endpoint, q);
      this.cache.set(key, answer);
      return { ...answer, source: "provider" };
    } catch (err) {
      const what = err instanceof ProviderError ? err.message : "unexpected error";
      const open = this.onError === "open";
      // The cause, never the token or the URL (which may carry credentials).
      this.logger.warn(
        {
          alert: "screening_unavailable",
          screening: { network: q.network, direction: q.direction, address: q.address },
          cause: what,
          policy: this.onError,
        },
        `screening unavailable: ${what}; ${open ? "allowed (SCREENING_ON_ERROR=open)" : "denied (SCREENING_ON_ERROR=closed)"}`,
      );
      return {
        decision: open ? "allow" : "deny",
        reason: `screening unavailable: ${what}${open ? " (fail open)" : ""}`,
        source: "policy",
      };
    }
  }
}

/** The cache and coalescing key: the address exactly as given (callers pass the canonical form). */
function keyOf(q: ScreeningQuery): string {
  return `${q.network}\u0000${q.direction}\u0000${q.address}`;
}

function count(metrics: ScreeningMetrics | null, q: ScreeningQuery, d: ScreeningDecision): void {
  metrics?.decisions.inc({ direction: q.direction, decision: d.decision, source: d.source });
}
