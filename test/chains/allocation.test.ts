import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "../../src/config/config.js";
import { generatedMnemonicPath, resolveMnemonic } from "../../src/config/mnemonic.js";
import { type Database, openDatabase } from "../../src/db/database.js";
import { AddressDeriver } from "../../src/wallet/address-deriver.js";
import { allocateDepositAddress } from "../../src/wallet/allocation.js";
import { FIRST_DEPOSIT_INDEX } from "../../src/wallet/derivation-path.js";
import { onPostgres, openTestDatabase } from "../support/db.js";

const MNEMONIC = "test test test test test test test test test test test junk";
const deriver = AddressDeriver.fromMnemonic(MNEMONIC);

describe("allocateDepositAddress", () => {
  let database: Database & { url: string | undefined };
  beforeAll(async () => {
    database = await openTestDatabase(20);
    await database.db
      .insertInto("merchants")
      .values({ id: "mer_alloc", email: "alloc@example.com", company_name: "A" })
      .execute();
  });
  afterAll(async () => {
    await database?.close();
  });

  const allocate = (
    network: "USDT-ERC20" | "USDT-TRC20",
    environment: "production" | "sandbox",
    watchUntil?: Date,
  ) =>
    database.db.transaction().execute((trx) =>
      allocateDepositAddress(trx, {
        deriver,
        network,
        environment,
        merchantId: "mer_alloc",
        purpose: watchUntil ? "checkout" : "wallet",
        watchUntil: watchUntil ?? null,
        referenceId: "tx_ref",
      }),
    );

  it("hands out consecutive indexes from FIRST_DEPOSIT_INDEX per (network, environment), derived and watched", async () => {
    const until = new Date("2030-01-01T00:00:00Z");
    const a = await allocate("USDT-ERC20", "production", until);
    const b = await allocate("USDT-ERC20", "production");
    const c = await allocate("USDT-TRC20", "production");
    const d = await allocate("USDT-ERC20", "sandbox");
    expect([a.index, b.index, c.index, d.index]).toEqual([
      FIRST_DEPOSIT_INDEX,
      FIRST_DEPOSIT_INDEX + 1,
      FIRST_DEPOSIT_INDEX,
      FIRST_DEPOSIT_INDEX,
    ]);
    expect(a.address).toBe(deriver.address("USDT-ERC20", "production", FIRST_DEPOSIT_INDEX));
    expect(c.address).toMatch(/^T/);
    expect(d.address).not.toBe(a.address); // separate account per environment
    const row = await database.db
      .selectFrom("watched_addresses")
      .selectAll()
      .where("address", "=", a.address)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ purpose: "checkout", merchant_id: "mer_alloc", reference_id: "tx_ref" });
    expect(row.watch_until?.toISOString()).toBe(until.toISOString());
    const wallet = await database.db
      .selectFrom("watched_addresses")
      .select("watch_until")
      .where("address", "=", b.address)
      .executeTakeFirstOrThrow();
    expect(wallet.watch_until).toBeNull();
  });

  it("never gives two concurrent allocations the same index", async () => {
    const results = await Promise.all(Array.from({ length: 40 }, () => allocate("USDT-TRC20", "sandbox")));
    const indexes = results.map((r) => r.index);
    expect(new Set(indexes).size).toBe(40);
    expect(new Set(results.map((r) => r.address)).size).toBe(40);
    expect(Math.min(...indexes)).toBe(FIRST_DEPOSIT_INDEX);
    expect(Math.max(...indexes)).toBe(FIRST_DEPOSIT_INDEX + 39);
  });

  it.runIf(onPostgres)("serialises allocations from separate connection pools (processes)", async () => {
    const other = await openDatabase({ kind: "postgres", url: database.url as string, poolSize: 10 });
    try {
      const run = (db: Database) =>
        db.db.transaction().execute((trx) =>
          allocateDepositAddress(trx, {
            deriver,
            network: "USDT-ERC20",
            environment: "sandbox",
            merchantId: "mer_alloc",
            purpose: "wallet",
          }),
        );
      const out = await Promise.all(Array.from({ length: 30 }, (_, i) => run(i % 2 ? other : database)));
      expect(new Set(out.map((o) => o.index)).size).toBe(30);
    } finally {
      await other.close();
    }
  });
});

describe("resolveMnemonic", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "sg-mnemonic-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  const config = (env: Record<string, string>) =>
    parseConfig({ NODE_ENV: "development", DATA_DIR: path.join(dir, "data"), ...env });

  it("generates one mnemonic into DATA_DIR (mode 0600) outside production and reuses it", async () => {
    const first = await resolveMnemonic(config({}));
    expect(first.source).toBe("generated");
    expect(first.mnemonic.split(" ")).toHaveLength(24);
    const file = generatedMnemonicPath(path.join(dir, "data"));
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const again = await resolveMnemonic(config({}));
    expect(again.mnemonic).toBe(first.mnemonic);
    // Concurrent starts agree on one mnemonic.
    const fresh = { DATA_DIR: path.join(dir, "data2") };
    const many = await Promise.all(Array.from({ length: 5 }, () => resolveMnemonic(config(fresh))));
    expect(new Set(many.map((m) => m.mnemonic)).size).toBe(1);
  });

  it("takes MASTER_MNEMONIC or MASTER_MNEMONIC_FILE, normalised", async () => {
    expect(await resolveMnemonic(config({ MASTER_MNEMONIC: `  ${MNEMONIC.toUpperCase()} ` }))).toEqual({
      mnemonic: MNEMONIC,
      source: "MASTER_MNEMONIC",
    });
    const file = path.join(dir, "m.txt");
    await writeFile(file, `${MNEMONIC}\n`);
    expect((await resolveMnemonic(config({ MASTER_MNEMONIC_FILE: file }))).mnemonic).toBe(MNEMONIC);
  });

  it("refuses a bad mnemonic with an error naming the variable, without echoing the words", async () => {
    const bad = "test test test test test test test test test test test test"; // bad checksum
    const err = await resolveMnemonic(config({ MASTER_MNEMONIC: bad })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems[0]?.variable).toBe("MASTER_MNEMONIC");
    expect((err as Error).message).not.toContain("test test");
    const file = path.join(dir, "bad.txt");
    await writeFile(file, "not a mnemonic");
    const fileErr = await resolveMnemonic(config({ MASTER_MNEMONIC_FILE: file })).catch((e: unknown) => e);
    expect((fileErr as ConfigError).problems[0]?.variable).toBe("MASTER_MNEMONIC_FILE");
    const missing = await resolveMnemonic(config({ MASTER_MNEMONIC_FILE: path.join(dir, "nope") })).catch(
      (e: unknown) => e,
    );
    expect((missing as ConfigError).problems[0]?.variable).toBe("MASTER_MNEMONIC_FILE");
  });

  it("production mode refuses to start without a mnemonic and never generates one", async () => {
    const prodEnv = {
      NODE_ENV: "production",
      DATA_DIR: path.join(dir, "prod"),
      SECRET_ENCRYPTION_KEY: "a".repeat(64),
      JWT_SECRET: "b".repeat(64),
      INTERNAL_SHARED_SECRET: "c".repeat(64),
    };
    expect(() => parseConfig(prodEnv)).toThrow(/MASTER_MNEMONIC/);
    const ok = parseConfig({ ...prodEnv, MASTER_MNEMONIC: MNEMONIC });
    expect((await resolveMnemonic(ok)).source).toBe("MASTER_MNEMONIC");
    await expect(readFile(generatedMnemonicPath(path.join(dir, "prod")))).rejects.toThrow();
  });
});
