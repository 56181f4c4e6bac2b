import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { generateMnemonic } from "@scure/bip39";
import { wordlist } from "@scure/bip39/wordlists/english.js";
import { Redis } from "ioredis";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { type Database, openDatabase } from "../../src/db/database.js";
import { verifyLedger } from "../../src/ledger/verify.js";
import { createMerchantWithKeys, updateSettings } from "../../src/merchants/index.js";
import { createEmptyPostgresDatabase, TEST_DATABASE_URL, TEST_REDIS_URL } from "../support/db.js";
import { freePort } from "../support/processes.js";
import { type Receiver, startReceiver } from "../webhooks/support.js";
import {
  answeredWinner,
  CURRENCIES,
  type Currency,
  type Decision,
  type DepositFlow,
  expectedBalances,
  expectedWithdrawalStatus,
  feeScheduleJson,
  toUnits,
  type WithdrawalFlow,
} from "./book.js";
import { ClusterProcess, type ClusterRole, type ClusterSettings, exportXpubs, roleEnv } from "./cluster.js";

type Proc = ClusterProcess;

import { readDeliveries } from "./deliveries.js";
import {
  AUTO_APPROVE_THRESHOLD,
  depositFlow,
  type LoadContext,
  type MerchantKeys,
  withdrawalFlow,
} from "./flows.js";
import { Apis, sleep } from "./load.js";
import { startTronStrand, type TronStrand } from "./tron-strand.js";

/**
 * The cluster under faults (issue 25): `migrate`, then two `api` and two `worker` processes as
 * real OS processes in production mode on one PostgreSQL database and one Redis, non-zero fees,
 * sandbox flows (built-in chain simulator) as load spread over both apis for LOAD_MS, while workers
 * and an api are SIGKILLed and every backend of the database is terminated once. Then, once the
 * cluster has settled: `ledger verify`, every balance against the test's own books to the base
 * unit, one transaction per Idempotency-Key, one winner per approve/reject race, every final status
 * webhooked and signed, no 5xx (nor lost answer) outside the fault windows, every flow where its
 * inputs say. A one-line JSON summary of the figures is printed.
 *
 * With the energy engine on (issue #38): PRODUCTION USDT-TRC20 is the TRON emulator, a `signer`
 * process signs, and the resource account is funded. Alongside the sandbox load, production
 * deposits are paid on chain and hot-wallet withdrawals asked for, so the faults also hit
 * activation → delegation → sweep → reclaim; `tron-strand.ts` checks the chain and the books.
 */

const LOAD_MS = 70_000;
/** Concurrent virtual merchants' integrations (each runs one flow after another). */
const VUS = 8;
/** After a fault ends (the process restarted and ready), answers are still attributed to it this long. */
const GRACE_MS = 3_000;
/** The production TRON pipeline (confirm, activate, delegate, sweep, reclaim) needs longer than the simulator. */
const SETTLE_MS = 120_000;
const START_MS = 90_000;
const MERCHANTS = 2;
/** Each merchant starts with this much per currency (USDT), deposited through the same flow. */
const FUNDING = 200_000n * 1_000_000n;
/** The TRON strand (production): its network, its concurrent integrations, each merchant's first deposit. */
const TRON: Currency = "USDT-TRC20";
const TRON_VUS = 2;
const PROD_FUNDING = 5_000n * 1_000_000n;

interface FaultWindow {
  name: string;
  start: number;
  end: number;
}

// PostgreSQL pass only (.ci/run runs the suite again with TEST_DATABASE_URL and TEST_REDIS_URL):
// `api` and `worker` are separate processes, which need a database server (PGlite serves one process).
describe.skipIf(!TEST_DATABASE_URL)(
  "cluster under faults: 2 api + 2 worker processes, SIGKILLs, terminated backends",
  () => {
    let root: string;
    let receiver: Receiver | undefined;
    let empty: { url: string; drop(): Promise<void> } | undefined;
    let database: Database | undefined;
    const processes: ClusterProcess[] = [];
    let settings: ClusterSettings;
    let strand: TronStrand | undefined;
    let passed = false;

    afterAll(async () => {
      await Promise.all(processes.map((p) => p.stop(10_000)));
      await strand?.stop();
      await database?.close();
      await empty?.drop();
      await receiver?.close();
      if (settings?.redisUrl) {
        const redis = new Redis(settings.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
        try {
          await redis.connect();
          const keys = await redis.keys(`${settings.redisKeyPrefix}*`);
          if (keys.length > 0) await redis.del(...keys);
        } finally {
          redis.disconnect();
        }
      }
      // The logs stay for a failed run (their folder is in the failure message).
      if (passed && root) await rm(root, { recursive: true, force: true });
    }, 60_000);

    it("keeps the books exact and every flow where its inputs say", { timeout: 360_000 }, async () => {
      const wallStart = Date.now();
      root = await mkdtemp(path.join(tmpdir(), "sg-cluster-"));
      await mkdir(path.join(root, "logs"));
      receiver = await startReceiver();
      strand = await startTronStrand();
      const signerPort = await freePort();
      empty = await createEmptyPostgresDatabase();
      const dbName = new URL(empty.url).pathname.slice(1);
      settings = {
        databaseUrl: empty.url,
        redisUrl: TEST_REDIS_URL,
        redisKeyPrefix: `sgcluster-${randomBytes(4).toString("hex")}:`,
        dataDir: path.join(root, "data"),
        receiverPort: receiver.port,
        mnemonic: generateMnemonic(wordlist, 256),
        xpubs: undefined,
        secretEncryptionKey: randomBytes(32).toString("hex"),
        jwtSecret: randomBytes(32).toString("hex"),
        metricsToken: randomBytes(16).toString("hex"),
        internalSharedSecret: randomBytes(32).toString("hex"),
        feeSchedule: feeScheduleJson(),
        rateLimit: 1_000_000,
        extraEnv: {
          ...strand.env,
          SIGNER_HOST: "127.0.0.1",
          SIGNER_PORT: String(signerPort),
          SIGNER_URL: `http://127.0.0.1:${signerPort}`,
        },
      };

      // What the signer host's operator prints for the api and worker hosts (the mnemonic stays there).
      settings.xpubs = await exportXpubs(settings);

      const launches = new Map<string, number>();
      const launch = (role: ClusterRole, slot: string): Proc => {
        const n = (launches.get(slot) ?? 0) + 1;
        launches.set(slot, n);
        const env = roleEnv(role, slot, settings);
        // Workers send through the signer; no other role is handed its URL.
        if (role !== "worker") delete env.SIGNER_URL;
        const p = new ClusterProcess(`${slot}#${n}`, role, env, path.join(root, "logs", `${slot}.${n}.log`));
        processes.push(p);
        return p;
      };
      const logProblems = () =>
        processes.map((p) => `--- ${p.name} (${p.logFile}):\n${p.problems.slice(-15).join("\n")}`).join("\n");

      // migrate once, on an empty database.
      const migrate = launch("migrate", "migrate");
      const migrated = await migrate.exited;
      expect(migrated.code, `migrate failed:\n${logProblems()}`).toBe(0);
      database = await openDatabase({ kind: "postgres", url: empty.url, poolSize: 4 });
      const db = database.db;

      /** Seconds from spawn to ready, per process (a start compiles TypeScript: slow on a busy host). */
      const startups: Record<string, number> = {};
      const ready = (p: Proc) => {
        startups[p.name] = Math.round((Date.now() - p.startedAt) / 100) / 10;
      };
      /** Production listeners of the apis (the TRON strand's calls), beside `apis` (sandbox). */
      const prodApis = new Apis();
      const apiReady = async (p: Proc, slot: number) => {
        const ports = await p.listening(START_MS);
        ready(p);
        prodApis.set(slot, ports.production);
        return ports.sandbox;
      };
      const workerReady = async (p: Proc) => {
        const until = Date.now() + START_MS;
        for (;;) {
          if (!p.running) throw new Error(`${p.name} exited while starting:\n${p.problems.join("\n")}`);
          const row = await db
            .selectFrom("worker_heartbeats")
            .select("instance_id")
            .where("pid", "=", p.child.pid as number)
            .executeTakeFirst()
            .catch(() => undefined);
          if (row) return ready(p);
          if (Date.now() > until) throw new Error(`${p.name} did not start within ${START_MS} ms`);
          await sleep(200);
        }
      };
      const signer = launch("signer", "signer");
      const apiProcs = [launch("api", "api-1"), launch("api", "api-2")];
      const workerProcs = [launch("worker", "worker-1"), launch("worker", "worker-2")];
      const apis = new Apis();
      await Promise.all([
        signer
          .waitForLine((l) => l.includes("stablegate signer listening"), START_MS)
          .then(() => ready(signer)),
        ...apiProcs.map(async (p, i) => apis.set(i, await apiReady(p, i))),
        ...workerProcs.map(workerReady),
      ]);
      // The operator funds the production wallets; the engine stakes the resource account's TRX
      // in its first rounds (before that, a transfer short of energy burns, as without an engine).
      await strand.fund(settings.mnemonic);
      await strand.staked(db, 60_000);

      // Merchants: created with the service functions; settings as a merchant sets them; webhook URL
      // and secret through the API (the secret in full once, from the rotation).
      const merchants: MerchantKeys[] = [];
      const prodMerchants: MerchantKeys[] = [];
      const secrets: string[] = [];
      for (let i = 0; i < MERCHANTS; i++) {
        const m = await createMerchantWithKeys(db, {
          email: `cluster-${i}-${randomBytes(4).toString("hex")}@example.com`,
          companyName: `Cluster ${i}`,
        });
        const pair = m.keys.find((k) => k.environment === "sandbox");
        if (!pair) throw new Error("no sandbox key pair");
        const keys: MerchantKeys = { id: m.id, api: { apikey: pair.apiKey, "x-api-secret": pair.apiSecret } };
        const prod = m.keys.find((k) => k.environment === "production");
        if (!prod) throw new Error("no production key pair");
        prodMerchants.push({ id: m.id, api: { apikey: prod.apiKey, "x-api-secret": prod.apiSecret } });
        for (const environment of ["sandbox", "production"] as const)
          await updateSettings(
            db,
            m.id,
            environment,
            {
              autoWithdraw: true,
              autoApproveThreshold: Object.fromEntries(CURRENCIES.map((c) => [c, AUTO_APPROVE_THRESHOLD])),
            },
            new Date(),
          );
        const url = await apis.retrying("webhook url", "/api/v1/webhook/url", {
          headers: keys.api,
          json: { webhookUrl: receiver.url(`/hook/${i}`) },
        });
        expect(url.answer?.status, JSON.stringify(url.answer?.body)).toBe(200);
        const rotated = await apis.retrying("webhook rotate", "/api/v1/webhook/secret/rotate", {
          headers: keys.api,
          json: {},
        });
        expect(rotated.answer?.status, JSON.stringify(rotated.answer?.body)).toBe(200);
        merchants.push(keys);
        secrets.push(rotated.answer?.body.data.webhookSecret as string);
      }

      const ctx: LoadContext = {
        apis,
        merchants,
        flows: [],
        idsByKey: new Map(),
        replays: [],
        unexpected: [],
      };
      /** The TRON strand's flows (production, USDT-TRC20 on the emulator), books of their own. */
      const prodCtx: LoadContext = {
        apis: prodApis,
        merchants: prodMerchants,
        flows: [],
        idsByKey: new Map(),
        replays: [],
        unexpected: [],
      };
      const statusOf = async (ids: string[]) => {
        const rows =
          ids.length === 0
            ? []
            : await db
                .selectFrom("transactions")
                .select(["id", "status", "actual_balance"])
                .where("id", "in", ids)
                .execute();
        return new Map(rows.map((r) => [r.id, r]));
      };

      // Funding: one large paid session per merchant and currency (in the books like every other).
      const funding = await Promise.all([
        ...merchants.flatMap((_, i) => CURRENCIES.map((c) => depositFlow(ctx, i, c, { amount: FUNDING }))),
        // Production: paid on the emulator, collected by the engine's pipeline like every later one.
        ...prodMerchants.map((_, i) =>
          depositFlow(prodCtx, i, TRON, {
            amount: PROD_FUNDING,
            pay: (a, n) => (strand as TronStrand).pay(a, n),
          }),
        ),
      ]);
      const fundingIds = funding.map((f) => f.sessionId as string);
      {
        const until = Date.now() + 30_000;
        for (;;) {
          const rows = await statusOf(fundingIds);
          if (fundingIds.every((id) => rows.get(id)?.status === "confirmed")) break;
          if (Date.now() > until)
            throw new Error(
              `funding deposits not confirmed: ${JSON.stringify([...rows.values()])}\n${logProblems()}`,
            );
          await sleep(200);
        }
      }

      // ---- Load and faults ---------------------------------------------------------------------
      const t0 = Date.now();
      const loadEnd = t0 + LOAD_MS;
      const windows: FaultWindow[] = [];
      const faultNotes: Record<string, unknown>[] = [];
      const at = (ms: number) => sleep(Math.max(0, t0 + ms - Date.now()));

      const killWorker = async (slot: number, atMs: number) => {
        await at(atMs);
        const start = Date.now();
        const victim = workerProcs[slot] as Proc;
        // What of the engine's pipeline the kill interrupts (printed with the figures).
        const tronInFlight = await (strand as TronStrand).inFlight(db);
        victim.kill("SIGKILL");
        faultNotes.push({ fault: `SIGKILL ${victim.name}`, tronInFlight });
        await victim.exited;
        await sleep(3_000);
        const next = launch("worker", `worker-${slot + 1}`);
        workerProcs[slot] = next;
        await workerReady(next);
        windows.push({ name: `SIGKILL ${victim.name}`, start, end: Date.now() });
      };
      const killApi = async (slot: number, atMs: number) => {
        await at(atMs);
        const start = Date.now();
        const victim = apiProcs[slot] as Proc;
        victim.kill("SIGKILL");
        // A load balancer notices a dead backend after a moment; calls in the meantime are refused.
        await sleep(500);
        apis.set(slot, undefined);
        prodApis.set(slot, undefined);
        await victim.exited;
        await sleep(2_500);
        const next = launch("api", `api-${slot + 1}`);
        apiProcs[slot] = next;
        apis.set(slot, await apiReady(next, slot));
        windows.push({ name: `SIGKILL ${victim.name}`, start, end: Date.now() });
      };
      const terminateBackends = async (atMs: number) => {
        await at(atMs);
        const start = Date.now();
        const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
        await admin.connect();
        try {
          const r = await admin.query(
            "select pg_terminate_backend(pid) as ok from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()",
            [dbName],
          );
          faultNotes.push({ fault: "pg_terminate_backend", backends: r.rowCount });
        } finally {
          await admin.end();
        }
        windows.push({ name: "pg_terminate_backend", start, end: Date.now() });
      };
      const faults = Promise.all([
        killWorker(0, 8_000),
        killApi(0, 22_000),
        terminateBackends(36_000),
        killWorker(1, 48_000),
      ]);

      const vu = async () => {
        while (Date.now() < loadEnd) {
          const merchant = Math.floor(Math.random() * MERCHANTS);
          const currency = CURRENCIES[Math.floor(Math.random() * CURRENCIES.length)] as Currency;
          const both = Math.random() < 0.2;
          const r = Math.random();
          if (r < 0.06)
            // A burst of auto withdrawals (a payroll run), a quarter of them to the failure
            // address: many transfers queued at once, sent by both workers at the same moment from
            // one hot wallet holding what the failed transfers did not spend.
            await Promise.all(
              Array.from({ length: 12 }, (_, i) =>
                withdrawalFlow(ctx, merchant, currency, { manual: false, failing: i % 4 === 0 }),
              ),
            );
          else if (r < 0.3) await depositFlow(ctx, merchant, currency, { both });
          else if (r < 0.5)
            await withdrawalFlow(ctx, merchant, currency, { manual: false, failing: false, both });
          else if (r < 0.58)
            await withdrawalFlow(ctx, merchant, currency, { manual: false, failing: true, both });
          else if (r < 0.68)
            await withdrawalFlow(ctx, merchant, currency, {
              manual: true,
              failing: false,
              plan: "approve",
              both,
            });
          else if (r < 0.73)
            await withdrawalFlow(ctx, merchant, currency, {
              manual: true,
              failing: true,
              plan: "approve",
              both,
            });
          else if (r < 0.8)
            await withdrawalFlow(ctx, merchant, currency, { manual: true, failing: false, plan: "reject" });
          else
            await withdrawalFlow(ctx, merchant, currency, {
              manual: true,
              failing: Math.random() < 0.25,
              plan: "race",
            });
          await sleep(Math.random() * 150);
        }
      };
      // The TRON strand: production deposits paid on chain, auto withdrawals from the hot wallet.
      const tronVu = async () => {
        while (Date.now() < loadEnd) {
          const merchant = Math.floor(Math.random() * MERCHANTS);
          if (Math.random() < 0.6)
            await depositFlow(prodCtx, merchant, TRON, { pay: (a, n) => (strand as TronStrand).pay(a, n) });
          else await withdrawalFlow(prodCtx, merchant, TRON, { manual: false, failing: false });
          await sleep(300 + Math.random() * 700);
        }
      };
      await Promise.all([
        faults,
        ...Array.from({ length: VUS }, vu),
        ...Array.from({ length: TRON_VUS }, tronVu),
      ]);
      const loadStopped = Date.now();

      // ---- Settle --------------------------------------------------------------------------------
      const withdrawals = ctx.flows.filter((f): f is WithdrawalFlow => f.kind === "withdrawal");
      const deposits = ctx.flows.filter((f): f is DepositFlow => f.kind === "deposit");
      const FINAL = new Set(["completed", "failed", "rejected"]);
      const txIds = [
        ...withdrawals.flatMap((w) => (w.id ? [w.id] : [])),
        ...deposits.flatMap((d) => (d.sessionId ? [d.sessionId] : [])),
      ];
      const prodWithdrawals = prodCtx.flows.filter((f): f is WithdrawalFlow => f.kind === "withdrawal");
      const prodDeposits = prodCtx.flows.filter((f): f is DepositFlow => f.kind === "deposit");
      const prodIds = prodCtx.flows.flatMap((f) => {
        const id = f.kind === "deposit" ? f.sessionId : f.id;
        return id ? [id] : [];
      });
      const paidProd = prodDeposits.filter((d) => d.paid === "yes").length;
      let rows = await statusOf([...txIds, ...prodIds]);
      const prodSettled = async (r: typeof rows) =>
        prodWithdrawals.every((w) => !w.id || FINAL.has(r.get(w.id)?.status ?? "")) &&
        prodDeposits.every((d) => d.paid !== "yes" || r.get(d.sessionId as string)?.status === "confirmed") &&
        (await (strand as TronStrand).idle(db, paidProd));
      const settled = (r: typeof rows) => {
        const report = readDeliveries(receiver?.received ?? [], secrets);
        return (
          withdrawals.every((w) => !w.id || FINAL.has(r.get(w.id)?.status ?? "")) &&
          deposits.every((d) => d.paid !== "yes" || r.get(d.sessionId as string)?.status === "confirmed") &&
          // Every final status webhooked (a session never paid stays pending, without a webhook).
          txIds.every((id) => {
            const status = r.get(id)?.status;
            if (status === "pending") return true;
            return status !== undefined && (report.statuses.get(id) ?? []).includes(status);
          })
        );
      };
      const settleUntil = Date.now() + SETTLE_MS;
      while (Date.now() < settleUntil) {
        rows = await statusOf([...txIds, ...prodIds]);
        // A payment whose answer was lost may still be on its way to the watcher: a few seconds more.
        if (settled(rows) && (await prodSettled(rows)) && Date.now() > loadStopped + 5_000) break;
        await sleep(500);
      }
      rows = await statusOf([...txIds, ...prodIds]);
      const settleMs = Date.now() - loadStopped;

      // ---- Checks --------------------------------------------------------------------------------
      const failures: string[] = [...ctx.unexpected, ...prodCtx.unexpected].map(
        (u) => `unexpected answer: ${u}`,
      );
      const fail = (s: string) => failures.push(s);

      // Each flow ended where its inputs say.
      const paidOf = (d: DepositFlow) =>
        d.paid === "yes" || (d.paid === "unknown" && rows.get(d.sessionId as string)?.status === "confirmed");
      let unknownPays = 0;
      for (const d of deposits) {
        if (!d.sessionId) continue;
        const r = rows.get(d.sessionId);
        if (d.paid === "unknown") unknownPays++;
        if (paidOf(d)) {
          // The database's numeric, in base units.
          if (r?.status !== "confirmed" || BigInt(r.actual_balance ?? -1) !== d.amount)
            fail(`deposit ${d.sessionId}: ${r?.status} received ${r?.actual_balance}, paid ${d.amount}`);
        } else if (r?.status !== "pending") fail(`unpaid deposit ${d.sessionId} is ${r?.status}`);
      }
      const winnerOf = new Map<WithdrawalFlow, Decision | undefined>();
      let races = 0;
      const wrongStatus: string[] = [];
      for (const w of withdrawals) {
        if (!w.id) continue;
        const status = rows.get(w.id)?.status;
        let winner: Decision | undefined;
        if (w.manual) {
          if (w.plan === "race") races++;
          const won = w.attempts.filter((a) => a.outcome === 200);
          if (won.length > 1)
            fail(`withdrawal ${w.id}: ${won.length} winners (${JSON.stringify(w.attempts)})`);
          winner = answeredWinner(w);
          if (!winner && won.length === 0) {
            // Every answer was lost or a 409: the decision that took effect is one whose answer was lost.
            winner = status === "rejected" ? "reject" : "approve";
            const lost = w.attempts.some(
              (a) => a.action === winner && (a.outcome === "error" || (a.outcome as number) >= 500),
            );
            if (!lost)
              fail(
                `withdrawal ${w.id}: ${status} but no ${winner} answered 200 (${JSON.stringify(w.attempts)})`,
              );
          }
        }
        winnerOf.set(w, winner);
        const want = expectedWithdrawalStatus(w, winner);
        if (status !== want)
          wrongStatus.push(
            `withdrawal ${w.id} (${w.currency}, ${w.failing ? "failure address" : "ordinary"}, ${w.manual ? `manual ${w.plan}` : "auto"}): ${status}, expected ${want}`,
          );
      }
      // Why the sending pipeline failed the withdrawals that should have completed.
      const failedReasons: Record<string, number> = {};
      const wronglyFailed = withdrawals.filter(
        (w) =>
          w.id &&
          rows.get(w.id)?.status === "failed" &&
          expectedWithdrawalStatus(w, winnerOf.get(w)) !== "failed",
      );
      if (wronglyFailed.length > 0) {
        const reasons = await db
          .selectFrom("outgoing_transfers")
          .select(["intent_id", "reason"])
          .where(
            "intent_id",
            "in",
            wronglyFailed.map((w) => w.id as string),
          )
          .execute();
        for (const r of reasons) failedReasons[r.reason ?? "?"] = (failedReasons[r.reason ?? "?"] ?? 0) + 1;
      }
      for (const s of wrongStatus.slice(0, 20)) fail(s);
      if (wrongStatus.length > 20) fail(`… ${wrongStatus.length - 20} more withdrawals in the wrong status`);

      // Balances against the books, to the base unit, through the API; nothing left held.
      const books = expectedBalances(ctx.flows, MERCHANTS, paidOf, (w) => winnerOf.get(w));
      for (let i = 0; i < MERCHANTS; i++) {
        const { answer } = await apis.retrying("balance", "/api/v1/public/balance", {
          headers: (merchants[i] as MerchantKeys).api,
        });
        for (const c of CURRENCIES) {
          const lines = (answer?.body?.data ?? []) as {
            currencyType: string;
            available: number;
            held: number;
          }[];
          const line = lines.find((b) => b.currencyType === c);
          const available = toUnits(line?.available ?? 0);
          const held = toUnits(line?.held ?? 0);
          const book = (books[i] as Record<Currency, bigint>)[c];
          if (available !== book || held !== 0n)
            fail(
              `merchant ${i} ${c}: available ${available} held ${held}, books say ${book} and 0 (diff ${available - book})`,
            );
        }
      }

      // The TRON strand (production, engine on): each flow where its inputs say, balances against its
      // own books, then the chain (tron-strand.ts).
      for (const d of prodDeposits) {
        if (!d.sessionId) continue;
        const r = rows.get(d.sessionId);
        if (d.paid === "yes") {
          if (r?.status !== "confirmed" || BigInt(r.actual_balance ?? -1) !== d.amount)
            fail(
              `production deposit ${d.sessionId}: ${r?.status} received ${r?.actual_balance}, paid ${d.amount}`,
            );
        } else if (r?.status !== "pending") fail(`unpaid production deposit ${d.sessionId} is ${r?.status}`);
      }
      for (const w of prodWithdrawals)
        if (w.id && rows.get(w.id)?.status !== "completed")
          fail(`production withdrawal ${w.id}: ${rows.get(w.id)?.status}, expected completed`);
      const prodBooks = expectedBalances(
        prodCtx.flows,
        MERCHANTS,
        (d) => d.paid === "yes",
        () => undefined,
      );
      for (let i = 0; i < MERCHANTS; i++) {
        const { answer } = await prodApis.retrying("balance", "/api/v1/public/balance", {
          headers: (prodMerchants[i] as MerchantKeys).api,
        });
        const line = (
          (answer?.body?.data ?? []) as { currencyType: string; available: number; held: number }[]
        ).find((b) => b.currencyType === TRON);
        const available = toUnits(line?.available ?? 0);
        const book = (prodBooks[i] as Record<Currency, bigint>)[TRON];
        if (available !== book || toUnits(line?.held ?? 0) !== 0n)
          fail(
            `production merchant ${i} ${TRON}: available ${available} held ${line?.held}, books say ${book} and 0`,
          );
      }
      const tron = await (strand as TronStrand).check(
        db,
        settings.mnemonic,
        prodDeposits,
        prodWithdrawals.map((flow) => ({ flow, status: flow.id ? rows.get(flow.id)?.status : undefined })),
      );
      failures.push(...tron.failures);

      // ledger verify.
      const ledger = await verifyLedger(db);
      if (!ledger.ok) fail(`ledger verify: ${JSON.stringify(ledger.problems.slice(0, 10))}`);

      // One transaction per Idempotency-Key (orderId / reference carry the key), one id per key.
      const perKey = await db
        .selectFrom("transactions")
        .select(["type", "order_id", "reference"])
        .select((eb) => eb.fn.countAll<string>().as("n"))
        .where(
          "merchant_id",
          "in",
          merchants.map((m) => m.id),
        )
        .groupBy(["type", "order_id", "reference"])
        .execute();
      const countOf = new Map(
        perKey.map((r) => [r.type === "deposit" ? r.order_id : r.reference, Number(r.n)]),
      );
      let duplicateTransactions = 0;
      for (const f of [...ctx.flows, ...prodCtx.flows]) {
        const n = countOf.get(f.key) ?? 0;
        const answered = f.kind === "deposit" ? f.sessionId : f.id;
        if (answered && n !== 1) {
          duplicateTransactions += Math.max(0, n - 1);
          fail(`Idempotency-Key ${f.key}: ${n} transactions`);
        }
      }
      for (const [key, ids] of [...ctx.idsByKey, ...prodCtx.idsByKey])
        if (ids.size !== 1) fail(`Idempotency-Key ${key}: answered ids ${[...ids].join(", ")}`);
      for (const r of ctx.replays) if (!r.ok) fail(`replay of ${r.key}: ${r.detail}`);

      // Every final status delivered by webhook, signed; the statuses each flow must have sent.
      const deliveries = readDeliveries(receiver.received, secrets);
      for (const s of deliveries.invalid.slice(0, 10)) fail(`webhook with a bad signature: ${s}`);
      for (const s of deliveries.duplicateEvents.slice(0, 10)) fail(`duplicate webhook event: ${s}`);
      const missing: string[] = [];
      for (const f of ctx.flows) {
        const id = f.kind === "deposit" ? f.sessionId : f.id;
        const status = id ? rows.get(id)?.status : undefined;
        if (!id || !status || (f.kind === "deposit" && status !== "confirmed")) continue;
        const want = f.kind === "withdrawal" && f.manual ? ["pending", status] : [status];
        const got = [...(deliveries.statuses.get(id) ?? [])].sort();
        if (JSON.stringify(got) !== JSON.stringify([...want].sort()))
          missing.push(
            `${f.kind} ${id} (${status}): webhooks ${JSON.stringify(deliveries.statuses.get(id) ?? [])}, expected ${JSON.stringify(want)}`,
          );
      }
      for (const s of missing.slice(0, 10)) fail(s);
      if (missing.length > 10) fail(`… ${missing.length - 10} more transactions without their webhooks`);

      // No 5xx and no lost answer outside the fault windows.
      const inWindow = (a: { start: number; end: number }) =>
        windows.some((w) => a.start <= w.end + GRACE_MS && a.end >= w.start);
      const rel = (ms: number) => Math.round((ms - t0) / 100) / 10;
      const bad = [...apis.attempts, ...prodApis.attempts].filter(
        (a) => a.status === "error" || a.status >= 500,
      );
      for (const a of bad.filter((x) => !inWindow(x)).slice(0, 20))
        fail(
          `${a.status} outside the fault windows at ${rel(a.start)}–${rel(a.end)} s: ${a.label} on api ${a.api + 1}: ${a.detail}`,
        );
      for (const a of bad.filter((x) => x.status === 503 && !x.retryAfter).slice(0, 20))
        fail(`503 without Retry-After at ${rel(a.start)} s: ${a.label}: ${a.detail}`);
      // Inside them too, never a 500: a fault the service cannot ride out is a 503 with Retry-After.
      for (const a of bad.filter((x) => x.status === 500).slice(0, 20))
        fail(`500 at ${rel(a.start)}–${rel(a.end)} s: ${a.label} on api ${a.api + 1}: ${a.detail}`);

      // No process died but those the test killed.
      for (const p of processes.filter((x) => x.role !== "migrate" && !x.killedByTest && !x.running)) {
        const { code, signal } = await p.exited;
        fail(`${p.name} exited by itself (${code ?? signal}): ${p.problems.slice(-3).join("\n")}`);
      }

      // ---- Figures -------------------------------------------------------------------------------
      const byStatus: Record<string, number> = {};
      for (const a of apis.attempts) byStatus[String(a.status)] = (byStatus[String(a.status)] ?? 0) + 1;
      const byTypeStatus = await db
        .selectFrom("transactions")
        .select(["type", "status"])
        .select((eb) => eb.fn.countAll<string>().as("n"))
        .where(
          "merchant_id",
          "in",
          merchants.map((m) => m.id),
        )
        .groupBy(["type", "status"])
        .execute();
      const transactions: Record<string, number> = {};
      for (const r of byTypeStatus) transactions[`${r.type}:${r.status}`] = Number(r.n);
      const fivexx = (code: number) =>
        bad
          .filter((a) => a.status === code)
          .map((a) => ({ at: rel(a.start), label: a.label, inFault: inWindow(a) }));
      const summary = {
        clusterFaults: true,
        wallS: Math.round((Date.now() - wallStart) / 1000),
        loadS: Math.round((loadStopped - t0) / 1000),
        settleS: Math.round(settleMs / 1000),
        requests: apis.attempts.length,
        byStatus,
        noAnswer: bad.filter((a) => a.status === "error").length,
        s500: fivexx(500),
        s503: fivexx(503).length,
        faults: windows.map((w) => ({ fault: w.name, from: rel(w.start), to: rel(w.end) })),
        faultNotes,
        startups,
        flows: {
          deposits: deposits.length,
          unknownPays,
          withdrawals: withdrawals.length,
          auto: withdrawals.filter((w) => !w.manual).length,
          manual: withdrawals.filter((w) => w.manual).length,
          races,
          toFailureAddress: withdrawals.filter((w) => w.failing).length,
          keysSentToBothApis: ctx.replays.length,
        },
        transactions,
        tronEngine: tron.figures,
        wrongFinalStatus: wrongStatus.length,
        ordinaryWithdrawalsFailed: wronglyFailed.length,
        failedReasons,
        crashed: processes
          .filter((x) => x.role !== "migrate" && !x.killedByTest && !x.running)
          .map((x) => x.name),
        duplicates: {
          transactionsPerKey: duplicateTransactions,
          webhookEvents: deliveries.duplicateEvents.length,
          webhookRedeliveries: deliveries.redeliveries,
        },
        webhooks: {
          deliveries: deliveries.deliveries,
          verified: deliveries.verified,
          invalid: deliveries.invalid.length,
        },
        ledger: { ok: ledger.ok, postings: ledger.postings },
      };
      console.log(JSON.stringify(summary));
      expect(
        failures,
        `${failures.length} problems; logs in ${path.join(root, "logs")}\n${JSON.stringify(summary)}\nprocess warnings/errors:\n${logProblems()}`,
      ).toEqual([]);
      passed = true;
    });
  },
);
