import { randomBytes } from "node:crypto";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { openDatabase } from "../../src/db/database.js";
import { migrate } from "../../src/db/migrate.js";

/**
 * With TEST_DATABASE_URL (a PostgreSQL server), migrate one template database per run; every
 * test file then clones it (`create database … template …`, fast) and drops its clone after.
 * Without it, test files use in-memory PGlite and nothing is set up here.
 */
export default async function setup(project: TestProject) {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) return;
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
  }
}
