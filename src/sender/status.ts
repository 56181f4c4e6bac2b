import { Gauge } from "prom-client";
import type { ChainRegistry, ChainWriter } from "../chains/index.js";
import type { Db } from "../db/database.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import type { Clock } from "../lib/clock.js";
import type { Logger } from "../observability/logger.js";
import { type Metrics, sharedCollect } from "../observability/metrics.js";
import type { ReadinessCheck } from "../observability/readiness.js";
import { transferCosts } from "./costs.js";
import { frozenAddressesOf, recordFreezeCheck } from "./frozen-addresses.js";
import { DISPUTED_PREFIX } from "./transfer-store.js";

const OPEN = ["queued", "signed", "broadcast"] as const;
/** How often `/metrics` re-reads this month's costs (an aggregate over the month's transfers). */
const COSTS_EVERY_MS = 5 * 60_000;

/** Records the hot wallet's and gas tank's balances (what `/readyz` and metrics show). */
export async function recordSendingWallets(
  db: Db,
  chain: { network: CurrencyType; environment: Environment },
  writer: ChainWriter,
  wallets: { hotWallet: string; gasTank: string },
  /** With it, each wallet is also checked against the token's freeze list (`recordFreezeCheck`). */
  freeze?: { isFrozen(address: string): Promise<boolean>; logger: Logger; clock: Clock },
): Promise<void> {
  const rows = [
    { role: "hot_wallet" as const, address: wallets.hotWallet },
    ...(writer.kind === "signed" ? [{ role: "gas_tank" as const, address: wallets.gasTank }] : []),
  ];
  for (const r of rows) {
    const readAt = new Date(freeze ? freeze.clock.now() : Date.now());
    const [token, native] = await Promise.all([
      writer.tokenBalance(r.address),
      writer.kind === "signed" ? writer.nativeBalance(r.address) : Promise.resolve(null),
    ]);
    const values = {
      network: chain.network,
      environment: chain.environment,
      role: r.role,
      address: r.address,
      token_balance: token,
      native_balance: native,
      observed_at: new Date(),
    };
    await db
      .insertInto("sending_wallets")
      .values(values)
      .onConflict((oc) =>
        oc.columns(["network", "environment", "role"]).doUpdateSet({
          address: values.address,
          token_balance: values.token_balance,
          native_balance: values.native_balance,
          observed_at: values.observed_at,
        }),
      )
      .execute();
    // The gas tank sends only the native coin, but a frozen one still says the operator's keys are
    // flagged: recorded and shown alike.
    if (freeze)
      await recordFreezeCheck(
        db,
        { network: chain.network, environment: chain.environment, address: r.address, role: r.role },
        { frozen: await freeze.isFrozen(r.address), balance: token },
        readAt,
        freeze.logger,
      );
  }
}

/**
 * The energy engine's resource account as it last read it (issue #38): its liquid TRX and the TRX it
 * has staked (energy and bandwidth), for reserves (`reserves/`) and the operator.
 */
export async function recordResourceAccount(
  db: Db,
  chain: { network: CurrencyType; environment: Environment },
  account: { address: string; liquid: bigint; staked: bigint },
  now: Date,
): Promise<void> {
  const values = {
    network: chain.network,
    environment: chain.environment,
    role: "resource_account" as const,
    address: account.address,
    token_balance: null,
    native_balance: account.liquid,
    staked_balance: account.staked,
    observed_at: now,
  };
  await db
    .insertInto("sending_wallets")
    .values(values)
    .onConflict((oc) =>
      oc.columns(["network", "environment", "role"]).doUpdateSet({
        address: values.address,
        native_balance: values.native_balance,
        staked_balance: values.staked_balance,
        observed_at: values.observed_at,
      }),
    )
    .execute();
}

/** The native coin (sun, wei) the sending wallets held as last recorded: what fees and stake draw on. */
export async function nativeHoldings(
  db: Db,
  scope: { network: CurrencyType; environment: Environment },
): Promise<{ role: "hot_wallet" | "gas_tank" | "resource_account"; native: bigint; staked: bigint }[]> {
  // Rows with a native balance only: the simulator's wallets have none the sender could read.
  const rows = await db
    .selectFrom("sending_wallets")
    .select(["role", "native_balance", "staked_balance"])
    .where("network", "=", scope.network)
    .where("environment", "=", scope.environment)
    .where("native_balance", "is not", null)
    .orderBy("role")
    .execute();
  return rows.map((r) => ({
    role: r.role,
    native: BigInt(r.native_balance ?? 0),
    staked: BigInt(r.staked_balance ?? 0),
  }));
}

interface SendingSummary {
  hotToken: bigint | null;
  gasNative: bigint | null;
  open: number;
  waitingFunds: number;
  pendingSweeps: number;
  /** Open transfers the chain's providers disagree on (issue #34: they wait; alert on > 0). */
  disputed: number;
  /** Open withdrawals and payouts: what the hot wallet must still pay (base units). */
  demand: bigint;
}

async function summary(db: Db, network: CurrencyType, environment: Environment): Promise<SendingSummary> {
  const [wallets, counts] = await Promise.all([
    db
      .selectFrom("sending_wallets")
      .select(["role", "token_balance", "native_balance"])
      .where("network", "=", network)
      .where("environment", "=", environment)
      .execute(),
    db
      .selectFrom("outgoing_transfers")
      .select((eb) => [
        eb.fn.countAll<string>().as("open"),
        eb.fn.count<string>("waiting_funds_since").as("waiting"),
        eb.fn.sum<string | null>(eb.case().when("kind", "=", "sweep").then(1).else(0).end()).as("sweeps"),
        eb.fn
          .sum<string | null>(
            eb.case().when("last_error", "like", `${DISPUTED_PREFIX}%`).then(1).else(0).end(),
          )
          .as("disputed"),
        eb.fn
          .sum<string | null>(
            eb.case().when("kind", "in", ["withdrawal", "payout"]).then(eb.ref("amount")).else(0).end(),
          )
          .as("demand"),
      ])
      .where("network", "=", network)
      .where("environment", "=", environment)
      .where("status", "in", OPEN)
      .executeTakeFirstOrThrow(),
  ]);
  const hot = wallets.find((w) => w.role === "hot_wallet");
  const gas = wallets.find((w) => w.role === "gas_tank");
  return {
    hotToken: hot?.token_balance == null ? null : BigInt(hot.token_balance),
    gasNative: gas?.native_balance == null ? null : BigInt(gas.native_balance),
    open: Number(counts.open),
    waitingFunds: Number(counts.waiting),
    pendingSweeps: Number(counts.sweeps ?? 0),
    disputed: Number(counts.disputed ?? 0),
    demand: BigInt(counts.demand ?? 0),
  };
}

/**
 * `/readyz` lines `sending:<network>:<environment>`: hot wallet balance, gas tank balance, open
 * transfers, pending sweeps; `degraded` while transfers wait for funds. Never critical.
 */
export function sendingReadinessChecks(chains: ChainRegistry, db: Db, _clock: Clock): ReadinessCheck[] {
  return chains.available().map((chain) => ({
    name: `sending:${chain.network}:${chain.environment}`,
    critical: false,
    async check() {
      const s = await summary(db, chain.network, chain.environment);
      // An own address the token's issuer froze (README.md#frozen-funds): a frozen hot wallet stops
      // this chain's sending (down); a frozen deposit address or gas tank is degraded.
      const frozen = await frozenAddressesOf(db, chain);
      if (frozen.length > 0) {
        const detail = frozen.map(
          (f) => `${f.role} ${f.address} frozen by the token's issuer since ${f.frozenAt.toISOString()}`,
        );
        return {
          status: frozen.some((f) => f.role === "hot_wallet") ? ("down" as const) : ("degraded" as const),
          detail: `${detail.join("; ")}: nothing is sent from it or swept into it`,
        };
      }
      const parts = [
        `hot wallet ${s.hotToken === null ? "not seen yet" : `${s.hotToken} base units`}`,
        ...(chain.kind === "simulator"
          ? []
          : [`gas tank ${s.gasNative === null ? "not seen yet" : `${s.gasNative} (native base units)`}`]),
        `${s.open} open transfers`,
        `${s.pendingSweeps} pending sweeps`,
      ];
      const problems = [
        ...(s.waitingFunds > 0
          ? [`${s.waitingFunds} waiting for funds (fund the hot wallet / gas tank)`]
          : []),
        ...(s.disputed > 0
          ? [`${s.disputed} disputed by the chain's providers (they wait; see chain-providers)`]
          : []),
      ];
      if (problems.length > 0) {
        return { status: "degraded" as const, detail: `${parts.join(", ")}; ${problems.join("; ")}` };
      }
      return { status: "ok" as const, detail: parts.join(", ") };
    },
  }));
}

/**
 * Prometheus gauges read from the database at scrape time (any instance reports the same):
 * `stablegate_hot_wallet_balance`, `stablegate_gas_tank_balance`, `stablegate_outgoing_open`,
 * `stablegate_outgoing_waiting_funds` (alert on > 0), `stablegate_outgoing_disputed` (alert on > 0:
 * the chain's providers disagree on a sent transfer, issue #34), `stablegate_sweeps_pending`, and
 * the month's costs (issue #38): `stablegate_chain_fees_month` and
 * `stablegate_chain_fee_per_served_month` by purpose (`costs.ts`; re-read every 5 minutes).
 */
export function registerSendingMetrics(
  metrics: Metrics,
  chains: ChainRegistry,
  db: Db,
  /** The hot wallet's maximum where cold forwarding is configured: low is under a tenth of it. */
  hotWalletMax: (network: CurrencyType, environment: Environment) => bigint | undefined = () => undefined,
): void {
  const labelNames = ["network", "environment"] as const;
  // One collect refreshes all of them (prom-client awaits it before serialising).
  const collect = sharedCollect(refresh);
  const gauges = {
    hot: new Gauge({
      name: "stablegate_hot_wallet_balance",
      help: "Hot wallet token balance (base units) as last seen",
      labelNames,
      registers: [metrics.registry],
      collect,
    }),
    gas: new Gauge({
      name: "stablegate_gas_tank_balance",
      help: "Gas tank native balance (wei / sun) as last seen",
      labelNames,
      registers: [metrics.registry],
      collect,
    }),
    open: new Gauge({
      name: "stablegate_outgoing_open",
      help: "Outgoing transfers not yet confirmed or failed",
      labelNames,
      registers: [metrics.registry],
      collect,
    }),
    waiting: new Gauge({
      name: "stablegate_outgoing_waiting_funds",
      help: "Queued outgoing transfers waiting for the sending address to be funded",
      labelNames,
      registers: [metrics.registry],
      collect,
    }),
    low: new Gauge({
      name: "stablegate_hot_wallet_low",
      help: "1 when the hot wallet holds less than its open withdrawals and payouts (or under a tenth of HOT_WALLET_MAX_*): fund it before transfers wait",
      labelNames,
      registers: [metrics.registry],
      collect,
    }),
    disputed: new Gauge({
      name: "stablegate_outgoing_disputed",
      help: "Open outgoing transfers the chain's providers disagree on (they wait, neither completed nor failed): alert on > 0",
      labelNames,
      registers: [metrics.registry],
      collect,
    }),
    sweeps: new Gauge({
      name: "stablegate_sweeps_pending",
      help: "Sweeps queued or in flight",
      labelNames,
      registers: [metrics.registry],
      collect,
    }),
    fees: new Gauge({
      name: "stablegate_chain_fees_month",
      help: "Native coin (sun, wei) the gateway's own transfers burned or paid this calendar month (UTC), by purpose: collection, outgoing, stake",
      labelNames: [...labelNames, "purpose"] as const,
      registers: [metrics.registry],
      collect,
    }),
    perServed: new Gauge({
      name: "stablegate_chain_fee_per_served_month",
      help: "This month's fees of a purpose per confirmed sweep (collection) or payment out (outgoing), native base units",
      labelNames: [...labelNames, "purpose"] as const,
      registers: [metrics.registry],
      collect,
    }),
    frozen: new Gauge({
      name: "stablegate_own_addresses_frozen",
      help: "The gateway's own addresses the token's issuer froze (alert on > 0)",
      labelNames,
      registers: [metrics.registry],
      collect,
    }),
  };
  // This month's costs: one aggregate over the month's rows, read at most every COSTS_EVERY_MS.
  let costsReadAt = Number.NEGATIVE_INFINITY;
  async function refreshCosts() {
    if (Date.now() - costsReadAt < COSTS_EVERY_MS) return;
    costsReadAt = Date.now();
    const now = new Date();
    const month = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
    gauges.fees.reset();
    gauges.perServed.reset();
    for (const r of await transferCosts(db, month)) {
      const labels = { network: r.network, environment: r.environment, purpose: r.purpose };
      gauges.fees.set(labels, Number(r.fee));
      if (r.served > 0) gauges.perServed.set(labels, Number(r.fee / BigInt(r.served)));
    }
  }
  async function refresh() {
    await refreshCosts();
    for (const chain of chains.available()) {
      const labels = { network: chain.network, environment: chain.environment };
      const s = await summary(db, chain.network, chain.environment);
      gauges.frozen.set(labels, (await frozenAddressesOf(db, chain)).length);
      if (s.hotToken !== null) gauges.hot.set(labels, Number(s.hotToken));
      if (s.gasNative !== null) gauges.gas.set(labels, Number(s.gasNative));
      gauges.open.set(labels, s.open);
      gauges.waiting.set(labels, s.waitingFunds);
      gauges.sweeps.set(labels, s.pendingSweeps);
      gauges.disputed.set(labels, s.disputed);
      if (s.hotToken !== null) {
        const max = hotWalletMax(chain.network, chain.environment);
        const low = s.hotToken < s.demand || (max !== undefined && s.hotToken < max / 10n);
        gauges.low.set(labels, low ? 1 : 0);
      }
    }
  }
}
