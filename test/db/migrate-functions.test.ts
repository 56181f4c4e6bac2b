import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Database, type Db, openDatabase } from "../../src/db/database.js";
import {
  FUNCTIONS_SUBDIR,
  type FunctionFile,
  MIGRATIONS_DIR,
  migrate,
  pendingMigrations,
  readFunctionFiles,
  readMigrations,
} from "../../src/db/migrate.js";
import { GROUP_ROLES } from "../../src/db/roles.js";
import { createEmptyPostgresDatabase, onPostgres } from "../support/db.js";

// Repeatable function files (issue #36): `migrations/functions/<name>.sql` holds the current
// definition of each database function the versioned migrations redefined over time. `migrate`
// applies a file after the versioned migrations when its checksum differs from the one recorded in
// `schema_functions`: once for an unchanged file, again for an edited one. Both drivers (PostgreSQL
// with TEST_DATABASE_URL, else PGlite).

/** The versioned migration up to which functions were redefined in migrations; after it, in files. */
const LAST_VERSION_BEFORE_FUNCTION_FILES = 28;

/** A fresh, unmigrated database: an empty PostgreSQL database with TEST_DATABASE_URL, else PGlite. */
async function emptyDatabase(): Promise<Database> {
  if (!onPostgres) return openDatabase({ kind: "pglite", dataDir: undefined });
  const empty = await createEmptyPostgresDatabase();
  const database = await openDatabase({ kind: "postgres", url: empty.url, poolSize: 2 });
  return {
    ...database,
    async close() {
      await database.close();
      await empty.drop();
    },
  };
}

/** A temporary copy of the checked-in migrations: the versioned files, and the function files if asked. */
async function copyOfMigrations(withFunctions: boolean): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), "sg-mig-fn-"));
  for (const f of (await readdir(MIGRATIONS_DIR)).filter((f) => f.endsWith(".sql")))
    await copyFile(path.join(MIGRATIONS_DIR, f), path.join(dir, f));
  if (withFunctions) await copyFunctionFiles(dir);
  return dir;
}

async function copyFunctionFiles(dir: string): Promise<void> {
  const from = path.join(MIGRATIONS_DIR, FUNCTIONS_SUBDIR);
  await mkdir(path.join(dir, FUNCTIONS_SUBDIR), { recursive: true });
  for (const f of await readdir(from))
    await copyFile(path.join(from, f), path.join(dir, FUNCTIONS_SUBDIR, f));
}

const functionPath = (dir: string, name: string) => path.join(dir, FUNCTIONS_SUBDIR, `${name}.sql`);

/** The versioned migration a function change comes with (a comment is enough): its applied name. */
async function functionChangeMigration(dir: string, n: number): Promise<string> {
  const name = `${9000 + n}_function_change_${n}`;
  await writeFile(path.join(dir, `${name}.sql`), `-- functions/ changed (test ${n})\n`);
  return name;
}

/** What a function file says: the function it creates, its body, SECURITY DEFINER, its SET search_path. */
function parse(file: FunctionFile): {
  name: string;
  body: string;
  definer: boolean;
  config: string[] | null;
} {
  const start = file.sql.search(/^create or replace function /im);
  expect(start, `${file.name}: one create or replace function`).toBeGreaterThanOrEqual(0);
  const open = file.sql.indexOf("$$", start);
  const close = file.sql.indexOf("$$", open + 2);
  const header = file.sql.slice(start, open);
  const searchPath = /\bset search_path = (.+?)\s+as\s*$/is.exec(header);
  return {
    name: /^create or replace function ([a-z0-9_]+)\(/i.exec(header)?.[1] as string,
    body: file.sql.slice(open + 2, close),
    definer: /\bsecurity definer\b/i.test(header),
    config: searchPath ? [`search_path=${searchPath[1]}`] : null,
  };
}

interface Proc {
  prosrc: string;
  prosecdef: boolean;
  proconfig: string[] | null;
  owner: string;
  acl: string | null;
  xmin: string;
}

/** The function of that name in `public`; it must be exactly one (no overload made by a file). */
async function proc(db: Db, name: string): Promise<Proc> {
  const { rows } = await sql<Proc>`
    select p.prosrc, p.prosecdef, p.proconfig, pg_get_userbyid(p.proowner) as owner, p.proacl::text as acl,
      p.xmin::text as xmin
    from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname = 'public' and p.proname = ${name}`.execute(db);
  expect(rows, `one function ${name}`).toHaveLength(1);
  return rows[0] as Proc;
}

async function recorded(db: Db): Promise<Record<string, { checksum: string; applied_at: string }>> {
  const { rows } = await sql<{ name: string; checksum: string; applied_at: string }>`
    select name, checksum, applied_at::text from schema_functions order by name`.execute(db);
  return Object.fromEntries(rows.map((r) => [r.name, { checksum: r.checksum, applied_at: r.applied_at }]));
}

const POST_ARGS = "(text, text, text, text, text, text, text[], numeric[])";

async function mayExecute(db: Db, role: string, fn: string): Promise<boolean> {
  const { rows } = await sql<{ ok: boolean }>`
    select has_function_privilege(${role}, ${fn}, 'EXECUTE') as ok`.execute(db);
  return rows[0]?.ok === true;
}

/** Who may call the two ledger functions: the api and the worker ledger_post(), nobody else either. */
async function expectLedgerGrants(db: Db): Promise<void> {
  const post = `ledger_post${POST_ARGS}`;
  const unchecked = `ledger_post_unchecked${POST_ARGS}`;
  expect(await mayExecute(db, GROUP_ROLES.api, post)).toBe(true);
  expect(await mayExecute(db, GROUP_ROLES.worker, post)).toBe(true);
  expect(await mayExecute(db, GROUP_ROLES.signer, post)).toBe(false);
  expect(await mayExecute(db, "public", post)).toBe(false);
  for (const role of [...Object.values(GROUP_ROLES), "public"])
    expect(await mayExecute(db, role, unchecked), `${role} ledger_post_unchecked`).toBe(false);
}

describe("the function files", () => {
  it("name the function they create, and cover every function the versioned migrations redefined", async () => {
    const files = await readFunctionFiles();
    for (const file of files) {
      expect(parse(file).name, file.name).toBe(file.name);
      expect(file.sql, file.name).toMatch(/the one place to read and to change this function/);
    }
    // A function that the versioned migrations created more than once, altered, or renamed into
    // existence has its file (today: the ledger's posting functions and the audit log's guard).
    const made = new Map<string, number>();
    const rewritten = new Set<string>();
    for (const m of await readMigrations()) {
      for (const [, replace, name] of m.sql.matchAll(/^\s*create (or replace )?function ([a-z0-9_]+)\(/gim)) {
        const n = (made.get(name as string) ?? 0) + 1;
        made.set(name as string, n);
        if (n > 1) rewritten.add(name as string);
        // Once a function has its file, it changes there, not in a new versioned migration (which
        // may still drop it, or create it again with another signature after a drop).
        if (m.version > LAST_VERSION_BEFORE_FUNCTION_FILES && replace)
          expect(
            files.some((f) => f.name === name),
            `${m.version}_${m.name} replaces ${name}: edit ${FUNCTIONS_SUBDIR}/${name}.sql instead`,
          ).toBe(false);
      }
      for (const [, from, to] of m.sql.matchAll(
        /^\s*alter function ([a-z0-9_]+)\([^)]*\)\s+(?:rename to ([a-z0-9_]+))?/gim,
      )) {
        rewritten.add(from as string);
        if (to) rewritten.add(to);
      }
    }
    expect(rewritten.size).toBeGreaterThanOrEqual(4);
    const names = files.map((f) => f.name);
    for (const name of rewritten) expect(names, `${FUNCTIONS_SUBDIR}/${name}.sql`).toContain(name);
  });
});

describe("migrate applies the function files", () => {
  let database: Database;
  let first: Awaited<ReturnType<typeof migrate>>;
  let files: FunctionFile[];
  beforeAll(async () => {
    database = await emptyDatabase();
    first = await migrate(database.db);
    files = await readFunctionFiles();
  });
  afterAll(() => database?.close());

  it("after the versioned migrations: each function in the database is its file's definition", async () => {
    expect(first.applied.length).toBe((await readMigrations()).length);
    expect(first.functions).toEqual(files.map((f) => f.name));
    for (const file of files) {
      const want = parse(file);
      const got = await proc(database.db, file.name);
      expect(got.prosrc, `${file.name}: body`).toBe(want.body);
      expect(got.prosecdef, `${file.name}: security definer`).toBe(want.definer);
      expect(got.proconfig, `${file.name}: set`).toEqual(want.config);
    }
    // What 0025 made of the ledger functions still holds.
    expect((await proc(database.db, "ledger_post")).prosecdef).toBe(true);
    expect((await proc(database.db, "ledger_check_posting_balanced")).prosecdef).toBe(true);
    await expectLedgerGrants(database.db);
    expect(
      Object.fromEntries(Object.entries(await recorded(database.db)).map(([n, r]) => [n, r.checksum])),
    ).toEqual(Object.fromEntries(files.map((f) => [f.name, f.checksum])));
    expect(await pendingMigrations(database.db)).toEqual([]);
  });

  it("migrating again applies no function file (each is applied once)", async () => {
    const before = await recorded(database.db);
    const xmins = await Promise.all(files.map(async (f) => (await proc(database.db, f.name)).xmin));
    expect(await migrate(database.db)).toEqual({ applied: [], functions: [] });
    expect(await recorded(database.db)).toEqual(before);
    // Not even replaced by an identical definition: the catalog rows are the same versions.
    expect(await Promise.all(files.map(async (f) => (await proc(database.db, f.name)).xmin))).toEqual(xmins);
  });

  it("the process roles may read schema_functions (they check at start-up that nothing is pending)", async () => {
    for (const role of Object.values(GROUP_ROLES)) {
      const { rows } = await sql<{ ok: boolean }>`
        select has_table_privilege(${role}, 'public.schema_functions', 'SELECT') as ok`.execute(database.db);
      expect(rows[0]?.ok, role).toBe(true);
    }
  });
});

describe("an edited function file", () => {
  let database: Database;
  let dir: string;
  beforeAll(async () => {
    database = await emptyDatabase();
    dir = await copyOfMigrations(true);
    await migrate(database.db, dir);
  });
  afterAll(async () => {
    await database?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("is applied again on the next migrate, alone, keeping its owner, grants and SECURITY DEFINER", async () => {
    const before = await proc(database.db, "ledger_post");
    const others = await recorded(database.db);
    const file = functionPath(dir, "ledger_post");
    const text = await readFile(file, "utf8");
    const edited = text.replace("is not this role''s to make'", "is not this role''s to make (edited)'");
    expect(edited).not.toBe(text);
    await writeFile(file, edited);

    // Without a versioned migration no build could tell the newer definition: refused, nothing applied.
    const refusal = /functions\/ledger_post\.sql changed without a new versioned migration/;
    expect(await pendingMigrations(database.db, dir)).toEqual([expect.stringMatching(refusal)]);
    await expect(migrate(database.db, dir)).rejects.toThrow(refusal);
    expect((await proc(database.db, "ledger_post")).xmin).toBe(before.xmin);

    const change = await functionChangeMigration(dir, 1);
    expect(await pendingMigrations(database.db, dir)).toEqual([
      "function_change_1",
      `${FUNCTIONS_SUBDIR}/ledger_post`,
    ]);
    expect(await migrate(database.db, dir)).toEqual({ applied: [change], functions: ["ledger_post"] });

    const after = await proc(database.db, "ledger_post");
    expect(after.prosrc).toContain("is not this role''s to make (edited)'");
    expect(after.prosrc).toBe(
      parse((await readFunctionFiles(dir)).find((f) => f.name === "ledger_post")!).body,
    );
    expect(after.xmin).not.toBe(before.xmin);
    expect({ ...after, prosrc: "", xmin: "" }).toEqual({ ...before, prosrc: "", xmin: "" });
    await expectLedgerGrants(database.db);

    const now = await recorded(database.db);
    expect(now.ledger_post?.checksum).not.toBe(others.ledger_post?.checksum);
    for (const name of ["audit_log_refuse_change", "ledger_check_posting_balanced", "ledger_post_unchecked"])
      expect(now[name], name).toEqual(others[name]);

    expect(await pendingMigrations(database.db, dir)).toEqual([]);
    expect(await migrate(database.db, dir)).toEqual({ applied: [], functions: [] });
  });

  it("that fails rolls back every function file of that run; fixed, it applies", async () => {
    const before = await recorded(database.db);
    const auditBefore = await proc(database.db, "audit_log_refuse_change");
    const audit = functionPath(dir, "audit_log_refuse_change");
    const auditText = await readFile(audit, "utf8");
    await writeFile(audit, auditText.replace("(record % is newer)", "(record % is newer, edited)"));
    const unchecked = functionPath(dir, "ledger_post_unchecked");
    const uncheckedText = await readFile(unchecked, "utf8");
    await writeFile(unchecked, uncheckedText.replace("  wanted integer;\n", "  wanted no_such_type;\n"));
    await functionChangeMigration(dir, 2);

    // audit_log_refuse_change is applied first (name order), then ledger_post_unchecked fails.
    await expect(migrate(database.db, dir)).rejects.toThrow(
      /function file functions\/ledger_post_unchecked\.sql failed: .*no_such_type/,
    );
    expect(await recorded(database.db)).toEqual(before);
    expect((await proc(database.db, "audit_log_refuse_change")).prosrc).toBe(auditBefore.prosrc);

    await writeFile(unchecked, uncheckedText);
    expect(await migrate(database.db, dir)).toEqual({ applied: [], functions: ["audit_log_refuse_change"] });
    expect((await proc(database.db, "audit_log_refuse_change")).prosrc).toContain(
      "(record % is newer, edited)",
    );
  });

  it("removed, its record goes (its function stays); added back, it is applied", async () => {
    const file = functionPath(dir, "audit_log_refuse_change");
    const text = await readFile(file, "utf8");
    await rm(file);
    expect(await migrate(database.db, dir)).toEqual({ applied: [], functions: [] });
    expect(Object.keys(await recorded(database.db))).not.toContain("audit_log_refuse_change");
    await proc(database.db, "audit_log_refuse_change");
    await writeFile(file, text);
    expect(await migrate(database.db, dir)).toEqual({ applied: [], functions: ["audit_log_refuse_change"] });
  });

  it("an older build neither puts back its older definitions nor counts them as pending", async () => {
    const older = await copyOfMigrations(true);
    try {
      const before = await proc(database.db, "ledger_post");
      const recordedBefore = await recorded(database.db);
      // Its start-up check: the database is ahead, nothing of the older build is pending (an older
      // api may keep serving through an upgrade, as with the versioned migrations).
      expect(await pendingMigrations(database.db, older)).toEqual([]);
      // Its migrate stops at the newer build's versioned migrations, before any function file.
      await expect(migrate(database.db, older)).rejects.toThrow(/migrations this build does not know/);
      expect(await proc(database.db, "ledger_post")).toEqual(before);
      expect(await recorded(database.db)).toEqual(recordedBefore);
    } finally {
      await rm(older, { recursive: true, force: true });
    }
  });
});

describe("a database migrated before the function files existed", () => {
  it("gets them on its next migrate; the functions keep their owner, grants, SECURITY DEFINER and SET", async () => {
    const database = await emptyDatabase();
    const dir = await copyOfMigrations(false);
    try {
      const versioned = await migrate(database.db, dir);
      expect(versioned.functions).toEqual([]);
      const files = await readFunctionFiles();
      const before = await Promise.all(files.map((f) => proc(database.db, f.name)));

      await copyFunctionFiles(dir);
      expect(await pendingMigrations(database.db, dir)).toEqual(
        files.map((f) => `${FUNCTIONS_SUBDIR}/${f.name}`),
      );
      expect(await migrate(database.db, dir)).toEqual({ applied: [], functions: files.map((f) => f.name) });

      const after = await Promise.all(files.map((f) => proc(database.db, f.name)));
      const attributes = ({ prosecdef, proconfig, owner, acl }: Proc) => ({
        prosecdef,
        proconfig,
        owner,
        acl,
      });
      expect(after.map(attributes)).toEqual(before.map(attributes));
      await expectLedgerGrants(database.db);
      expect(await pendingMigrations(database.db, dir)).toEqual([]);
    } finally {
      await database.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe.skipIf(!onPostgres)("several processes migrating one PostgreSQL at once", () => {
  it("apply the function files once, in one of them", async () => {
    const empty = await createEmptyPostgresDatabase();
    const dbs = await Promise.all(
      Array.from({ length: 3 }, () => openDatabase({ kind: "postgres", url: empty.url, poolSize: 2 })),
    );
    try {
      const results = await Promise.all(dbs.map((d) => migrate(d.db)));
      const names = (await readFunctionFiles()).map((f) => f.name);
      expect(results.map((r) => r.functions).sort((a, b) => a.length - b.length)).toEqual([[], [], names]);
      expect(Object.keys(await recorded(dbs[0]!.db))).toEqual(names);
    } finally {
      await Promise.all(dbs.map((d) => d.close()));
      await empty.drop();
    }
  });
});
