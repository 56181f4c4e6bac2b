import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, stat } from "node:fs/promises";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { sql } from "kysely";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EntrySource, extractArchive, sha256, writeArchive } from "../../src/backup/archive.js";
import { backupMacKey, macEntry } from "../../src/backup/authenticity.js";
import { BackupFailure, type BackupResult } from "../../src/backup/index.js";
import type { BackupManifest } from "../../src/backup/manifest.js";
import { openDatabase } from "../../src/db/database.js";
import { AddressDeriver, accountXpubsOf, pinAccountKeys } from "../../src/wallet/index.js";
import {
  BackupRefusal,
  INSTALLATION_KEY,
  onPostgres,
  PASSPHRASE,
  refusalOf,
  restore,
  Workspace,
} from "../security/42-outside-review/support.js";
import { TEST_DATABASE_URL } from "../support/db.js";

// Every backup is authenticated (docs/decisions/backups.md point 2): a MAC of SHA256SUMS under a key
// derived from SECRET_ENCRYPTION_KEY, or the seal with its passphrase. Then the layers behind it,
// for an archive that does authenticate (made by someone holding the installation's key, or a
// bug): the dump's table of contents, config.json's names and values, the embedded dump's size,
// the restored account keys. The archives are real backups (the outside review's workspace),
// edited and authenticated again with the installation's key where a test says so.

const MINE = "test test test test test test test test test test test junk";
const THEIRS =
  "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about";
const OTHER_KEY = "0d".repeat(32);

let ws: Workspace;
let plain: BackupResult;

beforeAll(async () => {
  ws = await Workspace.create();
  plain = await ws.backup();
}, 120_000);
afterAll(async () => {
  await ws?.close();
});

/** `input` taken apart, edited, and written again with the installation's MAC (`withKey`), or none. */
async function reauthenticate(
  input: string,
  edit: (parts: {
    manifest: BackupManifest;
    config: { variables: Record<string, string> };
    dump?: Buffer;
  }) => void,
  withKey: string | null = INSTALLATION_KEY,
): Promise<string> {
  const dir = await mkdtemp(path.join(ws.dir, "edit-"));
  const entries = await extractArchive(input, dir);
  const manifest = JSON.parse(
    await readFile(entries.get("manifest.json")?.file as string, "utf8"),
  ) as BackupManifest;
  const config = JSON.parse(await readFile(entries.get("config.json")?.file as string, "utf8"));
  const dumpName = manifest.driver === "postgres" ? "database.pgdump" : "database.pglite.tar.gz";
  const parts: { manifest: BackupManifest; config: { variables: Record<string, string> }; dump?: Buffer } = {
    manifest,
    config,
  };
  edit(parts);
  const configData = Buffer.from(JSON.stringify(config), "utf8");
  manifest.entries["config.json"] = { size: configData.length, sha256: sha256(configData) };
  if (parts.dump) manifest.entries[dumpName] = { size: parts.dump.length, sha256: sha256(parts.dump) };
  const out: EntrySource[] = [
    { name: "manifest.json", data: Buffer.from(JSON.stringify(manifest), "utf8") },
    { name: "config.json", data: configData },
    parts.dump
      ? { name: dumpName, data: parts.dump }
      : { name: dumpName, file: entries.get(dumpName)?.file as string },
  ];
  const file = ws.file("edited.sgb");
  await writeArchive(file, out, withKey ? (sums) => macEntry(sums, backupMacKey(withKey)) : undefined);
  return file;
}

describe("the authenticity of a backup", { timeout: 120_000 }, () => {
  it("restores with the installation's key; refuses another key, none, or an archive without a MAC", async () => {
    const ok = await restore(await ws.newTarget(), { input: plain.file, dryRun: true });
    expect(ok.authenticatedBy).toMatch(/^this installation's SECRET_ENCRYPTION_KEY \(key id [0-9a-f]{16}\)$/);

    const other = await refusalOf(
      restore(
        await ws.newTarget(),
        { input: plain.file, dryRun: true },
        { SECRET_ENCRYPTION_KEY: OTHER_KEY },
      ),
    );
    expect(other).toBeInstanceOf(BackupRefusal);
    expect(other?.message).toMatch(
      /not authenticated: it was made under another SECRET_ENCRYPTION_KEY \(key id [0-9a-f]{16}; this process's is [0-9a-f]{16}\).*nothing was restored/,
    );

    // Development mode, a new DATA_DIR and no variable: no key at all (nothing is generated).
    const target = await ws.newTarget();
    const none = await refusalOf(restore(target, { input: plain.file }, { SECRET_ENCRYPTION_KEY: "" }));
    expect(none?.message).toMatch(
      /this process has no SECRET_ENCRYPTION_KEY .*passphrase.*nothing was restored/,
    );
    await expect(stat(target.dataDir)).rejects.toMatchObject({ code: "ENOENT" });

    const unsigned = await reauthenticate(plain.file, () => {}, null);
    const err = await refusalOf(restore(await ws.newTarget(), { input: unsigned }));
    expect(err?.message).toMatch(/not authenticated: it has no SHA256SUMS\.hmac/);

    // The forger's usual move, re-signed with a key that is not the installation's.
    const resigned = await reauthenticate(plain.file, () => {}, OTHER_KEY);
    expect((await refusalOf(restore(await ws.newTarget(), { input: resigned })))?.message).toMatch(
      /made under another SECRET_ENCRYPTION_KEY/,
    );
  });

  it("a sealed backup opens with its passphrase under another key, with a warning", async () => {
    const sealed = await ws.backup({ includeSecrets: true, env: { SECRET_ENCRYPTION_KEY: OTHER_KEY } });
    const r = await restore(await ws.newTarget(), {
      input: sealed.file,
      passphrase: PASSPHRASE,
      dryRun: true,
    });
    expect(r.authenticatedBy).toBe("the passphrase of its sealed secrets");
    expect(r.warnings.join("\n")).toMatch(
      /this process's SECRET_ENCRYPTION_KEY is not the one the backup was made with/,
    );
  });
});

describe("an authenticated archive that is hostile all the same", { timeout: 120_000 }, () => {
  it("config.json: a variable that is not plain configuration, or a line break in a value, is refused", async () => {
    for (const [what, variables] of [
      ["NODE_OPTIONS", { NODE_OPTIONS: "--require=/tmp/x.cjs" }],
      ["a secret's name", { JWT_SECRET: "x".repeat(40) }],
      ["a newline", { CORS_ORIGINS: "https://shop.example\nNODE_OPTIONS=--require=/tmp/x.cjs" }],
      ["a carriage return", { MAIL_FROM: "a@example.com\r" }],
    ] as const) {
      const file = await reauthenticate(plain.file, ({ config }) =>
        Object.assign(config.variables, variables),
      );
      const envFile = ws.file("r.env");
      const err = await refusalOf(restore(await ws.newTarget(), { input: file, envFile }));
      expect(err, what).toBeInstanceOf(BackupRefusal);
      expect(err?.message, what).toMatch(/config\.json (holds|has a control character)/);
      await expect(stat(envFile)).rejects.toMatchObject({ code: "ENOENT" });
    }
  });

  it("a manifest that hides the pinned keys: the restored database is compared, exit 1", async () => {
    const theirs = await ws.backup({
      prepare: async (db) => {
        await pinAccountKeys(db.db, accountXpubsOf(AddressDeriver.fromMnemonic(THEIRS)));
      },
    });
    const file = await reauthenticate(theirs.file, ({ manifest }) => {
      manifest.accountKeys = [];
    });
    const err = await refusalOf(restore(await ws.newTarget(), { input: file }, { MASTER_MNEMONIC: MINE }));
    expect(err).toBeInstanceOf(BackupFailure);
    expect(err?.message).toMatch(
      /pins other account keys than the backup's manifest lists \(USD.* and \d+ more\)/,
    );
  });

  it("the report names the keys the restored database pins", async () => {
    const mine = await ws.backup({
      prepare: async (db) => {
        await pinAccountKeys(db.db, accountXpubsOf(AddressDeriver.fromMnemonic(MINE)));
      },
    });
    const r = await restore(await ws.newTarget(), { input: mine.file }, { MASTER_MNEMONIC: MINE });
    expect(r.accountKeys.pinned?.length).toBe(mine.manifest.accountKeys.length);
    expect(r.accountKeys.checked.length).toBe(mine.manifest.accountKeys.length);
    if (onPostgres) expect(r.warnings.join("\n")).toMatch(/the restore ran as a superuser/);
  });

  it.runIf(!onPostgres)("the embedded dump: a decompression bomb stops at the manifest's size", async () => {
    const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024));
    const file = await reauthenticate(plain.file, (parts) => {
      parts.dump = bomb;
      parts.manifest.database.uncompressedSize = 1024 * 1024;
    });
    const err = await refusalOf(restore(await ws.newTarget(), { input: file }));
    expect(err?.message).toMatch(/decompresses to more than the 1048576 bytes its manifest records/);

    const lying = await reauthenticate(plain.file, ({ manifest }) => {
      manifest.database.uncompressedSize = (manifest.database.uncompressedSize as number) + 512;
    });
    expect((await refusalOf(restore(await ws.newTarget(), { input: lying })))?.message).toMatch(
      /decompresses to \d+ bytes, its manifest records \d+/,
    );
  });

  it.runIf(onPostgres)(
    "a dump holding what the migrations never make is refused before pg_restore",
    async () => {
      const tag = randomBytes(4).toString("hex");
      const role = `sg_authn_${tag}`;
      const backup = await ws.backup({
        prepare: async (db) => {
          await sql
            .raw(`create function public.sg_probe_${tag}() returns int language plpgsql as $b$
            begin execute format('create role %I nologin', '${role}'); return 1; end $b$`)
            .execute(db.db);
          await sql
            .raw(`create materialized view public.sg_view_${tag} as select 1 as x with no data`)
            .execute(db.db);
        },
      });
      const err = await refusalOf(restore(await ws.newTarget(), { input: backup.file }));
      expect(err).toBeInstanceOf(BackupRefusal);
      expect(err?.message).toMatch(
        /the dump holds what stablegate's migrations never make \(.*FUNCTION public sg_probe_/,
      );
      expect(err?.message).toMatch(/MATERIALIZED VIEW/);
      const c = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await c.connect();
      try {
        expect((await c.query("select 1 from pg_roles where rolname = $1", [role])).rowCount).toBe(0);
      } finally {
        await c.end();
      }
    },
  );

  it.runIf(onPostgres)(
    "--wipe: refused before dropping anything (a foreign schema, a connected session)",
    async () => {
      const target = (await ws.newTarget()) as { url: string; dataDir: string };
      await restore(target, { input: plain.file });
      const db = await openDatabase({ kind: "postgres", url: target.url, poolSize: 1 });
      try {
        await sql`create schema operator_own`.execute(db.db);
        const busy = await refusalOf(restore(target, { input: plain.file, wipe: true }));
        expect(busy?.message).toMatch(
          /1 other session\(s\) are connected to the target database .*stop every stablegate service/,
        );
      } finally {
        await db.close();
      }
      const foreign = await refusalOf(restore(target, { input: plain.file, wipe: true }));
      expect(foreign?.message).toMatch(
        /--wipe drops only the public schema, and the database also holds schema operator_own/,
      );
    },
  );
});
