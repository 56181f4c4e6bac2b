import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { pg_trgm } from "@electric-sql/pglite/contrib/pg_trgm";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { openDatabase } from "../../src/db/database.js";
import { migrate } from "../../src/db/migrate.js";
import { bundleProgram } from "./program.js";

/** What every test file of the run shares: the databases to start from and the bundled CLI. */
export default async function setup(project: TestProject) {
  // The CLI (src/main.ts) that tests start as OS processes, bundled once per run
  // (test/support/processes.ts: mainArgs).
  const main = await bundleProgram(path.resolve(import.meta.dirname, "../../src/main.ts"));
  project.provide("mainProgram", main.args);
  const databases = await setupDatabases(project);
  return async () => {
    await databases();
    await main.remove();
  };
}

/**
 * With TEST_DATABASE_URL (a PostgreSQL server), migrate one template database per run; every
 * test file then clones it (`create database … template …`, fast) and drops its clone after.
 * Without it, test files use in-memory PGlite: one migrated PGlite is dumped to a file here, and
 * every test database starts from that snapshot (≈ 0.4 s instead of ≈ 1.5 s for initdb + migrations).
 */
async function setupDatabases(project: TestProject): Promise<() => Promise<void>> {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) {
    const dir = await mkdtemp(path.join(tmpdir(), "sg-pglite-template-"));
    const file = path.join(dir, "template.tar");
    const dataDir = path.join(dir, "pgdata");
    const database = await openDatabase({ kind: "pglite", dataDir });
    await migrate(database.db);
    await database.close();
    const pglite = await PGlite.create(dataDir, { extensions: { pg_trgm } });
    const dump = await pglite.dumpDataDir("none");
    await pglite.close();
    await writeFile(file, Buffer.from(await dump.arrayBuffer()));
    project.provide("pgliteTemplate", file);
    project.provide("templateDatabase", undefined);
    return async () => {
      await rm(dir, { recursive: true, force: true });
    };
  }
  project.provide("pgliteTemplate", undefined);
  const template = `sg_tpl_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`create database ${template}`);
  const tplUrl = new URL(url);
  tplUrl.pathname = `/${template}`;
  const database = await openDatabase({ kind: "postgres", url: tplUrl.toString(), poolSize: 1 });
  await migrate(database.db);
  await database.close();
  project.provide("templateDatabase", template);
  return async () => {
    await admin.query(`drop database if exists ${template} with (force)`);
    await admin.end();
  };
}

declare module "vitest" {
  export interface ProvidedContext {
    templateDatabase: string | undefined;
    /** A dumped, migrated PGlite data directory (a file) that test databases start from. */
    pgliteTemplate: string | undefined;
    /** The arguments of `node` that run the CLI (src/main.ts, bundled): test/support/processes.ts. */
    mainProgram: string[];
  }
}
