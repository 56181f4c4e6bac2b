import { randomBytes } from "node:crypto";
import { type ChainWriter, TransferWouldFailError } from "../chains/index.js";
import type { Db } from "../db/database.js";
import {
  applyReturnOutcome,
  claimDueDecision,
  deferDecision,
  lockHeldDeposit,
  markReturned,
  releaseDeposit,
  returnDestination,
} from "../deposits/index.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { base62 } from "../domain/ids.js";
import type { Clock } from "../lib/clock.js";
import type { Logger } from "../observability/logger.js";
import { hasOpenSweep, requestTransfer, type TransferOutcomes } from "../sender/index.js";
import { GAS_TANK_INDEX } from "../wallet/index.js";
import { recordedIndexOf } from "../watcher/index.js";

export interface HeldDecisionOptions {
  db: Db;
  network: CurrencyType;
  environment: Environment;
  writer: ChainWriter;
  logger: Logger;
  clock: Clock;
}

/**
 * Carries out the decisions on held deposits of one chain (README.md#frozen-funds): the api
 * records them (`decideHeldDeposit`), this worker job applies each once, in one transaction with
 * the decision's row locked (`skip locked`: several workers share the queue).
 *
 * - release: the deposit is credited (`releaseDeposit`); its address becomes a sweep candidate
 *   again (its `sweep_checks` row goes).
 * - return: the deposit becomes `returned` and ONE transfer from its deposit address to its
 *   sender, of what arrived, is queued — after a gas top-up from the gas tank on chains with gas,
 *   exactly as a sweep. It waits while a sweep from that address is open.
 */
export class HeldDecisions {
  constructor(private readonly o: HeldDecisionOptions) {}

  /** Applies the due decisions; returns how many. */
  async tick(): Promise<number> {
    let applied = 0;
    for (let i = 0; i < 20; i++) {
      let claimed: string | null = null;
      let done: "none" | "applied" | "waiting";
      try {
        done = await this.o.db.transaction().execute((trx) =>
          this.applyOne(trx, (id) => {
            claimed = id;
          }),
        );
      } catch (err) {
        if (claimed === null) throw err;
        // This decision waits (back-off) and the others go on: one fault never blocks the queue.
        const { network, environment } = this.o;
        this.o.logger.warn(
          { err, transactionId: claimed, network, environment },
          "held-deposit decision deferred",
        );
        await deferDecision(
          this.o.db,
          claimed,
          err instanceof Error ? err.message : String(err),
          new Date(this.o.clock.now()),
        );
        continue;
      }
      if (done === "none") break;
      if (done === "applied") applied++;
      else break; // waiting for a sweep to finish: next round
    }
    return applied;
  }

  private async applyOne(trx: Db, claimedId: (id: string) => void): Promise<"none" | "applied" | "waiting"> {
    const { network, environment, writer } = this.o;
    const now = new Date(this.o.clock.now());
    const due = await claimDueDecision(trx, { network, environment }, now);
    if (!due) return "none";
    claimedId(due.transactionId);
    const t = await lockHeldDeposit(trx, due, now);
    if (!t) return "applied";
    const address = t.walletAddress;
    if (!address) throw new Error(`held deposit ${t.id} has no address`);
    if (due.action === "release") {
      await releaseDeposit(trx, t, now);
      await this.lookAgain(trx, address);
      this.o.logger.info({ transactionId: t.id, network, environment }, "held deposit released");
      return "applied";
    }
    const index = await recordedIndexOf(trx, { network, environment, address });
    if (index === null) throw new Error(`held deposit ${t.id}: ${address} is not a recorded deposit address`);
    if (await hasOpenSweep(trx, { network, environment }, index)) return "waiting";
    const to = await returnDestination(trx, t);
    let afterIntentId: string | undefined;
    if (writer.kind === "signed") {
      const [cost, native] = await Promise.all([
        // A transfer the token would revert (Circle's blacklist refuses a frozen recipient) has no
        // cost to top up: the return is queued without one, the sender finds it would revert and
        // fails it unsigned, and the deposit is held again to be decided anew. Thrown here, the
        // decision would be retried every second forever, ahead of every later one of the chain.
        writer.tokenTransferCost(address, to, t.amount).catch((err: unknown) => {
          if (err instanceof TransferWouldFailError) return null;
          throw err;
        }),
        writer.nativeBalance(address),
      ]);
      if (cost !== null && cost > native) {
        afterIntentId = `gas_${base62(randomBytes(16))}`;
        await requestTransfer(trx, {
          intentId: afterIntentId,
          kind: "gas_topup",
          network,
          environment,
          asset: "native",
          fromIndex: GAS_TANK_INDEX,
          to: address,
          amount: cost - native,
        });
      }
    }
    const intentId = `ret_${base62(randomBytes(16))}`;
    await requestTransfer(trx, {
      intentId,
      kind: "return",
      network,
      environment,
      fromIndex: index,
      to,
      amount: t.amount,
      ...(afterIntentId ? { afterIntentId } : {}),
    });
    await markReturned(trx, t, intentId, now);
    this.o.logger.info({ transactionId: t.id, network, environment, intentId }, "held deposit return queued");
    return "applied";
  }

  /** The address's next deposit hand-off is no longer needed for it to be swept: looked at again now. */
  private async lookAgain(trx: Db, address: string): Promise<void> {
    await trx
      .deleteFrom("sweep_checks")
      .where("network", "=", this.o.network)
      .where("environment", "=", this.o.environment)
      .where("address", "=", address)
      .execute();
  }
}

/**
 * A return's outcome (`applyReturnOutcome`): confirmed, the books move; failed, the deposit is
 * held again and may be decided anew.
 */
export function registerReturnOutcomes(outcomes: TransferOutcomes, clock: Clock): void {
  outcomes.register("return", async (trx, outcome) => {
    await applyReturnOutcome(trx, outcome.intentId, outcome.status, new Date(clock.now()));
  });
}
