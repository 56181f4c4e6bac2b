import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BackupResult } from "../../../src/backup/index.js";
import { openDatabase } from "../../../src/db/database.js";
import { AddressDeriver, accountXpubsOf, pinAccountKeys } from "../../../src/wallet/index.js";
import { BackupRefusal, refusalOf, restore, Workspace } from "./support.js";

// The account keys check (backups.md point 13) compares the restoring process's keys with the
// manifest's `accountKeys`, before anything is written. The manifest is the forger's to write: one
// that says "nothing pinned" over a dump whose account_keys hold other keys passes the check, and
// the restore reports success ("none pinned in the backup") for a database whose deposit addresses
// this installation's keys cannot spend. (The services then refuse to start on it: the pinning
// check at start-up holds.) An honest archive is refused (first test).
//
// The second test is EXPECTED TO FAIL until the restore compares the restored account_keys with the
// manifest's (or with the process's keys) before it reports success.

const MINE = "test test test test test test test test test test test junk";
const THEIRS =
  "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about";

let ws: Workspace;
let theirs: BackupResult;

beforeAll(async () => {
  ws = await Workspace.create();
  theirs = await ws.backup({
    prepare: async (db) => {
      await pinAccountKeys(db.db, accountXpubsOf(AddressDeriver.fromMnemonic(THEIRS)));
    },
  });
}, 120_000);
afterAll(async () => {
  await ws?.close();
});

describe("the account keys of a backup", { timeout: 120_000 }, () => {
  it("another installation's backup is refused with this installation's keys", async () => {
    expect(theirs.manifest.accountKeys.length).toBeGreaterThan(0);
    const err = await refusalOf(
      restore(await ws.newTarget(), { input: theirs.file }, { MASTER_MNEMONIC: MINE }),
    );
    expect(err).toBeInstanceOf(BackupRefusal);
    expect(err?.message).toMatch(/differ from the ones the backup's database pinned/);
  });

  it("a manifest that hides the pinned keys does not make the restore succeed", async () => {
    const forged = await ws.forge(theirs.file, ({ manifest }) => {
      manifest.accountKeys = [];
    });
    const target = await ws.newTarget();
    const outcome = await restore(target, { input: forged }, { MASTER_MNEMONIC: MINE }).then(
      (r) => ({ ok: r.ok, refused: null as string | null }),
      (e: Error) => ({ ok: false, refused: e.message }),
    );
    if (outcome.refused === null && target.url) {
      const db = await openDatabase({ kind: "postgres", url: target.url, poolSize: 1 });
      const pinned = await sql<{ n: string }>`select count(*)::text as n from account_keys`.execute(db.db);
      await db.close();
      expect(Number(pinned.rows[0]?.n)).toBeGreaterThan(0); // the other installation's keys were restored
    }
    expect(outcome.ok, "restore reported success with keys that differ from the restored database's").toBe(
      false,
    );
  });
});
