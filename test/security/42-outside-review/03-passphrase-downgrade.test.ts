import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BackupResult } from "../../../src/backup/index.js";
import { BackupRefusal, PASSPHRASE, refusalOf, restore, Workspace } from "./support.js";

// docs/decisions/backups.md point 2: "A backup with sealed secrets is [authenticated]: the seal binds
// the manifest's digest … so with the passphrase the whole file is authenticated." The binding holds
// for the archive as made (first test). But a forger can remove the seal: drop secrets.enc, set the
// manifest's `secrets` to null, change what he likes. The operator restores with the passphrase, as
// for every restore of that installation, and gets a warning ("a passphrase was given, but the
// backup holds no secrets") and an unauthenticated restore (second test).
//
// The second test is EXPECTED TO FAIL until a restore given a passphrase refuses an archive without
// sealed secrets (or an explicit flag is needed to restore an unauthenticated one).

let ws: Workspace;
let sealed: BackupResult;
const SECRET_ENV = {
  JWT_SECRET: "jwt-secret-outside-review-42-0123456789abcdef",
  SECRET_ENCRYPTION_KEY: "42".repeat(32),
  SSRF_ALLOW_CIDRS: "",
};

beforeAll(async () => {
  ws = await Workspace.create();
  sealed = await ws.backup({
    includeSecrets: true,
    env: { JWT_SECRET: SECRET_ENV.JWT_SECRET, SECRET_ENCRYPTION_KEY: SECRET_ENV.SECRET_ENCRYPTION_KEY },
  });
}, 120_000);
afterAll(async () => {
  await ws?.close();
});

describe("sealed backups and a forger", { timeout: 120_000 }, () => {
  it("an edited configuration under the seal is refused with the passphrase (the binding holds)", async () => {
    const forged = await ws.forge(sealed.file, ({ config }) => {
      config.variables.SSRF_ALLOW_CIDRS = "0.0.0.0/0";
    });
    const err = await refusalOf(
      restore(await ws.newTarget(), { input: forged, passphrase: PASSPHRASE, dryRun: true }),
    );
    expect(err).toBeInstanceOf(BackupRefusal);
    expect(err?.message).toMatch(
      /wrong passphrase, or the sealed secrets were altered|another backup's manifest/,
    );
  });

  it("the seal removed and the configuration edited: refused when the passphrase is given", async () => {
    const forged = await ws.forge(sealed.file, (parts) => {
      const { config } = parts;
      // Lets webhooks reach every internal address (the cloud metadata service, the database …).
      config.variables.SSRF_ALLOW_CIDRS = "0.0.0.0/0";
      parts.dropSecrets = true;
    });
    const err = await refusalOf(
      restore(await ws.newTarget(), { input: forged, passphrase: PASSPHRASE, envFile: ws.file("r.env") }),
    );
    expect(err, "an unauthenticated archive was restored although the passphrase was given").toBeInstanceOf(
      BackupRefusal,
    );
  });
});
