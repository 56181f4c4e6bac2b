import type { Logger } from "pino";
import { isTransientDatabaseError } from "../db/transient.js";

/** A periodic background job. `run` should return promptly once `signal` is aborted. */
export interface Job {
  name: string;
  everyMs: number;
  run(signal: AbortSignal): Promise<void>;
  /** Called once on graceful stop, after the job's last run has finished (e.g. to give up a lease). */
  stop?(): Promise<void>;
}

/**
 * Runs each job on its own interval (never overlapping itself). `stop()` stops scheduling and
 * waits for the runs in progress to finish: graceful shutdown finishes in-flight work.
 */
export class JobRunner {
  readonly #timers = new Map<string, NodeJS.Timeout>();
  readonly #running = new Set<Promise<void>>();
  readonly #abort = new AbortController();
  #stopped = false;

  constructor(
    private readonly jobs: Job[],
    private readonly log: Logger,
  ) {}

  start(): void {
    for (const job of this.jobs) this.#schedule(job, 0);
  }

  #schedule(job: Job, delay: number): void {
    if (this.#stopped) return;
    const timer = setTimeout(() => {
      const run = job
        .run(this.#abort.signal)
        .catch((err: unknown) => {
          // A database fault of the moment (a failover, a lost connection): the job runs again at
          // its next interval, as after any failure; an operator needs no alert for it.
          if (isTransientDatabaseError(err))
            this.log.warn({ err, job: job.name }, "job interrupted by a transient database fault");
          else this.log.error({ err, job: job.name }, "job failed");
        })
        .finally(() => {
          this.#running.delete(run);
          this.#schedule(job, job.everyMs);
        });
      this.#running.add(run);
    }, delay);
    this.#timers.set(job.name, timer);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    for (const t of this.#timers.values()) clearTimeout(t);
    this.#abort.abort();
    await Promise.allSettled([...this.#running]);
    await Promise.allSettled(
      this.jobs.map((job) =>
        job.stop?.().catch((err: unknown) => this.log.warn({ err, job: job.name }, "job stop failed")),
      ),
    );
  }
}
