-- audit_log_refuse_change(): the triggers `audit_log_append_only` and `audit_log_no_truncate` on
-- `audit_log` (0017). The audit log is append-only: no update, no truncate, and a delete only by
-- the retention purge, which says so in its own transaction (`set local stablegate.audit_retention
-- = 'on'`), and then, from any role but the table's owner, only of a record older than 30 days.
--
-- This file is the one place to read and to change this function. `stablegate migrate` applies
-- it after the versioned migrations, and again whenever this file changes (its checksum differs
-- from the one recorded in `schema_functions`; src/db/migrate.ts).
-- Its history is in the versioned migrations 0017 and 0028.
-- They stay as they are (an applied migration is checksummed and never edited): do not read
-- them to know what the function does today, and do not redefine it in a new versioned migration.
--
-- To change it, edit this file and add a versioned migration with it (a comment-only file will
-- do: it tells builds which definition is newer, and migrate refuses an edit without one)
-- (CREATE OR REPLACE keeps the function's owner and grants; every
-- other attribute, SECURITY DEFINER and SET included, is what this statement says). A change of
-- its name, arguments or result columns, which CREATE OR REPLACE cannot make, is a versioned
-- migration (drop or rename there), then this file follows. A versioned migration must not rely
-- on this file's definition: on a new database it runs before this file is applied.

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
