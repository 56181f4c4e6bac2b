import { randomBytes } from "node:crypto";
import { batchGas, type ChainWriter, CREATE2_DEPLOYER } from "../chains/index.js";
import type { SweepMaxCost } from "../config/chains.js";
import type { Db } from "../db/database.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { base62 } from "../domain/ids.js";
import type { EnergyEngine, SweepPlan } from "../energy/index.js";
import type { Clock } from "../lib/clock.js";
import type { Logger } from "../observability/logger.js";
import {
  assembleCarrier,
  failUncarriedSweeps,
  findTransferSource,
  hasOpenSweep,
  isRecordedFrozen,
  nativeUnit,
  openSweepsFrom,
  recordFreezeCheck,
  requestCarriedSweep,
  requestRental,
  requestTransfer,
  sweeperDeployToWaitFor,
  type TransferOutcomes,
  uncarriedSweeps,
} from "../sender/index.js";
import { heldDepositsAt } from "../transactions/index.js";
import { GAS_TANK_INDEX, HOT_WALLET_INDEX, RESOURCE_ACCOUNT_INDEX } from "../wallet/index.js";
import {
  handedOffAfter,
  pendingObservationsAt,
  recordedAddressAt,
  watchedAddressesOf,
} from "../watcher/index.js";

export interface SweeperOptions {
  db: Db;
  network: CurrencyType;
  environment: Environment;
  writer: ChainWriter;
  address: (index: number) => string;
  /** Token balances at or above this are swept (base units). */
  threshold: bigint;
  logger: Logger;
  clock: Clock;
  /** Addresses looked at per round. Default 100. */
  batchSize?: number;
  /** The token's freeze list (README.md#frozen-funds): a frozen deposit address is not swept. */
  isFrozen?: (address: string) => Promise<boolean>;
  /** TRON's energy engine (issue #38): the sweep's energy delegated instead of burned. */
  energy?: Pick<EnergyEngine, "planSweep">;
  /**
   * Sweep policy (issue #38): a sweep whose own fee is worth more than this share of its amount
   * waits for more deposits to the address (`SWEEP_MAX_COST_PERCENT_<NETWORK>`).
   */
  maxCost?: SweepMaxCost;
  /**
   * EVM batched sweeps (issue #39, `SWEEP_EIP7702_<NETWORK>`): no gas top-ups; each address's sweep
   * is carried by a batch transaction of the gas tank through the EIP-7702 sweeper contract, whose
   * gas stays under `gasBudget` (default 10,000,000) even when every address must be authorised.
   */
  batch?: { gasBudget?: bigint };
  /** Fault injection (tests): called after a round queued carried sweeps, before they are batched. */
  fault?: (point: "before-assemble", count: number) => void | Promise<void>;
}

/** Most addresses one batch carries: all of them authorised in it, within the gas budget. */
export function batchCapacity(gasBudget: bigint): number {
  let n = 0;
  while (batchGas(n + 1, n + 1) <= gasBudget) n++;
  return Math.max(1, n);
}

/** The gas of one batch at most (`batch.gasBudget`): a third of a 30M-gas block. */
export const DEFAULT_BATCH_GAS_BUDGET = 10_000_000n;

/**
 * Moves confirmed deposit balances to the hot wallet. Sweeps move custody only: they never touch
 * the ledger (merchant balances were credited when the deposit confirmed).
 *
 * A deposit address is looked at when a deposit to it was handed off after its last look
 * (`sweep_checks`) and no sweep from it is open. If its token balance reaches the threshold, ONE
 * database transaction queues (ERC20/TRC20) a gas top-up from the gas tank of exactly the
 * shortfall between the transfer's fee (gas estimate × max fee, or TRON energy + bandwidth burn,
 * each with its buffer) and the native coin the address already has, and the sweep itself, which
 * the sender signs only after the top-up is confirmed. Both are ordinary outgoing transfers (same
 * crash safety). The simulator has no gas: its sweeps have no top-up.
 *
 * TRON with the energy engine (`energy`, issue #38): instead of the burn, the top-up only creates
 * the account (1 sun) or pays the bandwidth it lacks, a delegation of the resource account's energy
 * comes between it and the sweep, and the engine takes the energy back once the sweep is final.
 * When the resource account cannot delegate now, the address waits for it (`energy_wait_since`,
 * its `checked_at` kept so that it is looked at again) up to the policy's delay, then burns.
 *
 * Several workers may sweep at once: each look at an address runs in one transaction that locks
 * the address's `sweep_checks` row before it reads the balance (`skip locked`: a worker passes an
 * address another is looking at), so an address gets one sweep however many workers see it.
 */
export class Sweeper {
  constructor(private readonly o: SweeperOptions) {}

  async tick(): Promise<number> {
    const { db, network, environment } = this.o;
    // Nothing is swept into a hot wallet the token's issuer froze (README.md#frozen-funds): it
    // could never move the coins again. The deposits wait at their addresses.
    if (await isRecordedFrozen(db, { network, environment, address: this.o.address(HOT_WALLET_INDEX) }))
      return 0;
    // Batched sweeps turned off while carried sweeps waited for a batch: they are failed and their
    // addresses looked at again below (otherwise their open sweeps would keep them out for ever).
    if (!this.o.batch) await this.releaseUncarried();
    const candidates = await db
      .selectFrom(watchedAddressesOf(db, { network, environment }).as("w"))
      .leftJoin("sweep_checks as s", (j) =>
        j
          .onRef("s.network", "=", "w.network")
          .onRef("s.environment", "=", "w.environment")
          .onRef("s.address", "=", "w.address"),
      )
      .select(["w.address", "w.derivation_index"])
      .where(({ exists, ref }) =>
        exists(
          handedOffAfter(
            db,
            { network: ref("w.network"), environment: ref("w.environment"), address: ref("w.address") },
            ref("s.checked_at"),
          ),
        ),
      )
      .where(({ not, exists, ref }) =>
        not(
          exists(
            openSweepsFrom(db, {
              network: ref("w.network"),
              environment: ref("w.environment"),
              fromIndex: ref("w.derivation_index"),
            }),
          ),
        ),
      )
      // Nothing is swept from an address while a deposit there is held (README.md#frozen-funds).
      .where(({ not, exists, ref }) =>
        not(
          exists(
            heldDepositsAt(db, {
              network: ref("w.network"),
              environment: ref("w.environment"),
              address: ref("w.address"),
            }),
          ),
        ),
      )
      .limit(this.o.batchSize ?? 100)
      .execute();
    let requested = 0;
    for (const c of candidates) {
      try {
        if (await this.sweep(c.address, Number(c.derivation_index))) requested++;
      } catch (err) {
        this.o.logger.warn(
          { err, network, environment, address: c.address },
          "sweep check failed; will retry",
        );
      }
    }
    // Batched sweeps: the carried sweeps without a carrier (this round's, and any a crash left
    // between the two steps) go into batches.
    if (this.o.batch) {
      if (requested > 0) await this.o.fault?.("before-assemble", requested);
      await this.assembleBatches();
    }
    return requested;
  }

  /** Fails carried sweeps left without a batch and forgets the last look at their addresses. */
  private async releaseUncarried(): Promise<void> {
    const { db, network, environment } = this.o;
    await db.transaction().execute(async (trx) => {
      const indexes = await failUncarriedSweeps(trx, { network, environment }, new Date(this.o.clock.now()));
      for (const index of indexes) {
        const address = await recordedAddressAt(trx, network, environment, index);
        if (address)
          await trx
            .deleteFrom("sweep_checks")
            .where("network", "=", network)
            .where("environment", "=", environment)
            .where("address", "=", address)
            .execute();
      }
      if (indexes.length > 0)
        this.o.logger.warn(
          { network, environment, sweeps: indexes.length },
          "batched sweeps are off: carried sweeps left without a batch failed; their addresses are swept again",
        );
    });
  }

  /**
   * Puts the carried sweeps waiting for a carrier into batches of at most `batchCapacity`, each a
   * `sweep_batch` intent of the gas tank. While the sweeper contract of this hot wallet is not on
   * the chain, its deployment is queued first (one at a time) and the batches wait for it. Several
   * workers may assemble at once: each locks the sweeps it carries (`skip locked`).
   */
  private async assembleBatches(): Promise<void> {
    const { db, network, environment, writer } = this.o;
    if (writer.kind !== "signed" || !writer.sweeperDeployed) return;
    const scope = { network, environment };
    const capacity = batchCapacity(this.o.batch?.gasBudget ?? DEFAULT_BATCH_GAS_BUDGET);
    let waiting = await uncarriedSweeps(db, scope, capacity);
    if (waiting.length === 0) return;
    const hot = this.o.address(HOT_WALLET_INDEX);
    let deploy: string | null = null;
    const deployed = writer.sweeperDeployed.bind(writer);
    if (!(await deployed(hot))) {
      const queued = await sweeperDeployToWaitFor(
        db,
        scope,
        { intentId: `dpl_${base62(randomBytes(16))}`, deployer: CREATE2_DEPLOYER },
        async () => !(await deployed(hot)),
      );
      deploy = queued?.intentId ?? null;
      if (queued?.queued)
        this.o.logger.info({ network, environment, intentId: deploy }, "sweeper contract deployment queued");
    }
    while (waiting.length > 0) {
      const itemIds = waiting.map((w) => w.intent_id);
      const carrier = `bat_${base62(randomBytes(16))}`;
      const carried = await db.transaction().execute((trx) =>
        assembleCarrier(trx, scope, {
          intentId: carrier,
          hotWallet: hot,
          itemIds,
          ...(deploy ? { afterIntentId: deploy } : {}),
        }),
      );
      if (carried > 0)
        this.o.logger.info(
          { network, environment, intentId: carrier, addresses: carried },
          "sweep batch queued",
        );
      if (waiting.length < capacity) return;
      waiting = await uncarriedSweeps(db, scope, capacity);
    }
  }

  private async sweep(address: string, index: number): Promise<boolean> {
    const { db, network, environment, writer } = this.o;
    if (this.o.batch) return this.sweepCarried(address, index);
    const hot = this.o.address(HOT_WALLET_INDEX);
    // One look at an address at a time, across workers: its `sweep_checks` row is locked BEFORE
    // the balance is read, and the sweep is queued under that lock. Read before it, two workers
    // would both see the balance and both queue a sweep of it (and a gas top-up), the second of
    // which can never be paid.
    const queued = await db.transaction().execute(async (trx) => {
      if (!(await this.lockForLook(trx, address, index))) return null;
      const look = await this.look(trx, address);
      const { checkedAt, balance } = look;
      let swept = look.swept;
      // TRON's energy engine: the sweep's energy delegated (after a top-up that creates the account
      // or pays its bandwidth), or the sweep waits for it, or burns as below.
      let plan: SweepPlan = { kind: "burn" };
      if (swept && writer.kind === "signed" && this.o.energy)
        plan = await this.o.energy.planSweep(trx, address, balance, await this.waitingSince(trx, address));
      if (plan.kind === "wait") {
        await this.markWaiting(trx, address, checkedAt);
        return { waiting: plan.reason };
      }
      let topUp = 0n;
      // The sweep's own fee (native base units): what it burns, or what its energy's rental costs;
      // delegated energy costs nothing.
      let ownFee = 0n;
      if (plan.kind === "delegate" || plan.kind === "rent") topUp = plan.topUp;
      if (plan.kind === "rent") ownFee = plan.price;
      else if (plan.kind === "burn" && swept && writer.kind === "signed") {
        const [cost, native] = await Promise.all([
          writer.tokenTransferCost(address, hot, balance),
          writer.nativeBalance(address),
        ]);
        topUp = cost > native ? cost - native : 0n;
        ownFee = cost;
      }
      // Too dear for its amount: nothing queued; a new deposit to the address makes it a candidate
      // again (its balance then pays for the fee better), as a balance under the threshold does.
      let deferred: bigint | null = null;
      if (swept && this.tooDear(ownFee, balance)) {
        deferred = ownFee;
        swept = false;
      }
      let afterIntentId: string | undefined;
      if (swept && topUp > 0n) {
        afterIntentId = `gas_${base62(randomBytes(16))}`;
        await requestTransfer(trx, {
          intentId: afterIntentId,
          kind: "gas_topup",
          network,
          environment,
          asset: "native",
          fromIndex: GAS_TANK_INDEX,
          to: address,
          amount: topUp,
        });
      }
      if (swept && plan.kind === "delegate") {
        const delegation = `dlg_${base62(randomBytes(16))}`;
        await requestTransfer(trx, {
          intentId: delegation,
          kind: "resource_delegation",
          network,
          environment,
          asset: "energy",
          fromIndex: RESOURCE_ACCOUNT_INDEX,
          to: address,
          amount: plan.stake,
          ...(afterIntentId ? { afterIntentId } : {}),
        });
        afterIntentId = delegation;
      }
      const sweepId = `swp_${base62(randomBytes(16))}`;
      if (swept && plan.kind === "rent") {
        // Rented energy (decision 21): ordered by the engine once the top-up activated the address;
        // the sweep waits at the energy gate until the chain shows it.
        const asked = await requestRental(
          trx,
          { network, environment },
          {
            id: `rnt_${base62(randomBytes(16))}`,
            receiver: address,
            energy: plan.energy,
            servesIntentId: sweepId,
            maxSun: plan.maxSun,
            ...(afterIntentId ? { afterIntentId } : {}),
          },
          checkedAt,
        );
        // Another rental to it is open (planSweep saw none: a race): nothing queued, looked at again.
        if (!asked) throw new Error("an energy rental to this address is open; looked at again");
      }
      if (swept) {
        await requestTransfer(trx, {
          intentId: sweepId,
          kind: "sweep",
          network,
          environment,
          fromIndex: index,
          to: hot,
          amount: balance,
          ...(afterIntentId ? { afterIntentId } : {}),
        });
      }
      await this.markChecked(trx, address, checkedAt);
      if (deferred !== null) return { deferred, balance };
      return swept
        ? {
            balance,
            topUp,
            delegated: plan.kind === "delegate" ? plan.stake : null,
            rented: plan.kind === "rent" ? plan.energy : null,
          }
        : null;
    });
    if (queued && "waiting" in queued) {
      this.o.logger.info({ network, environment, address, reason: queued.waiting }, "sweep waits for energy");
      return false;
    }
    if (queued && "deferred" in queued && queued.deferred !== undefined) {
      this.o.logger.info(
        { network, environment, address, amount: queued.balance.toString(), fee: queued.deferred.toString() },
        "sweep deferred: its fee is above the network's share of the amount (SWEEP_MAX_COST_PERCENT); waits for more deposits",
      );
      return false;
    }
    if (queued)
      this.o.logger.info(
        {
          network,
          environment,
          address,
          amount: queued.balance.toString(),
          topUp: queued.topUp.toString(),
          delegatedStake: queued.delegated?.toString() ?? null,
          rentedEnergy: queued.rented?.toString() ?? null,
        },
        "sweep queued",
      );
    return queued !== null;
  }

  /**
   * Batched sweeps: under the same lock and checks as `sweep` (threshold, freeze), the address's
   * sweep is queued carried (no top-up: the gas tank pays the batch); `assembleBatches` puts it in a
   * batch at the end of the round.
   */
  private async sweepCarried(address: string, index: number): Promise<boolean> {
    const { db, network, environment } = this.o;
    const hot = this.o.address(HOT_WALLET_INDEX);
    const queued = await db.transaction().execute(async (trx) => {
      if (!(await this.lockForLook(trx, address, index))) return null;
      const { checkedAt, balance, swept } = await this.look(trx, address);
      if (swept)
        await requestCarriedSweep(trx, {
          intentId: `swp_${base62(randomBytes(16))}`,
          network,
          environment,
          fromIndex: index,
          to: hot,
          amount: balance,
        });
      await this.markChecked(trx, address, checkedAt);
      return swept ? balance : null;
    });
    if (queued !== null)
      this.o.logger.info(
        { network, environment, address, amount: queued.toString() },
        "sweep queued for a batch",
      );
    return queued !== null;
  }

  /**
   * Under the address's lock: the moment of the look (taken before the balance is read: a deposit
   * handed off after it is looked at again), the token balance, and whether it is swept now — at
   * the threshold, and not frozen by the token's issuer (a frozen address can never send the token:
   * recorded, an alert, and left).
   */
  private async look(
    trx: Db,
    address: string,
  ): Promise<{ checkedAt: Date; balance: bigint; swept: boolean }> {
    const { network, environment, writer } = this.o;
    const checkedAt = new Date(this.o.clock.now());
    const balance =
      writer.kind === "database"
        ? await writer.tokenBalance(address, trx)
        : await writer.tokenBalance(address);
    let swept = balance >= this.o.threshold;
    if (swept && this.o.isFrozen) {
      const frozen = await this.o.isFrozen(address);
      await recordFreezeCheck(
        trx,
        { network, environment, address, role: "deposit" },
        { frozen, balance },
        checkedAt,
        this.o.logger,
      );
      if (frozen) swept = false;
    }
    return { checkedAt, balance, swept };
  }

  /** The address was looked at `checkedAt` (and waits for energy no more). */
  private async markChecked(trx: Db, address: string, checkedAt: Date): Promise<void> {
    await trx
      .updateTable("sweep_checks")
      .set({ checked_at: checkedAt, energy_wait_since: null })
      .where("network", "=", this.o.network)
      .where("environment", "=", this.o.environment)
      .where("address", "=", address)
      .execute();
  }

  /**
   * Whether a fee of `fee` (native base units) is worth more than the policy's share of `amount`
   * (token base units): fee × price / 10^decimals > amount × basisPoints / 10,000, in integers.
   */
  private tooDear(fee: bigint, amount: bigint): boolean {
    const m = this.o.maxCost;
    if (!m || fee === 0n) return false;
    const scale = 10n ** BigInt(nativeUnit(this.o.network).decimals);
    return fee * m.nativePrice * 10_000n > amount * BigInt(m.basisPoints) * scale;
  }

  /** Since when the address's sweep waits for delegated energy (null: it does not wait). */
  private async waitingSince(trx: Db, address: string): Promise<Date | null> {
    const row = await trx
      .selectFrom("sweep_checks")
      .select("energy_wait_since")
      .where("network", "=", this.o.network)
      .where("environment", "=", this.o.environment)
      .where("address", "=", address)
      .executeTakeFirst();
    return row?.energy_wait_since ?? null;
  }

  /**
   * The address waits for energy from `now` (kept if it already waits). Its `checked_at` stays, so
   * that it is looked at again next round.
   */
  private async markWaiting(trx: Db, address: string, now: Date): Promise<void> {
    await trx
      .updateTable("sweep_checks")
      .set((eb) => ({ energy_wait_since: eb.fn.coalesce("energy_wait_since", eb.val(now)) }))
      .where("network", "=", this.o.network)
      .where("environment", "=", this.o.environment)
      .where("address", "=", address)
      .execute();
  }

  /**
   * Locks the address's `sweep_checks` row in `trx` (created at the epoch, "never looked at", if
   * missing) and re-checks under the lock that no sweep from it is open: another worker may have
   * queued one since the candidates were listed. False when another worker holds the row (it is
   * looking at the address now) or a sweep is open.
   */
  private async lockForLook(trx: Db, address: string, index: number): Promise<boolean> {
    const { network, environment } = this.o;
    await trx
      .insertInto("sweep_checks")
      .values({ network, environment, address, checked_at: new Date(0) })
      .onConflict((oc) => oc.columns(["network", "environment", "address"]).doNothing())
      .execute();
    const locked = await trx
      .selectFrom("sweep_checks")
      .select("address")
      .where("network", "=", network)
      .where("environment", "=", environment)
      .where("address", "=", address)
      .forUpdate()
      .skipLocked()
      .executeTakeFirst();
    if (!locked) return false;
    // Again under the lock: a held deposit recorded since the candidates were listed keeps the
    // address out of this round too.
    const held = await heldDepositsAt(trx, { network, environment, address }).limit(1).executeTakeFirst();
    if (held) return false;
    // A transfer still confirming: its sender is checked at its hand-off (it may be held), so the
    // balance is not swept before; the hand-off makes the address a candidate again.
    const confirming = await pendingObservationsAt(trx, { network, environment, address })
      .limit(1)
      .executeTakeFirst();
    if (confirming) return false;
    return !(await hasOpenSweep(trx, { network, environment }, index));
  }
}

/**
 * The sweeper's outcome handlers: a failed sweep makes its address be looked at again (its
 * `sweep_checks` row goes); gas top-ups need nothing (the sweep waiting for one fails with it).
 */
export function registerSweepOutcomes(outcomes: TransferOutcomes): void {
  outcomes.register("sweep", async (trx, outcome) => {
    if (outcome.status !== "failed") return;
    const row = await findTransferSource(trx, outcome.intentId);
    if (!row) return;
    // Failed before it was signed (its top-up or its delegated energy failed or was taken back),
    // the sweep has no sending address recorded yet: the deposit address of its index.
    const from =
      row.from_address ??
      (await recordedAddressAt(trx, row.network, row.environment, Number(row.from_index)));
    if (!from) return;
    await trx
      .deleteFrom("sweep_checks")
      .where("network", "=", row.network)
      .where("environment", "=", row.environment)
      .where("address", "=", from)
      .execute();
  });
  outcomes.register("gas_topup", async () => {});
  // Batched sweeps (issue #39): the carrier's sweeps finish with it (each through the handler above);
  // a failed deployment leaves the contract missing, so it is queued again by the next batch.
  outcomes.register("sweep_batch", async () => {});
  outcomes.register("sweeper_deploy", async () => {});
}

/**
 * A cold forward (issue #22) moves custody only, like a sweep: nothing to post. Registered so that
 * its outcome is taken (the sender offers every finished transfer to its kind's handler).
 */
export function registerColdForwardOutcomes(outcomes: TransferOutcomes): void {
  outcomes.register("cold_forward", async () => {});
}
