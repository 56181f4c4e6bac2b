import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import type { ChainWriter } from "../chains/index.js";
import { normalizeAddress } from "../chains/index.js";
import type { Db } from "../db/database.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { base62 } from "../domain/ids.js";
import type { Clock } from "../lib/clock.js";
import type { Logger } from "../observability/logger.js";
import { hasRecentColdForward, isRecordedFrozen, openOutflow, requestTransfer } from "../sender/index.js";
import { HOT_WALLET_INDEX } from "../wallet/index.js";

export interface ColdForwarderOptions {
  db: Db;
  network: CurrencyType;
  environment: Environment;
  writer: Pick<ChainWriter, "tokenBalance">;
  hotWallet: string;
  cold: { max: bigint; address: string };
  logger: Logger;
  clock: Clock;
  /** After a forward confirms, no new one for this long (a balance read from a lagging endpoint). */
  settleMs?: number;
}

/**
 * Cold-wallet forwarding (issue #22): when the hot wallet holds more than its maximum beyond what
 * open withdrawals and payouts will take from it, the excess is queued as ONE outgoing transfer to
 * the cold address — an ordinary intent, so the sender's crash safety carries it (signed once,
 * broadcast until mined, recovered after a crash) and the signer signs it only to the cold wallet
 * of its own configuration. One look at a time per chain (a transaction-scoped advisory lock), and
 * none while a forward is open or within `settleMs` of the last one confirming: the excess is
 * forwarded once.
 */
export class ColdForwarder {
  private readonly cold: string;

  constructor(private readonly o: ColdForwarderOptions) {
    this.cold = normalizeAddress(o.network, o.cold.address);
  }

  /** The amount queued, or 0n. */
  async tick(): Promise<bigint> {
    const { db, network, environment } = this.o;
    const queued = await db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(hashtext(${`cold-forward:${network}:${environment}`}))`.execute(
        trx,
      );
      const since = new Date(this.o.clock.now() - (this.o.settleMs ?? 60_000));
      if (await hasRecentColdForward(trx, { network, environment }, since)) return 0n;
      // A cold wallet the token's issuer froze (README.md#frozen-funds) could never move what is
      // sent to it: the excess stays in the hot wallet until the freeze is lifted.
      if (await isRecordedFrozen(trx, { network, environment, address: this.cold })) return 0n;
      const balance = await this.o.writer.tokenBalance(this.o.hotWallet);
      const demand = await openOutflow(trx, { network, environment });
      const excess = balance - demand - this.o.cold.max;
      if (excess <= 0n) return 0n;
      await requestTransfer(trx, {
        intentId: `cold_${base62(randomBytes(16))}`,
        kind: "cold_forward",
        network,
        environment,
        fromIndex: HOT_WALLET_INDEX,
        to: this.cold,
        amount: excess,
      });
      return excess;
    });
    if (queued > 0n)
      this.o.logger.info(
        { network, environment, amount: queued.toString(), to: this.cold },
        "hot wallet above its maximum: excess forwarded to the cold wallet",
      );
    return queued;
  }
}
