-- Currency types come from the registry in the code (src/domain/currency.ts, issue #37): the
-- database no longer lists them. Every CHECK that named USDT-TRC20 and USDT-ERC20 is replaced by
-- the shape of a currency type, `<TOKEN>-<NETWORK>` in capitals and digits; the system ledger
-- accounts of a currency type are created by its first posting (migrations/functions/
-- ledger_post_unchecked.sql, changed with this migration), not listed here.
do $$
declare
  r record;
begin
  for r in
    select c.conrelid::regclass as tbl, c.conname, a.attname
    from pg_constraint c
    join pg_attribute a on a.attrelid = c.conrelid and a.attnum = c.conkey[1]
    where c.contype = 'c' and cardinality(c.conkey) = 1
      and pg_get_constraintdef(c.oid) like '%USDT-ERC20%'
  loop
    execute format('alter table %s drop constraint %I', r.tbl, r.conname);
    execute format('alter table %s add constraint %I check (%I ~ %L)', r.tbl, r.conname, r.attname,
      '^[A-Z0-9]{2,12}-[A-Z0-9]{2,12}$');
  end loop;
end $$;

-- What a token finer than the API's 6 decimals left out of a credited transfer (18-decimal tokens
-- on BNB Smart Chain): on-chain base units, up to a uint256. It stays on the deposit address and
-- the reserve report sums it; it is never credited.
alter table chain_observations add column dust numeric(78, 0) not null default 0 check (dust >= 0);

-- Wrong network (issue #37): a deposit address is also watched on every other enabled currency type
-- of its key space (an EVM address is the same on every EVM network); a transfer found there is
-- credited as its own deposit in the currency type it arrived as, flagged `wrong_network`.
alter table watched_addresses add column wrong_network boolean not null default false;
alter table transactions add column wrong_network boolean not null default false;

-- Deposit address indexes per deposit account from sequences made on first use: the first version
-- of deposit_index_reserve(); its current definition is migrations/functions/deposit_index_reserve.sql.
create function deposit_index_reserve(p_currency_type text, p_environment text, p_count integer)
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
