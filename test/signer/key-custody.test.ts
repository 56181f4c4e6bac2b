import { HDKey } from "@scure/bip32";
import { mnemonicToSeedSync } from "@scure/bip39";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "../../src/config/config.js";
import { keyMaterialForRole, keyMaterialOf } from "../../src/config/key-custody.js";
import { accountKeyNames, formatAccountXpubs, parseAccountXpubs } from "../../src/config/xpubs.js";
import { createLogger } from "../../src/observability/logger.js";
import { startRole } from "../../src/roles/processes.js";
import { exportAccountXpubs } from "../../src/signer/export-xpubs.js";
import { startSignerRole } from "../../src/signer/role.js";
import { accountXpubsOf } from "../../src/wallet/account-keys.js";
import { AddressDeriver } from "../../src/wallet/address-deriver.js";
import { openTestDatabase } from "../support/db.js";

// Issue 25, key custody (docs/decisions/custody-and-faults.md#key-custody): only `signer` (and `serve`, which embeds it) reads the
// mnemonic. `api`, `worker`, `migrate` and the operator commands work without it — the roles that
// derive addresses from the account public keys in MASTER_XPUBS — and in production mode refuse
// to start when given it. Every process checks its account keys against the ones the database
// recorded first, so that no process hands out addresses the signer cannot spend.
// (The end-to-end run of separate processes on anvil is test/signer/custody-e2e.test.ts.)

const MNEMONIC = "test test test test test test test test test test test junk";
const OTHER = "legal winner thank year wave sausage worth useful legal winner thank yellow";
const XPUBS = formatAccountXpubs(accountXpubsOf(AddressDeriver.fromMnemonic(MNEMONIC)));
const OTHER_XPUBS = formatAccountXpubs(accountXpubsOf(AddressDeriver.fromMnemonic(OTHER)));
const SECRET = "i".repeat(48);

const production = {
  NODE_ENV: "production",
  LOG_LEVEL: "silent",
  PORT: "0",
  SANDBOX_PORT: "0",
  SIGNER_PORT: "0",
  PRODUCTION_BASE_URL: "http://api.stablegate.test",
  SANDBOX_BASE_URL: "http://sandbox.stablegate.test",
  SECRET_ENCRYPTION_KEY: "a".repeat(64),
  JWT_SECRET: "j".repeat(40),
  METRICS_TOKEN: "m".repeat(32),
  DATA_DIR: `/tmp/sg-key-custody-${process.pid}`,
};

const refusal = (fn: () => unknown): ConfigError => {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error("expected a ConfigError");
};

describe("MASTER_XPUBS", () => {
  it("reads back what export-xpubs prints: the four account public keys, commas or whitespace", async () => {
    const line = await exportAccountXpubs(parseConfig({ ...production, MASTER_MNEMONIC: MNEMONIC }));
    expect(line).toBe(`MASTER_XPUBS=${XPUBS}`);
    const parsed = parseAccountXpubs(XPUBS.replaceAll(",", "\n  "));
    expect("xpubs" in parsed && Object.keys(parsed.xpubs).sort()).toEqual(accountKeyNames().sort());
    // Watch-only derivation gives the addresses the mnemonic gives.
    const watch = AddressDeriver.fromAccountExtendedPublicKeys(
      parseConfig({ MASTER_XPUBS: XPUBS }).accountXpubs!,
    );
    const full = AddressDeriver.fromMnemonic(MNEMONIC);
    for (const name of accountKeyNames()) {
      const [network, environment] = name.split("/") as ["USDT-ERC20", "production"];
      for (const index of [0, 1, 100, 4242])
        expect(watch.address(network, environment, index)).toBe(full.address(network, environment, index));
    }
  });

  it("refuses a private key (without echoing it), another depth, a missing, unknown or repeated account", () => {
    const master = HDKey.fromMasterSeed(mnemonicToSeedSync(MNEMONIC));
    const xprv = master.derive("m/44'/60'/0'").privateExtendedKey;
    const entries = XPUBS.split(",");
    const cases: [string, RegExp][] = [
      [XPUBS.replace(entries[0]!.split("=")[1]!, xprv), /extended PRIVATE key/],
      [XPUBS.replace(entries[0]!.split("=")[1]!, master.derive("m/44'/60'").publicExtendedKey), /depth 2/],
      [XPUBS.replace(entries[0]!.split("=")[1]!, "xpub-not-a-key"), /not a BIP32 extended key/],
      [entries.slice(1).join(","), new RegExp(`missing ${entries[0]!.split("=")[0]}`)],
      [
        `${XPUBS},USDT-SOLANA/production=${entries[0]!.split("=")[1]}`,
        /"USDT-SOLANA\/production" is not an account/,
      ],
      [`${XPUBS},${entries[1]}`, /given twice/],
      ["xpub6Cabc", /\(no =\)/],
    ];
    for (const [value, message] of cases) {
      const err = refusal(() => parseConfig({ MASTER_XPUBS: value }));
      expect(err.problems, value).toEqual([
        { variable: "MASTER_XPUBS", message: expect.stringMatching(message) },
      ]);
      expect(err.message).not.toContain(xprv);
    }
  });
});

describe("which role holds which key material (production mode)", () => {
  it("the roles that never sign refuse the mnemonic, saying why; api and worker need MASTER_XPUBS", () => {
    const withMnemonic = parseConfig({ ...production, MASTER_MNEMONIC: MNEMONIC, MASTER_XPUBS: XPUBS });
    for (const role of ["api", "worker", "migrate", "ledger verify"]) {
      const err = refusal(() => keyMaterialForRole(withMnemonic, role));
      expect(err.problems[0]?.variable, role).toBe("MASTER_MNEMONIC");
      expect(err.problems[0]?.message, role).toMatch(/never signs, so it must not hold the mnemonic/);
      expect(err.message).not.toContain("test test");
    }
    const fromFile = parseConfig({ ...production, MASTER_MNEMONIC_FILE: "/run/secrets/mnemonic" });
    expect(refusal(() => keyMaterialForRole(fromFile, "api")).problems[0]?.variable).toBe(
      "MASTER_MNEMONIC_FILE",
    );
    // A serve pointed at a separate signer embeds none, so it is a deriving role too.
    const remoteServe = parseConfig({
      ...production,
      MASTER_MNEMONIC: MNEMONIC,
      SIGNER_URL: "http://10.0.0.5:8090",
    });
    expect(keyMaterialOf("serve", remoteServe)).toBe("xpubs");
    expect(refusal(() => keyMaterialForRole(remoteServe, "serve")).problems[0]?.variable).toBe(
      "MASTER_MNEMONIC",
    );

    const none = parseConfig(production);
    for (const role of ["api", "worker"])
      expect(refusal(() => keyMaterialForRole(none, role)).problems[0]).toEqual({
        variable: "MASTER_XPUBS",
        message: expect.stringMatching(/required in production mode .*stablegate signer export-xpubs/),
      });
    expect(keyMaterialForRole(none, "migrate")).toBe("none");
    expect(keyMaterialForRole(none, "merchant create")).toBe("none");
    for (const role of ["signer", "serve"])
      expect(refusal(() => keyMaterialForRole(none, role)).problems[0]?.variable).toBe("MASTER_MNEMONIC");

    const xpubsOnly = parseConfig({ ...production, MASTER_XPUBS: XPUBS });
    expect(keyMaterialForRole(xpubsOnly, "api")).toBe("xpubs");
    expect(keyMaterialForRole(xpubsOnly, "worker")).toBe("xpubs");
    expect(keyMaterialForRole(parseConfig({ ...production, MASTER_MNEMONIC: MNEMONIC }), "signer")).toBe(
      "mnemonic",
    );
  });

  it("outside production a role given no xpubs derives them from the (generated) mnemonic", () => {
    const dev = parseConfig({ ...production, NODE_ENV: "development", MASTER_MNEMONIC: MNEMONIC });
    expect(keyMaterialForRole(dev, "api")).toBe("xpubs");
  });
});

describe("every process derives from the keys the database recorded first", () => {
  let database: Awaited<ReturnType<typeof openTestDatabase>>;
  beforeAll(async () => {
    database = await openTestDatabase();
  });
  afterAll(async () => {
    await database?.close();
  });
  const logger = createLogger("silent");

  it("api with MASTER_XPUBS alone starts and records them; a worker or signer with other keys refuses", async () => {
    const api = await startRole("api", parseConfig({ ...production, MASTER_XPUBS: XPUBS }), {
      database,
      logger,
    });
    try {
      expect(api.runtime.accountKeysSource).toBe("MASTER_XPUBS");
      // The watch-only deriver gives the hot wallet the signer signs for.
      expect(api.runtime.addressDeriver.address("USDT-ERC20", "production", 0)).toBe(
        AddressDeriver.fromMnemonic(MNEMONIC).address("USDT-ERC20", "production", 0),
      );
    } finally {
      await api.stop();
    }
    const recorded = await database.db
      .selectFrom("account_keys")
      .select(["network", "environment", "xpub"])
      .execute();
    expect(
      formatAccountXpubs(
        Object.fromEntries(recorded.map((r) => [`${r.network}/${r.environment}`, r.xpub])) as never,
      ),
    ).toBe(XPUBS);

    const worker = parseConfig({ ...production, MASTER_XPUBS: OTHER_XPUBS, INTERNAL_SHARED_SECRET: SECRET });
    const err = await startRole("worker", worker, { database, logger }).then(
      (p) => p.stop().then(() => null),
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems[0]).toEqual({
      variable: "MASTER_XPUBS",
      message: expect.stringMatching(
        /differ from the ones this database's addresses were derived from \(USDT-TRC20\/production, /,
      ),
    });

    // In production mode the signer also needs its outflow cap (issue #34, test/security/19).
    const cap = { SIGNER_MAX_OUTFLOW_PER_HOUR: "1000", SIGNER_MAX_OUTFLOW_PER_DAY: "1000" };
    const signer = parseConfig({
      ...production,
      ...cap,
      MASTER_MNEMONIC: OTHER,
      INTERNAL_SHARED_SECRET: SECRET,
    });
    await expect(startSignerRole(signer, { database, logger })).rejects.toThrow(
      /mnemonic's account keys differ from the ones this database's addresses were derived from/,
    );
    // The right signer starts.
    const right = await startSignerRole(
      parseConfig({ ...production, ...cap, MASTER_MNEMONIC: MNEMONIC, INTERNAL_SHARED_SECRET: SECRET }),
      { database, logger },
    );
    await right.close();
  });

  it("a mnemonic and MASTER_XPUBS given together must agree", async () => {
    const dev = parseConfig({
      ...production,
      NODE_ENV: "test",
      MASTER_MNEMONIC: MNEMONIC,
      MASTER_XPUBS: OTHER_XPUBS,
    });
    const err = await startRole("serve", dev, { database, logger }).then(
      (p) => p.stop().then(() => null),
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems[0]).toEqual({
      variable: "MASTER_XPUBS",
      message: expect.stringMatching(/does not match the mnemonic \(USDT-TRC20\/production, /),
    });
  });
});
