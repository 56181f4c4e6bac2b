-- ledger_post(): the only way to write the ledger (`select * from ledger_post(...)`,
-- src/ledger/post.ts). It runs as the owner (SECURITY DEFINER: no app role may write the ledger
-- tables) and checks what an untrusted caller may post: a caller that may not insert
-- `outgoing_transfers` itself (the api) posts only the hold of a withdrawal or payout of its own
-- merchant for exactly its amount, and the release of a rejected withdrawal's hold. Deposits and
-- settlements come from the worker. The posting itself is ledger_post_unchecked().
--
-- Executable by the api and the worker only (the grants below; CREATE OR REPLACE keeps them, and
-- restating them makes this file say who may call it).
--
-- This file is the one place to read and to change this function. `stablegate migrate` applies
-- it after the versioned migrations, and again whenever this file changes (its checksum differs
-- from the one recorded in `schema_functions`; src/db/migrate.ts).
-- Its history is in the versioned migrations 0016, 0022 and 0025.
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
language plpgsql security definer set search_path = public, pg_temp as $$
declare
  t record;
  taken text;
  given text;
begin
  if not has_table_privilege(session_user, 'public.outgoing_transfers', 'INSERT') then
    select x.type, x.status, x.merchant_id, x.environment, x.currency_type, x.amount into t
    from transactions x where x.id = p_transaction_id;
    if p_kind = 'hold' then
      taken := 'available';
      given := 'held';
    elsif p_kind = 'release' then
      taken := 'held';
      given := 'available';
    end if;
    if taken is null
      or t is null
      or t.merchant_id is distinct from p_merchant
      or t.environment is distinct from p_environment
      or t.currency_type is distinct from p_currency_type
      or not (
        (p_kind = 'hold' and t.type in ('withdrawal', 'payout') and t.status in ('pending', 'processing')
          and p_business_key = 'hold:' || p_transaction_id)
        or (p_kind = 'release' and t.type = 'withdrawal' and t.status = 'rejected'
          and p_business_key = 'hold-close:' || p_transaction_id))
      or cardinality(p_accounts) is distinct from 2
      or cardinality(p_amounts) is distinct from 2
      or p_amounts[array_position(p_accounts, taken)] is distinct from -t.amount
      or p_amounts[array_position(p_accounts, given)] is distinct from t.amount
    then
      raise exception 'ledger_post %: the % posting is not this role''s to make', p_business_key, p_kind
        using errcode = 'insufficient_privilege';
    end if;
  end if;
  return query select * from ledger_post_unchecked(p_business_key, p_kind, p_environment, p_currency_type,
    p_merchant, p_transaction_id, p_accounts, p_amounts);
end $$;
revoke all on function ledger_post(text, text, text, text, text, text, text[], numeric[]) from public;
grant execute on function ledger_post(text, text, text, text, text, text, text[], numeric[])
  to stablegate_api, stablegate_worker;
