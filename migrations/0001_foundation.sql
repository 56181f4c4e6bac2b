-- Foundation: merchants, API key pairs, merchant settings, worker heartbeats.
-- Every environment-scoped row carries its environment (CONTRACT §1).

create table merchants (
  id            text primary key,
  email         text not null,
  company_name  text not null,
  status        text not null default 'active' check (status in ('active', 'suspended')),
  created_at    timestamptz not null default now(),
  updated_at    timestamptz not null default now()
);
create unique index merchants_email_key on merchants (lower(email));

create table api_keys (
  id              text primary key,
  merchant_id     text not null references merchants (id),
  environment     text not null check (environment in ('production', 'sandbox')),
  api_key         text not null unique,
  secret_hash     bytea not null,
  secret_hint     text not null,
  status          text not null default 'active' check (status in ('active', 'revoked')),
  revoked_reason  text check (revoked_reason in ('revoked', 'rotated')),
  replaced_by     text references api_keys (id),
  created_at      timestamptz not null default now(),
  revoked_at      timestamptz,
  check ((status = 'active') = (revoked_at is null))
);
create index api_keys_merchant_idx on api_keys (merchant_id, environment);

create table merchant_settings (
  merchant_id             text not null references merchants (id),
  environment             text not null check (environment in ('production', 'sandbox')),
  auto_withdraw           boolean not null default true,
  -- Per currency type, base units as decimal strings; a missing currency uses the default.
  auto_approve_threshold  jsonb not null default '{}'::jsonb,
  ip_allowlist            text[] not null default '{}',
  updated_at              timestamptz not null default now(),
  primary key (merchant_id, environment)
);

create table worker_heartbeats (
  instance_id  text primary key,
  role         text not null,
  hostname     text not null,
  pid          integer not null,
  started_at   timestamptz not null,
  seen_at      timestamptz not null
);
