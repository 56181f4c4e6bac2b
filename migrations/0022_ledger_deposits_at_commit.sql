-- A deposit's credit takes no lock until its commit (issue 23: a posting on a busy merchant).
--
-- Before: every posting locked the merchant's account row at its start and kept the lock until its
-- commit was flushed, so one busy merchant's postings queued behind each other's whole transaction
-- (the function, the round trip back to the caller, the caller's other statements, COMMIT, the
-- deferred checks, the WAL flush).
--
-- Now a deposit (the common posting on a busy account, and one that only ever credits it) writes
-- its posting and entries without locking. Its running balances are raised at COMMIT by the
-- deferred trigger that already checked every posting's balance, so the row lock is held only
-- from that update to the end of the commit. A hold, a settle or a release still locks first and
-- checks sufficiency under the lock, exactly as in 0016.
--
-- What stays exact, and what changes:
--   * A running balance never counts a deposit that did not commit: the update runs inside the
--     committing transaction. Nothing committed ever differs from the journal (`ledger verify`).
--   * Sufficiency: a debit locks its rows and sees every committed deposit. It does not see a
--     deposit of its own transaction, not yet applied: it may refuse money credited earlier in the
--     same transaction (the safe direction; no flow posts a deposit and a debit together), and
--     never allows more. A deposit committing meanwhile only raises the balance. The CHECK
--     (balance >= 0) stays.
--   * Inside a transaction that posted a deposit, the stored balance does not show it until
--     COMMIT. Every balance reader (`getBalances`, `ledger verify`, the reserve check) reads
--     outside such a transaction.
--   * Idempotency: the deposit path inserts the posting first, `on conflict (business_key) do
--     nothing`; an insert of the same key by a transaction in flight waits for it, so a replay
--     answers `already_posted` once the first committed, and posts if the first rolled back.
--   * A deposit posting never takes from a merchant account (the function refuses one that does).
--   * Balanced postings and the append-only journal are unchanged; the entries' foreign keys
--     became checks at commit (below).
--
-- The journal's references are checked at commit instead of by foreign keys. A key's check is a
-- query per entry that also takes a share lock on the row it names: on a busy merchant's account
-- row, updated at every commit, that lock and the update met in a multixact at every posting
-- (measured: a third of the hot account's throughput), and a deposit's three entries made six such
-- queries. What the keys guaranteed still holds:
--   * an entry names an account and a posting that exist: the balanced-posting check, which runs
--     at commit for every entry written, also looks both up and refuses the commit otherwise;
--   * they stay: postings and entries are append-only (0002) and cannot be truncated; accounts
--     cannot be deleted or truncated, nor their identity changed.
alter table ledger_entries drop constraint ledger_entries_account_id_fkey;
alter table ledger_entries drop constraint ledger_entries_posting_id_fkey;

create trigger ledger_accounts_fixed
  before delete or update of id, owner, environment, currency_type, kind on ledger_accounts
  for each row execute function ledger_refuse_change();
create trigger ledger_accounts_no_truncate before truncate on ledger_accounts
  for each statement execute function ledger_refuse_change();
create trigger ledger_postings_no_truncate before truncate on ledger_postings
  for each statement execute function ledger_refuse_change();
create trigger ledger_entries_no_truncate before truncate on ledger_entries
  for each statement execute function ledger_refuse_change();

create or replace function ledger_post(
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

create or replace function ledger_check_posting_balanced() returns trigger language plpgsql as $$
declare
  checked text := current_setting('stablegate.ledger_checked', true);
  total numeric;
  n integer;
  last_entry bigint;
  unknown_accounts integer;
  posting_kind text;
  line record;
begin
  -- A posting's entries fire this check one after another at commit, and the first check covers
  -- them all: the others are skipped. `stablegate.ledger_checked` (transaction-local) names the
  -- last posting checked and the highest entry id that check saw; an entry is skipped only if it
  -- belongs to that posting and the check saw it (an entry written after the check, say after a
  -- SET CONSTRAINTS ... IMMEDIATE, has a higher id and is checked).
  if split_part(checked, ':', 1) = new.posting_id::text and new.id <= split_part(checked, ':', 2)::bigint then
    return null;
  end if;
  select coalesce(sum(e.amount), 0), count(*), max(e.id),
         count(*) filter (where not exists (select from ledger_accounts a where a.id = e.account_id)),
         (select p.kind from ledger_postings p where p.id = new.posting_id)
    into total, n, last_entry, unknown_accounts, posting_kind
  from ledger_entries e
  where e.posting_id = new.posting_id;
  if posting_kind is null then
    raise exception 'ledger posting % does not exist (entry %)', new.posting_id, new.id
      using errcode = 'foreign_key_violation';
  end if;
  if unknown_accounts > 0 then
    raise exception 'ledger posting %: % of its % entries name no account', new.posting_id, unknown_accounts, n
      using errcode = 'foreign_key_violation';
  end if;
  if total <> 0 or n < 2 then
    raise exception 'ledger posting % is unbalanced (sum %, % entries)', new.posting_id, total, n
      using errcode = 'check_violation';
  end if;
  -- A deposit's merchant lines are applied to their running balances here, at commit (the
  -- function wrote them without a lock): the entries of this posting written in this transaction,
  -- the first of which fired this check (earlier ones were applied at their own commit).
  if posting_kind = 'deposit' then
    for line in
      select e.account_id, sum(e.amount) as amount from ledger_entries e
      where e.posting_id = new.posting_id and e.id >= new.id
        and exists (select from ledger_accounts a where a.id = e.account_id and a.balance is not null)
      group by e.account_id
    loop
      update ledger_accounts set balance = balance + line.amount where id = line.account_id;
    end loop;
  end if;
  perform set_config('stablegate.ledger_checked', new.posting_id || ':' || last_entry, true);
  return null;
end $$;
