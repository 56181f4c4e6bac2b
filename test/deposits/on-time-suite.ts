/**
 * Issue 19's must-show cases, run against a real chain endpoint with more than one confirmation:
 * anvil (EVM) and the TRON emulator over anvil, automining off, every block's timestamp set by the
 * test. The real watcher, deposit handler and expiry job run against the database (PGlite, or
 * PostgreSQL with TEST_DATABASE_URL); the worker's clock is a ManualClock, the chain's time is the
 * chain's. Each case gets a fresh database and merchant; the chain is shared by a file.
 *
 * Every case ends with the books check: each webhook's `netAmount` is its `actualBalance − fee`, the
 * API's presentation of the transaction says the same, the sum of the webhooks' `netAmount` is the
 * merchant's available balance, and `ledger verify` (which checks each deposit's posting) is clean.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { ChainAdapter } from "../../src/chains/adapter.js";
import type { Database } from "../../src/db/database.js";
import { createCheckoutSession, generateDepositWallet } from "../../src/deposits/create.js";
import { expireDueSessions } from "../../src/deposits/expiry.js";
import { createDepositHandler } from "../../src/deposits/handler.js";
import { findCheckoutSession, findSessionDetections } from "../../src/deposits/sessions-store.js";
import { noDetection } from "../../src/domain/checkout.js";
import type { CurrencyType } from "../../src/domain/currency.js";
import { DEFAULT_FEE_SCHEDULE, type FeeSchedule } from "../../src/domain/fees.js";
import { presentTransaction } from "../../src/domain/transaction.js";
import { presentCheckoutSession } from "../../src/http/schemas/deposits.js";
import { getBalances } from "../../src/ledger/balances.js";
import { verifyLedger } from "../../src/ledger/verify.js";
import { ManualClock } from "../../src/lib/clock.js";
import { createLogger } from "../../src/observability/logger.js";
import { findTransaction } from "../../src/transactions/index.js";
import { AddressDeriver } from "../../src/wallet/address-deriver.js";
import { DepositIndexReserve } from "../../src/wallet/index-reserve.js";
import { DepositHandoff } from "../../src/watcher/handoff.js";
import { ChainWatcher } from "../../src/watcher/watcher.js";
import { type AnvilNode, mineBlockAt } from "../support/chain/anvil.js";
import { openTestDatabase } from "../support/db.js";

export interface TimedChain {
  network: CurrencyType;
  anvil: AnvilNode;
  adapter: ChainAdapter;
  /** Sends a token transfer to `address` (network spelling) into the pool: it is mined by the next block. */
  send(address: string, amount: bigint): Promise<void>;
  stop(): Promise<void>;
}

const CONFIRMATIONS = 3;
/** USDT as a JSON number (≤ 6 decimals) → base units. */
const parseUsdt = (n: number) => BigInt(Math.round(n * 1_000_000));
const USDT = parseUsdt;
/** A deposit fee, so that netAmount ≠ actualBalance: 0.10 USDT + 1 %. */
const FEES: FeeSchedule = {
  ...DEFAULT_FEE_SCHEDULE,
  "USDT-TRC20": { ...DEFAULT_FEE_SCHEDULE["USDT-TRC20"], deposit: { fixed: 100_000n, ppm: 10_000n } },
  "USDT-ERC20": { ...DEFAULT_FEE_SCHEDULE["USDT-ERC20"], deposit: { fixed: 100_000n, ppm: 10_000n } },
};
const deriver = AddressDeriver.fromMnemonic("test test test test test test test test test test test junk");

export function onTimeSuite(name: string, start: () => Promise<TimedChain>) {
  describe(`payments judged by the chain on ${name}`, () => {
    let chain: TimedChain;
    let database: Database;
    let clock: ManualClock;
    let merchantId: string;
    let watcher: ChainWatcher;
    let seq = 0;
    /** Seconds: the last block timestamp this file used (block times only go forward). */
    let chainSec = 0;

    beforeAll(async () => {
      chain = await start();
    });
    afterAll(async () => {
      await chain?.stop();
    });
    beforeEach(async () => {
      database = await openTestDatabase();
      merchantId = `mer_ontime${++seq}${Date.now().toString(36)}`;
      await database.db
        .insertInto("merchants")
        .values({ id: merchantId, email: `${merchantId}@example.com`, company_name: "T" })
        .execute();
      const latest = await chain.anvil.publicClient.getBlock();
      chainSec = Math.max(chainSec, Number(latest.timestamp)) + 1_000;
      clock = new ManualClock(chainSec * 1000);
      const handoff = new DepositHandoff();
      handoff.register(createDepositHandler({ clock, fees: FEES }));
      watcher = new ChainWatcher({
        db: database.db,
        network: chain.network,
        environment: "production",
        adapter: chain.adapter,
        confirmations: CONFIRMATIONS,
        scan: { pollIntervalMs: 100, initialRangeBlocks: 5, maxRangeBlocks: 50 },
        handoff,
        derive: (index) => deriver.address(chain.network, "production", index),
        logger: createLogger("silent"),
        clock,
        owner: "worker-a",
        start: "safe",
      });
      // The watcher starts at the current safe block: bury older blocks below it.
      await mineAt(chainSec);
      await mineAt(chainSec + 1);
      await mineAt(chainSec + 2);
      expect((await watcher.tick()).kind).toBe("scanned");
    });
    afterEach(async () => {
      await database?.close();
    });

    /** Mines one block at `sec` (unix seconds) and lets the watcher see it. */
    async function mineAt(sec: number): Promise<number> {
      chainSec = Math.max(chainSec, sec);
      return mineBlockAt(chain.anvil, sec);
    }
    /** The worker's clock moves to `sec`; the watcher ticks and the expiry job runs. */
    async function workerAt(sec: number) {
      clock.set(sec * 1000);
      const out = await watcher.tick();
      expect(out.kind, JSON.stringify(out)).toBe("scanned");
      await expireDueSessions(database.db, { fees: FEES }, new Date(clock.now()));
    }

    async function newSession(amount: bigint, lifetimeSec = 600) {
      const created = new Date(clock.now());
      const s = await database.db.transaction().execute((trx) =>
        createCheckoutSession(
          trx,
          { deriver, indexes: new DepositIndexReserve(), fees: FEES, latePaymentWatchHours: 168 },
          { merchantId, environment: "production" },
          {
            amount,
            currencyType: chain.network,
            lifetimeMs: lifetimeSec * 1000,
            callbackUrl: null,
            orderId: null,
            metadata: null,
          },
          created,
        ),
      );
      return { id: s.transaction.id, address: s.address, deadlineSec: s.expiresAt.getTime() / 1000 };
    }

    async function setTolerance(bp: number) {
      await database.db
        .insertInto("merchant_settings")
        .values({ merchant_id: merchantId, environment: "production", underpayment_tolerance_bp: bp })
        .onConflict((oc) =>
          oc.columns(["merchant_id", "environment"]).doUpdateSet({ underpayment_tolerance_bp: bp }),
        )
        .execute();
    }

    /** The session as the API presents it (with what the chain shows). */
    async function apiSession(id: string) {
      const s = await findCheckoutSession(database.db, { merchantId, environment: "production" }, id);
      if (!s) throw new Error(`no session ${id}`);
      const d = (await findSessionDetections(database.db, [id], () => CONFIRMATIONS)).get(id);
      return presentCheckoutSession(s, `https://pay.test/${id}`, d ?? noDetection(CONFIRMATIONS));
    }

    const webhooksOf = async (transactionId: string) =>
      (
        await database.db
          .selectFrom("webhook_events")
          .select(["body", "transaction_status"])
          .where("transaction_id", "=", transactionId)
          .execute()
      ).map((r) => JSON.parse(r.body).data as Record<string, unknown>);

    const lateDepositsOf = (sessionId: string) =>
      database.db
        .selectFrom("transactions")
        .select(["id", "amount", "status"])
        .where("checkout_session_id", "=", sessionId)
        .execute();

    /**
     * The books: each webhook's netAmount = actualBalance − fee and = the API's; their sum is the
     * available balance; ledger verify (deposit postings included) is clean.
     */
    async function expectBooksMatch() {
      const events = await database.db
        .selectFrom("webhook_events")
        .select(["body", "transaction_id"])
        .where("merchant_id", "=", merchantId)
        .execute();
      let booked = 0n;
      for (const e of events) {
        const data = JSON.parse(e.body).data as { netAmount: number; fee: number; actualBalance: number };
        const net = parseUsdt(data.netAmount);
        expect(net).toBe(parseUsdt(data.actualBalance) - parseUsdt(data.fee));
        const row = await findTransaction(
          database.db,
          { merchantId, environment: "production" },
          e.transaction_id,
        );
        expect(presentTransaction(row!)).toMatchObject({
          netAmount: data.netAmount,
          fee: data.fee,
          actualBalance: data.actualBalance,
        });
        booked += net;
      }
      const balance = (await getBalances(database.db, merchantId, "production")).find(
        (b) => b.currencyType === chain.network,
      );
      expect(balance?.available ?? 0n).toBe(booked);
      const report = await verifyLedger(database.db);
      expect(report.problems).toEqual([]);
    }

    it("paid in a block before the deadline, confirmed after it → confirmed, one webhook, no late deposit", async () => {
      const s = await newSession(USDT(25));
      await chain.send(s.address, USDT(25));
      const block = await mineAt(s.deadlineSec - 6);
      await workerAt(s.deadlineSec - 5);
      const detected = await apiSession(s.id);
      expect(detected).toMatchObject({
        status: "pending",
        detectedAt: new Date((s.deadlineSec - 6) * 1000).toISOString(),
        detectedAmount: 25,
        confirmations: { current: 1, required: CONFIRMATIONS },
      });

      await mineAt(s.deadlineSec + 6);
      await workerAt(s.deadlineSec + 10); // the deadline has passed on both clocks: still confirming
      expect(await apiSession(s.id)).toMatchObject({
        status: "pending",
        confirmations: { current: 2, required: CONFIRMATIONS },
      });
      await mineAt(s.deadlineSec + 18);
      await workerAt(s.deadlineSec + 20);
      const done = await apiSession(s.id);
      expect(done).toMatchObject({ status: "confirmed", actualBalance: 25, confirmations: { current: 3 } });
      await mineAt(s.deadlineSec + 30);
      await workerAt(s.deadlineSec + 40);
      const hooks = await webhooksOf(s.id);
      expect(hooks).toHaveLength(1);
      expect(hooks[0]).toMatchObject({ status: "confirmed", actualBalance: 25, fee: 0.35, netAmount: 24.65 });
      expect(await lateDepositsOf(s.id)).toEqual([]);
      expect(block).toBeGreaterThan(0);
      await expectBooksMatch();
    });

    it("paid in a block after the deadline → failed, and the payment is a late deposit", async () => {
      const s = await newSession(USDT(10));
      await chain.send(s.address, USDT(10));
      await mineAt(s.deadlineSec + 3);
      await workerAt(s.deadlineSec + 4); // the chain has passed the deadline; nothing was in time
      expect(await apiSession(s.id)).toMatchObject({ status: "failed", actualBalance: 0, detectedAt: null });
      await mineAt(s.deadlineSec + 15);
      await mineAt(s.deadlineSec + 27);
      await workerAt(s.deadlineSec + 30);
      expect(await webhooksOf(s.id)).toEqual([
        expect.objectContaining({ status: "failed", actualBalance: 0, fee: 0, netAmount: 0 }),
      ]);
      const late = await lateDepositsOf(s.id);
      expect(late).toEqual([{ id: expect.any(String), amount: USDT(10).toString(), status: "confirmed" }]);
      expect(await webhooksOf(late[0]!.id)).toEqual([
        expect.objectContaining({ status: "confirmed", actualBalance: 10, fee: 0.2, netAmount: 9.8 }),
      ]);
      await expectBooksMatch();
    });

    it("paid before the deadline, then the block is reorganised away and nothing else arrives → failed", async () => {
      const s = await newSession(USDT(7));
      await chain.send(s.address, USDT(7));
      await mineAt(s.deadlineSec - 6);
      await mineAt(s.deadlineSec + 4);
      await workerAt(s.deadlineSec + 5);
      expect(await apiSession(s.id)).toMatchObject({
        status: "pending",
        detectedAmount: 7,
        confirmations: { current: 2 },
      });
      // Both blocks replaced by empty ones (the transfer is gone), then the chain moves on.
      await chain.anvil.testClient.setNextBlockTimestamp({ timestamp: BigInt(s.deadlineSec + 8) });
      await chain.anvil.publicClient.request({ method: "anvil_reorg" as never, params: [2, []] as never });
      await chain.anvil.publicClient.request({
        method: "anvil_dropAllTransactions" as never,
        params: [] as never,
      });
      const head = await chain.anvil.publicClient.getBlock();
      await mineAt(Math.max(Number(head.timestamp), s.deadlineSec + 10) + 2);
      await workerAt(s.deadlineSec + 30);
      expect(await apiSession(s.id)).toMatchObject({
        status: "failed",
        actualBalance: 0,
        detectedAt: null,
        detectedAmount: 0,
      });
      expect(await webhooksOf(s.id)).toEqual([expect.objectContaining({ status: "failed", netAmount: 0 })]);
      expect(await lateDepositsOf(s.id)).toEqual([]);
      await expectBooksMatch();
    });

    it("a partial payment then a top-up, both mined before the deadline and confirming after it → confirmed", async () => {
      const s = await newSession(USDT(50));
      await chain.send(s.address, USDT(20));
      await mineAt(s.deadlineSec - 20);
      await workerAt(s.deadlineSec - 19);
      expect(await apiSession(s.id)).toMatchObject({ status: "pending", detectedAmount: 20 });
      await chain.send(s.address, USDT(30));
      await mineAt(s.deadlineSec - 5);
      await mineAt(s.deadlineSec + 5);
      await workerAt(s.deadlineSec + 8); // the partial is confirmed, the top-up is not yet
      expect(await apiSession(s.id)).toMatchObject({
        status: "pending",
        actualBalance: 20,
        detectedAt: new Date((s.deadlineSec - 20) * 1000).toISOString(),
        detectedAmount: 50,
        confirmations: { current: 2 },
      });
      await mineAt(s.deadlineSec + 15);
      await workerAt(s.deadlineSec + 20);
      expect(await apiSession(s.id)).toMatchObject({ status: "confirmed", actualBalance: 50 });
      expect(await webhooksOf(s.id)).toEqual([
        expect.objectContaining({ status: "confirmed", actualBalance: 50, fee: 0.6, netAmount: 49.4 }),
      ]);
      expect(await lateDepositsOf(s.id)).toEqual([]);
      await expectBooksMatch();
    });

    it("tolerance 1 %: 99.2 % paid → confirmed; 98 % paid → failed with the 98 % credited", async () => {
      await setTolerance(100);
      const enough = await newSession(USDT(100));
      const short = await newSession(USDT(100));
      await chain.send(enough.address, USDT(99.2));
      await chain.send(short.address, USDT(98));
      await mineAt(enough.deadlineSec - 10);
      await mineAt(enough.deadlineSec - 8);
      await mineAt(enough.deadlineSec - 6);
      await workerAt(enough.deadlineSec - 5);
      expect(await apiSession(enough.id)).toMatchObject({ status: "confirmed", actualBalance: 99.2 });
      expect(await apiSession(short.id)).toMatchObject({ status: "pending", actualBalance: 98 });
      await mineAt(short.deadlineSec + 1);
      await workerAt(short.deadlineSec + 2);
      expect(await apiSession(short.id)).toMatchObject({ status: "failed", actualBalance: 98 });
      expect(await webhooksOf(enough.id)).toEqual([
        expect.objectContaining({ status: "confirmed", actualBalance: 99.2, fee: 1.092, netAmount: 98.108 }),
      ]);
      expect(await webhooksOf(short.id)).toEqual([
        expect.objectContaining({ status: "failed", actualBalance: 98, fee: 1.08, netAmount: 96.92 }),
      ]);
      await expectBooksMatch();
    });

    it("books match for an overpayment and for a wallet deposit too", async () => {
      const over = await newSession(USDT(5));
      const wallet = await database.db
        .transaction()
        .execute((trx) =>
          generateDepositWallet(
            trx,
            { deriver, indexes: new DepositIndexReserve(), fees: FEES, latePaymentWatchHours: 168 },
            { merchantId, environment: "production" },
            { currencyType: chain.network, label: null, externalUserId: "user-1" },
            new Date(clock.now()),
          ),
        );
      await chain.send(over.address, USDT(8));
      await chain.send(wallet.address, USDT(3));
      await mineAt(over.deadlineSec - 100);
      await mineAt(over.deadlineSec - 90);
      await mineAt(over.deadlineSec - 80);
      await workerAt(over.deadlineSec - 79);
      expect(await webhooksOf(over.id)).toEqual([
        expect.objectContaining({
          status: "confirmed",
          amount: 5,
          actualBalance: 8,
          fee: 0.18,
          netAmount: 7.82,
        }),
      ]);
      const walletDeposits = await database.db
        .selectFrom("transactions")
        .select("id")
        .where("deposit_wallet_id", "=", wallet.id)
        .execute();
      expect(walletDeposits).toHaveLength(1);
      expect(await webhooksOf(walletDeposits[0]!.id)).toEqual([
        expect.objectContaining({ status: "confirmed", actualBalance: 3, fee: 0.13, netAmount: 2.87 }),
      ]);
      await expectBooksMatch();
    });
  });
}
