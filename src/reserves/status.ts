import { sql } from "kysely";
import { Gauge, type Registry } from "prom-client";
import type { Db } from "../db/database.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { formatUnits } from "../domain/money.js";
import type { ReadinessCheck } from "../observability/readiness.js";
import { custodialChains } from "./custody.js";
import type { ReserveReport } from "./reconcile.js";

/** The last reconciliation of each chain, kept for `/readyz` and `/metrics` on every instance. */
export async function recordReserveCheck(db: Db, r: ReserveReport): Promise<void> {
  const values = {
    network: r.network,
    environment: r.environment,
    checked_at: r.checkedAt,
    on_chain: r.onChain,
    in_flight: r.inFlight,
    owed: r.owed,
    pending_sweep: r.pendingSweep,
    shortfall: r.shortfall,
    tolerance: r.tolerance,
    detail: summaryLine(r),
  };
  await db
    .insertInto("reserve_checks")
    .values(values)
    .onConflict((oc) =>
      oc.columns(["network", "environment"]).doUpdateSet({
        checked_at: sql`excluded.checked_at`,
        on_chain: sql`excluded.on_chain`,
        in_flight: sql`excluded.in_flight`,
        owed: sql`excluded.owed`,
        pending_sweep: sql`excluded.pending_sweep`,
        shortfall: sql`excluded.shortfall`,
        tolerance: sql`excluded.tolerance`,
        detail: sql`excluded.detail`,
      }),
    )
    .execute();
}

export function summaryLine(r: ReserveReport): string {
  const u = (v: bigint) => `${formatUnits(v)} USDT`;
  const head = r.ok
    ? r.shortfall > 0n
      ? `covered within the tolerance (short ${u(r.shortfall)})`
      : "covered"
    : `SHORTFALL ${u(r.shortfall)}`;
  return (
    `${head}: on chain ${u(r.onChain)} + in flight ${u(r.inFlight)} against owed ${u(r.owed)} ` +
    `(merchants ${u(r.owedToMerchants)}, fees ${u(r.fees)}); pending sweep ${u(r.pendingSweep)}` +
    (r.notes.length > 0 ? `; ${r.notes.join("; ")}` : "")
  );
}

/** The table `stablegate reconcile` prints. */
export function formatReserveTable(reports: readonly ReserveReport[]): string {
  const header = [
    "chain",
    "hot wallet",
    "gas tank",
    "cold wallet",
    "deposit addr.",
    "in flight",
    "owed",
    "shortfall",
    "status",
  ];
  const rows = reports.map((r) => [
    `${r.network} ${r.environment}`,
    formatUnits(r.hotWallet),
    formatUnits(r.gasTank),
    formatUnits(r.coldWallet),
    `${formatUnits(r.depositAddresses)} (${r.addressesRead})`,
    formatUnits(r.inFlight),
    formatUnits(r.owed),
    formatUnits(r.shortfall),
    r.ok ? "ok" : "SHORTFALL",
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]?.length ?? 0)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join("  ")
      .trimEnd();
  const notes = reports.flatMap((r) => r.notes.map((n) => `${r.network} ${r.environment}: ${n}`));
  if (reports.length === 0)
    notes.push("no chain holds custody here (only the sandbox simulator): nothing to reconcile");
  return [line(header), ...rows.map(line), ...notes].join("\n");
}

const STALE_FACTOR = 3;

/** One `/readyz` line per chain with a reconciliation: down on a shortfall beyond the tolerance. */
export function reserveReadinessChecks(
  chains: { available(): { network: CurrencyType; environment: Environment; kind: string }[] },
  db: Db,
  checkEveryMs: number,
  now: () => number,
): ReadinessCheck[] {
  if (checkEveryMs <= 0) return [];
  return custodialChains(chains).map((chain) => ({
    name: `reserves:${chain.network}:${chain.environment}`,
    critical: false,
    async check() {
      const row = await db
        .selectFrom("reserve_checks")
        .selectAll()
        .where("network", "=", chain.network)
        .where("environment", "=", chain.environment)
        .executeTakeFirst();
      if (!row) return { status: "degraded" as const, detail: "not reconciled yet" };
      const shortfall = BigInt(row.shortfall) > BigInt(row.tolerance);
      const age = now() - row.checked_at.getTime();
      const stale = age > STALE_FACTOR * checkEveryMs ? `; last check ${Math.round(age / 1000)} s ago` : "";
      return {
        status: shortfall ? ("down" as const) : stale ? ("degraded" as const) : ("ok" as const),
        detail: `${row.detail}${stale}`,
      };
    },
  }));
}

/** `stablegate_reserve_*` gauges (token base units), read from `reserve_checks` at scrape time. */
export function registerReserveMetrics(registry: Registry, db: Db): void {
  const labelNames = ["network", "environment"] as const;
  const gauges = {
    on_chain: "What stablegate holds on chain (hot wallet, gas tank, unswept deposit addresses)",
    in_flight: "Outgoing withdrawals and payouts not yet confirmed",
    owed: "What the ledger owes: merchant balances (available and held) and fees",
    shortfall: "Owed minus (on chain + in flight), when positive: alert on > 0",
  } as const;
  let rows: { network: string; environment: string; [k: string]: unknown }[] = [];
  let refreshing: Promise<void> | null = null;
  const refresh = () => {
    refreshing ??= db
      .selectFrom("reserve_checks")
      .selectAll()
      .execute()
      .then((r) => {
        rows = r;
      })
      .finally(() => {
        refreshing = null;
      });
    return refreshing;
  };
  for (const [column, help] of Object.entries(gauges)) {
    new Gauge({
      name: `stablegate_reserve_${column}`,
      help,
      labelNames,
      registers: [registry],
      async collect() {
        await refresh();
        this.reset();
        for (const r of rows)
          this.set({ network: r.network, environment: r.environment }, Number(r[column] as string));
      },
    });
  }
}

const BIG_FIELDS = [
  "hotWallet",
  "gasTank",
  "coldWallet",
  "depositAddresses",
  "onChain",
  "inFlight",
  "pendingSweep",
  "owedToMerchants",
  "fees",
  "owed",
  "shortfall",
  "tolerance",
] as const;

/** Reports as a command returned them: in-process (bigints, Dates) or over the control socket (JSON). */
export function readReserveReports(value: unknown): ReserveReport[] {
  if (!Array.isArray(value)) throw new Error("reserves.reconcile returned no list");
  return value.map((raw: Record<string, unknown>) => {
    const r = { ...raw } as Record<string, unknown>;
    for (const f of BIG_FIELDS) r[f] = BigInt(r[f] as string | bigint);
    r.checkedAt = new Date(r.checkedAt as string | Date);
    const native = r.native as Record<string, string | bigint> | undefined;
    if (native) r.native = Object.fromEntries(Object.entries(native).map(([k, v]) => [k, BigInt(v)]));
    return r as unknown as ReserveReport;
  });
}
