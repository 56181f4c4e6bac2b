import { sql } from "kysely";
import type { ChainAdapter } from "../chains/index.js";
import type { Db } from "../db/database.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { formatUnits } from "../domain/money.js";
import { owedOnChain } from "../ledger/index.js";
import type { Clock } from "../lib/clock.js";
import {
  confirmedSweptFrom,
  formatNative,
  nativeHoldings,
  sendingWalletAddresses,
  tokenTransfersInFlight,
} from "../sender/index.js";
import { handedOffDust, handedOffReceipts } from "../watcher/index.js";

/**
 * Reserve reconciliation (issue #22): do the coins stablegate holds on one chain still cover what
 * its ledger owes? Read fresh from the chain: the hot wallet's and the gas tank's token balances
 * (their addresses as the sender recorded them), the configured cold wallet's, and the balance of every deposit address that
 * still holds unswept deposits. From the ledger: every merchant's available and held balance plus
 * the fees collected (the ledger balances, so that is exactly what was received on chain minus
 * what was sent out). Outgoing withdrawals and payouts not yet confirmed count as still held (their
 * tokens leave the hot wallet when they are mined, before the ledger settles them), so a transfer
 * in flight is never a false shortfall; a drain that bypasses stablegate is.
 *
 *   shortfall = owed − written off − (on chain + in flight), when positive
 *
 * What the token's issuer destroyed on a frozen own address is written off in the ledger (issue
 * #40): the merchants are still owed it (the operator's loss, reported as `writtenOff` and in a
 * note), but the chain is not expected to hold it, so the books and the chain still match. What is
 * frozen on own addresses is still on chain and counts; it is reported as `frozen`.
 *
 * What is pending sweep is reported beside it (custody moves, not money owed), and so is the native
 * coin held for fees and stake (`native`: the hot wallet's, the gas tank's, the TRON resource
 * account's liquid and staked TRX), which no merchant is owed.
 */

/** Deposit addresses read on chain per run; beyond it, the report says it is partial. */
export const MAX_ADDRESSES_READ = 500;

export interface ReserveTarget {
  network: CurrencyType;
  environment: Environment;
  adapter: Pick<ChainAdapter, "tokenBalance">;
  /** The cold wallet the hot wallet's excess is forwarded to (issue #22), when configured. */
  coldWallet?: string | undefined;
}

export interface ReserveReport {
  network: CurrencyType;
  environment: Environment;
  checkedAt: Date;
  hotWallet: bigint;
  gasTank: bigint;
  coldWallet: bigint;
  depositAddresses: bigint;
  /** Deposit addresses read / holding unswept deposits. */
  addressesRead: number;
  addressesUnswept: number;
  onChain: bigint;
  inFlight: bigint;
  pendingSweep: bigint;
  owedToMerchants: bigint;
  fees: bigint;
  owed: bigint;
  /** On own addresses the issuer froze (still on chain, unusable), per the ledger. */
  frozen: bigint;
  /** Destroyed by the issuer on a frozen own address: still owed, no longer expected on chain. */
  writtenOff: bigint;
  shortfall: bigint;
  tolerance: bigint;
  ok: boolean;
  /**
   * What tokens finer than the API's 6 decimals left out of credited deposits, in the token's own
   * base units (18-decimal tokens; 0 otherwise): on the deposit addresses, owed to nobody.
   */
  dust: bigint;
  /**
   * The native coin (sun, wei) held for fees and stake, as the sender and the energy engine last
   * recorded it (issue #38): not owed to merchants, counted beside the tokens. `staked` is the
   * resource account's TRX staked for energy and bandwidth (TRON), recoverable by unstaking.
   */
  native: { hotWallet: bigint; gasTank: bigint; resourceAccount: bigint; staked: bigint };
  notes: string[];
}

export async function reconcileReserves(
  deps: { db: Db; clock: Clock },
  chain: ReserveTarget,
  tolerance: bigint,
): Promise<ReserveReport> {
  const { db } = deps;
  const { network, environment } = chain;
  const scope = { network, environment };
  const notes: string[] = [];

  const wallets = await sendingWalletAddresses(db, scope);
  const addressOf = (role: string) => wallets.find((w) => w.role === role)?.address;
  const hot = addressOf("hot_wallet");
  const tank = addressOf("gas_tank");
  if (!hot) notes.push("hot wallet not recorded yet (no sender has run for this chain)");
  const [hotWallet, gasTank, coldWallet] = await Promise.all([
    hot ? chain.adapter.tokenBalance(hot) : Promise.resolve(0n),
    tank ? chain.adapter.tokenBalance(tank) : Promise.resolve(0n),
    chain.coldWallet ? chain.adapter.tokenBalance(chain.coldWallet) : Promise.resolve(0n),
  ]);

  // Addresses that received more than was swept from them: read on chain. One statement: what
  // each address received (the watcher's) against what was swept from it (the sender's).
  const received = handedOffReceipts(db, scope).as("h");
  const swept = confirmedSweptFrom(db, scope, sql.ref<bigint | number>("h.derivation_index"));
  const unswept = await sql<{ address: string }>`
    select h.address
    from ${received}
    where h.received > coalesce(${swept}, 0)
    order by h.address
  `.execute(db);
  const toRead = unswept.rows.slice(0, MAX_ADDRESSES_READ);
  if (unswept.rows.length > toRead.length)
    notes.push(`partial: ${toRead.length} of ${unswept.rows.length} unswept deposit addresses read`);
  let depositAddresses = 0n;
  for (const { address } of toRead) depositAddresses += await chain.adapter.tokenBalance(address);

  const dust = await handedOffDust(db, scope);
  if (dust > 0n) notes.push(`dust: ${dust} on-chain base units below 6 decimals stay on deposit addresses`);
  const flows = await tokenTransfersInFlight(db, scope);
  const { merchants: owedToMerchants, fees, frozen, writtenOff } = await owedOnChain(db, scope);
  if (frozen > 0n)
    notes.push(`frozen: ${formatUnits(frozen)} on own addresses the token's issuer froze (still on chain)`);
  if (writtenOff > 0n)
    notes.push(
      `written off: ${formatUnits(writtenOff)} the issuer destroyed on frozen own addresses (still owed to the merchants: the operator's loss)`,
    );
  const holdings = await nativeHoldings(db, scope);
  const nativeOf = (role: string) => holdings.find((h) => h.role === role);
  const native = {
    hotWallet: nativeOf("hot_wallet")?.native ?? 0n,
    gasTank: nativeOf("gas_tank")?.native ?? 0n,
    resourceAccount: nativeOf("resource_account")?.native ?? 0n,
    staked: nativeOf("resource_account")?.staked ?? 0n,
  };
  if (holdings.length > 0) {
    const n = (v: bigint) => formatNative(network, v);
    notes.push(
      `native coin held for fees and stake (owed to no merchant): hot wallet ${n(native.hotWallet)}, ` +
        `gas tank ${n(native.gasTank)}` +
        (nativeOf("resource_account")
          ? `, resource account ${n(native.resourceAccount)} + ${n(native.staked)} staked`
          : ""),
    );
  }
  const owed = owedToMerchants + fees;
  const onChain = hotWallet + gasTank + coldWallet + depositAddresses;
  const inFlight = flows.outflow;
  const gap = owed - writtenOff - (onChain + inFlight);
  const shortfall = gap > 0n ? gap : 0n;
  return {
    network,
    environment,
    checkedAt: new Date(deps.clock.now()),
    hotWallet,
    gasTank,
    coldWallet,
    depositAddresses,
    addressesRead: toRead.length,
    addressesUnswept: unswept.rows.length,
    onChain,
    inFlight,
    pendingSweep: flows.sweeps,
    owedToMerchants,
    fees,
    owed,
    frozen,
    writtenOff,
    shortfall,
    tolerance,
    ok: shortfall <= tolerance,
    dust,
    native,
    notes,
  };
}
