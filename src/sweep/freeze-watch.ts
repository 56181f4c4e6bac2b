import type { ChainAdapter } from "../chains/index.js";
import type { Db } from "../db/database.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import type { Clock } from "../lib/clock.js";
import type { Logger } from "../observability/logger.js";
import { type FrozenRole, recordFreezeCheck } from "../sender/index.js";
import { recordedIndexOf } from "../watcher/index.js";

/**
 * Follows the token issuer's freeze events for the gateway's own addresses (issue #40,
 * decisions/frozen-funds.md 14): the hot wallet, the gas tank, the configured cold wallet and every
 * deposit address. An event naming one of them is a trigger, never the answer: the address is
 * checked again (`isFrozen`, where two providers decide, and its balance) and the check recorded
 * (`recordFreezeCheck`: the alert, the sending stop, the ledger's frozen custody, a write-off).
 * A deposit address whose freeze was lifted is looked at again by the sweeper.
 *
 * It reads settled blocks only (the chain's confirmations, as the watcher): an event a reorg
 * replaces at a height already read would otherwise be missed. The 15-second check of the hot
 * wallet and gas tank and the check of a deposit address before its sweep stay: a provider that
 * hides events delays the record, it cannot keep money moving from or into a frozen address.
 */
export interface FreezeWatchTarget {
  network: CurrencyType;
  environment: Environment;
  adapter: Pick<ChainAdapter, "freezeEvents" | "isFrozen" | "tokenBalance" | "safeBlock">;
  confirmations: number;
  wallets: { hotWallet: string; gasTank: string; coldWallet?: string | undefined };
}

/** Blocks read back on a chain's first run (the freezes of the last hours are caught). */
export const FIRST_RUN_LOOKBACK = 1_000;
/** Blocks read per run at most (one `eth_getLogs` per 1 000 on EVM, one call per block on TRON). */
export const MAX_BLOCKS_PER_RUN = 2_000;

export interface FreezeWatchResult {
  /** The blocks read, or null when there was nothing new. */
  range: { fromBlock: number; toBlock: number } | null;
  /** The own addresses checked again (an event named them). */
  checked: { address: string; role: FrozenRole; frozen: boolean; balance: bigint }[];
}

export async function followFreezeEvents(
  deps: { db: Db; clock: Clock; logger: Logger },
  t: FreezeWatchTarget,
): Promise<FreezeWatchResult> {
  const { db } = deps;
  const scope = { network: t.network, environment: t.environment };
  const safe = await t.adapter.safeBlock(t.confirmations);
  if (safe < 0) return { range: null, checked: [] };
  const cursor = await db
    .selectFrom("freeze_watch_cursors")
    .select("next_block")
    .where("network", "=", t.network)
    .where("environment", "=", t.environment)
    .executeTakeFirst();
  const fromBlock = cursor ? Number(cursor.next_block) : Math.max(0, safe - FIRST_RUN_LOOKBACK + 1);
  if (fromBlock > safe) return { range: null, checked: [] };
  const toBlock = Math.min(safe, fromBlock + MAX_BLOCKS_PER_RUN - 1);
  const events = await t.adapter.freezeEvents({ fromBlock, toBlock });

  const checked: FreezeWatchResult["checked"] = [];
  for (const address of new Set(events.map((e) => e.address))) {
    const role = await roleOf(db, t, address);
    if (!role) continue;
    const readAt = new Date(deps.clock.now());
    const [frozen, balance] = await Promise.all([
      t.adapter.isFrozen(address),
      t.adapter.tokenBalance(address),
    ]);
    await recordFreezeCheck(db, { ...scope, address, role }, { frozen, balance }, readAt, deps.logger);
    // Released: the sweeper looks at the address again (it was passed over while frozen).
    if (role === "deposit" && !frozen)
      await db
        .deleteFrom("sweep_checks")
        .where("network", "=", t.network)
        .where("environment", "=", t.environment)
        .where("address", "=", address)
        .execute();
    checked.push({ address, role, frozen, balance });
  }

  // Moved on only from where this run started: two workers reading the same range record the same
  // checks (each under the address's row lock), and the cursor moves once.
  if (cursor)
    await db
      .updateTable("freeze_watch_cursors")
      .set({ next_block: toBlock + 1, updated_at: new Date(deps.clock.now()) })
      .where("network", "=", t.network)
      .where("environment", "=", t.environment)
      .where("next_block", "=", fromBlock)
      .execute();
  else
    await db
      .insertInto("freeze_watch_cursors")
      .values({ ...scope, next_block: toBlock + 1, updated_at: new Date(deps.clock.now()) })
      .onConflict((oc) => oc.columns(["network", "environment"]).doNothing())
      .execute();
  if (checked.length > 0)
    deps.logger.info(
      { ...scope, fromBlock, toBlock, checked: checked.map((c) => `${c.role} ${c.address}`) },
      "the token's issuer changed the freeze of own addresses: checked again",
    );
  return { range: { fromBlock, toBlock }, checked };
}

/** Which of the gateway's own addresses `address` is, if any (canonical spelling). */
async function roleOf(db: Db, t: FreezeWatchTarget, address: string): Promise<FrozenRole | null> {
  if (address === t.wallets.hotWallet) return "hot_wallet";
  if (address === t.wallets.gasTank) return "gas_tank";
  if (t.wallets.coldWallet && address === t.wallets.coldWallet) return "cold_wallet";
  const index = await recordedIndexOf(db, { network: t.network, environment: t.environment, address });
  return index === null ? null : "deposit";
}
