import { createReadStream, createWriteStream, openAsBlob } from "node:fs";
import { mkdtemp, readdir, readFile, rename, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGunzip } from "node:zlib";
import { sql } from "kysely";
import type { ChainRegistry } from "../chains/index.js";
import type { Config } from "../config/config.js";
import { type AccountXpubs, accountKeyNames } from "../config/xpubs.js";
import { type Database, openDatabase } from "../db/database.js";
import { acquireEmbeddedLock, DataDirInUseError, readEmbeddedLock } from "../db/embedded-lock.js";
import { appliedMigrations, migrate } from "../db/migrate.js";
import type { CurrencyType } from "../domain/currency.js";
import { type LedgerReport, verifyLedger } from "../ledger/index.js";
import type { Clock } from "../lib/clock.js";
import { ensurePrivateDir, readKeyFile, writeKeyFile } from "../lib/private-files.js";
import {
  custodialChains,
  type ReserveReport,
  reconcileReserves,
  recordReserveCheck,
} from "../reserves/index.js";
import {
  AddressDeriver,
  accountXpubsOf,
  isValidMnemonic,
  normalizeMnemonic,
  recordedAccountKeys,
  resolveAccountKeys,
} from "../wallet/index.js";
import {
  ArchiveError,
  type EntryName,
  type ExtractedEntry,
  extractArchive,
  SUMS_ENTRY,
  SUMS_MAC_ENTRY,
  sha256,
} from "./archive.js";
import { backupMacKey, checkMac, keyOfSecretsJson, processSecretKey } from "./authenticity.js";
import { configurationVariableNames, plainVariableNames } from "./configuration.js";
import {
  DATA_DIR_SECRET_FILES,
  type DataDirSecretFile,
  dataDirSecretPath,
  embeddedDatabaseDir,
} from "./create.js";
import { BackupFailure, BackupRefusal } from "./errors.js";
import { pathExists } from "./files.js";
import { type BackupManifest, countRows, migrationLabel, parseManifest, schemaRefusal } from "./manifest.js";
import {
  checkDumpContents,
  databaseContents,
  ensureGroupRoles,
  foreignObjects,
  isSuperuser,
  majorOf,
  otherSessions,
  pgRestore,
  serverMajor,
  toolVersion,
  wipePublicSchema,
} from "./postgres-tools.js";
import { openSecrets, PassphraseError, parseSealedSecrets, type SecretPayload } from "./sealed-secrets.js";

export interface RestoreOptions {
  /** The archive `stablegate backup` wrote. */
  input: string;
  /** Opens the sealed secrets, if the archive has them. */
  passphrase?: string;
  /**
   * Restore over what the target holds: PostgreSQL's public schema is dropped (after every check
   * passed); the embedded database folder is moved aside (`pglite.before-restore-<time>`), never deleted.
   */
  wipe: boolean;
  /** Every check, nothing written. */
  dryRun: boolean;
  /** Write the configuration (and the opened secret variables) as an environment file (a new file, 0600). */
  envFile?: string;
}

/** What the reserves reconciliation needs besides the database (the operator commands' context). */
export interface ReserveContext {
  clock: Clock;
  chains(): ChainRegistry;
  coldWallet?: (network: CurrencyType, environment: "production" | "sandbox") => string | undefined;
}

export interface ReserveOutcome {
  network: string;
  environment: string;
  /** The reconciliation, or null when the chain could not be read (`warning` says why). */
  report: ReserveReport | null;
  warning?: string;
}

export interface RestoreReport {
  dryRun: boolean;
  driver: "postgres" | "pglite";
  backup: { createdAt: string; stablegateVersion: string; lastMigration: string | null };
  /** Row counts of the restored database (before migrations), equal to the backup's. */
  tables: Record<string, number>;
  migrations: { backup: string | null; now: string | null; applied: string[] };
  configuration: { keys: string[]; secretKeys: string[]; envFile: string | null };
  /** What authenticated the archive: this installation's SECRET_ENCRYPTION_KEY, or the sealed secrets' passphrase. */
  authenticatedBy: string;
  secrets: { env: string[]; files: string[] } | null;
  /**
   * The process's keys (`source`) and the backup's pinned keys checked against them; `pinned`: the
   * keys the restored database pins (read back after the restore, equal to the manifest's).
   */
  accountKeys: { source: string; checked: string[]; pinned?: string[] };
  ledger: LedgerReport | null;
  reserves: ReserveOutcome[];
  warnings: string[];
  /** Restored (or, with --dry-run, restorable) and the books verify. */
  ok: boolean;
}

/** How long one chain's reconciliation may take after a restore before it is a warning. */
const RESERVE_TIMEOUT_MS = 30_000;

/**
 * The most an embedded dump may hold once decompressed, whatever its manifest says: PGlite reads the
 * whole data folder's tar into memory (a Node buffer), so a decompression bomb must stop before.
 */
export const MAX_EMBEDDED_DUMP_BYTES = 4 * 1024 * 1024 * 1024 - 1;

/**
 * `stablegate restore`: checks everything before writing anything — the archive (complete and
 * unaltered), the schema (not newer than this build's), the driver, the sealed secrets (the
 * passphrase), the account keys (the restoring process's against the ones the backup's database
 * pinned), the target (empty, or `wipe`) — then restores, compares the row counts with the
 * manifest, applies this build's newer migrations, and runs the ledger verification and the
 * reserves reconciliation (`stablegate ledger verify`, `chain reconcile`: a chain that cannot be
 * read is a warning, not a failure — the books are the database's, the chain may be down).
 */
export async function restoreBackup(
  config: Config,
  options: RestoreOptions,
  reserveContext: (database: Database) => ReserveContext,
): Promise<RestoreReport> {
  const work = await mkdtemp(path.join(tmpdir(), "stablegate-restore-"));
  try {
    let entries: Map<EntryName, ExtractedEntry>;
    try {
      entries = await extractArchive(path.resolve(options.input), work);
    } catch (err) {
      if (err instanceof ArchiveError)
        throw new BackupRefusal(`${options.input}: ${err.message}; nothing was restored`);
      throw err;
    }
    const manifestEntry = entries.get("manifest.json");
    if (!manifestEntry) throw new BackupRefusal(`${options.input}: no manifest.json; nothing was restored`);
    const manifestText = await readFile(manifestEntry.file);
    const warnings: string[] = [];
    const authenticity = await authenticate(config, entries, manifestText, options.passphrase, warnings);
    const secrets = authenticity.secrets;
    let manifest: BackupManifest;
    try {
      manifest = parseManifest(manifestText.toString("utf8"));
    } catch (err) {
      throw new BackupRefusal(`${options.input}: ${(err as Error).message}; nothing was restored`);
    }
    for (const [name, listed] of Object.entries(manifest.entries)) {
      const entry = entries.get(name as EntryName);
      if (!entry || entry.sha256 !== listed.sha256 || entry.size !== listed.size)
        throw new BackupRefusal(
          `${options.input}: ${name} is not the one the manifest lists; nothing was restored`,
        );
    }
    const dumpName = manifest.driver === "postgres" ? "database.pgdump" : "database.pglite.tar.gz";
    const dump = entries.get(dumpName);
    if (!dump || !manifest.entries[dumpName])
      throw new BackupRefusal(`${options.input}: no ${dumpName}; nothing was restored`);

    const refusal = await schemaRefusal(manifest.schema);
    if (refusal) throw new BackupRefusal(`${refusal}; nothing was restored`);
    const driver = config.database.url ? "postgres" : "pglite";
    if (driver !== manifest.driver)
      throw new BackupRefusal(
        manifest.driver === "postgres"
          ? "this backup is of a PostgreSQL database: set DATABASE_URL to the (empty) database to restore it into"
          : "this backup is of the embedded database: unset DATABASE_URL and set DATA_DIR to restore it",
      );

    if (secrets) checkSealedNames(manifest, secrets);
    if (entries.has("secrets.enc") && !secrets)
      warnings.push("the backup holds sealed secrets; without a passphrase they were not restored");

    const { mine, ...keys } = await checkAccountKeys(config, manifest, secrets);
    const secretFiles = await plannedSecretFiles(config, secrets);
    if (options.envFile && (await pathExists(options.envFile)))
      throw new BackupRefusal(
        `${options.envFile} exists: the environment file is written only as a new file`,
      );
    const configVariables = await readConfiguration(entries.get("config.json"));

    const base = {
      driver,
      backup: {
        createdAt: manifest.createdAt,
        stablegateVersion: manifest.stablegateVersion,
        lastMigration: manifest.schema.lastMigration,
      },
      configuration: {
        keys: manifest.configuration.keys,
        secretKeys: manifest.configuration.secretKeys,
        envFile: options.envFile && !options.dryRun ? path.resolve(options.envFile) : null,
      },
      authenticatedBy: authenticity.by,
      secrets: secrets ? { env: Object.keys(secrets.env), files: Object.keys(secrets.files) } : null,
      accountKeys: keys,
      warnings,
    } as const;

    /** `write` restores and answers the restored database (the caller closes it). */
    const restoreInto = async (write: () => Promise<Database>): Promise<RestoreReport> => {
      if (options.dryRun) {
        return {
          ...base,
          dryRun: true,
          tables: manifest.tables,
          migrations: {
            backup: manifest.schema.lastMigration,
            now: manifest.schema.lastMigration,
            applied: [],
          },
          ledger: null,
          reserves: [],
          ok: true,
        };
      }
      const database = await write();
      for (const [name, text] of secretFiles) {
        await ensurePrivateDir(config.dataDir);
        await writeKeyFile(dataDirSecretPath(config.dataDir, name), text, { exclusive: true });
      }
      if (options.envFile) await writeEnvFile(options.envFile, configVariables, secrets?.env ?? {});
      const tables = await countRows(database.db);
      const differ = Object.keys({ ...tables, ...manifest.tables }).filter(
        (t) => tables[t] !== manifest.tables[t],
      );
      if (differ.length > 0)
        throw new BackupFailure(
          `the restored database differs from the backup's manifest in ${differ
            .map(
              (t) => `${t} (${tables[t] ?? "missing"} rows, the backup had ${manifest.tables[t] ?? "none"})`,
            )
            .join(", ")}`,
        );
      const pinned = await checkRestoredAccountKeys(database, manifest, mine);
      const { applied } = await migrate(database.db);
      const ledger = await verifyLedger(database.db);
      const reserves = await reconcileAfterRestore(
        database,
        reserveContext(database),
        config.reserves.tolerance,
      );
      for (const r of reserves) if (r.warning) warnings.push(`${r.network} ${r.environment}: ${r.warning}`);
      const last = (await appliedMigrations(database.db)).at(-1);
      return {
        ...base,
        dryRun: false,
        tables,
        migrations: {
          backup: manifest.schema.lastMigration,
          now: last ? migrationLabel(last) : null,
          applied,
        },
        accountKeys: { ...keys, pinned },
        ledger,
        reserves,
        ok: ledger.ok && reserves.every((r) => r.report === null || r.report.ok),
      };
    };

    if (driver === "postgres") {
      const url = config.database.url as string;
      const tool = await toolVersion("pg_restore").catch((err: Error) => {
        throw new BackupRefusal(err.message);
      });
      const made = majorOf(/\(PostgreSQL\)\s+(\d+)/.exec(manifest.database.pgDumpVersion ?? "")?.[1] ?? "0");
      if (tool.major < made)
        throw new BackupRefusal(
          `${tool.text} cannot read a dump of pg_dump ${made}: put pg_restore ${made} or newer first on PATH`,
        );
      // Defence in depth: the dump holds only what stablegate's migrations make (no materialized
      // view whose refresh runs code, no foreign schema, …), whatever authenticated it.
      await checkDumpContents(dump.file);
      const database = await openDatabase({
        kind: "postgres",
        url,
        poolSize: 2,
        applicationName: "stablegate-restore",
      });
      try {
        const target = await serverMajor(database.db);
        const source = majorOf(manifest.database.serverVersion);
        if (target < source)
          throw new BackupRefusal(
            `the backup comes from PostgreSQL ${source}; restore it into PostgreSQL ${source} or newer (this server is ${target})`,
          );
        const sessions = await otherSessions(database.db);
        if (sessions.length > 0)
          throw new BackupRefusal(
            `${sessions.length} other session(s) are connected to the target database (${sessions.join(", ")}): ` +
              "stop every stablegate service (api, worker, signer, serve) and anything else using it first; nothing was restored",
          );
        const contents = await databaseContents(database.db);
        if (contents.length > 0 && !options.wipe)
          throw new BackupRefusal(
            `the target database is not empty (${contents.join(", ")}…): restore into a new database ` +
              "(createdb), or give --wipe to drop its public schema first; nothing was restored",
          );
        if (contents.length > 0) {
          // Everything --wipe would not drop is looked for before it drops anything.
          const foreign = await foreignObjects(database.db);
          if (foreign.length > 0)
            throw new BackupRefusal(
              `--wipe drops only the public schema, and the database also holds ${foreign.join(", ")}: not stablegate's; ` +
                "restore into a new database (createdb); nothing was restored",
            );
        }
        if (await isSuperuser(database.db))
          warnings.push(
            "the restore ran as a superuser: restore with the database owner's role (the one `stablegate migrate` uses), not a superuser",
          );
        return await restoreInto(async () => {
          if (contents.length > 0) {
            await wipePublicSchema(database.db);
            const left = await databaseContents(database.db);
            if (left.length > 0)
              throw new BackupRefusal(
                `--wipe dropped the public schema, but the database still holds ${left.join(", ")}: not stablegate's; nothing was restored`,
              );
          }
          await ensureGroupRoles(database.db);
          await pgRestore(url, dump.file);
          return database;
        });
      } finally {
        await database.close();
      }
    }

    // Embedded: DATA_DIR's lock (refused while serve runs on it: DataDirInUseError), then its
    // pglite folder. A dry run only looks for a holder: it writes nothing, not even the lock.
    const dir = embeddedDatabaseDir(config.dataDir);
    const tarFile = await decompressEmbeddedDump(dump.file, manifest, work);
    const checkTarget = async () => {
      const held = (await readdir(dir).catch(() => [] as string[])).length > 0;
      if (held && !options.wipe)
        throw new BackupRefusal(
          `${dir} holds a database: move it away, or give --wipe (it is moved to ${path.basename(dir)}.before-restore-<time>, ` +
            "not deleted); nothing was restored",
        );
      return held;
    };
    if (options.dryRun) {
      const holder = await readEmbeddedLock(config.dataDir);
      if (holder) throw new DataDirInUseError(holder);
      await checkTarget();
      return restoreInto(async () => {
        throw new Error("a dry run restores nothing");
      });
    }
    const lock = await acquireEmbeddedLock(config.dataDir, { role: "restore", controlSocket: null });
    try {
      const held = await checkTarget();
      let database: Database | undefined;
      try {
        return await restoreInto(async () => {
          if (held)
            await rename(dir, `${dir}.before-restore-${new Date().toISOString().replace(/[:.]/g, "-")}`);
          else await rm(dir, { recursive: true, force: true });
          database = await openDatabase({
            kind: "pglite",
            dataDir: dir,
            snapshot: await openAsBlob(tarFile),
          });
          return database;
        });
      } finally {
        await database?.close();
      }
    } finally {
      await lock.release();
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** What a variable's name may be: it becomes the start of a line of the environment file. */
const VARIABLE_NAME = /^[A-Z][A-Z0-9_]*$/;
/** A value must stay on its line, whatever reads the environment file (a shell, `--env-file`, systemd). */
const hasControl = (value: string) =>
  [...value].some((c) => {
    const code = c.codePointAt(0) ?? 0;
    return code < 0x20 || code === 0x7f;
  });

/**
 * Whether the archive is this installation's, before anything is read from it: with a passphrase,
 * the sealed secrets (their seal binds the manifest, which holds the other entries' digests) — an
 * archive without them is refused, a removed seal must not downgrade the check; without one, the
 * MAC of `SHA256SUMS` under this process's SECRET_ENCRYPTION_KEY (`authenticity.ts`).
 */
async function authenticate(
  config: Config,
  entries: Map<EntryName, ExtractedEntry>,
  manifestText: Buffer,
  passphrase: string | undefined,
  warnings: string[],
): Promise<{ by: string; secrets: SecretPayload | null }> {
  const sums = await readFile((entries.get(SUMS_ENTRY) as ExtractedEntry).file);
  const macFile = entries.get(SUMS_MAC_ENTRY);
  const macText = macFile ? await readFile(macFile.file, "utf8") : undefined;
  const mine = await processSecretKey(config).catch((err: unknown) => {
    throw new BackupRefusal(`${(err as Error).message}; nothing was restored`);
  });
  if (passphrase !== undefined) {
    const sealed = entries.get("secrets.enc");
    if (!sealed)
      throw new BackupRefusal(
        "a passphrase was given, but the backup holds no sealed secrets: it was made without --include-secrets, " +
          "or its seal was removed; restore it without the passphrase (it is then checked with this installation's " +
          "SECRET_ENCRYPTION_KEY); nothing was restored",
      );
    let payload: SecretPayload;
    try {
      payload = await openSecrets(
        parseSealedSecrets(await readFile(sealed.file, "utf8")),
        passphrase,
        sha256(manifestText),
      );
    } catch (err) {
      if (err instanceof PassphraseError) throw new BackupRefusal(err.message);
      throw err;
    }
    // The backup's own key, sealed; else this process's: with it, the MAC must hold too.
    const theirs =
      payload.env?.SECRET_ENCRYPTION_KEY ??
      (payload.files?.["secrets.json"] !== undefined
        ? keyOfSecretsJson(payload.files["secrets.json"])
        : undefined);
    if (mine !== undefined && !checkMac(macText, sums, backupMacKey(mine)).ok)
      warnings.push(
        "this process's SECRET_ENCRYPTION_KEY is not the one the backup was made with: the restored webhook secrets " +
          "and TOTP seeds need the backup's (in the sealed secrets: --env-file, DATA_DIR/secrets.json)",
      );
    else if (theirs !== undefined && !checkMac(macText, sums, backupMacKey(theirs)).ok)
      throw new BackupRefusal(
        `the backup's ${SUMS_MAC_ENTRY} does not verify with its own sealed SECRET_ENCRYPTION_KEY (altered archive); nothing was restored`,
      );
    return { by: "the passphrase of its sealed secrets", secrets: payload };
  }
  if (mine === undefined)
    throw new BackupRefusal(
      "cannot check that this backup is this installation's: this process has no SECRET_ENCRYPTION_KEY " +
        (config.production ? "" : "(neither the variable nor DATA_DIR/secrets.json) ") +
        "to verify its MAC; set SECRET_ENCRYPTION_KEY to the installation's (the one the backup was made with), " +
        "or give the passphrase of a backup made with --include-secrets; nothing was restored",
    );
  const key = backupMacKey(mine);
  const check = checkMac(macText, sums, key);
  if (!check.ok) {
    const why = {
      missing: `it has no ${SUMS_MAC_ENTRY}: not made by this build's \`stablegate backup\`, or altered`,
      malformed: `its ${SUMS_MAC_ENTRY} is malformed (altered)`,
      "other-key": `it was made under another SECRET_ENCRYPTION_KEY (key id ${check.keyId}; this process's is ${key.id})`,
      altered: "its MAC does not verify with this process's SECRET_ENCRYPTION_KEY: the archive was altered",
    }[check.why];
    throw new BackupRefusal(
      `the backup is not authenticated: ${why}. A restore runs only backups made by this installation ` +
        "(the same SECRET_ENCRYPTION_KEY), or sealed ones with their passphrase; nothing was restored",
    );
  }
  return { by: `this installation's SECRET_ENCRYPTION_KEY (key id ${key.id})`, secrets: null };
}

/** The opened secrets hold what the (authenticated) manifest lists, and only variables of the gateway's. */
function checkSealedNames(manifest: BackupManifest, payload: SecretPayload): void {
  const names = manifest.secrets;
  if (
    names &&
    (names.env.some((n) => !(n in (payload.env ?? {}))) ||
      names.files.some((n) => !(n in (payload.files ?? {}))))
  )
    throw new BackupRefusal(
      "the sealed secrets lack what the manifest lists (altered archive); nothing was restored",
    );
  const known = configurationVariableNames();
  for (const [k, v] of Object.entries(payload.env ?? {}))
    if (!VARIABLE_NAME.test(k) || !known.has(k) || typeof v !== "string" || hasControl(v))
      throw new BackupRefusal(
        `the sealed secrets hold ${JSON.stringify(k)}, which is not a stablegate variable or has a control character; nothing was restored`,
      );
}

/**
 * `config.json`'s variables: only the plain variables of `configuration.ts`, as strings without
 * control characters (each stays one `NAME=value` line of the environment file); refused otherwise.
 */
async function readConfiguration(entry: ExtractedEntry | undefined): Promise<Record<string, string>> {
  if (!entry) throw new BackupRefusal("the backup has no config.json; nothing was restored");
  let variables: unknown;
  try {
    variables = (JSON.parse(await readFile(entry.file, "utf8")) as { variables?: unknown }).variables;
  } catch {
    variables = undefined;
  }
  if (
    typeof variables !== "object" ||
    variables === null ||
    !Object.entries(variables).every(([k, v]) => VARIABLE_NAME.test(k) && typeof v === "string")
  )
    throw new BackupRefusal("the backup's config.json is not a list of variables; nothing was restored");
  const plain = plainVariableNames();
  const foreign = Object.keys(variables).filter((k) => !plain.has(k));
  if (foreign.length > 0)
    throw new BackupRefusal(
      `the backup's config.json holds ${foreign.join(", ")}: not plain configuration variables of stablegate; nothing was restored`,
    );
  const broken = Object.entries(variables as Record<string, string>)
    .filter(([, v]) => hasControl(v))
    .map(([k]) => k);
  if (broken.length > 0)
    throw new BackupRefusal(
      `the backup's config.json has a control character (a line break …) in ${broken.join(", ")}; nothing was restored`,
    );
  return variables as Record<string, string>;
}

/**
 * The embedded dump decompressed into `work` (PGlite then reads the tar as it is), counting: more
 * than the manifest's `uncompressedSize` (authenticated with the archive) or than
 * `MAX_EMBEDDED_DUMP_BYTES` stops it at once — a decompression bomb never reaches memory — and a
 * size other than the manifest's is refused.
 */
async function decompressEmbeddedDump(file: string, manifest: BackupManifest, work: string): Promise<string> {
  const expected = manifest.database.uncompressedSize;
  if (expected === undefined)
    throw new BackupRefusal(
      "the manifest does not record the embedded dump's uncompressed size; nothing was restored",
    );
  if (expected > MAX_EMBEDDED_DUMP_BYTES)
    throw new BackupRefusal(
      `the embedded dump is ${expected} bytes uncompressed, beyond the ${MAX_EMBEDDED_DUMP_BYTES} an embedded database can load; nothing was restored`,
    );
  const out = path.join(work, "database.pglite.tar");
  let seen = 0;
  const limit = new Transform({
    transform(chunk: Buffer, _enc, done) {
      seen += chunk.length;
      if (seen > expected)
        done(
          new BackupRefusal(
            `the embedded dump decompresses to more than the ${expected} bytes its manifest records; nothing was restored`,
          ),
        );
      else done(null, chunk);
    },
  });
  try {
    await pipeline(createReadStream(file), createGunzip(), limit, createWriteStream(out, { mode: 0o600 }));
  } catch (err) {
    if (err instanceof BackupRefusal) throw err;
    throw new BackupRefusal(
      `the embedded dump is not a gzip file (${(err as Error).message}); nothing was restored`,
    );
  }
  if (seen !== expected)
    throw new BackupRefusal(
      `the embedded dump decompresses to ${seen} bytes, its manifest records ${expected}; nothing was restored`,
    );
  return out;
}

/** At most four names, and how many more. */
const few = (names: string[]) =>
  names.length <= 4 ? names.join(", ") : `${names.slice(0, 4).join(", ")} and ${names.length - 4} more`;

/**
 * After the restore: the account keys the restored database pins must be the manifest's (which the
 * process's keys were checked against before writing) and the process's. Otherwise exit 1: the
 * data stays for the operator to look at, and the services refuse to start on it anyway.
 */
async function checkRestoredAccountKeys(
  database: Database,
  manifest: BackupManifest,
  mine: AccountXpubs | undefined,
): Promise<string[]> {
  const table = await sql<{ t: string | null }>`select to_regclass('account_keys')::text as t`.execute(
    database.db,
  );
  const restored = table.rows[0]?.t ? await recordedAccountKeys(database.db) : [];
  const label = (k: { network: string; environment: string; xpub: string }) =>
    `${k.network}/${k.environment}`;
  const key = (k: { network: string; environment: string; xpub: string }) => `${label(k)}=${k.xpub}`;
  const listed = new Set(manifest.accountKeys.map(key));
  const found = new Set(restored.map(key));
  const differ = [
    ...restored.filter((k) => !listed.has(key(k))),
    ...manifest.accountKeys.filter((k) => !found.has(key(k))),
  ].map(label);
  if (differ.length > 0)
    throw new BackupFailure(
      `the restored database pins other account keys than the backup's manifest lists (${few([...new Set(differ)])}): ` +
        "the manifest does not describe the dump; do not start the services on this database",
    );
  const known = new Set<string>(accountKeyNames());
  const other = restored
    .filter((k) => known.has(label(k)) && mine?.[label(k) as keyof AccountXpubs] !== undefined)
    .filter((k) => mine?.[label(k) as keyof AccountXpubs] !== k.xpub)
    .map(label);
  if (other.length > 0)
    throw new BackupFailure(
      `the restored database pins account keys other than this process's (${few(other)}): ` +
        "its deposit addresses would be ones these keys cannot spend; do not start the services on this database",
    );
  return restored.map(label);
}

/**
 * The restoring process's account keys against the ones the backup's database pinned: from
 * MASTER_XPUBS, or the mnemonic (MASTER_MNEMONIC(_FILE)); outside production mode, else the
 * generated DATA_DIR/master-mnemonic, else the backup's sealed one (restored with it). Never
 * generates one. Refuses a mismatch, and a backup with pinned keys that none of the process's
 * keys can be compared with.
 */
async function checkAccountKeys(
  config: Config,
  manifest: BackupManifest,
  secrets: SecretPayload | null,
): Promise<{ source: string; checked: string[]; mine: AccountXpubs | undefined }> {
  let mine: AccountXpubs | undefined;
  let source = "none";
  if (config.mnemonic.value !== undefined || config.mnemonic.file !== undefined) {
    const keys = await resolveAccountKeys(config, "mnemonic");
    mine = accountXpubsOf(keys.deriver);
    source = keys.source;
  } else if (config.accountXpubs) {
    mine = config.accountXpubs;
    source = "MASTER_XPUBS";
  } else if (!config.production) {
    const onDisk = await readKeyFile(dataDirSecretPath(config.dataDir, "master-mnemonic"));
    const words = onDisk ?? secrets?.files["master-mnemonic"];
    if (words !== undefined) {
      const normalized = normalizeMnemonic(words);
      if (!isValidMnemonic(normalized))
        throw new BackupRefusal(
          `the ${onDisk !== undefined ? "generated mnemonic in DATA_DIR" : "backup's generated mnemonic"} is not valid`,
        );
      mine = accountXpubsOf(AddressDeriver.fromMnemonic(normalized));
      source = onDisk !== undefined ? "DATA_DIR/master-mnemonic" : "the backup's master-mnemonic";
    }
  }
  if (manifest.accountKeys.length === 0) return { source, checked: [], mine };
  if (!mine)
    throw new BackupRefusal(
      "the backup's database pinned account keys, and this process has none to compare: set MASTER_XPUBS " +
        "(`stablegate signer export-xpubs` on the signer host)" +
        (config.production
          ? ""
          : ", MASTER_MNEMONIC(_FILE), or give the passphrase of a backup made with --include-secrets") +
        "; nothing was restored",
    );
  const known = new Set<string>(accountKeyNames());
  const checked: string[] = [];
  const differ: string[] = [];
  for (const k of manifest.accountKeys) {
    const name = `${k.network}/${k.environment}`;
    const given = known.has(name) ? mine[name as keyof AccountXpubs] : undefined;
    if (given === undefined) continue;
    checked.push(name);
    if (given !== k.xpub) differ.push(name);
  }
  if (differ.length > 0)
    throw new BackupRefusal(
      `the account keys of this process (${source}) differ from the ones the backup's database pinned ` +
        `(${differ.join(", ")}): its deposit addresses would be ones these keys cannot spend; nothing was restored`,
    );
  if (checked.length === 0)
    throw new BackupRefusal(
      `none of the backup's pinned account keys (${manifest.accountKeys.map((k) => `${k.network}/${k.environment}`).join(", ")}) ` +
        `is among this process's (${source}): nothing to check them against; nothing was restored`,
    );
  return { source, checked, mine };
}

/** The DATA_DIR secret files to write from the opened secrets: absent ones only; a different one refuses. */
async function plannedSecretFiles(
  config: Config,
  secrets: SecretPayload | null,
): Promise<[DataDirSecretFile, string][]> {
  const out: [DataDirSecretFile, string][] = [];
  if (!secrets) return out;
  for (const name of DATA_DIR_SECRET_FILES) {
    const text = secrets.files[name];
    if (text === undefined) continue;
    const file = dataDirSecretPath(config.dataDir, name);
    const present = await readKeyFile(file);
    if (present === undefined) out.push([name, text]);
    else if (present !== text)
      throw new BackupRefusal(
        `${file} exists and differs from the backup's: move it away to restore the backup's (it is never replaced); nothing was restored`,
      );
  }
  return out;
}

/** `NAME=value` lines, a value quoted for a POSIX shell when it needs to be (`set -a; . file`). */
async function writeEnvFile(
  file: string,
  plain: Record<string, string>,
  secret: Record<string, string>,
): Promise<void> {
  for (const [name, value] of [...Object.entries(plain), ...Object.entries(secret)])
    if (!VARIABLE_NAME.test(name) || hasControl(value))
      throw new Error(`not a variable name, or a control character in its value: ${JSON.stringify(name)}`);
  const quote = (v: string) => (/^[A-Za-z0-9_@%+=:,./-]*$/.test(v) ? v : `'${v.replaceAll("'", `'\\''`)}'`);
  const lines = [
    "# Written by `stablegate restore` from the backup's configuration.",
    ...Object.entries(plain).map(([k, v]) => `${k}=${quote(v)}`),
    ...(Object.keys(secret).length > 0 ? ["# Secrets (from the sealed part of the backup):"] : []),
    ...Object.entries(secret).map(([k, v]) => `${k}=${quote(v)}`),
  ];
  await writeKeyFile(path.resolve(file), `${lines.join("\n")}\n`, { exclusive: true });
}

/**
 * `chain reconcile`'s reconciliation of every custodial chain against the restored books, each
 * recorded as the job records it; a chain that cannot be read (down, unreachable, no answer within
 * 30 s) is a warning.
 */
async function reconcileAfterRestore(
  database: Database,
  ctx: ReserveContext,
  tolerance: bigint,
): Promise<ReserveOutcome[]> {
  let registry: ChainRegistry;
  try {
    registry = ctx.chains();
  } catch (err) {
    return [
      {
        network: "*",
        environment: "*",
        report: null,
        warning: `chains not built: ${(err as Error).message}`,
      },
    ];
  }
  const out: ReserveOutcome[] = [];
  for (const chain of custodialChains(registry)) {
    const target = {
      ...chain,
      adapter: chain.adapter,
      coldWallet: ctx.coldWallet?.(chain.network, chain.environment),
    };
    let timer: NodeJS.Timeout | undefined;
    try {
      const report = await Promise.race([
        reconcileReserves({ db: database.db, clock: ctx.clock }, target, tolerance),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`no answer within ${RESERVE_TIMEOUT_MS / 1000} s`)),
            RESERVE_TIMEOUT_MS,
          );
        }),
      ]);
      await recordReserveCheck(database.db, report);
      out.push({ network: chain.network, environment: chain.environment, report });
    } catch (err) {
      out.push({
        network: chain.network,
        environment: chain.environment,
        report: null,
        warning: `reserves not reconciled, the chain could not be read (${(err as Error).message}); run \`stablegate chain reconcile\` once it is reachable`,
      });
    } finally {
      clearTimeout(timer);
    }
  }
  return out;
}
