-- The record of the repeatable function files (issue #36): `migrations/functions/<name>.sql` holds
-- the current definition of each database function; `migrate` (src/db/migrate.ts) applies a file
-- after the versioned migrations when its checksum differs from the one recorded here, and records
-- `migration_version`, the highest versioned migration of the build that applied it (a changed file
-- is applied only by a build with newer migrations: an older build never puts back its definition).
create table schema_functions (
  name              text primary key,
  checksum          text not null,
  migration_version integer not null,
  applied_at        timestamptz not null default now()
);

-- The process roles of migration 0025 check at start-up that nothing is pending: they read it.
do $$
declare
  r text;
begin
  foreach r in array array['stablegate_api', 'stablegate_worker', 'stablegate_signer'] loop
    if exists (select from pg_roles where rolname = r) then
      execute format('grant select on schema_functions to %I', r);
    end if;
  end loop;
end $$;
