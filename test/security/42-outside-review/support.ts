import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { inject } from "vitest";
import { type EntrySource, extractArchive, sha256, writeArchive } from "../../../src/backup/archive.js";
import {
  BackupRefusal,
  type BackupResult,
  createBackup,
  type RestoreOptions,
  type RestoreReport,
  restoreBackup,
} from "../../../src/backup/index.js";
import type { BackupManifest } from "../../../src/backup/manifest.js";
import { operatorContext } from "../../../src/cli/merchant-create.js";
import { parseConfig } from "../../../src/config/config.js";
import { type Database, openDatabase } from "../../../src/db/database.js";
import { migrate } from "../../../src/db/migrate.js";
import { createEmptyPostgresDatabase, onPostgres, openTestDatabase } from "../../support/db.js";

// Outside review of issue #42 (backups): what an attacker who can hand the operator a backup file
// (a swapped file on the backup store, a "support" archive, a compromised backup host) can make
// `stablegate restore` do. The archives are forged the way a forger would: a real backup is taken
// apart, edited, and written again with `writeArchive` (which recomputes SHA256SUMS): a plain
// backup's digests catch accidents, not a forger.

export const PASSPHRASE = "outside review passphrase 42";
/**
 * The installation's SECRET_ENCRYPTION_KEY, the same for the backing-up and the restoring side (a
 * restore authenticates a plain backup with it: docs/decisions/backups.md point 2). A test that
 * means another installation overrides it.
 */
export const INSTALLATION_KEY = "5e".repeat(32);

export interface Target {
  url?: string;
  dataDir: string;
}

export class Workspace {
  readonly cleanups: (() => Promise<void>)[] = [];
  private constructor(readonly dir: string) {}

  static async create(): Promise<Workspace> {
    return new Workspace(await mkdtemp(path.join(tmpdir(), "sg-42-review-")));
  }

  file(name: string): string {
    return path.join(this.dir, `${Math.random().toString(36).slice(2, 8)}-${name}`);
  }

  async close(): Promise<void> {
    for (const c of this.cleanups.reverse()) await c().catch(() => {});
    await rm(this.dir, { recursive: true, force: true });
  }

  /** A fresh restore target: an empty PostgreSQL database, or a DATA_DIR that does not exist yet. */
  async newTarget(): Promise<Target> {
    const dataDir = this.file("restore-data");
    if (!onPostgres) return { dataDir };
    const db = await createEmptyPostgresDatabase();
    this.cleanups.push(db.drop);
    return { url: db.url, dataDir };
  }

  /**
   * A real backup of a migrated database of this run's driver. `prepare` runs on the source
   * database before the backup (what the forger puts in it).
   */
  async backup(
    options: {
      prepare?: (db: Database) => Promise<void>;
      env?: Record<string, string>;
      includeSecrets?: boolean;
    } = {},
  ): Promise<BackupResult> {
    const dataDir = this.file("source-data");
    await mkdir(dataDir, { mode: 0o700 });
    let url: string | undefined;
    if (onPostgres) {
      const source = await openTestDatabase(2);
      url = source.url;
      this.cleanups.push(() => source.close());
      await options.prepare?.(source);
    } else {
      const template = inject("pgliteTemplate");
      const database = await openDatabase({
        kind: "pglite",
        dataDir: path.join(dataDir, "pglite"),
        ...(template ? { snapshot: new Blob([await readFile(template)]) } : {}),
      });
      try {
        await migrate(database.db);
        await options.prepare?.(database);
      } finally {
        await database.close();
      }
    }
    const env = envFor({ dataDir, ...(url ? { url } : {}) }, options.env ?? {});
    return createBackup(parseConfig(env), env, {
      output: this.file("source.sgb"),
      includeSecrets: options.includeSecrets ?? false,
      ...(options.includeSecrets ? { passphrase: PASSPHRASE } : {}),
    });
  }

  /**
   * Takes `input` apart, lets `edit` change the manifest, the configuration and which entries stay,
   * and writes it again as a forger would (the manifest's entry digests and SHA256SUMS recomputed).
   */
  async forge(
    input: string,
    edit: (parts: {
      manifest: BackupManifest;
      config: { variables: Record<string, string> };
      dropSecrets: boolean;
    }) => void,
  ): Promise<string> {
    const dir = await mkdtemp(path.join(this.dir, "forge-"));
    const entries = await extractArchive(input, dir);
    const manifest = JSON.parse(
      await readFile(entries.get("manifest.json")?.file as string, "utf8"),
    ) as BackupManifest;
    const config = JSON.parse(await readFile(entries.get("config.json")?.file as string, "utf8")) as {
      variables: Record<string, string>;
    };
    const parts = { manifest, config, dropSecrets: false };
    edit(parts);
    const { dropSecrets } = parts;
    const configData = Buffer.from(`${JSON.stringify(config, null, 2)}\n`, "utf8");
    manifest.entries["config.json"] = { size: configData.length, sha256: sha256(configData) };
    if (dropSecrets) manifest.secrets = null;
    const dumpName = manifest.driver === "postgres" ? "database.pgdump" : "database.pglite.tar.gz";
    const out: EntrySource[] = [
      { name: "manifest.json", data: Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`, "utf8") },
      { name: "config.json", data: configData },
      { name: dumpName, file: entries.get(dumpName)?.file as string },
    ];
    const secrets = entries.get("secrets.enc");
    if (secrets && !dropSecrets) out.push({ name: "secrets.enc", file: secrets.file });
    const file = this.file("forged.sgb");
    await writeArchive(file, out);
    return file;
  }
}

export function envFor(target: Target, extra: Record<string, string> = {}): Record<string, string> {
  return {
    NODE_ENV: "test",
    LOG_LEVEL: "error",
    DATA_DIR: target.dataDir,
    PRODUCTION_BASE_URL: "http://api.stablegate.test",
    SANDBOX_BASE_URL: "http://sandbox.stablegate.test",
    SECRET_ENCRYPTION_KEY: INSTALLATION_KEY,
    ...(target.url ? { DATABASE_URL: target.url } : {}),
    ...extra,
  };
}

export async function restore(
  target: Target,
  options: Partial<RestoreOptions> & { input: string },
  env: Record<string, string> = {},
): Promise<RestoreReport> {
  const config = parseConfig(envFor(target, env));
  return restoreBackup(config, { wipe: false, dryRun: false, ...options }, (database) =>
    operatorContext(config, database.db),
  );
}

/** The refusal a promise ends with, or null when it resolved. */
export async function refusalOf(promise: Promise<unknown>): Promise<Error | null> {
  return promise.then(
    () => null,
    (e: unknown) => {
      if (!(e instanceof Error)) throw e;
      return e;
    },
  );
}

export { BackupRefusal, onPostgres };
