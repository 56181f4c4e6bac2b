-- A ledger posting in one statement (issue 23): `select * from ledger_post(...)` does, inside the
-- caller's transaction, what `src/ledger/post.ts` did in ~6 round trips, in the same order:
--   1. lock the merchant accounts the posting touches, in id order (no deadlocks between postings),
--      creating the merchant's two accounts first on its first movement in this currency;
--   2. idempotency: a posting with the same business key answers `already_posted` (same kind) or
--      `closed_otherwise` (another kind: a hold already closed the other way), writing nothing;
--   3. sufficiency: the first merchant line that would take its account below zero answers
--      `insufficient_balance` with the account, its balance and the amount needed, writing nothing;
--   4. write the posting (`concurrent` if another transaction wrote its business key meanwhile),
--      update the running balances, write the entries.
-- The answers are values, not errors, so the caller decides exactly as before (AppError
-- INVALID_STATE, the `insufficient_balance` result that becomes INSUFFICIENT_BALANCE, the
-- retryable ConcurrentPostingError) and the caller's transaction stays usable.
--
-- PL/pgSQL rather than one data-modifying CTE: every statement of a volatile function takes a new
-- snapshot (READ COMMITTED), so the key check and the balance check, made after the lock, see what
-- a transaction that held the lock before committed. All parts of a CTE share the snapshot taken
-- before the lock wait and would miss a replay committed meanwhile.
--
-- Unchanged and still in force: non-negative merchant balances (CHECK), balanced postings (the
-- deferred constraint trigger `ledger_entries_balanced`), the append-only journal (triggers).
-- `p_accounts[i]`/`p_amounts[i]` are one line each: an account kind (`available`/`held` are the
-- merchant's, the others the environment's system accounts) and a signed amount in base units.
create function ledger_post(
  p_business_key text,
  p_kind text,
  p_environment text,
  p_currency_type text,
  p_merchant text,
  p_transaction_id text,
  p_accounts text[],
  p_amounts numeric[]
) returns table (r_status text, r_posting_id text, r_kind text, r_balance text, r_needed text)
language plpgsql as $$
declare
  merchant_kinds text[];
  locked integer;
  existing record;
  shortfall record;
  posting bigint;
  written integer;
begin
  if cardinality(p_accounts) is distinct from cardinality(p_amounts) then
    raise exception 'ledger_post %: % accounts for % amounts', p_business_key,
      cardinality(p_accounts), cardinality(p_amounts) using errcode = 'invalid_parameter_value';
  end if;

  -- 1. Lock (rows locked in the ORDER BY order: LockRows runs above the sort).
  select coalesce(array_agg(distinct k), '{}') into merchant_kinds
  from unnest(p_accounts) as k where k in ('available', 'held');
  if cardinality(merchant_kinds) > 0 then
    perform 1 from ledger_accounts a
    where a.owner = p_merchant and a.environment = p_environment and a.currency_type = p_currency_type
      and a.kind = any (merchant_kinds)
    order by a.id for update;
    get diagnostics locked = row_count;
    if locked < cardinality(merchant_kinds) then
      -- First movement of this merchant in this currency: both kinds, always in the same order,
      -- so concurrent creators cannot deadlock; then lock.
      insert into ledger_accounts (owner, environment, currency_type, kind, balance)
      values (p_merchant, p_environment, p_currency_type, 'available', 0),
             (p_merchant, p_environment, p_currency_type, 'held', 0)
      on conflict (owner, environment, currency_type, kind) do nothing;
      perform 1 from ledger_accounts a
      where a.owner = p_merchant and a.environment = p_environment and a.currency_type = p_currency_type
        and a.kind = any (merchant_kinds)
      order by a.id for update;
    end if;
  end if;

  -- 2. Idempotency.
  select p.id, p.kind into existing from ledger_postings p where p.business_key = p_business_key;
  if found then
    return query select case when existing.kind = p_kind then 'already_posted' else 'closed_otherwise' end,
      existing.id::text, existing.kind, null::text, null::text;
    return;
  end if;

  -- 3. Sufficiency, in line order (the first short line is reported).
  select l.kind, a.balance, l.amount into shortfall
  from unnest(p_accounts, p_amounts) with ordinality as l(kind, amount, n)
  join ledger_accounts a on a.owner = p_merchant and a.environment = p_environment
    and a.currency_type = p_currency_type and a.kind = l.kind
  where l.kind in ('available', 'held') and a.balance + l.amount < 0
  order by l.n
  limit 1;
  if found then
    return query select 'insufficient_balance', null::text, shortfall.kind, shortfall.balance::text, (-shortfall.amount)::text;
    return;
  end if;

  -- 4. The posting, the balances, the entries.
  insert into ledger_postings (business_key, kind, environment, transaction_id)
  values (p_business_key, p_kind, p_environment, p_transaction_id)
  on conflict (business_key) do nothing
  returning id into posting;
  if posting is null then
    return query select 'concurrent', null::text, null::text, null::text, null::text;
    return;
  end if;

  update ledger_accounts a set balance = a.balance + l.amount
  from unnest(p_accounts, p_amounts) as l(kind, amount)
  where l.kind in ('available', 'held') and a.owner = p_merchant and a.environment = p_environment
    and a.currency_type = p_currency_type and a.kind = l.kind;

  insert into ledger_entries (posting_id, account_id, amount)
  select posting, a.id, l.amount
  from unnest(p_accounts, p_amounts) with ordinality as l(kind, amount, n)
  join ledger_accounts a on a.environment = p_environment and a.currency_type = p_currency_type
    and a.kind = l.kind
    and a.owner = case when l.kind in ('available', 'held') then p_merchant else 'system' end
  order by l.n;
  get diagnostics written = row_count;
  if written <> cardinality(p_accounts) then
    raise exception 'ledger_post %: % of % accounts found (system accounts come from migration 0002)',
      p_business_key, written, cardinality(p_accounts) using errcode = 'foreign_key_violation';
  end if;

  return query select 'posted', posting::text, null::text, null::text, null::text;
end $$;
