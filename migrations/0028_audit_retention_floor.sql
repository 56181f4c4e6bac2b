-- The audit log keeps every record at least 30 days, whoever purges (issue #34, noticed in the
-- second review): the retention purge of 0017 was allowed to any transaction that declared itself
-- the purge (`set local stablegate.audit_retention = 'on'`), so the worker's role — which may
-- delete for that purge — could erase what happened a minute ago. Now a delete from any role but
-- the table's owner (the migrating role, a superuser, PGlite's one user) must also be of a record
-- older than 30 days; `AUDIT_RETENTION_DAYS` is 0 (keep all) or at least 30.
create or replace function audit_log_refuse_change() returns trigger language plpgsql as $$
begin
  if tg_op = 'DELETE' and current_setting('stablegate.audit_retention', true) = 'on' then
    if old.created_at < now() - interval '30 days'
       or pg_has_role(session_user, (select relowner from pg_class where oid = tg_relid), 'USAGE') then
      return old;
    end if;
    raise exception 'the audit log keeps every record 30 days (record % is newer)', old.id
      using errcode = 'insufficient_privilege';
  end if;
  raise exception 'the audit log is append-only (% on %)', tg_op, tg_table_name using errcode = 'insufficient_privilege';
end $$;
