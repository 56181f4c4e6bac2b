-- The audit log (issue #21): who did what to a merchant's account, append-only. One row per
-- action: sign-ins and failed sign-ins, key create/rotate/revoke, settings changes (before and
-- after), webhook URL and secret changes, payouts, withdrawal approvals and rejections, exports,
-- password and 2FA changes.
create table audit_log (
  id            bigint generated always as identity primary key,
  -- The account the action concerns; null only for a failed sign-in with an unknown e-mail.
  merchant_id   text references merchants (id),
  -- The environment the action was taken in; null for account-wide actions (sign-in, 2FA).
  environment   text check (environment in ('production', 'sandbox')),
  actor_type    text not null check (actor_type in ('user', 'api_key')),
  -- A dashboard user id or an API key id; null for a failed sign-in.
  actor_id      text,
  actor_email   text,
  -- The actor's role when it acted: 'owner' (today every merchant login owns its merchant) or null.
  actor_role    text,
  action        text not null check (action ~ '^[a-z0-9_]+\.[a-z0-9_]+$'),
  target_type   text,
  target_id     text,
  details       jsonb not null default '{}'::jsonb,
  client_ip     text,
  user_agent    text,
  request_id    text,
  created_at    timestamptz not null default now()
);
create index audit_log_merchant_idx on audit_log (merchant_id, created_at, id);

-- Append-only: no update, no truncate, and a delete only by the retention job, which says so in
-- its own transaction (`set local stablegate.audit_retention = 'on'`) and deletes only rows older
-- than the retention it was configured with.
create function audit_log_refuse_change() returns trigger language plpgsql as $$
begin
  if tg_op = 'DELETE' and current_setting('stablegate.audit_retention', true) = 'on' then
    return old;
  end if;
  raise exception 'the audit log is append-only (% on %)', tg_op, tg_table_name using errcode = 'insufficient_privilege';
end $$;

create trigger audit_log_append_only before update or delete on audit_log
  for each row execute function audit_log_refuse_change();
create trigger audit_log_no_truncate before truncate on audit_log
  for each statement execute function audit_log_refuse_change();
