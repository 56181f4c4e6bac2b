-- Deposits (issue 7): checkout sessions, permanent deposit wallets, idempotency keys.
-- A checkout session IS a deposit transaction (`transactions.id`, CONTRACT §4.1: id = transactionId);
-- this table holds what only a session has. Money stays in `transactions` (amount, actual_balance).

create table checkout_sessions (
  id            text primary key references transactions (id),
  merchant_id   text not null references merchants (id),
  environment   text not null check (environment in ('production', 'sandbox')),
  network       text not null check (network in ('USDT-TRC20', 'USDT-ERC20')),
  address       text not null,
  expires_at    timestamptz not null,
  callback_url  text,
  -- Set when the session reaches `confirmed` or `failed`; open sessions are those with null.
  closed_at     timestamptz,
  created_at    timestamptz not null default now(),
  unique (network, environment, address)
);
-- The expiry job's scan: open sessions by deadline, nothing else in the index.
create index checkout_sessions_open_idx on checkout_sessions (expires_at) where closed_at is null;

-- `/wallet/generate`: a permanent deposit address; every payment to it is its own confirmed deposit.
create table deposit_wallets (
  id                text primary key,
  merchant_id       text not null references merchants (id),
  environment       text not null check (environment in ('production', 'sandbox')),
  network           text not null check (network in ('USDT-TRC20', 'USDT-ERC20')),
  address           text not null,
  label             text,
  external_user_id  text,
  created_at        timestamptz not null default now(),
  unique (network, environment, address)
);
create index deposit_wallets_merchant_idx on deposit_wallets (merchant_id, environment, created_at);

-- A deposit made of exactly one on-chain transfer (a wallet payment, a late session payment)
-- remembers its observation: the same transfer can never become two deposits.
alter table transactions add column chain_observation_id text unique;
alter table transactions add column deposit_wallet_id text references deposit_wallets (id);

-- `Idempotency-Key` (CONTRACT §4): one row per merchant × environment × key, kept 24 h.
-- `running` rows are claimed by a request in flight; `done` rows replay the stored response.
create table idempotency_keys (
  merchant_id      text not null references merchants (id),
  environment      text not null check (environment in ('production', 'sandbox')),
  key              text not null,
  request_hash     text not null,
  state            text not null check (state in ('running', 'done')),
  response_status  integer,
  response_body    text,
  created_at       timestamptz not null default now(),
  locked_at        timestamptz not null default now(),
  primary key (merchant_id, environment, key)
);
create index idempotency_keys_created_idx on idempotency_keys (created_at);

-- Deposit address indexes come from one sequence per (network, environment) instead of the counter
-- row of 0004: `nextval` never waits for another transaction, so concurrent session creations no
-- longer queue behind one row lock held until commit. A value taken by a transaction that rolls
-- back is skipped (a gap), never handed out twice. The sequences continue where the counters were.
create sequence deposit_index_usdt_trc20_production minvalue 100 start with 100;
create sequence deposit_index_usdt_trc20_sandbox minvalue 100 start with 100;
create sequence deposit_index_usdt_erc20_production minvalue 100 start with 100;
create sequence deposit_index_usdt_erc20_sandbox minvalue 100 start with 100;
select setval('deposit_index_' || lower(replace(network, '-', '_')) || '_' || environment, next_index, false)
from address_index_counters where next_index > 100;
drop table address_index_counters;
