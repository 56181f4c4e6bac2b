import { mkdir, mkdtemp, readFile, rm, stat, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { extractArchive, writeArchive } from "../../src/backup/archive.js";
import { backupMacKey, macEntry } from "../../src/backup/authenticity.js";
import {
  BackupRefusal,
  type BackupResult,
  createBackup,
  type RestoreOptions,
  type RestoreReport,
  restoreBackup,
} from "../../src/backup/index.js";
import { databaseContents } from "../../src/backup/postgres-tools.js";
import { operatorContext } from "../../src/cli/merchant-create.js";
import { parseConfig } from "../../src/config/config.js";
import { formatAccountXpubs } from "../../src/config/xpubs.js";
import { type Database, openDatabase } from "../../src/db/database.js";
import { migrate } from "../../src/db/migrate.js";
import { getBalances, verifyLedger } from "../../src/ledger/index.js";
import { AddressDeriver, accountXpubsOf } from "../../src/wallet/index.js";
import { createEmptyPostgresDatabase, onPostgres, openTestDatabase } from "../support/db.js";
import { call, startTestService, type TestService } from "../support/harness.js";
import { type Receiver, startReceiver, waitFor } from "../webhooks/support.js";
import { type Funded, fundedMerchant } from "../withdrawals/support.js";

// Issue #42, backups: a database with real activity (a merchant registered on the dashboard with
// a webhook endpoint, sandbox checkout sessions paid through the simulator and confirmed by the
// watcher, a withdrawal executed through the sender) is backed up, wiped and restored on the driver
// of this run (PostgreSQL with TEST_DATABASE_URL, else the embedded PGlite in a DATA_DIR).

const TEST_MNEMONIC = "test test test test test test test test test test test junk";
const OTHER_MNEMONIC =
  "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about";
const PASSPHRASE = "correct horse battery staple 42";
const FEES = '{"USDT-TRC20": {"withdrawal": {"fixed": "1.5", "percent": "0.1"}}}';

/** Secret values that must never be in a plain backup's bytes. */
const SECRETS = {
  JWT_SECRET: "jwt-secret-for-the-backup-test-0123456789abcdef",
  SECRET_ENCRYPTION_KEY: "5ec2e7c0de5ec2e7c0de5ec2e7c0de5ec2e7c0de5ec2e7c0de5ec2e7c0de5ec2",
  METRICS_TOKEN: "metrics-token-backup-test-77",
  INTERNAL_SHARED_SECRET: "internal-shared-secret-backup-test-0123456789",
  SCREENING_TOKEN: "screening-token-backup-test-55",
  DOCS_USER: "docs",
  DOCS_PASSWORD: "docs-password-backup-test-66",
} as const;
const DATABASE_PASSWORD = "database-password-backup-test";
/** What DATA_DIR/secrets.json holds (a generated secret of development mode). */
const DATA_DIR_SECRET = "generated-in-data-dir-secret-0123456789abcdef";

let work: string;
let sourceDataDir: string;
let source: (Database & { url: string | undefined }) | undefined;
let svc: TestService | undefined;
let receiver: Receiver | undefined;
let m: Funded;
let before: Awaited<ReturnType<typeof getBalances>>;
let beforeProduction: Awaited<ReturnType<typeof getBalances>>;
let plain: BackupResult;
let sealed: BackupResult;
const cleanups: (() => Promise<void>)[] = [];

function envFor(target: { url?: string; dataDir: string }, extra: Record<string, string> = {}) {
  return {
    NODE_ENV: "test",
    LOG_LEVEL: "error",
    DATA_DIR: target.dataDir,
    PRODUCTION_BASE_URL: "http://api.stablegate.test",
    SANDBOX_BASE_URL: "http://sandbox.stablegate.test",
    // The installation's key: the restore authenticates a plain backup with it.
    SECRET_ENCRYPTION_KEY: SECRETS.SECRET_ENCRYPTION_KEY,
    ...(target.url ? { DATABASE_URL: target.url } : {}),
    ...extra,
  };
}

/** A fresh restore target: an empty PostgreSQL database, or a DATA_DIR that does not exist yet. */
async function newTarget(): Promise<{ url?: string; dataDir: string }> {
  const dataDir = path.join(work, `restore-${Math.random().toString(36).slice(2, 8)}`);
  if (!onPostgres) return { dataDir };
  const db = await createEmptyPostgresDatabase();
  cleanups.push(db.drop);
  return { url: db.url, dataDir };
}

async function restore(
  target: { url?: string; dataDir: string },
  options: Partial<RestoreOptions> & { input: string },
  env: Record<string, string> = { MASTER_MNEMONIC: TEST_MNEMONIC },
): Promise<RestoreReport> {
  const config = parseConfig(envFor(target, env));
  return restoreBackup(config, { wipe: false, dryRun: false, ...options }, (database) =>
    operatorContext(config, database.db),
  );
}

/** Opens what a restore wrote (the caller closes it). */
function openRestored(target: { url?: string; dataDir: string }): Promise<Database> {
  return target.url
    ? openDatabase({ kind: "postgres", url: target.url, poolSize: 2 })
    : openDatabase({ kind: "pglite", dataDir: path.join(target.dataDir, "pglite") });
}

/** Nothing of a refused restore is in the target. */
async function expectUntouched(target: { url?: string; dataDir: string }) {
  if (target.url) {
    const db = await openDatabase({ kind: "postgres", url: target.url, poolSize: 1 });
    try {
      expect(await databaseContents(db.db)).toEqual([]);
    } finally {
      await db.close();
    }
  } else {
    await expect(stat(target.dataDir)).rejects.toMatchObject({ code: "ENOENT" });
  }
}

async function expectRefused(promise: Promise<unknown>, message: RegExp) {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(BackupRefusal);
  expect((err as Error).message).toMatch(message);
}

beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), "sg-backup-"));
  sourceDataDir = path.join(work, "source");
  await mkdir(sourceDataDir, { mode: 0o700 });
  if (onPostgres) source = await openTestDatabase();
  else {
    const template = inject("pgliteTemplate");
    const database = await openDatabase({
      kind: "pglite",
      dataDir: path.join(sourceDataDir, "pglite"),
      ...(template ? { snapshot: new Blob([await readFile(template)]) } : {}),
    });
    await migrate(database.db);
    source = { ...database, url: undefined };
  }
  svc = await startTestService({
    database: source,
    env: {
      SSRF_ALLOW_CIDRS: "127.0.0.0/8",
      RATE_LIMIT_ENABLED: "false",
      MASTER_MNEMONIC: TEST_MNEMONIC,
      JWT_SECRET: SECRETS.JWT_SECRET,
      SECRET_ENCRYPTION_KEY: SECRETS.SECRET_ENCRYPTION_KEY,
    },
  });
  receiver = await startReceiver();
  m = await fundedMerchant(svc, receiver, { "USDT-TRC20": 500, "USDT-ERC20": 50 });
  const w = await call(svc.urls.sandbox, "/api/v1/public/withdrawal-requests", {
    headers: m.api,
    json: { currencyType: "USDT-TRC20", walletAddress: "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW", amount: 100 },
  });
  expect(w.status, w.text).toBe(201);
  const running = svc;
  await waitFor(async () => {
    const r = await call(running.urls.sandbox, `/api/v1/public/withdrawal-requests/${w.body.data.id}`, {
      headers: m.api,
    });
    return r.body.data.status === "completed";
  }, 20_000);
  before = await getBalances(source.db, m.merchantId, "sandbox");
  beforeProduction = await getBalances(source.db, m.merchantId, "production");
  expect(before.find((b) => b.currencyType === "USDT-TRC20")?.available).toBeGreaterThan(0n);
  expect((await verifyLedger(source.db)).ok).toBe(true);
  await svc.close();
  svc = undefined;
  await receiver.close();
  receiver = undefined;
  if (!onPostgres) await source.close();

  // The source's DATA_DIR holds a generated secret, as in development mode.
  await writeFile(
    path.join(sourceDataDir, "secrets.json"),
    JSON.stringify({ INTERNAL_SHARED_SECRET: DATA_DIR_SECRET }),
    { mode: 0o600 },
  );
  // A password in DATABASE_URL (trust authentication ignores it): it must reach pg_dump, never the file.
  const url = source.url ? new URL(source.url) : undefined;
  if (url) url.password = DATABASE_PASSWORD;
  const env = envFor(
    { dataDir: sourceDataDir, ...(url ? { url: url.toString() } : {}) },
    {
      MASTER_MNEMONIC: TEST_MNEMONIC,
      ...SECRETS,
      CURRENCY_TYPES: "USDT-TRC20,USDT-ERC20",
      FEE_SCHEDULE: FEES,
    },
  );
  const config = parseConfig(env);
  plain = await createBackup(config, env, { output: path.join(work, "plain.sgb"), includeSecrets: false });
  sealed = await createBackup(config, env, {
    output: path.join(work, "sealed.sgb"),
    includeSecrets: true,
    passphrase: PASSPHRASE,
  });
  // The wipe: the database is dropped, or DATA_DIR removed.
  if (onPostgres) await source.close();
  else await rm(sourceDataDir, { recursive: true, force: true });
  source = undefined;
}, 180_000);

afterAll(async () => {
  await svc?.close();
  await receiver?.close();
  await source?.close();
  for (const c of cleanups) await c().catch(() => {});
  if (work) await rm(work, { recursive: true, force: true });
});

describe(`backup and restore (${onPostgres ? "PostgreSQL" : "embedded PGlite"})`, {
  timeout: 120_000,
}, () => {
  it("the manifest names the driver, the schema level, the pinned keys, the counts; no secret is in the bytes", async () => {
    const mf = plain.manifest;
    expect(mf.driver).toBe(onPostgres ? "postgres" : "pglite");
    expect(mf.schema.lastMigration).toMatch(/^\d{4}_[a-z0-9_]+$/);
    expect(mf.accountKeys.length).toBeGreaterThan(0);
    expect(mf.tables.merchants).toBeGreaterThanOrEqual(1);
    expect(mf.tables.ledger_postings).toBeGreaterThanOrEqual(3);
    expect(mf.configuration.keys).toEqual(
      expect.arrayContaining(["CURRENCY_TYPES", "FEE_SCHEDULE", "DOCS_USER"]),
    );
    expect(mf.configuration.secretKeys).toEqual(
      expect.arrayContaining(["JWT_SECRET", "SECRET_ENCRYPTION_KEY", "METRICS_TOKEN", "MASTER_MNEMONIC"]),
    );
    expect(mf.secrets).toBeNull();
    for (const backup of [plain, sealed]) {
      const bytes = await readFile(backup.file);
      const values = [...Object.values(SECRETS).filter((v) => v !== "docs"), TEST_MNEMONIC, DATA_DIR_SECRET];
      if (onPostgres) values.push(DATABASE_PASSWORD);
      for (const value of values) expect(bytes.includes(Buffer.from(value, "utf8")), value).toBe(false);
      expect((await stat(backup.file)).mode & 0o777).toBe(0o600);
    }
    expect(sealed.manifest.secrets?.env).toEqual(
      expect.arrayContaining([
        "JWT_SECRET",
        "SECRET_ENCRYPTION_KEY",
        "METRICS_TOKEN",
        "INTERNAL_SHARED_SECRET",
        "MASTER_MNEMONIC",
      ]),
    );
    expect(sealed.manifest.secrets?.files).toEqual(["secrets.json"]);
  });

  it("restores into an empty target: counts as in the manifest, the ledger verifies, balances as before", async () => {
    const target = await newTarget();
    const t0 = Date.now();
    const r = await restore(target, { input: plain.file });
    const ms = Date.now() - t0;
    expect(r.ok).toBe(true);
    expect(r.ledger?.ok).toBe(true);
    expect(r.tables).toEqual(plain.manifest.tables);
    expect(r.migrations.backup).toBe(plain.manifest.schema.lastMigration);
    expect(r.migrations.now).toBe(plain.manifest.schema.lastMigration);
    expect(r.accountKeys.source).toBe("MASTER_MNEMONIC");
    expect(r.accountKeys.checked.length).toBe(plain.manifest.accountKeys.length);
    expect(r.configuration.keys).toEqual(plain.manifest.configuration.keys);
    expect(r.secrets).toBeNull();
    expect(r.reserves).toEqual([]); // only the simulators: no custodial chain
    console.log(`restore (${onPostgres ? "postgres" : "pglite"}): ${ms} ms`);

    const restored = await openRestored(target);
    try {
      expect(await getBalances(restored.db, m.merchantId, "sandbox")).toEqual(before);
      expect(await getBalances(restored.db, m.merchantId, "production")).toEqual(beforeProduction);
      // The service starts on it with the same keys and answers the merchant's balance.
      const again = await startTestService({
        database: restored,
        env: { MASTER_MNEMONIC: TEST_MNEMONIC, SECRET_ENCRYPTION_KEY: SECRETS.SECRET_ENCRYPTION_KEY },
      });
      try {
        const b = await call(again.urls.sandbox, "/api/v1/public/balance", { headers: m.api });
        expect(b.status, b.text).toBe(200);
        const trc = (b.body.data as { currencyType: string; available: number }[]).find(
          (x) => x.currencyType === "USDT-TRC20",
        );
        expect(trc?.available).toBe(
          Number(before.find((x) => x.currencyType === "USDT-TRC20")?.available) / 1_000_000,
        );
      } finally {
        await again.close();
      }
    } finally {
      await restored.close();
    }

    // Into the same target again: refused (not empty); with wipe, restored over it.
    await expectRefused(restore(target, { input: plain.file }), /not empty|holds a database/);
    const over = await restore(target, { input: plain.file, wipe: true });
    expect(over.ok).toBe(true);
    expect(over.tables).toEqual(plain.manifest.tables);
  });

  it("refuses other account keys than the backup's, and a process without any; nothing is written", async () => {
    const target = await newTarget();
    await expectRefused(
      restore(target, { input: plain.file }, { MASTER_MNEMONIC: OTHER_MNEMONIC }),
      /account keys of this process \(MASTER_MNEMONIC\) differ from the ones the backup's database pinned/,
    );
    await expectUntouched(target);
    await expectRefused(restore(target, { input: plain.file }, {}), /has none to compare/);
    await expectUntouched(target);

    // The api/worker hosts' MASTER_XPUBS (what a production restore is given): checked the same way.
    const xpubsOf = (words: string) => formatAccountXpubs(accountXpubsOf(AddressDeriver.fromMnemonic(words)));
    const ok = await restore(
      target,
      { input: plain.file, dryRun: true },
      { MASTER_XPUBS: xpubsOf(TEST_MNEMONIC) },
    );
    expect(ok.accountKeys.source).toBe("MASTER_XPUBS");
    expect(ok.accountKeys.checked.length).toBeGreaterThan(0);
    await expectRefused(
      restore(target, { input: plain.file, dryRun: true }, { MASTER_XPUBS: xpubsOf(OTHER_MNEMONIC) }),
      /account keys of this process \(MASTER_XPUBS\) differ/,
    );
    // Production mode: no generated mnemonic is looked for; MASTER_XPUBS is the way.
    await expectRefused(
      restore(target, { input: plain.file, dryRun: true }, { NODE_ENV: "production" }),
      /has none to compare: set MASTER_XPUBS \(`stablegate signer export-xpubs` on the signer host\); nothing/,
    );
    await expectUntouched(target);
  });

  it("sealed secrets: the right passphrase restores them (DATA_DIR file, env file); a wrong one is refused", async () => {
    const target = await newTarget();
    await expectRefused(
      restore(target, { input: sealed.file, passphrase: "not the passphrase at all" }),
      /wrong passphrase/,
    );
    await expectUntouched(target);

    const envFile = path.join(work, `restored-${Math.random().toString(36).slice(2, 8)}.env`);
    const r = await restore(target, { input: sealed.file, passphrase: PASSPHRASE, envFile });
    expect(r.ok).toBe(true);
    expect(r.secrets?.files).toEqual(["secrets.json"]);
    expect(JSON.parse(await readFile(path.join(target.dataDir, "secrets.json"), "utf8"))).toEqual({
      INTERNAL_SHARED_SECRET: DATA_DIR_SECRET,
    });
    expect((await stat(path.join(target.dataDir, "secrets.json"))).mode & 0o777).toBe(0o600);
    const env = await readFile(envFile, "utf8");
    expect((await stat(envFile)).mode & 0o777).toBe(0o600);
    expect(env).toContain(`JWT_SECRET=${SECRETS.JWT_SECRET}`);
    expect(env).toContain(`SECRET_ENCRYPTION_KEY=${SECRETS.SECRET_ENCRYPTION_KEY}`);
    expect(env).toContain(`MASTER_MNEMONIC='${TEST_MNEMONIC}'`);
    expect(env).toContain("CURRENCY_TYPES=USDT-TRC20,USDT-ERC20");
    expect(env).toContain(`FEE_SCHEDULE='${FEES}'`);
    const restored = await openRestored(target);
    try {
      expect(await getBalances(restored.db, m.merchantId, "sandbox")).toEqual(before);
    } finally {
      await restored.close();
    }
  });

  it("refuses a truncated or altered archive cleanly; nothing is written", async () => {
    const original = await readFile(plain.file);
    const target = await newTarget();
    const cases: [string, Buffer][] = [
      ["empty", Buffer.alloc(0)],
      ["cut in the first header", original.subarray(0, 100)],
      ["cut in the dump", original.subarray(0, Math.floor(original.length / 2))],
      ["without its end marker", original.subarray(0, original.length - 1024)],
      ["cut by one byte", original.subarray(0, original.length - 1)],
    ];
    for (const at of [600, Math.floor(original.length / 2), original.length - 1600]) {
      const flipped = Buffer.from(original);
      flipped[at] = (flipped[at] ?? 0) ^ 0x01;
      cases.push([`a bit flipped at ${at}`, flipped]);
    }
    cases.push(["garbage appended", Buffer.concat([original, Buffer.from("trailing")])]);
    for (const [i, [what, bytes]] of cases.entries()) {
      const file = path.join(work, `damaged-${i}.sgb`);
      await writeFile(file, bytes);
      const err = await restore(target, { input: file }).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err, what).toBeInstanceOf(BackupRefusal);
      expect((err as Error).message, what).toMatch(/nothing was restored/);
      await expectUntouched(target);
    }
    // A file that shrinks on disk after the fact is the same refusal.
    const cut = path.join(work, "cut.sgb");
    await writeFile(cut, original);
    await truncate(cut, 4096);
    await expectRefused(restore(target, { input: cut }), /truncated/);
  });

  it("refuses a backup of a newer schema than this build knows; --dry-run checks and writes nothing", async () => {
    const dir = await mkdtemp(path.join(work, "future-"));
    const entries = await extractArchive(plain.file, dir);
    const manifest = JSON.parse(await readFile(entries.get("manifest.json")?.file as string, "utf8"));
    manifest.schema.migrations.push({ version: 9999, name: "from_the_future", checksum: "0".repeat(64) });
    manifest.schema.lastMigration = "9999_from_the_future";
    const future = path.join(work, "future.sgb");
    // As a later build of this installation would write it: authenticated with its key.
    await writeArchive(
      future,
      [
        { name: "manifest.json", data: Buffer.from(JSON.stringify(manifest)) },
        { name: "config.json", file: entries.get("config.json")?.file as string },
        onPostgres
          ? { name: "database.pgdump", file: entries.get("database.pgdump")?.file as string }
          : { name: "database.pglite.tar.gz", file: entries.get("database.pglite.tar.gz")?.file as string },
      ],
      (sums) => macEntry(sums, backupMacKey(SECRETS.SECRET_ENCRYPTION_KEY)),
    );
    const target = await newTarget();
    await expectRefused(
      restore(target, { input: future }),
      /schema is newer than this build knows \(9999_from_the_future/,
    );
    await expectUntouched(target);

    const dry = await restore(target, { input: plain.file, dryRun: true });
    expect(dry.dryRun).toBe(true);
    expect(dry.ok).toBe(true);
    expect(dry.ledger).toBeNull();
    await expectUntouched(target);
  });

  it.runIf(onPostgres)("refuses a pg_dump or pg_restore that is missing or older than needed", async () => {
    // A fake tool first on PATH answering an old version; then no tool at all.
    const bin = await mkdtemp(path.join(work, "bin-"));
    for (const tool of ["pg_dump", "pg_restore"])
      await writeFile(path.join(bin, tool), `#!/bin/sh\necho "${tool} (PostgreSQL) 9.6.24"\n`, {
        mode: 0o755,
      });
    const source = await openTestDatabase(1);
    const path0 = process.env.PATH;
    try {
      const env = envFor({ url: source.url as string, dataDir: path.join(work, "tools") });
      const config = parseConfig(env);
      process.env.PATH = `${bin}:${path0}`;
      await expectRefused(
        createBackup(config, env, { output: path.join(work, "old.sgb"), includeSecrets: false }),
        /pg_dump \(PostgreSQL\) 9\.6\.24 is older than the server \(PostgreSQL \d+\)/,
      );
      await expectRefused(
        restore(await newTarget(), { input: plain.file }),
        /pg_restore \(PostgreSQL\) 9\.6\.24 cannot read a dump of pg_dump \d+/,
      );
      process.env.PATH = bin.replace(/bin-.*$/, "nothing-here");
      await expectRefused(
        createBackup(config, env, { output: path.join(work, "none.sgb"), includeSecrets: false }),
        /pg_dump is not on PATH/,
      );
      await expect(stat(path.join(work, "old.sgb"))).rejects.toMatchObject({ code: "ENOENT" });
    } finally {
      process.env.PATH = path0;
      await source.close();
    }
  });

  it("a chain that cannot be read after the restore is a warning, not a failure", async () => {
    const target = await newTarget();
    const r = await restore(
      target,
      { input: plain.file },
      {
        MASTER_MNEMONIC: TEST_MNEMONIC,
        // The sandbox's USDT-ERC20 on a real node that is not there: its reserves cannot be read.
        SANDBOX_ERC20_RPC_URL: "http://127.0.0.1:9",
        SANDBOX_USDT_ERC20_CONTRACT: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
      },
    );
    expect(r.ledger?.ok).toBe(true);
    expect(r.ok).toBe(true);
    const erc = r.reserves.find((x) => x.network === "USDT-ERC20" && x.environment === "sandbox");
    expect(erc?.report).toBeNull();
    expect(erc?.warning).toMatch(/could not be read/);
    expect(r.warnings.join("\n")).toMatch(/USDT-ERC20 sandbox: reserves not reconciled/);
  });
});
