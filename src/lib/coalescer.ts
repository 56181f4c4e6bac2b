/**
 * Request coalescing: concurrent callers' items are run as one batch (one statement, one round
 * trip) instead of one each, as a database's group commit does. An item submitted while nothing
 * of this kind is in flight starts at once, alone, so nothing waits at low load. While a batch is
 * in flight, waiting items go together (up to `maxBatch`) when it returns; a further batch starts
 * beside it only once a full `maxBatch` is waiting, and never more than `maxInFlight` at a time.
 * (Letting any free slot take whatever waits made half the statements batches of one.)
 *
 * `run` must return one result per item, in the items' order. When a batch of several fails and
 * `splitOnError` is set, each of its items is run again alone, so one bad item fails only its own
 * caller (for statements that are atomic: a failed batch wrote nothing).
 *
 * Written by hand: the batching loaders on npm (dataloader and kin) batch what arrives within one
 * event-loop tick and do not bound the batches in flight, which is the point here.
 */
export interface CoalescerOptions {
  maxBatch: number;
  maxInFlight: number;
  splitOnError: boolean;
}

interface Waiting<I, O> {
  item: I;
  resolve: (value: O) => void;
  reject: (reason: unknown) => void;
}

export class Coalescer<I, O> {
  readonly #run: (items: I[]) => Promise<O[]>;
  readonly #options: CoalescerOptions;
  #waiting: Waiting<I, O>[] = [];
  #inFlight = 0;

  constructor(run: (items: I[]) => Promise<O[]>, options: CoalescerOptions) {
    if (options.maxBatch < 1 || options.maxInFlight < 1)
      throw new Error("maxBatch and maxInFlight must be ≥ 1");
    this.#run = run;
    this.#options = options;
  }

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.#waiting.push({ item, resolve, reject });
      this.#start();
    });
  }

  #start(): void {
    const { maxBatch, maxInFlight } = this.#options;
    // Alone at once when idle; while a batch is in flight, another starts only with a full batch
    // (else the waiting items go together when the running one returns).
    while (
      this.#waiting.length > 0 &&
      (this.#inFlight === 0 || (this.#inFlight < maxInFlight && this.#waiting.length >= maxBatch))
    ) {
      const batch = this.#waiting.splice(0, maxBatch);
      this.#inFlight++;
      void this.#execute(batch).finally(() => {
        this.#inFlight--;
        this.#start();
      });
    }
  }

  async #execute(batch: Waiting<I, O>[]): Promise<void> {
    let results: O[];
    try {
      results = await this.#run(batch.map((w) => w.item));
      if (results.length !== batch.length)
        throw new Error(`a batch of ${batch.length} returned ${results.length} results`);
    } catch (err) {
      if (batch.length === 1 || !this.#options.splitOnError) {
        for (const w of batch) w.reject(err);
        return;
      }
      await Promise.all(
        batch.map((w) =>
          this.#run([w.item]).then(
            (r) =>
              r.length === 1 ? w.resolve(r[0] as O) : w.reject(new Error("a batch of 1 returned no result")),
            w.reject,
          ),
        ),
      );
      return;
    }
    for (let i = 0; i < batch.length; i++) (batch[i] as Waiting<I, O>).resolve(results[i] as O);
  }
}
