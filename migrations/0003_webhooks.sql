-- Webhooks (SPEC §5.3, §6; CONTRACT §5): per merchant × environment endpoint (URL + signing
-- secrets sealed with SECRET_ENCRYPTION_KEY), the transactional outbox of events, and one row per
-- delivery attempt.

create table webhook_endpoints (
  merchant_id                 text not null references merchants (id),
  environment                 text not null check (environment in ('production', 'sandbox')),
  url                         text,
  -- SecretBox-sealed `whsec_…` secret. Null until first generated: a merchant created by a
  -- process without the encryption key gets it on first use (docs/decisions/webhooks.md).
  secret_sealed               text,
  -- The secret replaced by the last rotation; still signs (Standard Webhooks) until it expires.
  previous_secret_sealed      text,
  previous_secret_expires_at  timestamptz,
  secret_rotated_at           timestamptz,
  updated_at                  timestamptz not null default now(),
  primary key (merchant_id, environment)
);

-- Merchants that exist before this migration get their endpoint rows (secrets generated on first use).
insert into webhook_endpoints (merchant_id, environment)
select m.id, e.environment
from merchants m cross join (values ('production'), ('sandbox')) as e (environment)
on conflict do nothing;

create table webhook_events (
  id                    text primary key,
  merchant_id           text not null references merchants (id),
  environment           text not null check (environment in ('production', 'sandbox')),
  transaction_id        text not null,
  type                  text not null check (type in ('deposit', 'withdrawal', 'payout', 'test')),
  transaction_status    text not null,
  is_test               boolean not null default false,
  -- Per-event destination (a checkout session's callbackUrl); null = the environment's webhookUrl.
  url_override          text,
  -- The URL of the last attempt (or the destination known when the event was written).
  url                   text,
  -- The exact bytes sent (UTF-8 JSON): every attempt carries the same body and signature base.
  body                  text not null,
  delivery_status       text not null default 'pending'
                          check (delivery_status in ('pending', 'delivered', 'failed')),
  attempts              integer not null default 0,
  -- Attempts of the automatic schedule (first + retries); manual retries do not count here.
  auto_attempts         integer not null default 0,
  next_attempt_at       timestamptz,
  -- Lease: the claim token of the worker (or manual retry) holding the event, until locked_until.
  locked_by             text,
  locked_until          timestamptz,
  last_attempt_at       timestamptz,
  last_response_status  integer,
  last_error            text,
  created_at            timestamptz not null default now(),
  updated_at            timestamptz not null default now(),
  delivered_at          timestamptz,
  check ((delivery_status = 'pending') = (next_attempt_at is not null))
);
-- The claim query scans only due pending events.
create index webhook_events_due_idx on webhook_events (next_attempt_at) where delivery_status = 'pending';
create index webhook_events_merchant_idx on webhook_events (merchant_id, environment, created_at desc, id desc);
create index webhook_events_transaction_idx on webhook_events (transaction_id);

create table webhook_attempts (
  id               bigint generated always as identity primary key,
  event_id         text not null references webhook_events (id),
  attempt_number   integer not null,
  manual           boolean not null default false,
  started_at       timestamptz not null,
  url              text,
  response_status  integer,
  latency_ms       integer not null,
  error            text,
  -- First 1 KB of the answer.
  response_body    text,
  worker           text
);
create index webhook_attempts_event_idx on webhook_attempts (event_id, id);
