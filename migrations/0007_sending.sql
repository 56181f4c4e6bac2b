-- Sending (chains part 2, issue 6): crash-safe outgoing transfers, per-address nonces, sweeps.
--
-- An outgoing transfer is an intent (withdrawal, payout, sweep, gas top-up) that ends `confirmed` or
-- `failed` exactly once. Its signed bytes are committed (outgoing_transfer_attempts) BEFORE they are
-- broadcast; recovery only ever re-broadcasts stored bytes, replaces them at the same nonce (EVM),
-- or, once a TRON transaction has provably expired unmined, signs a new one.
create table outgoing_transfers (
  intent_id        text primary key,
  kind             text not null check (kind in ('withdrawal', 'payout', 'sweep', 'gas_topup')),
  network          text not null check (network in ('USDT-TRC20', 'USDT-ERC20')),
  environment      text not null check (environment in ('production', 'sandbox')),
  asset            text not null check (asset in ('token', 'native')),
  from_index       integer not null check (from_index >= 0),
  -- Derived from from_index by the sender (requestTransfer knows only the index).
  from_address     text,
  to_address       text not null,
  amount           numeric(38,0) not null check (amount > 0),
  status           text not null default 'queued'
                   check (status in ('queued', 'signed', 'broadcast', 'confirmed', 'failed')),
  -- EVM: the nonce every attempt of this intent uses (replacements keep it).
  nonce            bigint,
  -- A sweep waits for its gas top-up to confirm.
  after_intent_id  text references outgoing_transfers (intent_id),
  -- The mined attempt (final states) and why a transfer failed.
  tx_hash          text,
  block_number     bigint,
  reason           text,
  -- Processing: retries with back-off, last error, when the "waiting for funds" alert was raised.
  errors           integer not null default 0,
  last_error       text,
  next_attempt_at  timestamptz not null default now(),
  waiting_funds_since timestamptz,
  created_at       timestamptz not null default now(),
  updated_at       timestamptz not null default now(),
  finished_at      timestamptz,
  check ((status in ('confirmed', 'failed')) = (finished_at is not null))
);
create index outgoing_transfers_open_idx on outgoing_transfers (network, environment, next_attempt_at)
  where status in ('queued', 'signed', 'broadcast');
create index outgoing_transfers_from_idx on outgoing_transfers (network, environment, from_index)
  where status in ('queued', 'signed', 'broadcast');

-- Every signed version of an intent: the first, fee-bumped replacements (same nonce), and TRON
-- re-signs after a provable expiry. Any of them may be the one mined.
create table outgoing_transfer_attempts (
  intent_id     text not null references outgoing_transfers (intent_id),
  seq           integer not null,
  tx_hash       text not null,
  -- EVM: the serialized signed transaction; TRON: the signed transaction JSON; simulator: ''.
  raw           text not null,
  fee           jsonb not null default '{}',
  expires_at    timestamptz,
  broadcast_at  timestamptz,
  created_at    timestamptz not null default now(),
  primary key (intent_id, seq),
  unique (tx_hash)
);

-- The next nonce of each sending address (EVM), taken under a row lock in the transaction that
-- stores the signed attempt: a crash before that commit consumes no nonce.
create table sender_nonces (
  network      text not null,
  environment  text not null,
  address      text not null,
  next_nonce   bigint not null check (next_nonce >= 0),
  primary key (network, environment, address)
);

-- Balances of the hot wallet and gas tank as the sender last saw them (for /readyz and metrics
-- from any instance without calling the chain).
create table sending_wallets (
  network        text not null,
  environment    text not null,
  role           text not null check (role in ('hot_wallet', 'gas_tank')),
  address        text not null,
  token_balance  numeric(38,0),
  native_balance numeric(38,0),
  observed_at    timestamptz not null default now(),
  primary key (network, environment, role)
);

-- Deposit addresses the sweeper has looked at: an address is looked at again when a deposit
-- was handed off after `checked_at`, or when its last sweep failed (the row is deleted).
create table sweep_checks (
  network     text not null,
  environment text not null,
  address     text not null,
  checked_at  timestamptz not null,
  primary key (network, environment, address)
);
