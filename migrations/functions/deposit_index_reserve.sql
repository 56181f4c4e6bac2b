-- deposit_index_reserve(): `p_count` deposit address indexes of (currency type, environment) from
-- its sequence, in one call (src/wallet/index-reserve.ts reserves them a block at a time). The
-- sequence of a currency type is created by its first call (issue #37: the registry in the code,
-- src/domain/currency.ts, lists the currency types; the database does not), as the owner (SECURITY
-- DEFINER: no app role may create objects). Two first calls at once: one creates it, the other
-- finds it. Indexes start at 100 (0..99 are the system wallets'), as migration 0006's sequences do.
--
-- Executable by the api and the worker only. Migration 0030 created its first version; from then
-- on this file is the one place to read and to change this function. `stablegate migrate` applies
-- it (src/db/migrate.ts). To change it, edit this file and add a versioned migration with it (a
-- comment-only file will do).

create or replace function deposit_index_reserve(p_currency_type text, p_environment text, p_count integer)
returns setof bigint
language plpgsql security definer set search_path = public, pg_temp as $$
declare
  seq text;
begin
  if p_currency_type !~ '^[A-Z0-9]{2,12}-[A-Z0-9]{2,12}$' or p_environment not in ('production', 'sandbox')
     or p_count is null or p_count < 1 or p_count > 1000 then
    raise exception 'deposit_index_reserve: no sequence for % %', p_currency_type, p_environment
      using errcode = 'invalid_parameter_value';
  end if;
  seq := 'deposit_index_' || lower(replace(p_currency_type, '-', '_')) || '_' || p_environment;
  if to_regclass(seq) is null then
    begin
      execute format('create sequence %I minvalue 100 start with 100', seq);
    exception when duplicate_table or unique_violation then
      null; -- created meanwhile by another first call
    end;
  end if;
  return query select nextval(seq::regclass) from generate_series(1, p_count);
end $$;
revoke all on function deposit_index_reserve(text, text, integer) from public;
grant execute on function deposit_index_reserve(text, text, integer) to stablegate_api, stablegate_worker;
