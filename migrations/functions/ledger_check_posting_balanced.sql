-- ledger_check_posting_balanced(): the deferred constraint trigger `ledger_entries_balanced` on
-- `ledger_entries` (0002). At commit, once per posting written in the transaction, it checks that
-- the posting exists, that its entries name existing accounts, sum to zero and are at least two;
-- for a deposit it then raises the merchant accounts' running balances (ledger_post_unchecked()
-- wrote a deposit without a lock). It runs as the owner (SECURITY DEFINER, 0025): it updates
-- balances no app role may update.
--
-- This file is the one place to read and to change this function. `stablegate migrate` applies
-- it after the versioned migrations, and again whenever this file changes (its checksum differs
-- from the one recorded in `schema_functions`; src/db/migrate.ts).
-- Its history is in the versioned migrations 0002, 0022, 0023 and 0025.
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

create or replace function ledger_check_posting_balanced() returns trigger language plpgsql
security definer set search_path = public, pg_temp as $$
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
  -- the first of which fired this check (earlier ones were applied at their own commit). A system
  -- account keeps no running balance (null): the update's own condition leaves it alone (0023).
  if posting_kind = 'deposit' then
    for line in
      select e.account_id, sum(e.amount) as amount from ledger_entries e
      where e.posting_id = new.posting_id and e.id >= new.id
      group by e.account_id
    loop
      update ledger_accounts set balance = balance + line.amount
      where id = line.account_id and balance is not null;
    end loop;
  end if;
  perform set_config('stablegate.ledger_checked', new.posting_id || ':' || last_entry, true);
  return null;
end $$;
