import { createReadStream } from "node:fs";
import { mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { createGunzip } from "node:zlib";
import { sql } from "kysely";
import type { Config } from "../config/config.js";
import { generatedMnemonicPath } from "../config/mnemonic.js";
import { resolveSecrets } from "../config/secrets.js";
import { openDatabase } from "../db/database.js";
import { acquireEmbeddedLock } from "../db/embedded-lock.js";
import { readKeyFile } from "../lib/private-files.js";
import { type EntrySource, sha256, sha256OfFile, writeArchive } from "./archive.js";
import { backupMacKey, macEntry } from "./authenticity.js";
import { splitConfiguration } from "./configuration.js";
import { BackupRefusal } from "./errors.js";
import { pathExists } from "./files.js";
import { type BackupManifest, describeDatabase, stablegateVersion } from "./manifest.js";
import { pgDump, serverMajor, toolVersion } from "./postgres-tools.js";
import { type SecretPayload, sealSecrets } from "./sealed-secrets.js";

/** The files of DATA_DIR that hold generated secrets (outside production mode): `config/secrets.ts`, `config/mnemonic.ts`. */
export const DATA_DIR_SECRET_FILES = ["secrets.json", "master-mnemonic"] as const;
export type DataDirSecretFile = (typeof DATA_DIR_SECRET_FILES)[number];

export function dataDirSecretPath(dataDir: string, name: DataDirSecretFile): string {
  return name === "master-mnemonic" ? generatedMnemonicPath(dataDir) : path.join(dataDir, name);
}

export interface BackupOptions {
  /** The archive to write; refused when it exists. */
  output: string;
  /** `--include-secrets`: seal the secrets with `passphrase` into the archive. */
  includeSecrets: boolean;
  passphrase?: string;
}

export interface BackupResult {
  file: string;
  size: number;
  manifest: BackupManifest;
}

/** The embedded database's folder in DATA_DIR. */
export function embeddedDatabaseDir(dataDir: string): string {
  return path.join(dataDir, "pglite");
}

/**
 * `stablegate backup`: the database (PostgreSQL through `pg_dump --format=custom`, in the snapshot
 * the manifest is read in; the embedded one through PGlite's `dumpDataDir`, holding DATA_DIR's
 * lock, so never while `serve` runs on it), the non-secret configuration and, with
 * `--include-secrets`, the secrets sealed with a passphrase, in one archive (`archive.ts`).
 * `env`: the process environment as given (`config/load.ts` `readEnvironment`).
 */
export async function createBackup(
  config: Config,
  env: Readonly<Record<string, string>>,
  options: BackupOptions,
): Promise<BackupResult> {
  const output = path.resolve(options.output);
  if (await pathExists(output)) throw new BackupRefusal(`${output} exists: a backup never replaces a file`);
  const folder = path.dirname(output);
  if (!(await stat(folder).catch(() => null))?.isDirectory())
    throw new BackupRefusal(`${folder} is not a folder`);
  if (options.includeSecrets && options.passphrase === undefined)
    throw new BackupRefusal("--include-secrets needs a passphrase (--passphrase-file or --passphrase-stdin)");

  // Next to the output: the dump may be large, and the same file system keeps the final link cheap.
  const work = await mkdtemp(path.join(folder, ".stablegate-backup-"));
  try {
    const driver = config.database.url ? "postgres" : "pglite";
    const dumpName = driver === "postgres" ? "database.pgdump" : "database.pglite.tar.gz";
    const dumpFile = path.join(work, dumpName);
    const facts =
      driver === "postgres"
        ? await dumpPostgres(config.database.url as string, dumpFile)
        : await dumpEmbedded(config.dataDir, dumpFile);

    // The key that authenticates the archive (`authenticity.ts`): the installation's
    // SECRET_ENCRYPTION_KEY, as the service resolves it (generated in DATA_DIR outside production).
    const macKey = backupMacKey((await resolveSecrets(config, "backup")).SECRET_ENCRYPTION_KEY);
    const split = splitConfiguration(env);
    const configData = Buffer.from(`${JSON.stringify({ variables: split.plain }, null, 2)}\n`, "utf8");
    const secrets = options.includeSecrets ? await collectSecrets(config, split.secret) : null;
    const dumpDigest = await sha256OfFile(dumpFile);
    const manifest: BackupManifest = {
      format: "stablegate-backup",
      formatVersion: 1,
      stablegateVersion: stablegateVersion(),
      createdAt: new Date().toISOString(),
      driver,
      database: {
        serverVersion: facts.serverVersion,
        ...(facts.pgDumpVersion ? { pgDumpVersion: facts.pgDumpVersion } : {}),
        ...(facts.uncompressedSize !== undefined ? { uncompressedSize: facts.uncompressedSize } : {}),
      },
      schema: facts.schema,
      accountKeys: facts.accountKeys,
      tables: facts.tables,
      entries: {
        "config.json": { size: configData.length, sha256: sha256(configData) },
        [dumpName]: dumpDigest,
      },
      configuration: { keys: Object.keys(split.plain), secretKeys: Object.keys(split.secret) },
      secrets: secrets
        ? {
            env: Object.keys(secrets.env),
            files: Object.keys(secrets.files),
            encryption: "argon2id+aes-256-gcm",
          }
        : null,
    };
    const manifestData = Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`, "utf8");
    const entries: EntrySource[] = [
      { name: "manifest.json", data: manifestData },
      { name: "config.json", data: configData },
      { name: dumpName, file: dumpFile },
    ];
    if (secrets) {
      const sealed = await sealSecrets(secrets, options.passphrase as string, sha256(manifestData));
      entries.push({ name: "secrets.enc", data: Buffer.from(`${JSON.stringify(sealed)}\n`, "utf8") });
    }
    const size = await writeArchive(output, entries, (sums) => macEntry(sums, macKey));
    return { file: output, size, manifest };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

type Facts = Awaited<ReturnType<typeof describeDatabase>> & {
  pgDumpVersion?: string;
  uncompressedSize?: number;
};

/** The size of a gzip file's content, read through once. */
async function gunzippedSize(file: string): Promise<number> {
  let size = 0;
  for await (const chunk of createReadStream(file).pipe(createGunzip()) as AsyncIterable<Buffer>)
    size += chunk.length;
  return size;
}

async function dumpPostgres(url: string, file: string): Promise<Facts> {
  const tool = await toolVersion("pg_dump").catch((err: Error) => {
    throw new BackupRefusal(err.message);
  });
  const database = await openDatabase({
    kind: "postgres",
    url,
    poolSize: 1,
    applicationName: "stablegate-backup",
  });
  try {
    const server = await serverMajor(database.db);
    if (tool.major < server)
      throw new BackupRefusal(
        `${tool.text} is older than the server (PostgreSQL ${server}): it cannot dump everything a newer server ` +
          `holds; put pg_dump ${server} or newer first on PATH (Debian: /usr/lib/postgresql/${server}/bin)`,
      );
    // One snapshot for the manifest and the dump: the counts are those of the dump, even while
    // the service keeps writing.
    return await database.db
      .transaction()
      .setIsolationLevel("repeatable read")
      .setAccessMode("read only")
      .execute(async (trx) => {
        const snapshot = await sql<{ s: string }>`select pg_export_snapshot() as s`.execute(trx);
        const facts = await describeDatabase(trx);
        await pgDump(url, file, snapshot.rows[0]?.s);
        return { ...facts, pgDumpVersion: tool.text };
      });
  } finally {
    await database.close();
  }
}

async function dumpEmbedded(dataDir: string, file: string): Promise<Facts> {
  const dir = embeddedDatabaseDir(dataDir);
  if (!(await pathExists(path.join(dir, "PG_VERSION"))))
    throw new BackupRefusal(`no embedded database in ${dir} (set DATABASE_URL for PostgreSQL)`);
  // Refuses (DataDirInUseError) while serve or another command holds it: a copy of a database
  // another process is writing is not a backup. Stop serve for the backup (it takes seconds).
  const lock = await acquireEmbeddedLock(dataDir, { role: "backup", controlSocket: null });
  try {
    const database = await openDatabase({ kind: "pglite", dataDir: dir });
    try {
      const facts = await describeDatabase(database.db);
      const dump = await (database.dumpDataDir as () => Promise<Blob>)();
      await writeFile(file, Buffer.from(await dump.arrayBuffer()), { mode: 0o600 });
      return {
        ...facts,
        serverVersion: `${facts.serverVersion} (PGlite)`,
        uncompressedSize: await gunzippedSize(file),
      };
    } finally {
      await database.close();
    }
  } finally {
    await lock.release();
  }
}

/**
 * The secrets a backup seals: the secret variables that are set, and the generated secret files of
 * DATA_DIR (`secrets.json`; the generated `master-mnemonic` outside production mode only — in
 * production the mnemonic stays on the signer host, and the command refuses it anyway).
 */
async function collectSecrets(config: Config, variables: Record<string, string>): Promise<SecretPayload> {
  const files: Record<string, string> = {};
  for (const name of DATA_DIR_SECRET_FILES) {
    if (name === "master-mnemonic" && config.production) continue;
    const text = await readKeyFile(dataDirSecretPath(config.dataDir, name));
    if (text !== undefined) files[name] = text;
  }
  return { env: { ...variables }, files };
}
