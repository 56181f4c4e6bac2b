import type { SignedChainWriter } from "../chains/index.js";
import type { Db } from "../db/database.js";
import type { Clock } from "../lib/clock.js";
import type { Logger } from "../observability/logger.js";
import {
  deferQueued,
  markWaitingFunds,
  type SenderScope,
  sumInFlight,
  type TransferRow,
} from "./transfer-store.js";

/** How soon a transfer waiting for funds is tried again. */
const FUNDS_RETRY_MS = 10_000;

export interface FundingContext extends SenderScope {
  db: Db;
  clock: Clock;
  logger: Logger;
}

/**
 * Funds checks of a sending address (EVM, TRON): what it holds minus what is already signed from
 * it and not finished. A transfer it cannot pay is not failed: it stays queued and waits.
 */
export class Funding {
  constructor(private readonly c: FundingContext) {}

  /**
   * The rows the address's token balance covers (in order, skipping those it cannot), on top of
   * what is already signed but not finished; the others wait for token funds.
   */
  async tokenFundable<R extends TransferRow>(
    writer: SignedChainWriter,
    index: number,
    from: string,
    rows: R[],
  ): Promise<R[]> {
    // A batch's tokens leave its deposit addresses, not the gas tank that sends it (issue #39).
    const paysToken = (r: R) => r.asset === "token" && r.kind !== "sweep_batch";
    const tokenRows = rows.filter(paysToken);
    let fundable = rows;
    if (tokenRows.length > 0) {
      const [balance, inFlight] = await Promise.all([
        writer.tokenBalance(from),
        sumInFlight(this.c.db, this.c, index, "token"),
      ]);
      let left = balance - inFlight;
      fundable = [];
      for (const r of rows) {
        if (paysToken(r)) {
          if (BigInt(r.amount) > left) continue;
          left -= BigInt(r.amount);
        }
        fundable.push(r);
      }
    }
    const unfunded = rows.filter((r) => !fundable.includes(r));
    if (unfunded.length > 0) await this.waitForFunds(unfunded, from, "token");
    return fundable;
  }

  /** Native coin the address can still spend on fees and native transfers. */
  async nativeAvailable(writer: SignedChainWriter, index: number, from: string): Promise<bigint> {
    return (await writer.nativeBalance(from)) - (await sumInFlight(this.c.db, this.c, index, "native"));
  }

  /** Not failed: stays queued, retried every 10 s; logged once per intent as an alert. */
  async waitForFunds(rows: TransferRow[], from: string, what: "token" | "native"): Promise<void> {
    const now = new Date(this.c.clock.now());
    const ids = rows.map((r) => r.intent_id);
    const fresh = await markWaitingFunds(this.c.db, ids, now);
    await deferQueued(
      this.c.db,
      ids,
      new Date(now.getTime() + FUNDS_RETRY_MS),
      `waiting for ${what} funds on ${from}`,
    );
    if (fresh.length > 0) {
      this.c.logger.error(
        {
          alert: "sender_insufficient_funds",
          network: this.c.network,
          environment: this.c.environment,
          from,
          asset: what,
          intents: fresh,
        },
        "ALERT: sending address cannot pay queued transfers; they stay queued until it is funded",
      );
    }
  }
}
