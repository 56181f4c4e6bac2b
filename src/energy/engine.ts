import { randomBytes } from "node:crypto";
import { normalizeAddress, type ResourceReads, type SignedChainWriter, withBuffer } from "../chains/index.js";
import type { Db } from "../db/database.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { base62 } from "../domain/ids.js";
import type { Clock } from "../lib/clock.js";
import type { Logger } from "../observability/logger.js";
import type { GateRow } from "../sender/index.js";
import {
  delegationsInFlight,
  dueReclaims,
  hasOpenStake,
  openDelegationTo,
  recordResourceAccount,
  requestDelegationUnlessOpen,
  requestRental,
  requestTransfer,
} from "../sender/index.js";
import { HOT_WALLET_INDEX, RESOURCE_ACCOUNT_INDEX } from "../wallet/index.js";
import { chooseEnergy, ENERGY_MARGIN_PERCENT, type EnergyPolicy, nextStake } from "./policy.js";
import type { EnergyRental } from "./rental.js";
import { RentalDesk } from "./rental-desk.js";

export interface EnergyEngineOptions {
  db: Db;
  network: CurrencyType;
  environment: Environment;
  /** A TRON writer (its Stake 2.0 reads). */
  writer: SignedChainWriter & { resources: ResourceReads };
  address: (index: number) => string;
  policy: EnergyPolicy;
  /** An energy rental provider (decision 21): energy bought when the stake cannot give it. */
  rental?: EnergyRental;
  logger: Logger;
  clock: Clock;
}

/** How a sweep gets its energy (`planSweep`). */
export type SweepPlan =
  /** The address has the energy (or the engine has none to give): the burn top-up, as before. */
  | { kind: "burn" }
  /** Delegate `stake` (sun) of the resource account's energy; top up `topUp` sun first (0: none). */
  | { kind: "delegate"; stake: bigint; topUp: bigint }
  /**
   * Rent `energy` units from the provider (decision 21) for about `price` sun, never above `maxSun`
   * (the burn it replaces); top up `topUp` sun first (0: none).
   */
  | { kind: "rent"; energy: bigint; price: bigint; maxSun: bigint; topUp: bigint }
  /** Wait for the resource account's energy to recover. */
  | { kind: "wait"; reason: string };

/**
 * TRON's energy engine (issue #38; docs/decisions/tron-resources.md). The resource account (HD
 * index 2; its key stays on the signer) stakes the TRX the operator sends it. Just before a sweep
 * or a hot-wallet transfer is signed, it delegates exactly the energy that transfer lacks to the
 * sending address (`resource_delegation`, an ordinary outgoing transfer the sweep waits for) and,
 * once that transfer is final, takes it back (`resource_reclaim`). What it cannot delegate now the
 * transfer waits for, within the policy's delay and ceiling (policy.ts), then burns.
 *
 * Crash safety is the sender's: every step is an intent queued in one transaction with what it
 * serves, and the reclaims are derived from the books each tick (`dueReclaims`), so a worker killed
 * anywhere leaves a delegation out for at most one more tick after the sweep it served is final.
 */
export class EnergyEngine {
  /** The resource account's address (HD index 2): the operator sends it the TRX to stake. */
  readonly resourceAccount: string;
  private readonly hotWallet: string;
  /** The rentals: the provider's price, the orders, and whether rented energy came (rental-desk.ts). */
  private readonly desk: RentalDesk;

  constructor(private readonly o: EnergyEngineOptions) {
    this.resourceAccount = normalizeAddress(o.network, o.address(RESOURCE_ACCOUNT_INDEX));
    this.hotWallet = normalizeAddress(o.network, o.address(HOT_WALLET_INDEX));
    this.desk = new RentalDesk({
      db: o.db,
      scope: { network: o.network, environment: o.environment },
      rental: o.rental,
      resources: o.writer.resources,
      rentalWaitMs: o.policy.rentalWaitMs,
      logger: o.logger,
      clock: o.clock,
    });
  }

  private get scope() {
    return { network: this.o.network, environment: this.o.environment };
  }

  /**
   * How a sweep of `amount` from `from` to the hot wallet gets its energy. `waitingSince`: when the
   * address started waiting for delegated energy (null: it does not wait yet).
   */
  async planSweep(db: Db, from: string, amount: bigint, waitingSince: Date | null): Promise<SweepPlan> {
    const r = this.o.writer.resources;
    const { needed, available } = await r.transferEnergy(from, this.hotWallet, amount);
    const shortfall = withBuffer(needed, ENERGY_MARGIN_PERCENT) - available;
    if (shortfall <= 0n) return { kind: "burn" };
    const choice = await this.choose(db, from, shortfall, waitingSince, null, () =>
      this.o.writer.tokenTransferCost(from, this.hotWallet, amount),
    );
    if (choice.kind === "burn" || choice.kind === "wait") return choice;
    // An address without an account cannot receive a delegation (ours or a provider's): created by
    // a top-up of 1 sun (its creation fee is the gas tank's). One that exists gets what its
    // bandwidth burn lacks.
    const [exists, native] = await Promise.all([r.accountExists(from), this.o.writer.nativeBalance(from)]);
    let topUp = 1n;
    if (exists) {
      const burn = await r.bandwidthBurn(from);
      topUp = burn > native ? burn - native : 0n;
    }
    if (choice.kind === "rent")
      return { kind: "rent", energy: shortfall, price: choice.price, maxSun: choice.burn, topUp };
    return { kind: "delegate", stake: choice.stake, topUp };
  }

  /**
   * Delegate, rent, wait or burn for `shortfall` energy of `receiver` (policy.ts). `rentFor`: the
   * hot wallet's transfer a rental would serve (one that had a rental already gets none).
   */
  private async choose(
    db: Db,
    receiver: string,
    shortfall: bigint,
    waitingSince: Date | null,
    rentFor: string | null,
    burnCost: () => Promise<bigint>,
  ): Promise<
    | (SweepPlan & { kind: "burn" | "wait" })
    | { kind: "delegate"; stake: bigint }
    | { kind: "rent"; price: bigint; burn: bigint }
  > {
    const r = this.o.writer.resources;
    const [stake, delegatable, inFlight, staked] = await Promise.all([
      r.stakeFor(this.resourceAccount, "energy", shortfall),
      r.delegatable(this.resourceAccount, "energy"),
      delegationsInFlight(db, this.scope, RESOURCE_ACCOUNT_INDEX),
      r.staked(this.resourceAccount),
    ]);
    const canDelegate = delegatable - inFlight >= stake;
    const waitedMs = waitingSince ? this.o.clock.now() - waitingSince.getTime() : 0;
    const hasStake = staked.energy > 0n;
    // The burn is priced only when it matters (each price is a dry run at a provider).
    const burnSun = canDelegate || (!hasStake && !this.o.rental) ? 0n : await burnCost();
    const mayRent =
      !canDelegate &&
      burnSun > this.o.policy.burnCeilingSun &&
      (!hasStake || waitedMs >= this.o.policy.maxWaitMs);
    const rentSun = mayRent ? await this.desk.price(db, receiver, shortfall, rentFor) : null;
    const choice = chooseEnergy(this.o.policy, { canDelegate, staked: hasStake, burnSun, waitedMs, rentSun });
    if (choice === "delegate") return { kind: "delegate", stake };
    if (choice === "rent" && rentSun !== null) return { kind: "rent", price: rentSun, burn: burnSun };
    if (choice === "burn") return { kind: "burn" };
    return {
      kind: "wait",
      reason: `the resource account can delegate ${delegatable - inFlight} sun of stake, ${stake} needed`,
    };
  }

  /**
   * The sender's gate (`EnergyGate`): what of a batch from `from` may be signed now. Nothing while
   * a delegation to `from` is on its way. From the hot wallet, token transfers short of energy get
   * one delegation for the batch and wait for it (or for the resource account to recover, within
   * the policy); other sources are served by their sweep's own delegation (`planSweep`).
   */
  async ready<
    R extends { intent_id?: string; asset: string; to_address: string; amount: string; created_at?: Date },
  >(index: number, from: string, rows: R[]): Promise<R[]> {
    const db = this.o.db;
    const address = normalizeAddress(this.o.network, from);
    // A delegation on its way holds the transfers up, for at most the policy's wait; past it (the
    // signer keeps refusing it, say) they go on and burn, and no other delegation is asked for.
    const pending = await openDelegationTo(db, this.scope, address);
    if (pending) return this.o.clock.now() - pending.getTime() < this.o.policy.maxWaitMs ? [] : rows;
    // Rented energy on its way (decision 21): the transfers wait until the chain shows it (past the
    // rental's wait, `failing` closes it first).
    const arrived = await this.desk.arrived(address, rows);
    if (arrived !== null) return arrived ? rows : [];
    if (index !== HOT_WALLET_INDEX) return rows;
    const tokens = rows.filter((r) => r.asset === "token");
    if (tokens.length === 0) return rows;
    const r = this.o.writer.resources;
    let needed = 0n;
    let available = 0n;
    for (const row of tokens) {
      const e = await r.transferEnergy(address, row.to_address, BigInt(row.amount));
      needed += e.needed;
      available = e.available;
    }
    const shortfall = withBuffer(needed, ENERGY_MARGIN_PERCENT) - available;
    if (shortfall <= 0n) return rows;
    const oldest = tokens.reduce<Date | null>(
      (a, row) => (row.created_at && (!a || row.created_at < a) ? row.created_at : a),
      null,
    );
    // A rental serves the batch's oldest transfer: one still queued after its rental (the signer
    // refuses it, say) gets no other, however many provider terms pass.
    const first = tokens.reduce((a, row) =>
      row.created_at && (!a.created_at || row.created_at < a.created_at) ? row : a,
    );
    const rentalId = `rnt_${base62(randomBytes(16))}`;
    const rentFor = first.intent_id ?? rentalId;
    const choice = await this.choose(db, address, shortfall, oldest, rentFor, async () => {
      let burn = 0n;
      for (const row of tokens)
        burn += await this.o.writer.tokenTransferCost(address, row.to_address, BigInt(row.amount));
      return burn;
    });
    if (choice.kind === "burn") return rows;
    const others = rows.filter((row) => row.asset !== "token");
    if (choice.kind === "wait") return others;
    if (choice.kind === "rent") {
      // One rental for the batch (the open-rental index decides between workers).
      const now = new Date(this.o.clock.now());
      const asked = await requestRental(
        db,
        this.scope,
        { id: rentalId, receiver: address, energy: shortfall, servesIntentId: rentFor, maxSun: choice.burn },
        now,
      );
      if (asked)
        this.o.logger.info(
          { network: this.o.network, to: address, energy: shortfall.toString(), transfers: tokens.length },
          "energy rented for the hot wallet's queued transfers",
        );
      return others;
    }
    // One delegation for the batch, however many workers gate this wallet at once.
    const queued = await requestDelegationUnlessOpen(db, this.scope, {
      intentId: `dlg_${base62(randomBytes(16))}`,
      kind: "resource_delegation",
      network: this.o.network,
      environment: this.o.environment,
      asset: "energy",
      fromIndex: RESOURCE_ACCOUNT_INDEX,
      to: address,
      amount: choice.stake,
    });
    if (!queued) return others;
    this.o.logger.info(
      { network: this.o.network, to: address, stake: choice.stake.toString(), transfers: tokens.length },
      "energy delegated to the hot wallet for its queued transfers",
    );
    return others;
  }

  /**
   * The sender's other gate (`EnergyGate.failing`): the sweeps whose rented energy was refused or
   * never came, failed unsigned and planned again (rental-desk.ts).
   */
  failing(index: number, from: string, rows: GateRow[]): Promise<Map<string, string>> {
    return this.desk.failing(index, from, rows);
  }

  /**
   * One round of the engine's own work: take back the delegations whose use is over, order the
   * rentals asked for, and stake the resource account's TRX above its reserve (one stake at a
   * time). Returns whether it queued or ordered any.
   */
  async tick(): Promise<boolean> {
    const reclaims = await this.reclaim();
    const rented = await this.desk.order();
    const staked = await this.stake();
    return reclaims > 0 || rented > 0 || staked;
  }

  private async reclaim(): Promise<number> {
    const due = await dueReclaims(
      this.o.db,
      this.scope,
      { index: HOT_WALLET_INDEX, address: this.hotWallet },
      // A delegation whose transfer stays open longer than a transfer may wait for energy comes back.
      { now: new Date(this.o.clock.now()), staleMs: this.o.policy.maxWaitMs },
    );
    if (due.length === 0) return 0;
    await this.o.db.transaction().execute(async (trx) => {
      for (const d of due)
        await requestTransfer(trx, {
          intentId: d.reclaimId,
          kind: "resource_reclaim",
          network: this.o.network,
          environment: this.o.environment,
          asset: d.asset,
          fromIndex: d.fromIndex,
          to: d.to,
          amount: d.amount,
        });
    });
    return due.length;
  }

  private async stake(): Promise<boolean> {
    if (await hasOpenStake(this.o.db, this.scope)) return false;
    const r = this.o.writer.resources;
    const [liquid, staked] = await Promise.all([
      this.o.writer.nativeBalance(this.resourceAccount),
      r.staked(this.resourceAccount),
    ]);
    // What reserves count as held for fees and stake (the round reads it anyway).
    await recordResourceAccount(
      this.o.db,
      this.scope,
      { address: this.resourceAccount, liquid, staked: staked.energy + staked.bandwidth },
      new Date(this.o.clock.now()),
    );
    const next = nextStake(this.o.policy, liquid, staked);
    if (!next) return false;
    await this.o.db.transaction().execute(async (trx) => {
      await requestTransfer(trx, {
        intentId: `stk_${base62(randomBytes(16))}`,
        kind: "resource_stake",
        network: this.o.network,
        environment: this.o.environment,
        asset: next.asset,
        fromIndex: RESOURCE_ACCOUNT_INDEX,
        to: this.resourceAccount,
        amount: next.sun,
      });
    });
    this.o.logger.info(
      { network: this.o.network, asset: next.asset, sun: next.sun.toString() },
      "resource account stakes its TRX",
    );
    return true;
  }
}
