import type { Clock } from "../lib/clock.js";
import type { TransferOutcomes } from "../sender/index.js";
import { applyTransferOutcome } from "./service.js";

/**
 * Withdrawals and payouts learn the final state of their transfer here: the sending pipeline calls
 * the handler once per intent inside the transaction that records it, so the status change, the
 * ledger posting (settle or release) and the webhook commit with it.
 */
export function registerWithdrawalOutcomes(outcomes: TransferOutcomes, clock: Clock): void {
  const handler = async (...[trx, outcome]: Parameters<Parameters<TransferOutcomes["register"]>[1]>) => {
    await applyTransferOutcome(trx, new Date(clock.now()), outcome);
  };
  outcomes.register("withdrawal", handler);
  outcomes.register("payout", handler);
}
