import type { Logger } from "pino";
import { retriedFailureLevel } from "../db/transient.js";
import { Wakeup } from "../lib/wakeup.js";

/** `Database.listen`: LISTEN on a channel; resolves to the UNLISTEN. */
export type Listen = (channel: string, onNotify: () => void) => Promise<() => Promise<void>>;

export interface NotifiedLoopOptions {
  /** The database's LISTEN (absent or failing: the loop polls). */
  listen: Listen | undefined;
  channel: string;
  logger: Logger;
  /** Fields of every log line of this loop (which chain, which network). */
  logContext?: Record<string, unknown>;
  /** What the loop is, for its log lines ("transfer requests", "simulator blocks"). */
  what: string;
  /**
   * One round of work. Returns how long to sleep before the next round; a notification ends the
   * sleep early. `listening` says whether notifications will come (if not, only the sleep ends it).
   */
  round(signal: AbortSignal, listening: boolean): Promise<number>;
  /** After a failed round (logged here), sleep this long. */
  retryMs: number;
  /** Called on each notification instead of ending the sleep (a loop that also wakes work in flight). */
  onNotify?(wake: Wakeup): void;
}

/**
 * The one LISTEN → wake-up loop of the worker's jobs (webhook deliveries, transfer requests,
 * simulator blocks): LISTEN on a channel, then run rounds until `signal` aborts, each followed by a
 * sleep that a NOTIFY (sent when the notifying transaction commits) ends at once. A notification
 * while a round runs is kept, so the next sleep ends at once: none is lost between rounds. Rounds
 * that fail are logged (a transient database fault as a warning) and retried after `retryMs`.
 */
export async function runNotifiedLoop(signal: AbortSignal, options: NotifiedLoopOptions): Promise<void> {
  const wake = new Wakeup();
  const onNotify = options.onNotify ? () => options.onNotify?.(wake) : () => wake.notify();
  let unlisten: (() => Promise<void>) | undefined;
  try {
    unlisten = await options.listen?.(options.channel, onNotify);
  } catch (err) {
    options.logger.warn(
      { err, ...options.logContext },
      `${options.what}: LISTEN unavailable; found by polling instead`,
    );
  }
  try {
    while (!signal.aborted) {
      let sleepMs = options.retryMs;
      try {
        sleepMs = await options.round(signal, unlisten !== undefined);
      } catch (err) {
        options.logger[retriedFailureLevel(err)](
          { err, ...options.logContext },
          `${options.what}: round failed`,
        );
      }
      if (signal.aborted) break;
      await wake.wait(sleepMs, signal);
    }
  } finally {
    await unlisten?.().catch(() => {});
  }
}
