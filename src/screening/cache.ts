import type { Clock } from "../lib/clock.js";

/**
 * The provider's answers kept in memory for a while (`SCREENING_CACHE_SECONDS`), bounded: past
 * `maxEntries` the oldest written goes first. Expired entries are dropped when read. Per process:
 * each instance asks the provider once per key and period, which is what the cache is for
 * (fewer paid queries, no round trip on a repeat sender), not a shared truth.
 */
export class AnswerCache<V> {
  readonly #entries = new Map<string, { value: V; expiresAt: number }>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number,
    private readonly clock: Clock,
  ) {}

  get enabled(): boolean {
    return this.ttlMs > 0 && this.maxEntries > 0;
  }

  get size(): number {
    return this.#entries.size;
  }

  get(key: string): V | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    if (this.clock.now() >= entry.expiresAt) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  set(key: string, value: V): void {
    if (!this.enabled) return;
    // Re-written keys move to the end: the Map's order is the order of writing.
    this.#entries.delete(key);
    this.#entries.set(key, { value, expiresAt: this.clock.now() + this.ttlMs });
    while (this.#entries.size > this.maxEntries) {
      const oldest = this.#entries.keys().next();
      if (oldest.done) break;
      this.#entries.delete(oldest.value);
    }
  }
}
