import { readFileSync } from "node:fs";
import { type Kysely, sql } from "kysely";
import { appliedMigrations, readMigrations } from "../db/migrate.js";
import type { DB } from "../db/schema.js";
import { recordedAccountKeys } from "../wallet/index.js";
import { ENTRY_NAMES } from "./archive.js";

/**
 * `manifest.json`, the first entry of a backup: what it holds and where it comes from. Read before
 * anything is written by a restore (the schema level, the driver, the account keys) and compared
 * with the restored database afterwards (the row counts).
 */
export interface BackupManifest {
  format: "stablegate-backup";
  formatVersion: 1;
  stablegateVersion: string;
  createdAt: string;
  driver: "postgres" | "pglite";
  database: {
    /** The server's version (`server_version`): PGlite's own PostgreSQL for the embedded database. */
    serverVersion: string;
    /** PostgreSQL: the `pg_dump --version` that wrote the dump. */
    pgDumpVersion?: string;
    /** Embedded: the size of the dump's tar once decompressed (a restore stops beyond it). */
    uncompressedSize?: number;
  };
  schema: {
    /** The last versioned migration applied (`0039_payment_links`), null on an unmigrated database. */
    lastMigration: string | null;
    migrations: { version: number; name: string; checksum: string }[];
  };
  /** The account keys the database pinned (`account_keys`): a restore with other keys is refused. */
  accountKeys: { network: string; environment: string; xpub: string }[];
  /** Rows per table of the public schema, read in the same snapshot as the dump. */
  tables: Record<string, number>;
  /** The entries besides the manifest and `SHA256SUMS`, with their sizes and digests. */
  entries: Record<string, { size: number; sha256: string }>;
  configuration: {
    /** The non-secret variables in `config.json`. */
    keys: string[];
    /** Secret variables that were set, by name (their values only in `secrets.enc`, if at all). */
    secretKeys: string[];
  };
  /** `--include-secrets`: what `secrets.enc` holds, by name; null without it. */
  secrets: { env: string[]; files: string[]; encryption: "argon2id+aes-256-gcm" } | null;
}

const PACKAGE_JSON = new URL("../../package.json", import.meta.url);

/** This build's version (package.json), "unknown" when it is not shipped. */
export function stablegateVersion(): string {
  try {
    const v = (JSON.parse(readFileSync(PACKAGE_JSON, "utf8")) as { version?: unknown }).version;
    return typeof v === "string" ? v : "unknown";
  } catch {
    return "unknown";
  }
}

export const migrationLabel = (m: { version: number; name: string }) =>
  `${String(m.version).padStart(4, "0")}_${m.name}`;

/** The tables of the public schema (partitions excluded: their parent counts their rows). */
async function publicTables(db: Kysely<DB>): Promise<string[]> {
  const r = await sql<{ name: string }>`
    select c.relname as name
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = 'public' and c.relkind in ('r', 'p') and not c.relispartition
    order by c.relname`.execute(db);
  return r.rows.map((x) => x.name);
}

/**
 * The row count of every table. A backup holds every table, whoever owns it: the names come from
 * the catalogue, not from a folder's SQL (ARCHITECTURE.md "Tables and their owners": this reads
 * counts only, the same way for every table).
 */
export async function countRows(db: Kysely<DB>): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const name of await publicTables(db)) {
    const r = await sql<{ n: string }>`select count(*)::text as n from ${sql.table(name)}`.execute(db);
    out[name] = Number(r.rows[0]?.n ?? 0);
  }
  return out;
}

/** What the manifest records of a database, read in the caller's snapshot (`db` may be a transaction). */
export async function describeDatabase(db: Kysely<DB>) {
  const version = await sql<{ v: string }>`select current_setting('server_version') as v`.execute(db);
  const migrations = await appliedMigrations(db);
  const keysTable = await sql<{ t: string | null }>`select to_regclass('account_keys')::text as t`.execute(
    db,
  );
  const last = migrations.at(-1);
  return {
    serverVersion: version.rows[0]?.v ?? "unknown",
    schema: { lastMigration: last ? migrationLabel(last) : null, migrations },
    accountKeys: keysTable.rows[0]?.t ? await recordedAccountKeys(db) : [],
    tables: await countRows(db),
  };
}

/** Why this build cannot restore a backup of `schema`, or null when it can (same or older schema). */
export async function schemaRefusal(schema: BackupManifest["schema"]): Promise<string | null> {
  const known = new Map((await readMigrations()).map((m) => [m.version, m]));
  const unknown = schema.migrations.filter((m) => !known.has(m.version));
  if (unknown.length > 0) {
    const newest = Math.max(...known.keys());
    return (
      `the backup's schema is newer than this build knows (${unknown.map(migrationLabel).join(", ")}; ` +
      `this build ends at ${migrationLabel(known.get(newest) as { version: number; name: string })}): ` +
      "restore it with the stablegate version that made it (migrations only go forward)"
    );
  }
  const changed = schema.migrations.filter((m) => {
    const mine = known.get(m.version);
    return mine && (mine.name !== m.name || mine.checksum !== m.checksum);
  });
  if (changed.length > 0)
    return (
      `the backup's migrations ${changed.map(migrationLabel).join(", ")} differ from this build's: ` +
      "it was made by another line of stablegate"
    );
  return null;
}

/** Parses `manifest.json`, checking the fields a restore relies on. */
export function parseManifest(text: string): BackupManifest {
  let m: BackupManifest;
  try {
    m = JSON.parse(text) as BackupManifest;
  } catch {
    throw new Error("manifest.json is not JSON");
  }
  const problems: string[] = [];
  if (m?.format !== "stablegate-backup") problems.push("not a stablegate backup manifest");
  else if (m.formatVersion !== 1)
    problems.push(`format version ${String(m.formatVersion)} is not one this build reads (1)`);
  else {
    if (m.driver !== "postgres" && m.driver !== "pglite") problems.push("unknown driver");
    if (
      !Array.isArray(m.schema?.migrations) ||
      !m.schema.migrations.every(
        (x) => Number.isInteger(x?.version) && typeof x.name === "string" && typeof x.checksum === "string",
      )
    )
      problems.push("no migration list");
    if (
      !Array.isArray(m.accountKeys) ||
      !m.accountKeys.every(
        (k) =>
          typeof k?.network === "string" && typeof k.environment === "string" && typeof k.xpub === "string",
      )
    )
      problems.push("no account keys");
    if (
      typeof m.tables !== "object" ||
      m.tables === null ||
      !Object.values(m.tables).every((n) => Number.isInteger(n) && n >= 0)
    )
      problems.push("no table counts");
    if (
      typeof m.entries !== "object" ||
      m.entries === null ||
      !Object.entries(m.entries).every(
        ([name, e]) =>
          (ENTRY_NAMES as readonly string[]).includes(name) &&
          Number.isInteger(e?.size) &&
          /^[0-9a-f]{64}$/.test(String(e?.sha256)),
      )
    )
      problems.push("no entry list");
    const names = (v: unknown) => Array.isArray(v) && v.every((x) => typeof x === "string");
    if (m.secrets !== null && !(names(m.secrets?.env) && names(m.secrets?.files)))
      problems.push("no list of the sealed secrets");
    if (typeof m.createdAt !== "string" || typeof m.stablegateVersion !== "string")
      problems.push("no date or version");
    if (typeof m.database?.serverVersion !== "string") problems.push("no server version");
    else if (
      m.driver === "pglite" &&
      !(Number.isSafeInteger(m.database.uncompressedSize) && (m.database.uncompressedSize as number) >= 0)
    )
      problems.push("no uncompressed size of the embedded dump");
    if (!names(m.configuration?.keys) || !names(m.configuration?.secretKeys))
      problems.push("no configuration keys");
  }
  if (problems.length > 0) throw new Error(`manifest.json: ${problems.join("; ")}`);
  return m;
}
