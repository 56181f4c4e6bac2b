import { sql } from "kysely";
import type { Db } from "../db/database.js";
import { type CurrencyType, currencyOf } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";

/**
 * Costs in the books (issue #38, part 3): what the gateway's own transfers cost, from the fee each
 * mined transfer's receipt recorded (`fee_paid`, `resource_used`; migration 0033), per network,
 * environment, month and purpose:
 * - `collection`: getting deposits to the hot wallet — gas top-ups (a fresh TRON address's account
 *   creation included), sweeps, and the energy engine's delegations a sweep waited for and their
 *   reclaims (`rcl_<delegation>`, sender/resource-reads.ts); on EVM with EIP-7702 (issue #39) the
 *   batches that carry sweeps (their gas is on the batch, each of their sweeps counts as served)
 *   and the sweeper contract's deployment;
 * - `outgoing`: withdrawals, payouts, held deposits' returns, cold forwards, and the delegations to
 *   the hot wallet (and reclaims) that served them;
 * - `stake`: the resource account's stakes.
 * The native coin burned or paid (TRON: sun burned; EVM: wei of gas) is the cost; energy a transfer
 * used from stake or delegation is shown beside it (`used`), paid for by capital, not burned. What
 * energy rental providers charged (migration 0035, by the month it was ordered) is a cost too
 * (`rental`, part of `fee`): a sweep's rental is collection, the hot wallet's outgoing.
 */

export type CostPurpose = "collection" | "outgoing" | "stake";

export interface CostRow {
  network: CurrencyType;
  environment: Environment;
  /** `YYYY-MM` of the transfers' finish. */
  month: string;
  purpose: CostPurpose;
  transfers: number;
  /** Native coin burned or paid, base units (sun, wei); energy rentals included. */
  fee: bigint;
  /** Of `fee`, what energy rental providers charged ("paid by rental"). */
  rental: bigint;
  /** Resource consumed (TRON energy, EVM gas). */
  used: bigint;
  /** Of those transfers, the ones that burned nothing. */
  unburned: number;
  /** Confirmed sweeps (collection) or confirmed payments out (outgoing): what the cost is per. */
  served: number;
}

/** The first instant of this month (`now`'s, UTC) and the `months - 1` before it. */
export function costsSince(now: Date, months: number): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - (months - 1), 1));
}

/** What one served transfer cost (`fee / served`, rounded down), or null when none was served. */
export function feePerServed(row: Pick<CostRow, "fee" | "served">): bigint | null {
  return row.served > 0 ? row.fee / BigInt(row.served) : null;
}

/** Finished transfers with a recorded cost since `since`, grouped as `CostRow`s. */
export async function transferCosts(db: Db, since: Date): Promise<CostRow[]> {
  const rows = await sql<{
    network: CurrencyType;
    environment: Environment;
    month: string;
    purpose: CostPurpose;
    transfers: string;
    fee: string | null;
    used: string | null;
    unburned: string;
    served: string;
  }>`
    with t as (
      select o.network, o.environment, to_char(date_trunc('month', o.finished_at), 'YYYY-MM') as month,
        case
          -- EVM batched sweeps (issue #39): the carrier pays the gas of its sweeps, which are
          -- counted as served; the sweeper's deployment is a cost of collection too.
          when o.kind in ('gas_topup', 'sweep', 'sweep_batch', 'sweeper_deploy') then 'collection'
          when o.kind = 'resource_stake' then 'stake'
          -- A delegation served a sweep when the sweep waited for it; a reclaim (rcl_<delegation>)
          -- served what its delegation did. Others served the hot wallet's payments.
          when o.kind in ('resource_delegation', 'resource_reclaim') then
            case when exists (
              select from outgoing_transfers s
              where s.kind = 'sweep'
                and s.after_intent_id = case when o.kind = 'resource_reclaim'
                  then substr(o.intent_id, 5) else o.intent_id end
            ) then 'collection' else 'outgoing' end
          else 'outgoing'
        end as purpose,
        o.kind, o.status, o.fee_paid, o.resource_used
      from outgoing_transfers o
      where o.finished_at >= ${since} and o.status in ('confirmed', 'failed')
    )
    select network, environment, month, purpose,
      count(*) filter (where fee_paid is not null)::text as transfers,
      sum(fee_paid)::text as fee,
      sum(resource_used)::text as used,
      count(*) filter (where fee_paid = 0)::text as unburned,
      count(*) filter (where status = 'confirmed'
        and kind in ('sweep', 'withdrawal', 'payout', 'return', 'cold_forward'))::text as served
    from t
    group by network, environment, month, purpose
    order by month, network, environment, purpose`.execute(db);
  const out = new Map<string, CostRow>();
  const key = (r: { network: string; environment: string; month: string; purpose: string }) =>
    `${r.month}|${r.network}|${r.environment}|${r.purpose}`;
  for (const r of rows.rows) {
    if (Number(r.transfers) === 0) continue;
    out.set(key(r), {
      network: r.network,
      environment: r.environment,
      month: r.month,
      purpose: r.purpose,
      transfers: Number(r.transfers),
      fee: BigInt(r.fee ?? 0),
      rental: 0n,
      used: BigInt(r.used ?? 0),
      unburned: Number(r.unburned),
      served: Number(r.served),
    });
  }
  for (const r of await rentalCosts(db, since)) {
    const row = out.get(key(r)) ?? {
      ...r,
      transfers: 0,
      fee: 0n,
      rental: 0n,
      used: 0n,
      unburned: 0,
      served: 0,
    };
    row.fee += r.paid;
    row.rental += r.paid;
    out.set(key(r), row);
  }
  return [...out.values()].sort(
    (a, b) =>
      a.month.localeCompare(b.month) ||
      a.network.localeCompare(b.network) ||
      a.environment.localeCompare(b.environment) ||
      a.purpose.localeCompare(b.purpose),
  );
}

/** What rental providers charged since `since`, by the month ordered and what it served. */
async function rentalCosts(db: Db, since: Date) {
  const rows = await sql<{
    network: CurrencyType;
    environment: Environment;
    month: string;
    purpose: CostPurpose;
    paid: string;
  }>`
    select network, environment, to_char(date_trunc('month', ordered_at), 'YYYY-MM') as month,
      case when exists (
        select from outgoing_transfers s where s.intent_id = r.serves_intent_id and s.kind = 'sweep'
      ) then 'collection' else 'outgoing' end as purpose,
      sum(paid_sun)::text as paid
    from energy_rentals r
    where ordered_at >= ${since} and paid_sun is not null
    group by 1, 2, 3, 4`.execute(db);
  return rows.rows.map((r) => ({ ...r, paid: BigInt(r.paid) }));
}

/** The native coin's decimals and name of a network (TRON: TRX in sun; EVM: 18 decimals). */
export function nativeUnit(network: CurrencyType): { decimals: number; name: string } {
  return currencyOf(network).definition.family === "tron"
    ? { decimals: 6, name: "TRX" }
    : { decimals: 18, name: "native" };
}

/** A base-unit amount of the native coin with its name, 3 decimal places (rounded down): "1.100 TRX". */
export function formatNative(network: CurrencyType, units: bigint): string {
  return `${native(network, units)} ${nativeUnit(network).name}`;
}

/** A base-unit amount of the native coin as a decimal with 3 places (rounded down). */
function native(network: CurrencyType, units: bigint): string {
  const { decimals } = nativeUnit(network);
  const scale = 10n ** BigInt(decimals - 3);
  const milli = units / scale;
  return `${milli / 1000n}.${(milli % 1000n).toString().padStart(3, "0")}`;
}

/** The cost rows as the operator's table (`stablegate chain costs`). */
export function formatCostTable(rows: CostRow[]): string {
  if (rows.length === 0) return "no finished transfer with a recorded cost in this period";
  const header = [
    "month",
    "currency type",
    "environment",
    "purpose",
    "transfers",
    "burned",
    "rented",
    "per one",
    "used",
    "burned nothing",
  ];
  const lines = rows.map((r) => {
    const unit = nativeUnit(r.network).name;
    const perOne = feePerServed(r);
    const per =
      perOne !== null
        ? `${native(r.network, perOne)} ${unit}/${r.purpose === "collection" ? "deposit" : "payment"}`
        : "-";
    return [
      r.month,
      r.network,
      r.environment,
      r.purpose,
      String(r.transfers),
      `${native(r.network, r.fee - r.rental)} ${unit}`,
      r.rental > 0n ? `${native(r.network, r.rental)} ${unit}` : "-",
      per,
      r.used.toString(),
      String(r.unburned),
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const row = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join("  ")
      .trimEnd();
  return [row(header), ...lines.map(row)].join("\n");
}
