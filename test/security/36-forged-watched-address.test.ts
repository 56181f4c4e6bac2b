import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorContext } from "../../src/cli/merchant-create.js";
import type { Db } from "../../src/db/database.js";
import { newId } from "../../src/domain/ids.js";
import type { CreatedMerchant } from "../../src/merchants/index.js";
import { runOperatorCommand } from "../../src/operator/commands.js";
import { AddressDeriver } from "../../src/wallet/address-deriver.js";
import { FIRST_DEPOSIT_INDEX, HOT_WALLET_INDEX } from "../../src/wallet/derivation-path.js";
import { balanceOf } from "../deposits/support.js";
import { call, keysOf, startTestService, type TestService } from "../support/harness.js";
import { waitFor } from "../webhooks/support.js";

// Attack (found in the review of #38): the api's database role may insert `watched_addresses`
// rows (it allocates sessions' addresses). A compromised api process records an address whose key
// the ATTACKER holds, as a deposit address of a merchant it controls, then pays it: before the fix
// the watcher credited that payment like any deposit, and the merchant could withdraw it from the
// hot wallet while the attacker kept the coins. Now a row is matched only when its address is the
// gateway's own derivation at its recorded index (src/watcher/issued.ts): the payment is never
// credited (nor recorded by `chain rescan`), and the alert `watched_address_forged` names it.

type Json = Record<string, unknown>;
const TRC = "USDT-TRC20";
/** The test service's keys (the harness's default mnemonic). */
const gateway = AddressDeriver.fromMnemonic("test test test test test test test test test test test junk");
const attacker = AddressDeriver.fromMnemonic(
  "legal winner thank year wave sausage worth useful legal winner thank yellow",
);

let svc: TestService;
let m: { merchant: CreatedMerchant; headers: Record<string, string> };
const logs: Json[] = [];

beforeAll(async () => {
  svc = await startTestService({
    env: { RATE_LIMIT_ENABLED: "false" },
    logDestination: {
      write(line: string) {
        try {
          logs.push(JSON.parse(line));
        } catch {}
      },
    },
  });
  const merchant = await svc.createMerchant();
  const k = keysOf(merchant, "sandbox");
  m = { merchant, headers: { apikey: k.apiKey, "x-api-secret": k.apiSecret } };
}, 60_000);
afterAll(async () => {
  await svc?.close();
});

/**
 * Runs `fn` in a transaction as the api's database role, and only there (the running service
 * shares PGlite's one connection, or PostgreSQL's pool).
 */
async function asApi(db: Db, fn: (trx: Db) => Promise<unknown>): Promise<void> {
  await db.transaction().execute(async (trx) => {
    // `set local role` (table privileges are the current user's); PGlite keeps a `set local
    // session authorization` past the commit.
    await sql`set local role stablegate_api`.execute(trx);
    await fn(trx);
  });
}

describe("attack: a watched address the gateway holds no key for", () => {
  it("is never credited: the merchant's balance holds only its real deposit; the alert names the row; a rescan records nothing", async () => {
    const db = svc.database.db;
    // A real deposit address of the merchant, for comparison (and to know the watcher scanned on).
    const wallet = await call(svc.urls.sandbox, "/wallet/generate", {
      headers: m.headers,
      json: { currencyType: TRC },
    });
    expect(wallet.status, wallet.text).toBe(201);
    const real = wallet.body.data.address as string;

    // The forged row: the attacker's own address, at an index the gateway never handed out.
    const index = FIRST_DEPOSIT_INDEX + 50_000;
    const forged = attacker.address(TRC, "sandbox", index);
    // Both records a real allocation writes: the watched row and the deposit wallet it credits.
    await forgeWallet(db, forged, index);

    for (const [address, amount] of [
      [forged, 900],
      [real, 5],
    ] as const) {
      const p = await call(svc.urls.sandbox, `/api/v1/sandbox/wallet/${address}/pay`, {
        headers: m.headers,
        json: { amount, currencyType: TRC },
      });
      expect(p.status, p.text).toBe(202);
    }
    // The real deposit (paid after the forged one, in a later block) is credited...
    await waitFor(async () => {
      const b = await balanceOf(svc, m.headers, TRC);
      return b.available === 5 ? true : null;
    }, 30_000);
    // ...and a few more blocks on, the forged payment still is not.
    await call(svc.urls.sandbox, `/api/v1/sandbox/wallet/${real}/pay`, {
      headers: m.headers,
      json: { amount: 1, currencyType: TRC },
    });
    await waitFor(async () => ((await balanceOf(svc, m.headers, TRC)).available === 6 ? true : null), 30_000);
    expect(await balanceOf(svc, m.headers, TRC)).toMatchObject({ available: 6, held: 0 });
    const observed = await db
      .selectFrom("chain_observations")
      .select("address")
      .where("address", "=", forged)
      .execute();
    expect(observed).toEqual([]);
    const credited = await db
      .selectFrom("transactions")
      .select("amount")
      .where("merchant_id", "=", m.merchant.id)
      .where("type", "=", "deposit")
      .execute();
    expect(credited.map((t) => Number(t.amount)).sort((a, b) => a - b)).toEqual([1_000_000, 5_000_000]);
    const alerts = logs.filter((l) => l.alert === "watched_address_forged");
    expect(alerts.map((l) => [l.address, l.derivationIndex])).toEqual([[forged, index]]);

    // The operator's rescan of the whole chain records nothing for it either, and says so.
    const head = await db
      .selectFrom("sim_blocks")
      .select((eb) => eb.fn.max("number").as("n"))
      .where("network", "=", TRC)
      .executeTakeFirstOrThrow();
    const rescan = (await runOperatorCommand(operatorContext(svc.config, db), "chain.rescan", {
      network: TRC,
      environment: "sandbox",
      from: 0,
      to: Number(head.n),
    })) as { matched: number; recorded: number; forged: string[] };
    expect(rescan).toMatchObject({ matched: 2, recorded: 0, forged: [forged] }); // the two real ones were known
    expect(
      await db.selectFrom("chain_observations").select("address").where("address", "=", forged).execute(),
    ).toEqual([]);
  }, 120_000);

  it("a system wallet's index (the hot wallet at 0, paid by every sweep) is never a deposit address: nothing is credited", async () => {
    const db = svc.database.db;
    const before = (await balanceOf(svc, m.headers, TRC)).available;
    const hot = gateway.address(TRC, "sandbox", HOT_WALLET_INDEX);
    await forgeWallet(db, hot, HOT_WALLET_INDEX);
    const p = await call(svc.urls.sandbox, `/api/v1/sandbox/wallet/${hot}/pay`, {
      headers: m.headers,
      json: { amount: 700, currencyType: TRC },
    });
    expect(p.status, p.text).toBe(202);
    await creditedAfterOneMorePayment(before);
    expect(await observedAt(hot)).toEqual([]);
    expect(logs.some((l) => l.alert === "watched_address_forged" && l.address === hot)).toBe(true);
  }, 120_000);

  for (const [what, change] of [
    ["its deposit wallet moved to production (a sandbox payment is free)", { environment: "production" }],
    ["its deposit wallet moved to another currency type", { network: "USDT-ERC20" }],
  ] as const) {
    it(`a real deposit address whose record was rewritten — ${what} — credits nothing, anywhere`, async () => {
      const db = svc.database.db;
      const wallet = await call(svc.urls.sandbox, "/wallet/generate", {
        headers: m.headers,
        json: { currencyType: TRC },
      });
      expect(wallet.status, wallet.text).toBe(201);
      const { id, address } = wallet.body.data as { id: string; address: string };
      await asApi(db, (trx) => trx.updateTable("deposit_wallets").set(change).where("id", "=", id).execute());
      const before = await allBalances(db);
      const p = await call(svc.urls.sandbox, `/api/v1/sandbox/wallet/${address}/pay`, {
        headers: m.headers,
        json: { amount: 800, currencyType: TRC },
      });
      expect(p.status, p.text).toBe(202);
      // The observation confirms; its hand-off is refused (it stays, retried), with the alert.
      const alerted = () =>
        logs.some((l) => l.alert === "deposit_record_mismatch" && String(l.msg).includes(id));
      await waitFor(async () => alerted() || (await observedAt(address))[0]?.status === "handed_off", 30_000);
      // Before the fix: handed off, and credited in the record's environment or currency type.
      expect(await allBalances(db)).toEqual(before);
      expect(alerted()).toBe(true);
      const [obs] = await observedAt(address);
      expect(obs?.status).toBe("observed");
    }, 120_000);
  }
});

/** The attacker's deposit wallet for `address` at `index`: both rows, as the api's role. */
async function forgeWallet(db: Db, address: string, index: number): Promise<void> {
  const walletId = newId("wal");
  await asApi(db, async (trx) => {
    await trx
      .insertInto("watched_addresses")
      .values({
        network: TRC,
        environment: "sandbox",
        address,
        derivation_index: index,
        merchant_id: m.merchant.id,
        purpose: "wallet",
        reference_id: walletId,
        watch_until: null,
      })
      .execute();
    await trx
      .insertInto("deposit_wallets")
      .values({
        id: walletId,
        merchant_id: m.merchant.id,
        environment: "sandbox",
        network: TRC,
        address,
        label: null,
        external_user_id: null,
        created_at: new Date(),
      })
      .execute();
  });
}

/** Pays a real wallet of the merchant 1 USDT and waits for it: the watcher scanned past what came before. */
async function creditedAfterOneMorePayment(before: number): Promise<void> {
  const w = await call(svc.urls.sandbox, "/wallet/generate", {
    headers: m.headers,
    json: { currencyType: TRC },
  });
  expect(w.status, w.text).toBe(201);
  await call(svc.urls.sandbox, `/api/v1/sandbox/wallet/${w.body.data.address}/pay`, {
    headers: m.headers,
    json: { amount: 1, currencyType: TRC },
  });
  await waitFor(
    async () => ((await balanceOf(svc, m.headers, TRC)).available === before + 1 ? true : null),
    30_000,
  );
}

function observedAt(address: string) {
  return svc.database.db
    .selectFrom("chain_observations")
    .select(["address", "status"])
    .where("address", "=", address)
    .execute();
}

/** Every ledger balance of the merchant, both environments and every currency type. */
async function allBalances(db: Db) {
  const rows = await db
    .selectFrom("ledger_accounts")
    .select(["environment", "currency_type", "kind", "balance"])
    .where("owner", "=", m.merchant.id)
    .orderBy(["environment", "currency_type", "kind"])
    .execute();
  return rows.map((r) => [r.environment, r.currency_type, r.kind, String(r.balance)]);
}
