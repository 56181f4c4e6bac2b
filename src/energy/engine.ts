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
  claimRental,
  delegationsInFlight,
  dueReclaims,
  hasOpenStake,
  markRentalOrdered,
  openDelegationTo,
  openRentalTo,
  recordResourceAccount,
  rentalFailedSince,
  rentalServing,
  rentalsToOrder,
  requestDelegationUnlessOpen,
  requestRental,
  requestTransfer,
  settleRental,
  staleRentalClaims,
} from "../sender/index.js";
import { HOT_WALLET_INDEX, RESOURCE_ACCOUNT_INDEX } from "../wallet/index.js";
import { chooseEnergy, ENERGY_MARGIN_PERCENT, type EnergyPolicy, nextStake } from "./policy.js";
import { type EnergyRental, RentalRefusedError } from "./rental.js";

/** After a rental to an address failed (refused, never delivered), none is asked for it this long. */
const RENTAL_RETRY_AFTER_MS = 3_600_000;
/** A claim this old without the provider's answer: its worker died mid-order (`unknown`, an alert). */
const RENTAL_CLAIM_STALE_MS = 120_000;
/**
 * The provider's price per unit is asked at most this often. A sweep is planned inside its
 * database transaction: a slow or hanging provider must not hold it (on the embedded database, the
 * whole service) once per address; a failed quote likewise means "no rental" for this long.
 */
const RENTAL_PRICE_TTL_MS = 60_000;

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
  /** The provider's last quote, as milli-sun per unit (null: it failed), and until when it holds. */
  private rentalQuote: { milliSunPerUnit: bigint | null; until: number } | null = null;

  constructor(private readonly o: EnergyEngineOptions) {
    this.resourceAccount = normalizeAddress(o.network, o.address(RESOURCE_ACCOUNT_INDEX));
    this.hotWallet = normalizeAddress(o.network, o.address(HOT_WALLET_INDEX));
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
    const rentSun = mayRent ? await this.rentalPrice(db, receiver, shortfall, rentFor) : null;
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
    const rental = await openRentalTo(db, this.scope, address);
    if (rental) {
      if (!(await this.covered(address, rows))) return [];
      await settleRental(db, rental.id, "delivered", null, new Date(this.o.clock.now()));
      this.o.logger.info(
        { network: this.o.network, to: address, rental: rental.id, energy: rental.energy.toString() },
        "rented energy arrived",
      );
      return rows;
    }
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
   * The sender's other gate (`EnergyGate.failing`): a rental to `from` open past its wait is closed
   * (`expired`, unless the chain shows its energy after all), and the sweeps whose rental was refused
   * or expired are named, to be failed unsigned and planned again (their address holds 1 sun, not
   * the burn: they could only wait for funds nobody sends). The hot wallet's transfers then burn.
   */
  async failing(index: number, from: string, rows: GateRow[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    const db = this.o.db;
    const address = normalizeAddress(this.o.network, from);
    const now = this.o.clock.now();
    const open = await openRentalTo(db, this.scope, address);
    const waitMs = this.o.policy.rentalWaitMs ?? 600_000;
    // The provider was taken out of the configuration before this rental was ordered: none will be.
    if (open && !this.o.rental && open.status === "requested")
      await settleRental(db, open.id, "refused", "no energy rental provider is configured", new Date(now));
    // The wait counts from the order (an activation may take long before it).
    else if (open?.orderedAt && now - open.orderedAt.getTime() >= waitMs) {
      const came = await this.covered(address, rows);
      await settleRental(
        db,
        open.id,
        came ? "delivered" : "expired",
        came ? null : `no energy on chain after ${waitMs / 1_000} s`,
        new Date(now),
      );
      if (!came)
        this.o.logger.error(
          { alert: "energy_rental_not_delivered", network: this.o.network, to: address, rental: open.id },
          "ALERT: rented energy did not arrive within the wait; the transfers burn or are planned again",
        );
    }
    if (index === HOT_WALLET_INDEX) return out;
    for (const row of rows) {
      if (row.kind !== "sweep") continue;
      const rental = await rentalServing(db, row.intent_id);
      if (rental && (rental.status === "refused" || rental.status === "expired"))
        out.set(
          row.intent_id,
          `energy_rental_${rental.status}: ${rental.reason ?? "no reason given"}; the sweeper plans it again`,
        );
    }
    return out;
  }

  /** Whether `address` has the energy its queued token transfers need (what a rental must deliver). */
  private async covered(
    address: string,
    rows: readonly Pick<GateRow, "asset" | "to_address" | "amount">[],
  ): Promise<boolean> {
    let needed = 0n;
    let available = 0n;
    for (const row of rows) {
      if (row.asset !== "token") continue;
      const e = await this.o.writer.resources.transferEnergy(address, row.to_address, BigInt(row.amount));
      needed += e.needed;
      available = e.available;
    }
    return available >= needed;
  }

  /**
   * What renting `energy` units for `receiver` costs now (sun), or null: no provider, an open or
   * recently failed rental to it, or no price (the provider's fault is logged, the fee burns). The
   * provider is asked at most once a minute (`RENTAL_PRICE_TTL_MS`).
   */
  private async rentalPrice(
    db: Db,
    receiver: string,
    energy: bigint,
    rentFor: string | null,
  ): Promise<bigint | null> {
    const rental = this.o.rental;
    if (!rental) return null;
    const since = new Date(this.o.clock.now() - RENTAL_RETRY_AFTER_MS);
    if (await openRentalTo(db, this.scope, receiver)) return null;
    if (rentFor && (await rentalServing(db, rentFor))) return null;
    if (await rentalFailedSince(db, this.scope, receiver, since)) return null;
    const now = this.o.clock.now();
    if (!this.rentalQuote || this.rentalQuote.until <= now) {
      let milliSunPerUnit: bigint | null = null;
      try {
        milliSunPerUnit = ((await rental.quote(Number(energy))) * 1_000n) / energy;
      } catch (err) {
        this.o.logger.warn(
          { err, network: this.o.network, provider: rental.name },
          "energy rental: no price",
        );
      }
      this.rentalQuote = { milliSunPerUnit, until: now + RENTAL_PRICE_TTL_MS };
    }
    const perUnit = this.rentalQuote.milliSunPerUnit;
    // Rounded up: the comparison with the burn never favours the rental by rounding. The order
    // itself is checked against the operator's cap on a fresh quote (itrx-rental.ts).
    return perUnit === null ? null : (perUnit * energy + 999n) / 1_000n;
  }

  /**
   * One round of the engine's own work: take back the delegations whose use is over, order the
   * rentals asked for, and stake the resource account's TRX above its reserve (one stake at a
   * time). Returns whether it queued or ordered any.
   */
  async tick(): Promise<boolean> {
    const reclaims = await this.reclaim();
    const rented = await this.orderRentals();
    const staked = await this.stake();
    return reclaims > 0 || rented > 0 || staked;
  }

  /**
   * Orders the requested rentals whose receiver is activated. Each is claimed (committed) before
   * the provider is called: a worker dying after the claim leaves it `ordering`, which becomes
   * `unknown` (an alert) — never ordered twice. A refusal closes it; no answer leaves its fate
   * `unknown`: the chain decides whether the energy came, within the rental's wait.
   */
  private async orderRentals(): Promise<number> {
    const rental = this.o.rental;
    if (!rental) return 0;
    const db = this.o.db;
    const now = () => new Date(this.o.clock.now());
    for (const id of await staleRentalClaims(
      db,
      this.scope,
      new Date(this.o.clock.now() - RENTAL_CLAIM_STALE_MS),
    )) {
      await settleRental(db, id, "unknown", "its order was interrupted before the provider answered", now());
      this.o.logger.error(
        { alert: "energy_rental_unknown", network: this.o.network, rental: id, provider: rental.name },
        "ALERT: an energy rental order was interrupted; whether the provider took it is unknown (see its account)",
      );
    }
    let ordered = 0;
    for (const r of await rentalsToOrder(db, this.scope, 10)) {
      if (!(await claimRental(db, r.id, now()))) continue;
      try {
        const receipt = await rental.rent({
          receiver: r.receiver,
          energy: Number(r.energy),
          reference: r.id,
          ...(r.maxSun !== null ? { maxSun: r.maxSun } : {}),
        });
        // A charge above the quote the order was placed on is not believed: the quote is booked,
        // the claim is kept in the reason and raised as an alert (the provider's account tells).
        const over = receipt.paidSun > receipt.quotedSun;
        await markRentalOrdered(db, r.id, {
          provider: rental.name,
          serial: receipt.serial,
          paidSun: over ? receipt.quotedSun : receipt.paidSun,
          reason: over
            ? `the provider says it charged ${receipt.paidSun} sun on a ${receipt.quotedSun} sun quote`
            : null,
        });
        if (over)
          this.o.logger.error(
            {
              alert: "energy_rental_overcharged",
              network: this.o.network,
              rental: r.id,
              provider: rental.name,
              quotedSun: receipt.quotedSun.toString(),
              chargedSun: receipt.paidSun.toString(),
            },
            "ALERT: an energy rental provider says it charged more than its quote; the quote is booked",
          );
        ordered++;
        this.o.logger.info(
          {
            network: this.o.network,
            to: r.receiver,
            rental: r.id,
            provider: rental.name,
            energy: r.energy.toString(),
            paidSun: receipt.paidSun.toString(),
            balanceSun: receipt.balanceSun?.toString() ?? null,
          },
          "energy rented",
        );
      } catch (err) {
        const refused = err instanceof RentalRefusedError;
        await settleRental(
          db,
          r.id,
          refused ? "refused" : "unknown",
          (err as Error).message,
          now(),
          rental.name,
        );
        if (refused)
          this.o.logger.warn(
            { err, network: this.o.network, rental: r.id },
            "energy rental refused; the fee burns",
          );
        else
          this.o.logger.error(
            {
              alert: "energy_rental_unknown",
              err,
              network: this.o.network,
              rental: r.id,
              provider: rental.name,
            },
            "ALERT: an energy rental order got no answer; the chain decides whether it came",
          );
      }
    }
    return ordered;
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
