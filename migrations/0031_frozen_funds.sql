-- Frozen funds (issue #40, README.md#frozen-funds): a deposit whose sender the token's issuer froze
-- or the screening provider refused is recorded as `held` (counted in the merchant's `held`
-- balance, never credited to `available`, never swept) until released (→ `confirmed`) or returned
-- to its sender (→ `returned`). `hold_reason` says why it is held: `token_blacklist` or
-- `screening: <the provider's reason>`; kept after the decision.
alter table transactions drop constraint transactions_status_check;
alter table transactions add constraint transactions_status_check
  check (status in ('pending', 'processing', 'confirmed', 'completed', 'failed', 'rejected', 'held', 'returned'));
alter table transactions add column hold_reason text check (hold_reason is null or length(hold_reason) <= 300);
alter table transactions add constraint transactions_held_is_deposit
  check (status not in ('held', 'returned') or type = 'deposit');
create index transactions_held_idx on transactions (environment, currency_type, wallet_address)
  where status = 'held';

-- The owner's or an admin's decision on a held deposit (`POST /api/v1/dashboard/transactions/{id}/
-- release` or `/return`, step-up in production): recorded by the api, which may not move money,
-- and carried out by a worker (src/sweep/held-decisions.ts): a release credits the deposit, a
-- return sends what arrived back to its sender from the deposit address (`intent_id`). One
-- decision per deposit; a return whose transfer failed is deleted with the deposit held again, so
-- it can be decided anew.
create table held_deposit_decisions (
  transaction_id  text primary key references transactions (id),
  network         text not null,
  environment     text not null check (environment in ('production', 'sandbox')),
  action          text not null check (action in ('release', 'return')),
  decided_by      text not null,
  decided_at      timestamptz not null default now(),
  applied_at      timestamptz,
  intent_id       text unique,
  -- A decision that could not be carried out (a chain fault) waits and is tried again, behind the
  -- others: one never blocks the queue.
  attempts        integer not null default 0,
  next_attempt_at timestamptz,
  last_error      text
);
create index held_deposit_decisions_due_idx on held_deposit_decisions (network, environment, decided_at)
  where applied_at is null;
grant select, insert on held_deposit_decisions to stablegate_api;
grant select, insert, update, delete on held_deposit_decisions to stablegate_worker;
grant select on held_deposit_decisions to stablegate_signer;

-- A return: the one outgoing transfer from a deposit address to the sender of a held deposit.
alter table outgoing_transfers drop constraint outgoing_transfers_kind_check;
alter table outgoing_transfers add constraint outgoing_transfers_kind_check
  check (kind in ('withdrawal', 'payout', 'sweep', 'gas_topup', 'cold_forward', 'return'));

-- The gateway's own addresses found frozen by the token's issuer (issue #40): the hot wallet and
-- the gas tank (checked with their balances), deposit addresses (checked before a sweep). While a
-- row is open (`released_at` null) nothing is signed from the address or swept into a frozen hot
-- wallet, and `/readyz` reports the chain's sending down.
create table frozen_addresses (
  network      text not null,
  environment  text not null check (environment in ('production', 'sandbox')),
  address      text not null,
  role         text not null check (role in ('hot_wallet', 'gas_tank', 'deposit')),
  frozen_at    timestamptz not null default now(),
  released_at  timestamptz,
  primary key (network, environment, address)
);
grant select on frozen_addresses to stablegate_api, stablegate_signer;
grant select, insert, update, delete on frozen_addresses to stablegate_worker;
