/**
 * The load's HTTP side: which api each call goes to (a random live one, as a load balancer would
 * spread them), every attempt recorded with its time and answer, and the retry rules a careful
 * merchant follows (the same Idempotency-Key again on a lost answer, 5xx or 409 IDEMPOTENCY_CONFLICT).
 */

export interface Attempt {
  /** Wall-clock start and end (ms). */
  start: number;
  end: number;
  api: number;
  label: string;
  /** HTTP status, or "error" when no answer came (connection refused/reset, timeout). */
  status: number | "error";
  detail: string | undefined;
  /** The Retry-After header of a 503 (the contract's answer to a transient fault). */
  retryAfter?: string | null;
}

export interface Answer {
  status: number;
  body: any;
  headers: Headers;
}

const REQUEST_TIMEOUT_MS = 20_000;

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The two apis as the load sees them: the sandbox base URL of each, undefined while it is down. */
export class Apis {
  readonly attempts: Attempt[] = [];
  private readonly bases: (string | undefined)[] = [undefined, undefined];

  set(slot: number, sandboxPort: number | undefined) {
    this.bases[slot] = sandboxPort === undefined ? undefined : `http://127.0.0.1:${sandboxPort}`;
  }

  /** A random live api; `prefer` when it is live. */
  pick(prefer?: number): number {
    if (prefer !== undefined && this.bases[prefer]) return prefer;
    const live = this.bases.flatMap((b, i) => (b ? [i] : []));
    if (live.length === 0) return Math.floor(Math.random() * this.bases.length);
    return live[Math.floor(Math.random() * live.length)] as number;
  }

  other(slot: number): number {
    return (slot + 1) % this.bases.length;
  }

  /** One attempt on one api, recorded. Resolves with the answer or `undefined` when none came. */
  async once(
    slot: number,
    label: string,
    path: string,
    init: { method?: string; headers?: Record<string, string>; json?: unknown } = {},
  ): Promise<Answer | undefined> {
    const base = this.bases[slot];
    const start = Date.now();
    const record = (status: number | "error", detail?: string, retryAfter?: string | null) =>
      this.attempts.push({ start, end: Date.now(), api: slot, label, status, detail, retryAfter });
    if (!base) {
      // The load balancer knows this api is down: nothing is sent (not an attempt).
      return undefined;
    }
    const headers: Record<string, string> = { ...init.headers };
    let body: string | undefined;
    if (init.json !== undefined) {
      body = JSON.stringify(init.json);
      headers["content-type"] = "application/json";
    }
    try {
      const res = await fetch(base + path, {
        method: init.method ?? (body === undefined ? "GET" : "POST"),
        headers,
        body,
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      const text = await res.text();
      let parsed: any;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        parsed = undefined;
      }
      record(
        res.status,
        res.status >= 400
          ? `${parsed?.error?.code ?? ""} ${parsed?.error?.message ?? text.slice(0, 200)}`
          : undefined,
        res.status === 503 ? res.headers.get("retry-after") : undefined,
      );
      return { status: res.status, body: parsed, headers: res.headers };
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause?.code;
      record("error", `${(err as Error).name}: ${cause ?? (err as Error).message}`);
      return undefined;
    }
  }

  /**
   * Repeats a call until an answer that is not a transient one (no answer, 5xx, 409
   * IDEMPOTENCY_CONFLICT), moving to another live api after each, until `deadlineMs`. Safe only for
   * what may be repeated: creates with an Idempotency-Key, approve/reject (a repeat of a call that
   * took effect answers 409 INVALID_STATE), reads.
   */
  async retrying(
    label: string,
    path: string,
    init: { method?: string; headers?: Record<string, string>; json?: unknown } = {},
    options: { prefer?: number; deadlineMs?: number } = {},
  ): Promise<{ answer: Answer | undefined; transient: number }> {
    const until = Date.now() + (options.deadlineMs ?? 45_000);
    let slot = this.pick(options.prefer);
    let transient = 0;
    for (;;) {
      const answer = await this.once(slot, label, path, init);
      const retry =
        !answer ||
        answer.status >= 500 ||
        (answer.status === 409 && answer.body?.error?.code === "IDEMPOTENCY_CONFLICT");
      if (!retry) return { answer, transient };
      transient++;
      if (Date.now() > until) return { answer, transient };
      await sleep(150 + Math.random() * 350);
      slot = this.pick(this.other(slot));
    }
  }
}
