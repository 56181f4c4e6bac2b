import { normalizeAddress, type ResourceReads } from "../chains/index.js";
import type { Db } from "../db/database.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import type { Clock } from "../lib/clock.js";
import type { Logger } from "../observability/logger.js";
import {
  claimRental,
  type GateRow,
  markRentalOrdered,
  openRentalTo,
  rentalFailedSince,
  rentalServing,
  rentalsToOrder,
  settleRental,
  staleRentalClaims,
} from "../sender/index.js";
import { HOT_WALLET_INDEX } from "../wallet/index.js";
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

export interface RentalDeskOptions {
  db: Db;
  scope: { network: CurrencyType; environment: Environment };
  /** The provider; undefined: none configured (open rentals are still closed). */
  rental: EnergyRental | undefined;
  resources: ResourceReads;
  /** How long a transfer waits for rented energy after the order (default 10 min). */
  rentalWaitMs: number | undefined;
  logger: Logger;
  clock: Clock;
}

/**
 * The energy engine's rentals (decision 21 of docs/decisions/tron-resources.md): the provider's
 * price, the orders, and whether rented energy arrived, failed or expired. The engine decides
 * when to rent (`chooseEnergy`) and asks (`requestRental`); the desk does the rest.
 */
export class RentalDesk {
  /** The provider's last quote, as milli-sun per unit (null: it failed), and until when it holds. */
  private quote: { milliSunPerUnit: bigint | null; until: number } | null = null;

  constructor(private readonly o: RentalDeskOptions) {}

  /**
   * Rented energy on its way to `address` (its transfers wait for it): null when none is open;
   * true once the chain shows what `rows` need (the rental is then `delivered`), false until then.
   */
  async arrived(address: string, rows: readonly Pick<GateRow, "asset" | "to_address" | "amount">[]) {
    const rental = await openRentalTo(this.o.db, this.o.scope, address);
    if (!rental) return null;
    if (!(await this.covered(address, rows))) return false;
    await settleRental(this.o.db, rental.id, "delivered", null, new Date(this.o.clock.now()));
    this.o.logger.info(
      { network: this.o.scope.network, to: address, rental: rental.id, energy: rental.energy.toString() },
      "rented energy arrived",
    );
    return true;
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
    const address = normalizeAddress(this.o.scope.network, from);
    const now = this.o.clock.now();
    const open = await openRentalTo(db, this.o.scope, address);
    const waitMs = this.o.rentalWaitMs ?? 600_000;
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
          {
            alert: "energy_rental_not_delivered",
            network: this.o.scope.network,
            to: address,
            rental: open.id,
          },
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
      const e = await this.o.resources.transferEnergy(address, row.to_address, BigInt(row.amount));
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
  async price(db: Db, receiver: string, energy: bigint, rentFor: string | null): Promise<bigint | null> {
    const rental = this.o.rental;
    if (!rental) return null;
    const since = new Date(this.o.clock.now() - RENTAL_RETRY_AFTER_MS);
    if (await openRentalTo(db, this.o.scope, receiver)) return null;
    if (rentFor && (await rentalServing(db, rentFor))) return null;
    if (await rentalFailedSince(db, this.o.scope, receiver, since)) return null;
    const now = this.o.clock.now();
    if (!this.quote || this.quote.until <= now) {
      let milliSunPerUnit: bigint | null = null;
      try {
        milliSunPerUnit = ((await rental.quote(Number(energy))) * 1_000n) / energy;
      } catch (err) {
        this.o.logger.warn(
          { err, network: this.o.scope.network, provider: rental.name },
          "energy rental: no price",
        );
      }
      this.quote = { milliSunPerUnit, until: now + RENTAL_PRICE_TTL_MS };
    }
    const perUnit = this.quote.milliSunPerUnit;
    // Rounded up: the comparison with the burn never favours the rental by rounding. The order
    // itself is checked against the operator's cap on a fresh quote (itrx-rental.ts).
    return perUnit === null ? null : (perUnit * energy + 999n) / 1_000n;
  }

  /**
   * Orders the requested rentals whose receiver is activated. Each is claimed (committed) before
   * the provider is called: a worker dying after the claim leaves it `ordering`, which becomes
   * `unknown` (an alert) — never ordered twice. A refusal closes it; no answer leaves its fate
   * `unknown`: the chain decides whether the energy came, within the rental's wait.
   */
  async order(): Promise<number> {
    const rental = this.o.rental;
    if (!rental) return 0;
    const db = this.o.db;
    const now = () => new Date(this.o.clock.now());
    for (const id of await staleRentalClaims(
      db,
      this.o.scope,
      new Date(this.o.clock.now() - RENTAL_CLAIM_STALE_MS),
    )) {
      await settleRental(db, id, "unknown", "its order was interrupted before the provider answered", now());
      this.o.logger.error(
        { alert: "energy_rental_unknown", network: this.o.scope.network, rental: id, provider: rental.name },
        "ALERT: an energy rental order was interrupted; whether the provider took it is unknown (see its account)",
      );
    }
    let ordered = 0;
    for (const r of await rentalsToOrder(db, this.o.scope, 10)) {
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
              network: this.o.scope.network,
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
            network: this.o.scope.network,
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
            { err, network: this.o.scope.network, rental: r.id },
            "energy rental refused; the fee burns",
          );
        else
          this.o.logger.error(
            {
              alert: "energy_rental_unknown",
              err,
              network: this.o.scope.network,
              rental: r.id,
              provider: rental.name,
            },
            "ALERT: an energy rental order got no answer; the chain decides whether it came",
          );
      }
    }
    return ordered;
  }
}
