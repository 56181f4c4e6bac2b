-- Frozen custody (issue #40, docs/decisions/frozen-funds.md 13): the coins on one of the gateway's
-- own addresses that the token's issuer froze are moved, in the ledger, from the chain's usable
-- custody to a system account `frozen`; what the issuer destroys there (Tether's
-- `destroyBlackFunds`) is moved on to `written_off`. Both are system accounts (no running
-- balance: the sum of their entries), created with the others by a currency type's first posting
-- (migrations/functions/ledger_post_unchecked.sql, changed with this migration). Their postings
-- have the kind `custody`: system accounts only, no transaction, made by the worker.
do $$
declare
  r record;
begin
  for r in
    select c.conname
    from pg_constraint c
    where c.conrelid = 'ledger_accounts'::regclass and c.contype = 'c'
      and pg_get_constraintdef(c.oid) like '%chain_outgoing%'
  loop
    execute format('alter table ledger_accounts drop constraint %I', r.conname);
  end loop;
  for r in
    select c.conname
    from pg_constraint c
    where c.conrelid = 'ledger_postings'::regclass and c.contype = 'c'
      and pg_get_constraintdef(c.oid) like '%settle%'
  loop
    execute format('alter table ledger_postings drop constraint %I', r.conname);
  end loop;
end $$;

alter table ledger_accounts add constraint ledger_accounts_kind_check
  check (kind in ('available', 'held', 'chain_incoming', 'chain_outgoing', 'fees', 'frozen', 'written_off'));
alter table ledger_accounts add constraint ledger_accounts_system_kinds_check
  check ((owner = 'system') = (kind in ('chain_incoming', 'chain_outgoing', 'fees', 'frozen', 'written_off')));
alter table ledger_postings add constraint ledger_postings_kind_check
  check (kind in ('deposit', 'hold', 'release', 'settle', 'custody'));

-- The two new system accounts of every currency type that already has the others.
insert into ledger_accounts (owner, environment, currency_type, kind)
select distinct 'system', a.environment, a.currency_type, k.kind
from ledger_accounts a
cross join (values ('frozen'), ('written_off')) as k(kind)
where a.owner = 'system'
on conflict (owner, environment, currency_type, kind) do nothing;

-- What the ledger moved to `frozen` for an address (kept equal to its balance while it is frozen)
-- and how many custody postings it made (their business keys are numbered).
alter table frozen_addresses add column frozen_amount numeric(38, 0) not null default 0
  check (frozen_amount >= 0);
alter table frozen_addresses add column postings integer not null default 0;
-- When the reading last applied was taken (before the chain was read): a slower reading taken
-- earlier is not applied over a newer one (two workers check the same wallets).
alter table frozen_addresses add column checked_at timestamptz;

-- The configured cold wallet is an own address too: followed like the others (its freeze stops the
-- forwards into it).
alter table frozen_addresses drop constraint frozen_addresses_role_check;
alter table frozen_addresses add constraint frozen_addresses_role_check
  check (role in ('hot_wallet', 'gas_tank', 'cold_wallet', 'deposit'));

-- Where each chain's follower of the issuer's freeze events (src/sweep/freeze-watch.ts) goes on
-- from: the next block to read.
create table freeze_watch_cursors (
  network      text not null,
  environment  text not null check (environment in ('production', 'sandbox')),
  next_block   bigint not null check (next_block >= 0),
  updated_at   timestamptz not null default now(),
  primary key (network, environment)
);
grant select on freeze_watch_cursors to stablegate_api, stablegate_signer;
grant select, insert, update on freeze_watch_cursors to stablegate_worker;

-- Every screening decision is in the audit log (issue #40): its actor is the gateway itself.
alter table audit_log drop constraint audit_log_actor_type_check;
alter table audit_log add constraint audit_log_actor_type_check
  check (actor_type in ('user', 'api_key', 'system'));
