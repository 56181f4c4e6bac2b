-- Ledger: double-entry accounts, immutable postings and entries, and the transactions table
-- shared by deposits, withdrawals and payouts (SPEC §2.2).
create extension if not exists pg_trgm;

-- Accounts. Merchant accounts (`available`, `held`) keep a running balance, updated in the same
-- transaction as their entries under a row lock, and may never go negative (CHECK below: even a
-- bug cannot store one). System accounts (`chain_incoming`, `chain_outgoing`, `fees`) have no
-- running balance: every posting touches them, so a stored balance would serialise all money
-- movement of an environment on one row; their balance is the sum of their entries.
create table ledger_accounts (
  id             bigint generated always as identity primary key,
  owner          text not null,            -- a merchant id, or 'system'
  environment    text not null check (environment in ('production', 'sandbox')),
  currency_type  text not null check (currency_type in ('USDT-TRC20', 'USDT-ERC20')),
  kind           text not null check (kind in ('available', 'held', 'chain_incoming', 'chain_outgoing', 'fees')),
  balance        numeric(38,0),
  created_at     timestamptz not null default now(),
  unique (owner, environment, currency_type, kind),
  check ((owner = 'system') = (kind in ('chain_incoming', 'chain_outgoing', 'fees'))),
  check ((owner = 'system') = (balance is null)),
  check (balance is null or balance >= 0)
);

insert into ledger_accounts (owner, environment, currency_type, kind)
select 'system', e, c, k
from unnest(array['production', 'sandbox']) as e,
     unnest(array['USDT-TRC20', 'USDT-ERC20']) as c,
     unnest(array['chain_incoming', 'chain_outgoing', 'fees']) as k;

-- A posting is one balanced movement, identified by its business key (idempotency: posting the
-- same business event twice posts once).
create table ledger_postings (
  id              bigint generated always as identity primary key,
  business_key    text not null unique,
  kind            text not null check (kind in ('deposit', 'hold', 'release', 'settle')),
  environment     text not null check (environment in ('production', 'sandbox')),
  transaction_id  text,
  created_at      timestamptz not null default now()
);

create table ledger_entries (
  id          bigint generated always as identity primary key,
  posting_id  bigint not null references ledger_postings (id),
  account_id  bigint not null references ledger_accounts (id),
  amount      numeric(38,0) not null check (amount <> 0),
  created_at  timestamptz not null default now()
);
create index ledger_entries_posting_idx on ledger_entries (posting_id);
create index ledger_entries_account_idx on ledger_entries (account_id);

-- Every posting balances: checked at commit for each posting that received entries.
create function ledger_check_posting_balanced() returns trigger language plpgsql as $$
declare
  total numeric;
  n integer;
begin
  select coalesce(sum(amount), 0), count(*) into total, n from ledger_entries where posting_id = new.posting_id;
  if total <> 0 or n < 2 then
    raise exception 'ledger posting % is unbalanced (sum %, % entries)', new.posting_id, total, n
      using errcode = 'check_violation';
  end if;
  return null;
end $$;

create constraint trigger ledger_entries_balanced
  after insert on ledger_entries
  deferrable initially deferred
  for each row execute function ledger_check_posting_balanced();

-- The journal is append-only.
create function ledger_refuse_change() returns trigger language plpgsql as $$
begin
  raise exception 'ledger journal is immutable (% on %)', tg_op, tg_table_name using errcode = 'insufficient_privilege';
end $$;

create trigger ledger_postings_immutable before update or delete on ledger_postings
  for each row execute function ledger_refuse_change();
create trigger ledger_entries_immutable before update or delete on ledger_entries
  for each row execute function ledger_refuse_change();

-- Transactions: the merchant-facing record of a deposit, withdrawal or payout (SPEC §2.2).
create table transactions (
  id                   text primary key,
  merchant_id          text not null references merchants (id),
  environment          text not null check (environment in ('production', 'sandbox')),
  type                 text not null check (type in ('deposit', 'withdrawal', 'payout')),
  status               text not null
                         check (status in ('pending', 'processing', 'confirmed', 'completed', 'failed', 'rejected')),
  currency_type        text not null check (currency_type in ('USDT-TRC20', 'USDT-ERC20')),
  amount               numeric(38,0) not null check (amount > 0),
  fee                  numeric(38,0) not null default 0 check (fee >= 0),
  net_amount           numeric(38,0) not null,
  actual_balance       numeric(38,0) check (actual_balance >= 0),
  wallet_address       text,
  blockchain_tx_hash   text,
  order_id             text,
  reference            text,
  external_user_id     text,
  checkout_session_id  text references transactions (id),
  rejection_reason     text,
  metadata             jsonb,
  created_at           timestamptz not null default now(),
  updated_at           timestamptz not null default now(),
  confirmed_at         timestamptz,
  check (net_amount = amount - fee),
  check (actual_balance is null or type = 'deposit'),
  -- Literal search (CONTRACT §4.4) runs over this text with a trigram index.
  search_text          text generated always as (
    lower(id || ' ' || coalesce(wallet_address, '') || ' ' || coalesce(blockchain_tx_hash, '') || ' ' ||
          coalesce(order_id, '') || ' ' || coalesce(reference, '') || ' ' || coalesce(external_user_id, '') || ' ' ||
          coalesce(checkout_session_id, ''))
  ) stored
);

-- One index per list order a merchant can ask for (CONTRACT §4.5), each led by the tenant.
create index transactions_created_idx   on transactions (merchant_id, environment, created_at, id);
create index transactions_updated_idx   on transactions (merchant_id, environment, updated_at, id);
create index transactions_amount_idx    on transactions (merchant_id, environment, amount, id);
create index transactions_status_idx    on transactions (merchant_id, environment, status, created_at, id);
create index transactions_confirmed_idx on transactions (merchant_id, environment, confirmed_at, id);
create index transactions_type_idx      on transactions (merchant_id, environment, type, status, created_at, id);
create index transactions_search_idx    on transactions using gin (search_text gin_trgm_ops);
