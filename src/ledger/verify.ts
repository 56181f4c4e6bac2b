import { sql } from "kysely";
import type { Db } from "../db/database.js";
import { closedDeposits } from "../transactions/index.js";

export interface LedgerProblem {
  kind: "unbalanced_posting" | "balance_mismatch" | "negative_balance" | "deposit_mismatch";
  detail: string;
}

export interface LedgerReport {
  ok: boolean;
  postings: number;
  entries: number;
  accounts: number;
  problems: LedgerProblem[];
}

/**
 * `stablegate ledger verify`: recomputes every merchant balance from the journal, checks that every
 * posting balances (and has at least two entries) and that no merchant balance is negative, and that
 * every closed deposit's `netAmount` and `fee` are what its posting credited (the books a merchant
 * keeps from the webhooks match the balance).
 */
export async function verifyLedger(db: Db): Promise<LedgerReport> {
  const problems: LedgerProblem[] = [];
  const unbalanced = await sql<{ posting_id: string; total: string; n: string }>`
    select p.id::text as posting_id, coalesce(sum(e.amount), 0)::text as total, count(e.id)::text as n
    from ledger_postings p left join ledger_entries e on e.posting_id = p.id
    group by p.id
    having coalesce(sum(e.amount), 0) <> 0 or count(e.id) < 2`.execute(db);
  for (const r of unbalanced.rows) {
    problems.push({
      kind: "unbalanced_posting",
      detail: `posting ${r.posting_id}: ${r.n} entries summing to ${r.total}`,
    });
  }
  const mismatched = await sql<{
    id: string;
    owner: string;
    environment: string;
    currency_type: string;
    kind: string;
    stored: string;
    journal: string;
  }>`
    select a.id::text, a.owner, a.environment, a.currency_type, a.kind, a.balance::text as stored,
           coalesce((select sum(e.amount) from ledger_entries e where e.account_id = a.id), 0)::text as journal
    from ledger_accounts a
    where a.balance is not null
      and a.balance <> coalesce((select sum(e.amount) from ledger_entries e where e.account_id = a.id), 0)`.execute(
    db,
  );
  for (const r of mismatched.rows) {
    problems.push({
      kind: "balance_mismatch",
      detail: `${r.owner} ${r.environment} ${r.currency_type} ${r.kind} (account ${r.id}): stored ${r.stored}, journal ${r.journal}`,
    });
  }
  const negative = await sql<{ id: string; balance: string }>`
    select id::text, balance::text from ledger_accounts where balance < 0`.execute(db);
  for (const r of negative.rows)
    problems.push({ kind: "negative_balance", detail: `account ${r.id}: ${r.balance}` });

  const deposits = await sql<{ id: string; net_amount: string; fee: string; credited: string; fees: string }>`
    select t.id, t.net_amount::text, t.fee::text, d.credited::text, d.fees::text
    from ${closedDeposits(db).as("t")}
    cross join lateral (
      select coalesce(sum(e.amount) filter (where a.kind = 'available'), 0) as credited,
             coalesce(sum(e.amount) filter (where a.kind = 'fees'), 0) as fees
      from ledger_postings p
      join ledger_entries e on e.posting_id = p.id
      join ledger_accounts a on a.id = e.account_id
      where p.business_key = 'deposit:' || t.id
    ) d
    where t.net_amount <> d.credited or t.fee <> d.fees`.execute(db);
  for (const r of deposits.rows) {
    problems.push({
      kind: "deposit_mismatch",
      detail: `deposit ${r.id}: netAmount ${r.net_amount} and fee ${r.fee}, posting credited ${r.credited} and fee ${r.fees}`,
    });
  }
  const counts = await sql<{ postings: string; entries: string; accounts: string }>`
    select (select count(*) from ledger_postings)::text as postings,
           (select count(*) from ledger_entries)::text as entries,
           (select count(*) from ledger_accounts)::text as accounts`.execute(db);
  const c = counts.rows[0];
  return {
    ok: problems.length === 0,
    postings: Number(c?.postings ?? 0),
    entries: Number(c?.entries ?? 0),
    accounts: Number(c?.accounts ?? 0),
    problems,
  };
}

export function formatLedgerReport(r: LedgerReport): string {
  const head = `ledger: ${r.postings} postings, ${r.entries} entries, ${r.accounts} accounts`;
  if (r.ok)
    return `${head}\nOK: every posting balances, every balance matches its journal, every deposit's netAmount its credit.`;
  return [
    `${head}`,
    `MISMATCH: ${r.problems.length} problem(s)`,
    ...r.problems.map((p) => `  ${p.kind}: ${p.detail}`),
  ].join("\n");
}
