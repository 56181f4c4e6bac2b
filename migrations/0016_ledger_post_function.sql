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
  n integer := cardinality(p_accounts);
  wants_available boolean := 'available' = any (p_accounts);
  wants_held boolean := 'held' = any (p_accounts);
  wanted integer;
  available_id bigint;
  available_balance numeric;
  held_id bigint;
  held_balance numeric;
  account record;
  existing record;
  account_ids bigint[] := '{}';
  account_id bigint;
  posting bigint;
  i integer;
begin
  if n is distinct from cardinality(p_amounts) then
    raise exception 'ledger_post %: % accounts for % amounts', p_business_key, n, cardinality(p_amounts)
      using errcode = 'invalid_parameter_value';
  end if;

  -- 1. Lock (rows are locked in the ORDER BY order: LockRows runs above the sort).
  wanted := wants_available::integer + wants_held::integer;
  if wanted > 0 then
    for attempt in 1..2 loop
      for account in
        select a.id, a.kind, a.balance from ledger_accounts a
        where a.owner = p_merchant and a.environment = p_environment and a.currency_type = p_currency_type
          and ((wants_available and a.kind = 'available') or (wants_held and a.kind = 'held'))
        order by a.id for update
      loop
        if account.kind = 'available' then
          available_id := account.id;
          available_balance := account.balance;
        else
          held_id := account.id;
          held_balance := account.balance;
        end if;
      end loop;
      exit when (available_id is not null)::integer + (held_id is not null)::integer = wanted;
      -- First movement of this merchant in this currency: both kinds, always in the same order,
      -- so concurrent creators cannot deadlock; then lock.
      insert into ledger_accounts (owner, environment, currency_type, kind, balance)
      values (p_merchant, p_environment, p_currency_type, 'available', 0),
             (p_merchant, p_environment, p_currency_type, 'held', 0)
      on conflict (owner, environment, currency_type, kind) do nothing;
    end loop;
    if (available_id is not null)::integer + (held_id is not null)::integer <> wanted then
      raise exception 'ledger_post %: merchant accounts of % missing after their creation', p_business_key,
        p_merchant using errcode = 'foreign_key_violation';
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
  for i in 1..n loop
    if (p_accounts[i] = 'available' and available_balance + p_amounts[i] < 0)
       or (p_accounts[i] = 'held' and held_balance + p_amounts[i] < 0) then
      return query select 'insufficient_balance', null::text, p_accounts[i],
        (case when p_accounts[i] = 'available' then available_balance else held_balance end)::text,
        (-p_amounts[i])::text;
      return;
    end if;
  end loop;

  -- 4. The posting, the balances, the entries.
  insert into ledger_postings (business_key, kind, environment, transaction_id)
  values (p_business_key, p_kind, p_environment, p_transaction_id)
  on conflict (business_key) do nothing
  returning id into posting;
  if posting is null then
    return query select 'concurrent', null::text, null::text, null::text, null::text;
    return;
  end if;

  for i in 1..n loop
    if p_accounts[i] = 'available' then
      update ledger_accounts set balance = balance + p_amounts[i] where id = available_id;
      account_id := available_id;
    elsif p_accounts[i] = 'held' then
      update ledger_accounts set balance = balance + p_amounts[i] where id = held_id;
      account_id := held_id;
    else
      select a.id into account_id from ledger_accounts a
      where a.owner = 'system' and a.environment = p_environment and a.currency_type = p_currency_type
        and a.kind = p_accounts[i];
      if account_id is null then
        raise exception 'ledger_post %: no system account % for % %', p_business_key, p_accounts[i],
          p_environment, p_currency_type using errcode = 'foreign_key_violation';
      end if;
    end if;
    account_ids := account_ids || account_id;
  end loop;

  insert into ledger_entries (posting_id, account_id, amount)
  select posting, e.account_id, e.amount from unnest(account_ids, p_amounts) with ordinality as e(account_id, amount, i)
  order by e.i;

  return query select 'posted', posting::text, null::text, null::text, null::text;
end $$;
