-- ledger_post_unchecked(): a ledger posting in one statement, inside the caller's transaction
-- (issue 23). It does what `src/ledger/post.ts` needs, in this order:
--   * a deposit (only ever credits a merchant account) writes its posting and entries without a
--     lock; its running balances are raised at COMMIT by ledger_check_posting_balanced();
--   * a hold, a settle or a release locks the merchant accounts it touches in id order (creating
--     the merchant's two accounts on its first movement in this currency), then answers
--     `already_posted`/`closed_otherwise` for a business key posted before, `insufficient_balance`
--     for the first line that would take an account below zero, or writes the posting, updates the
--     running balances and writes the entries;
--   * `concurrent` when another transaction wrote the business key meanwhile (retryable).
-- The answers are values, not errors, so the caller's transaction stays usable.
--
-- Callable by the owner only: every caller goes through ledger_post(), which runs as the owner and
-- checks what an untrusted role may post (0025). Its body is the `ledger_post` of 0022, renamed
-- by 0025.
--
-- This file is the one place to read and to change this function. `stablegate migrate` applies
-- it after the versioned migrations, and again whenever this file changes (its checksum differs
-- from the one recorded in `schema_functions`; src/db/migrate.ts).
-- Its history is in the versioned migrations 0016, 0022, 0025, 0030 (system accounts) and 0032
-- (custody postings, the accounts `frozen` and `written_off`).
-- They stay as they are (an applied migration is checksummed and never edited): do not read
-- them to know what the function does today, and do not redefine it in a new versioned migration.
--
-- To change it, edit this file and add a versioned migration with it (a comment-only file will
-- do: it tells builds which definition is newer, and migrate refuses an edit without one)
-- (CREATE OR REPLACE keeps the function's owner and grants; every
-- other attribute, SECURITY DEFINER and SET included, is what this statement says). A change of
-- its name, arguments or result columns, which CREATE OR REPLACE cannot make, is a versioned
-- migration (drop or rename there), then this file follows. A versioned migration must not rely
-- on this file's definition: on a new database it runs before this file is applied.

create or replace function ledger_post_unchecked(
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
  takes boolean := false;
  wanted integer;
  available_id bigint;
  available_balance numeric;
  held_id bigint;
  held_balance numeric;
  account record;
  existing record;
  ids bigint[];
  kinds text[];
  account_ids bigint[] := '{}';
  account_id bigint;
  posting bigint;
  i integer;
begin
  if n is distinct from cardinality(p_amounts) then
    raise exception 'ledger_post %: % accounts for % amounts', p_business_key, n, cardinality(p_amounts)
      using errcode = 'invalid_parameter_value';
  end if;
  for i in 1..n loop
    if p_accounts[i] in ('available', 'held') and p_amounts[i] < 0 then
      takes := true;
    end if;
  end loop;
  wanted := wants_available::integer + wants_held::integer;

  -- The system accounts of a currency type exist from its first posting on: the registry in the
  -- code lists the currency types (src/domain/currency.ts), not the database (migration 0030).
  -- `written_off` is the newest of them (migration 0032 created it, with `frozen`, beside the
  -- others that existed): where it exists, they all do.
  if not exists (select from ledger_accounts a
                 where a.owner = 'system' and a.environment = p_environment and a.currency_type = p_currency_type
                   and a.kind = 'written_off') then
    insert into ledger_accounts (owner, environment, currency_type, kind)
    select 'system', p_environment, p_currency_type, k
    from unnest(array['chain_incoming', 'chain_outgoing', 'fees', 'frozen', 'written_off']) as k
    on conflict (owner, environment, currency_type, kind) do nothing;
  end if;
  -- A custody posting (migration 0032) moves coins between system accounts only.
  if p_kind = 'custody' and (wants_available or wants_held) then
    raise exception 'ledger_post %: a custody posting touches no merchant account', p_business_key
      using errcode = 'invalid_parameter_value';
  end if;

  if p_kind = 'deposit' and takes then
    raise exception 'ledger_post %: a deposit takes from no merchant account', p_business_key
      using errcode = 'invalid_parameter_value';
  end if;
  if p_kind = 'deposit' then
    -- A deposit: the accounts without a lock (creating the merchant's on its first movement in this
    -- currency), then the posting and its entries. The balances are raised at COMMIT
    -- (ledger_check_posting_balanced).
    for attempt in 1..2 loop
      select array_agg(a.id), array_agg(a.kind) into ids, kinds from ledger_accounts a
      where a.environment = p_environment and a.currency_type = p_currency_type and a.kind = any (p_accounts)
        and a.owner in (p_merchant, 'system');
      exit when attempt = 2
        or ((not wants_available or array_position(kinds, 'available') is not null)
            and (not wants_held or array_position(kinds, 'held') is not null));
      insert into ledger_accounts (owner, environment, currency_type, kind, balance)
      values (p_merchant, p_environment, p_currency_type, 'available', 0),
             (p_merchant, p_environment, p_currency_type, 'held', 0)
      on conflict (owner, environment, currency_type, kind) do nothing;
    end loop;
    for i in 1..n loop
      account_id := ids[array_position(kinds, p_accounts[i])];
      if account_id is null then
        raise exception 'ledger_post %: no % account for % % %', p_business_key, p_accounts[i],
          case when p_accounts[i] in ('available', 'held') then p_merchant else 'system' end,
          p_environment, p_currency_type using errcode = 'foreign_key_violation';
      end if;
      account_ids := account_ids || account_id;
    end loop;

    -- The posting and its entries in one statement; nothing when the key exists (a concurrent
    -- insert of the same key is waited for).
    with p as (
      insert into ledger_postings (business_key, kind, environment, transaction_id)
      values (p_business_key, p_kind, p_environment, p_transaction_id)
      on conflict (business_key) do nothing
      returning id
    ), e as (
      insert into ledger_entries (posting_id, account_id, amount)
      select p.id, l.account_id, l.amount
      from p, unnest(account_ids, p_amounts) with ordinality as l(account_id, amount, i)
      order by l.i
    )
    select p.id into posting from p;
    if posting is null then
      -- Idempotency: the key was posted before.
      select p.id, p.kind into existing from ledger_postings p where p.business_key = p_business_key;
      if not found then
        return query select 'concurrent', null::text, null::text, null::text, null::text;
        return;
      end if;
      return query select case when existing.kind = p_kind then 'already_posted' else 'closed_otherwise' end,
        existing.id::text, existing.kind, null::text, null::text;
      return;
    end if;
    r_status := 'posted';
    r_posting_id := posting::text;
    return next;
    return;
  end if;

  -- A hold, a settle or a release: as in 0016. 1. Lock, in id order (LockRows runs above the sort).
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
    insert into ledger_accounts (owner, environment, currency_type, kind, balance)
    values (p_merchant, p_environment, p_currency_type, 'available', 0),
           (p_merchant, p_environment, p_currency_type, 'held', 0)
    on conflict (owner, environment, currency_type, kind) do nothing;
  end loop;
  if (available_id is not null)::integer + (held_id is not null)::integer <> wanted then
    raise exception 'ledger_post %: merchant accounts of % missing after their creation', p_business_key,
      p_merchant using errcode = 'foreign_key_violation';
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

  r_status := 'posted';
  r_posting_id := posting::text;
  return next;
end $$;
revoke all on function ledger_post_unchecked(text, text, text, text, text, text, text[], numeric[]) from public;
