import { randomBytes } from "node:crypto";
import { rm, stat } from "node:fs/promises";
import { sql } from "kysely";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TEST_DATABASE_URL } from "../../support/db.js";
import { onPostgres, refusalOf, restore, Workspace } from "./support.js";

// A plain backup is not authenticated (docs/decisions/backups.md point 2), and `pg_restore` runs
// whatever SQL the dump's table of contents holds, as the restoring role — the owner's DATABASE_URL,
// often a superuser. A forged dump can therefore act beyond the restored database: here a function
// that a materialized view's REFRESH (run by pg_restore) calls creates a cluster-wide role and runs
// a shell command on the database server (`COPY … TO PROGRAM`). Neither is stablegate's data.
//
// EXPECTED TO FAIL until restore refuses a dump holding objects stablegate's schema does not have
// (`pg_restore --list` checked against what the migrations make), or refuses to restore as a
// superuser, or authenticates plain backups (e.g. a MAC under a key derived from SECRET_ENCRYPTION_KEY).

let ws: Workspace;
const tag = randomBytes(4).toString("hex");
const role = `sg42_backdoor_${tag}`;
const marker = `/tmp/sg42-pwned-${tag}`;

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

beforeAll(async () => {
  ws = await Workspace.create();
});
afterAll(async () => {
  if (onPostgres) await admin((c) => c.query(`drop role if exists ${role}`)).catch(() => {});
  await rm(marker, { force: true }).catch(() => {});
  await ws?.close();
});

describe.runIf(onPostgres)("a forged PostgreSQL dump given to restore", { timeout: 120_000 }, () => {
  it("does not run the dump's SQL beyond the database (no new cluster role, no server-side program)", async () => {
    const forged = await ws.backup({
      prepare: async (db) => {
        // Harmless while the view is made on the forger's side; armed afterwards.
        await sql`create function public.sg42_probe() returns int language plpgsql as $$ begin return 1; end $$`.execute(
          db.db,
        );
        await sql`create materialized view public.sg42_view as select public.sg42_probe() as x`.execute(
          db.db,
        );
        await sql
          .raw(`create or replace function public.sg42_probe() returns int language plpgsql as $body$
            begin
              execute format('create role %I nologin', '${role}');
              execute format('copy (select 1) to program %L', 'touch ${marker}');
              return 1;
            end $body$`)
          .execute(db.db);
      },
    });
    const target = await ws.newTarget();
    const outcome = await refusalOf(restore(target, { input: forged.file }));
    const roleMade = await admin(
      async (c) => (await c.query("select 1 from pg_roles where rolname = $1", [role])).rowCount,
    );
    const programRan = await stat(marker).then(
      () => true,
      () => false,
    );
    expect(
      { roleMade: roleMade === 1, programRan },
      `restore ${outcome ? `refused (${outcome.message})` : "succeeded"}`,
    ).toEqual({ roleMade: false, programRan: false });
  });
});
