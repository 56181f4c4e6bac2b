-- Dashboard channel (SPEC §5.2, CONTRACT §6): logins, refresh-token families, e-mailed OTPs,
-- password-reset tokens and the local mail outbox. Logins are global (one login serves both
-- environments); none of these rows is environment-scoped.

-- A dashboard login. role 'merchant' belongs to one merchant; role 'admin' (platform operator,
-- created from the command line) belongs to none and is read-only.
create table dashboard_users (
  id                  text primary key,
  merchant_id         text references merchants (id),
  email               text not null,
  password_hash       text not null,
  role                text not null check (role in ('merchant', 'admin')),
  -- TOTP seed sealed with SECRET_ENCRYPTION_KEY (SecretBox, associated data `totp:<user id>`).
  totp_secret         text,
  totp_enabled        boolean not null default false,
  -- Last accepted TOTP time step: a code is never accepted twice.
  totp_last_step      bigint,
  failed_logins       integer not null default 0,
  locked_until        timestamptz,
  password_changed_at timestamptz not null default now(),
  created_at          timestamptz not null default now(),
  updated_at          timestamptz not null default now(),
  check ((role = 'merchant') = (merchant_id is not null)),
  check (not totp_enabled or totp_secret is not null)
);
create unique index dashboard_users_email_key on dashboard_users (lower(email));
create unique index dashboard_users_merchant_key on dashboard_users (merchant_id) where merchant_id is not null;

-- A sign-in: one refresh-token family. Access tokens name their session, so revoking it (logout,
-- reuse detected, password changed or reset) ends the access tokens at once too.
create table dashboard_sessions (
  id              text primary key,
  user_id         text not null references dashboard_users (id),
  created_at      timestamptz not null default now(),
  last_used_at    timestamptz not null default now(),
  expires_at      timestamptz not null,
  revoked_at      timestamptz,
  revoked_reason  text check (revoked_reason in ('logout', 'reuse', 'password_change', 'password_reset')),
  check ((revoked_at is null) = (revoked_reason is null))
);
create index dashboard_sessions_user_idx on dashboard_sessions (user_id) where revoked_at is null;

-- Every refresh token ever issued in a family (SHA-256 of the token). used_at set = rotated away;
-- presenting a used token again is reuse and revokes the whole family.
create table dashboard_refresh_tokens (
  token_hash  bytea primary key,
  session_id  text not null references dashboard_sessions (id),
  created_at  timestamptz not null default now(),
  used_at     timestamptz
);
create index dashboard_refresh_tokens_session_idx on dashboard_refresh_tokens (session_id);

-- E-mailed one-time passwords: HMAC of the 6 digits, bound to a purpose, 5 tries, single use.
create table dashboard_otps (
  id           text primary key,
  user_id      text not null references dashboard_users (id),
  purpose      text not null check (purpose in ('payout', 'password_change')),
  code_hash    bytea not null,
  attempts     integer not null default 0,
  expires_at   timestamptz not null,
  consumed_at  timestamptz,
  created_at   timestamptz not null default now()
);
create index dashboard_otps_user_idx on dashboard_otps (user_id, purpose, created_at desc);

-- Password-reset links: SHA-256 of the e-mailed token, single use, short-lived.
create table dashboard_password_resets (
  token_hash  bytea primary key,
  user_id     text not null references dashboard_users (id),
  expires_at  timestamptz not null,
  used_at     timestamptz,
  created_at  timestamptz not null default now()
);

-- The local mail outbox (no SMTP_URL, outside production mode): a table, so that every instance
-- and the tests see the same mails.
create table mail_outbox (
  id          text primary key,
  recipient   text not null,
  subject     text not null,
  body        text not null,
  created_at  timestamptz not null default now()
);
create index mail_outbox_recipient_idx on mail_outbox (lower(recipient), created_at desc);
