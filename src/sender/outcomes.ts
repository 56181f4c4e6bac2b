import type { Db } from "../db/database.js";
import type { TransferKind } from "../db/tables/sending.js";

export type { TransferKind };

export interface TransferOutcome {
  intentId: string;
  kind: TransferKind;
  status: "confirmed" | "failed";
  /** The mined transaction (null when nothing was ever mined, e.g. the transfer would revert). */
  txHash: string | null;
  /** Why it failed (null when confirmed). */
  reason: string | null;
}

export type TransferOutcomeHandler = (trx: Db, outcome: TransferOutcome) => Promise<void>;

/**
 * The one registration point through which the withdrawal/payout logic (and the sweeper) learn
 * the final state of their transfers. The runtime owns one instance. The sender calls the handler
 * of the intent's kind exactly once per intent, inside the database transaction that records the
 * final state: if the handler throws, both roll back and the outcome is offered again later.
 * Until a handler is registered for a kind, finished transfers of that kind wait (not lost).
 */
export class TransferOutcomes {
  readonly #handlers = new Map<TransferKind, TransferOutcomeHandler>();

  register(kind: TransferKind, handler: TransferOutcomeHandler): void {
    const existing = this.#handlers.get(kind);
    if (existing && existing !== handler) throw new Error(`A ${kind} outcome handler is already registered.`);
    this.#handlers.set(kind, handler);
  }

  handler(kind: TransferKind): TransferOutcomeHandler | undefined {
    return this.#handlers.get(kind);
  }
}
