-- Chains part 1: deposit address allocation, the watcher's cursor, block hashes and observations,
-- and the sandbox simulator's chain state (shared by every api/worker process of a deployment).
-- Block numbers are int8; money is numeric(38,0) base units.

-- Next HD index per (network, environment); advanced atomically by an upsert, never reused.
create table address_index_counters (
  network      text not null check (network in ('USDT-TRC20', 'USDT-ERC20')),
  environment  text not null check (environment in ('production', 'sandbox')),
  next_index   bigint not null check (next_index >= 0),
  primary key (network, environment)
);

-- Addresses the watcher matches transfers against. `watch_until` null = watched for good
-- (/wallet/generate addresses); checkout addresses stop being watched after it.
create table watched_addresses (
  network           text not null check (network in ('USDT-TRC20', 'USDT-ERC20')),
  environment       text not null check (environment in ('production', 'sandbox')),
  address           text not null,
  derivation_index  bigint not null check (derivation_index >= 0),
  merchant_id       text not null references merchants (id),
  purpose           text not null check (purpose in ('checkout', 'wallet')),
  reference_id      text,
  watch_until       timestamptz,
  created_at        timestamptz not null default now(),
  -- The primary key is the index the watcher probes (`address = any($1)`).
  primary key (network, environment, address),
  unique (network, environment, derivation_index)
);
create index watched_addresses_merchant_idx on watched_addresses (merchant_id, environment);

-- One row per (network, environment): how far the watcher has scanned, what it last saw, and
-- which worker holds the scanning lease.
create table chain_cursors (
  network        text not null check (network in ('USDT-TRC20', 'USDT-ERC20')),
  environment    text not null check (environment in ('production', 'sandbox')),
  -- Last block whose transfers are stored (-1: nothing scanned yet).
  cursor_block   bigint not null check (cursor_block >= -1),
  head_block     bigint,
  safe_block     bigint,
  head_seen_at   timestamptz,
  last_error     text,
  last_error_at  timestamptz,
  lease_owner    text,
  lease_until    timestamptz,
  updated_at     timestamptz not null default now(),
  primary key (network, environment)
);

-- Hashes of recently scanned blocks (the end of each scanned range and every block with an
-- observation), to detect reorganisations. Pruned behind the cursor.
create table chain_blocks (
  network      text not null check (network in ('USDT-TRC20', 'USDT-ERC20')),
  environment  text not null check (environment in ('production', 'sandbox')),
  number       bigint not null,
  hash         text not null,
  primary key (network, environment, number)
);

-- Each transfer to a watched address, stored once. `observed` → handed to the deposit logic
-- (`handed_off`); an observation whose block was reorganised away after hand-off is `reorged`.
create table chain_observations (
  id              text primary key,
  network         text not null check (network in ('USDT-TRC20', 'USDT-ERC20')),
  environment     text not null check (environment in ('production', 'sandbox')),
  address         text not null,
  from_address    text not null,
  tx_hash         text not null,
  log_index       integer not null,
  block_number    bigint not null,
  block_hash      text not null,
  amount          numeric(38, 0) not null check (amount >= 0),
  status          text not null default 'observed' check (status in ('observed', 'handed_off', 'reorged')),
  attempts        integer not null default 0,
  last_error      text,
  next_attempt_at timestamptz,
  observed_at     timestamptz not null default now(),
  handed_off_at   timestamptz,
  unique (network, tx_hash, log_index)
);
create index chain_observations_pending_idx on chain_observations (network, environment, block_number)
  where status = 'observed';
create index chain_observations_address_idx on chain_observations (network, environment, address);

-- The sandbox simulator: one chain per (network, environment), in the database so that every
-- process sees the same chain and restarts keep it.
create table sim_chains (
  network      text not null check (network in ('USDT-TRC20', 'USDT-ERC20')),
  environment  text not null check (environment in ('production', 'sandbox')),
  head         bigint not null,
  fork         integer not null default 0,
  nonce        bigint not null default 0,
  primary key (network, environment)
);

create table sim_blocks (
  network      text not null,
  environment  text not null,
  number       bigint not null,
  hash         text not null,
  parent_hash  text not null,
  mined_at     timestamptz not null,
  primary key (network, environment, number),
  foreign key (network, environment) references sim_chains (network, environment)
);

create table sim_transactions (
  network         text not null,
  environment     text not null,
  tx_hash         text not null,
  block_number    bigint not null,
  -- Position of its Transfer log in the block; null for a failed transaction (no log).
  log_index       integer,
  from_address    text not null,
  to_address      text not null,
  amount          numeric(38, 0) not null check (amount > 0),
  status          text not null check (status in ('success', 'failed')),
  failure_reason  text,
  primary key (network, environment, tx_hash),
  foreign key (network, environment, block_number) references sim_blocks (network, environment, number)
    on delete cascade
);
create index sim_transactions_block_idx on sim_transactions (network, environment, block_number);
create index sim_transactions_to_idx on sim_transactions (network, environment, to_address);
create index sim_transactions_from_idx on sim_transactions (network, environment, from_address);
