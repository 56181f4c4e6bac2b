import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "../../src/config/config.js";
import { keyMaterialForRole } from "../../src/config/key-custody.js";
import { generatedMnemonicPath, resolveMnemonic } from "../../src/config/mnemonic.js";
import { type Database, openDatabase } from "../../src/db/database.js";
import { AddressDeriver } from "../../src/wallet/address-deriver.js";
import { allocateDepositAddress } from "../../src/wallet/allocation.js";
import { FIRST_DEPOSIT_INDEX } from "../../src/wallet/derivation-path.js";
import { DepositIndexReserve, reserveIndexes } from "../../src/wallet/index-reserve.js";
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

describe("DepositIndexReserve", () => {
  let database: Database & { url: string | undefined };
  beforeAll(async () => {
    database = await openTestDatabase(10);
    await database.db
      .insertInto("merchants")
      .values({ id: "mer_reserve", email: "reserve@example.com", company_name: "R" })
      .execute();
  });
  afterAll(async () => {
    await database?.close();
  });

  it("hands out each sequence index once across reserves (processes), a block per round trip", async () => {
    const a = new DepositIndexReserve(8);
    const b = new DepositIndexReserve(8);
    const taken = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        database.db.transaction().execute((trx) =>
          allocateDepositAddress(trx, {
            deriver,
            indexes: i % 3 ? a : b,
            network: "USDT-TRC20",
            environment: "production",
            merchantId: "mer_reserve",
            purpose: "wallet",
          }),
        ),
      ),
    );
    const indexes = taken.map((t) => t.index);
    expect(new Set(indexes).size).toBe(60);
    expect(Math.min(...indexes)).toBeGreaterThanOrEqual(FIRST_DEPOSIT_INDEX);
    for (const t of taken) expect(t.address).toBe(deriver.address("USDT-TRC20", "production", t.index));
    // What the sequence gave out: whole blocks, and never more than one unused block per reserve
    // beyond what concurrent refills added.
    const seq = await sql<{
      last: string;
    }>`select last_value::text as last from deposit_index_usdt_trc20_production`.execute(database.db);
    const handedOut = Number(seq.rows[0]?.last) - FIRST_DEPOSIT_INDEX + 1;
    expect(handedOut % 8).toBe(0);
    expect(handedOut).toBeGreaterThanOrEqual(64);
  });

  it("serves the next index from the reserve without touching the sequence", async () => {
    const r = new DepositIndexReserve(4);
    const first = await r.next(database.db, "USDT-ERC20", "production");
    const before = await sql<{
      last: string;
    }>`select last_value::text as last from deposit_index_usdt_erc20_production`.execute(database.db);
    const next3 = [
      await r.next(database.db, "USDT-ERC20", "production"),
      await r.next(database.db, "USDT-ERC20", "production"),
      await r.next(database.db, "USDT-ERC20", "production"),
    ];
    const after = await sql<{
      last: string;
    }>`select last_value::text as last from deposit_index_usdt_erc20_production`.execute(database.db);
    expect(next3).toEqual([first + 1, first + 2, first + 3]);
    expect(after.rows[0]?.last).toBe(before.rows[0]?.last);
    expect(await r.next(database.db, "USDT-ERC20", "production")).toBe(first + 4); // a new block
  });

  it("fails only the caller whose refill failed; the next caller refills", async () => {
    const r = new DepositIndexReserve(2);
    await expect(
      database.db.transaction().execute(async (trx) => {
        await sql`select 1/0`.execute(trx).catch(() => {}); // the transaction is now aborted
        return r.next(trx, "USDT-ERC20", "sandbox");
      }),
    ).rejects.toThrow();
    const index = await r.next(database.db, "USDT-ERC20", "sandbox");
    expect(index).toBeGreaterThanOrEqual(FIRST_DEPOSIT_INDEX);
  });

  it("every EVM currency type draws from one sequence: two processes allocating for two EVM types never share a key (issue #37)", async () => {
    // Each process (reserve) starts on another currency type; they derive from one account
    // (USDT-ERC20's), so two indexes from two sequences would be one address for two records.
    const a = new DepositIndexReserve(4);
    const b = new DepositIndexReserve(4);
    const types = ["USDT-ERC20", "USDC-BASE", "USDT-BEP20", "USDC-POLYGON"] as const;
    const taken = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        database.db.transaction().execute((trx) =>
          allocateDepositAddress(trx, {
            deriver,
            indexes: i % 2 ? a : b,
            network: types[(i + (i % 2)) % types.length] as (typeof types)[number],
            environment: "sandbox",
            merchantId: "mer_reserve",
            purpose: "wallet",
          }),
        ),
      ),
    );
    expect(new Set(taken.map((t) => t.index)).size).toBe(24);
    expect(new Set(taken.map((t) => t.address.toLowerCase())).size).toBe(24);
    // The straight path (no reserve) draws from the same sequence too.
    const [direct] = await reserveIndexes(database.db, "USDC-ARBITRUM", "sandbox", 1);
    expect(taken.map((t) => t.index)).not.toContain(direct);
    const seq = await sql<{
      n: string;
    }>`select count(*)::text as n from pg_class where relkind = 'S' and relname like 'deposit_index_%_sandbox' and relname not like 'deposit_index_usdt_erc20_%' and relname not like 'deposit_index_usdt_trc20_%'`.execute(
      database.db,
    );
    expect(seq.rows[0]?.n).toBe("0");
  });

  it("refuses a block size that is not a positive integer", () => {
    expect(() => new DepositIndexReserve(0)).toThrow();
    expect(() => new DepositIndexReserve(1.5)).toThrow();
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
      METRICS_TOKEN: "m".repeat(32),
    };
    // The signing roles need it (docs/decisions/custody-and-faults.md#key-custody: the others refuse it, test/signer/key-custody).
    expect(() => keyMaterialForRole(parseConfig(prodEnv), "signer")).toThrow(/MASTER_MNEMONIC/);
    expect(() => keyMaterialForRole(parseConfig(prodEnv), "serve")).toThrow(/MASTER_MNEMONIC/);
    const ok = parseConfig({ ...prodEnv, MASTER_MNEMONIC: MNEMONIC });
    expect((await resolveMnemonic(ok)).source).toBe("MASTER_MNEMONIC");
    await expect(readFile(generatedMnemonicPath(path.join(dir, "prod")))).rejects.toThrow();
  });
});
