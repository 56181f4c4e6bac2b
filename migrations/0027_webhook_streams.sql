-- Webhook streams (issue #34, findings 5 and 9): what every instance needs to share about the
-- open `GET /api/v1/webhook/stream` connections.
--
-- 1. Their places. A stream holds a connection and a poll, and key pairs are free to mint, so open
--    streams are capped per key, per merchant and in total, counted across every instance here
--    (`webhooks/stream-slots.ts`). A row is a lease: its instance renews it while the stream
--    lives and deletes it when the stream ends; the rows of an instance that died without closing
--    expire (`expires_at`) and are deleted by the next admission.
create table webhook_streams (
  id           text primary key,
  instance_id  text not null,
  merchant_id  text not null,
  environment  text not null check (environment in ('production', 'sandbox')),
  api_key_id   text not null,
  opened_at    timestamptz not null default now(),
  expires_at   timestamptz not null
);
create index webhook_streams_merchant_idx on webhook_streams (merchant_id);
create index webhook_streams_key_idx on webhook_streams (api_key_id);

-- 2. When to re-authorise them (CONTRACT §6: revoking, rotating or demoting ends a long-lived
--    connection within seconds). Every change that can take an API key pair's access away
--    notifies `stablegate_access` at commit, whoever makes it (the API, the operator's CLI, psql):
--    a key's status or holder, the merchant's status, the IP allowlist, a member's role or
--    removal. Each instance re-authorises its streams at once; a periodic re-check is the
--    backstop (a lost LISTEN connection, a change made with triggers off). One notification per
--    transaction: PostgreSQL folds identical ones.
create function notify_access_changed() returns trigger language plpgsql as $$
begin
  perform pg_notify('stablegate_access', '');
  return null;
end $$;

create trigger api_keys_access_changed
  after update on api_keys for each row
  when (old.* is distinct from new.*)
  execute function notify_access_changed();
create trigger api_keys_access_deleted
  after delete on api_keys for each row execute function notify_access_changed();

create trigger merchants_access_changed
  after update on merchants for each row
  when (old.status is distinct from new.status)
  execute function notify_access_changed();
create trigger merchants_access_deleted
  after delete on merchants for each row execute function notify_access_changed();

create trigger merchant_settings_access_changed
  after update on merchant_settings for each row
  when (old.ip_allowlist is distinct from new.ip_allowlist)
  execute function notify_access_changed();

create trigger dashboard_users_access_changed
  after update on dashboard_users for each row
  when (old.member_role is distinct from new.member_role
     or old.removed_at is distinct from new.removed_at
     or old.merchant_id is distinct from new.merchant_id)
  execute function notify_access_changed();
create trigger dashboard_users_access_deleted
  after delete on dashboard_users for each row execute function notify_access_changed();

-- The process roles of migration 0025: the api serves the streams; the worker may write every
-- table but a few, so it gets this one too.
do $$
begin
  if exists (select from pg_roles where rolname = 'stablegate_api') then
    grant select, insert, update, delete on webhook_streams to stablegate_api;
  end if;
  if exists (select from pg_roles where rolname = 'stablegate_worker') then
    grant select, insert, update, delete on webhook_streams to stablegate_worker;
  end if;
end $$;

-- The stream's horizon (webhooks/stream.ts) reads the start of every open transaction on the
-- database from pg_stat_activity, which shows another login role's `xact_start` only to roles
-- with pg_read_all_stats. With a login role per process role (0025) the api would no longer see
-- the worker's transactions, and a stream could step over an event a worker commits late. Granting
-- a predefined role needs the right to (a superuser, or ADMIN on it): when the owner running this
-- migration lacks it, a warning says what the operator must run.
do $$
begin
  if exists (select from pg_roles where rolname = 'stablegate_api') then
    begin
      grant pg_read_all_stats to stablegate_api;
    exception when insufficient_privilege then
      raise warning 'run as a superuser: grant pg_read_all_stats to stablegate_api; (the webhook stream needs to see other roles'' open transactions)';
    end;
  end if;
end $$;
