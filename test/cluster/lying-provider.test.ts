import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { generateMnemonic } from "@scure/bip39";
import { wordlist } from "@scure/bip39/wordlists/english.js";
import type { Hex } from "viem";
import { afterAll, describe, expect, it } from "vitest";
import { tronAddressFromBytes, tronAddressToEvm } from "../../src/chains/tron/address.js";
import { type Database, openDatabase } from "../../src/db/database.js";
import { verifyLedger } from "../../src/ledger/verify.js";
import { createMerchantWithKeys, updateSettings } from "../../src/merchants/index.js";
import { AddressDeriver } from "../../src/wallet/address-deriver.js";
import { GAS_TANK_INDEX, HOT_WALLET_INDEX } from "../../src/wallet/derivation-path.js";
import {
  type AnvilNode,
  deployTestUsdt,
  keepMining,
  mintTestUsdt,
  startAnvil,
  testUsdtBalance,
} from "../support/chain/anvil.js";
import { type RpcProxy, startRpcProxy } from "../support/chain/rpc-proxy.js";
import { startTronEmulator, type TronEmulator } from "../support/chain/tron-emulator.js";
import { createEmptyPostgresDatabase, TEST_DATABASE_URL, TEST_REDIS_URL } from "../support/db.js";
import {
  answeredWinner,
  CURRENCIES,
  type Currency,
  type DepositFlow,
  expectedBalances,
  expectedWithdrawalStatus,
  feeScheduleJson,
  toUnits,
  type WithdrawalFlow,
} from "./book.js";
import { ClusterProcess, type ClusterRole, type ClusterSettings, exportXpubs, roleEnv } from "./cluster.js";
import {
  AUTO_APPROVE_THRESHOLD,
  depositFlow,
  type LoadContext,
  type MerchantKeys,
  withdrawalFlow,
} from "./flows.js";
import { type Liar, lieAsEvm, lieAsTron, newLiar } from "./liar.js";
import { Apis, sleep } from "./load.js";

/**
 * The cluster with a lying chain provider (issue #34), on real chains: anvil (USDT-ERC20) and the
 * TRON emulator over it (USDT-TRC20) as the sandbox chains, each behind three providers (the
 * project's RPC proxy), the first of which lies at random (receipts of sent transfers reverted,
 * forged Transfer logs to watched addresses never paid, heads 1 000 blocks ahead, timestamps a day
 * later). `migrate`, a `signer`, an `api` and two `worker` processes in production mode on
 * PostgreSQL; one worker is SIGKILLed during the load.
 *
 * 1. Three providers, one liar: every flow completes (the honest majority decides); books exact to
 *    the base unit, `ledger verify`, one transaction per Idempotency-Key, each withdrawal's
 *    recipient received its net amount exactly once on chain (none failed), no session the test
 *    never paid was credited.
 * 2. Then the workers restart with two providers, one liar that now reverts every receipt: new
 *    withdrawals are paid on chain but nothing is recorded (they stay processing, their holds
 *    stay), an alert fires (log field, `stablegate_outgoing_disputed`); once the liar stops they
 *    complete.
 * The lies told (per kind) and the disagreements the service logged are printed on one line.
 */

const LOAD_MS = 25_000;
const VUS = 4;
const START_MS = 180_000;
const SETTLE_MS = 90_000;
const FUNDING = 100_000n * 1_000_000n;
const CONFIRMATIONS = 2;
const LIE_RATE = 0.3;

type Proc = ClusterProcess;

/** The disagreements the processes logged so far, by subject. */
function countRefused(processes: readonly ClusterProcess[]): Record<string, number> {
  const refused: Record<string, number> = {};
  for (const p of processes)
    for (const l of p.problems) {
      if (!l.includes('"alert":"chain_providers_disagree"')) continue;
      const subject = /"subject":"([a-z-]+)"/.exec(l)?.[1] ?? "outcome (sender)";
      refused[subject] = (refused[subject] ?? 0) + 1;
    }
  return refused;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((r) => server.close(r));
  return port;
}

/** A fresh recipient per withdrawal: what it holds on chain is what that withdrawal paid. */
function recipient(currency: Currency): string {
  const bytes = randomBytes(20);
  return currency === "USDT-ERC20" ? `0x${bytes.toString("hex")}` : tronAddressFromBytes(bytes);
}
const evmOf = (currency: Currency, address: string) =>
  (currency === "USDT-ERC20" ? address : tronAddressToEvm(address)) as Hex;

describe.skipIf(!TEST_DATABASE_URL)("cluster with a lying chain provider (anvil + TRON emulator)", () => {
  let root: string;
  let anvil: AnvilNode | undefined;
  let emulator: TronEmulator | undefined;
  const proxies: RpcProxy[] = [];
  let empty: { url: string; drop(): Promise<void> } | undefined;
  let database: Database | undefined;
  const processes: ClusterProcess[] = [];
  let stopMining: (() => void) | undefined;
  let passed = false;

  afterAll(async () => {
    stopMining?.();
    await Promise.all(processes.map((p) => p.stop(10_000)));
    await database?.close();
    await empty?.drop();
    for (const p of proxies) await p.stop();
    await emulator?.stop();
    await anvil?.stop();
    if (passed && root) await rm(root, { recursive: true, force: true });
  }, 60_000);

  it("three providers: the honest majority decides every flow; two: nothing wrong is recorded, it waits and alerts", {
    timeout: 400_000,
  }, async () => {
    const wallStart = Date.now();
    root = await mkdtemp(path.join(tmpdir(), "sg-liar-"));
    await mkdir(path.join(root, "logs"));
    anvil = await startAnvil();
    const token = await deployTestUsdt(anvil);
    emulator = await startTronEmulator(anvil, token);
    const liar: Record<Currency, Liar> = { "USDT-ERC20": newLiar(LIE_RATE), "USDT-TRC20": newLiar(LIE_RATE) };
    const providers: Record<Currency, RpcProxy[]> = { "USDT-ERC20": [], "USDT-TRC20": [] };
    for (let i = 0; i < 3; i++) {
      providers["USDT-ERC20"].push(await startRpcProxy(anvil.rpcUrl));
      providers["USDT-TRC20"].push(await startRpcProxy(emulator.url));
    }
    proxies.push(...providers["USDT-ERC20"], ...providers["USDT-TRC20"]);
    /** Sessions the test never pays: the liar forges payments to them. */
    const unpaid: Record<Currency, string[]> = { "USDT-ERC20": [], "USDT-TRC20": [] };
    const forgeTo = (c: Currency) => () => unpaid[c][Math.floor(Math.random() * unpaid[c].length)] ?? null;
    lieAsEvm(providers["USDT-ERC20"][0] as RpcProxy, liar["USDT-ERC20"], token, forgeTo("USDT-ERC20"));
    lieAsTron(providers["USDT-TRC20"][0] as RpcProxy, liar["USDT-TRC20"], token, forgeTo("USDT-TRC20"));
    const chainEnv = (count: number) => ({
      SANDBOX_ERC20_RPC_URLS: providers["USDT-ERC20"]
        .slice(0, count)
        .map((p) => p.url)
        .join(","),
      SANDBOX_USDT_ERC20_CONTRACT: token,
      SANDBOX_TRC20_API_URLS: providers["USDT-TRC20"]
        .slice(0, count)
        .map((p) => p.url)
        .join(","),
      SANDBOX_USDT_TRC20_CONTRACT: emulator?.tokenAddress as string,
      CONFIRMATIONS_ERC20: String(CONFIRMATIONS),
      CONFIRMATIONS_TRC20: String(CONFIRMATIONS),
    });
    stopMining = keepMining(anvil, 400);

    empty = await createEmptyPostgresDatabase();
    const signerPort = await freePort();
    const settings: ClusterSettings = {
      databaseUrl: empty.url,
      redisUrl: TEST_REDIS_URL,
      redisKeyPrefix: `sgliar-${randomBytes(4).toString("hex")}:`,
      dataDir: path.join(root, "data"),
      receiverPort: 9,
      mnemonic: generateMnemonic(wordlist, 256),
      xpubs: undefined,
      secretEncryptionKey: randomBytes(32).toString("hex"),
      jwtSecret: randomBytes(32).toString("hex"),
      metricsToken: randomBytes(16).toString("hex"),
      internalSharedSecret: randomBytes(32).toString("hex"),
      feeSchedule: feeScheduleJson(),
      rateLimit: 1_000_000,
      extraEnv: {
        ...chainEnv(3),
        SIGNER_HOST: "127.0.0.1",
        SIGNER_PORT: String(signerPort),
        SIGNER_URL: `http://127.0.0.1:${signerPort}`,
        SIGNER_MAX_OUTFLOW_PER_HOUR: "100000000",
        SIGNER_MAX_OUTFLOW_PER_DAY: "100000000",
      },
    };
    settings.xpubs = await exportXpubs(settings);

    const launches = new Map<string, number>();
    const launch = (role: ClusterRole, slot: string, extra: Record<string, string> = {}): Proc => {
      const n = (launches.get(slot) ?? 0) + 1;
      launches.set(slot, n);
      const env = roleEnv(role, slot, settings);
      // The signer alone holds the mnemonic; the others must not be handed its URL settings twice.
      if (role !== "worker") delete env.SIGNER_URL;
      const p = new ClusterProcess(
        `${slot}#${n}`,
        role,
        { ...env, ...extra },
        path.join(root, "logs", `${slot}.${n}.log`),
      );
      processes.push(p);
      return p;
    };
    const logProblems = () =>
      processes.map((p) => `--- ${p.name} (${p.logFile}):\n${p.problems.slice(-15).join("\n")}`).join("\n");

    const migrate = launch("migrate", "migrate");
    expect((await migrate.exited).code, `migrate failed:\n${logProblems()}`).toBe(0);
    database = await openDatabase({ kind: "postgres", url: empty.url, poolSize: 4 });
    const db = database.db;
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
        if (row) return;
        if (Date.now() > until) throw new Error(`${p.name} did not start within ${START_MS} ms`);
        await sleep(200);
      }
    };
    const signer = launch("signer", "signer");
    const api = launch("api", "api-1");
    const workers = [launch("worker", "worker-1"), launch("worker", "worker-2")];
    const apis = new Apis();
    await Promise.all([
      signer.waitForLine((l) => l.includes("stablegate signer listening"), START_MS),
      api.listening(START_MS).then((ports) => apis.set(0, ports.sandbox)),
      ...workers.map(workerReady),
    ]);

    // The sending addresses hold tokens and native coin on chain.
    const keys = AddressDeriver.fromMnemonic(settings.mnemonic);
    for (const c of CURRENCIES) {
      for (const index of [HOT_WALLET_INDEX, GAS_TANK_INDEX]) {
        const a = evmOf(c, keys.address(c, "sandbox", index));
        await mintTestUsdt(anvil, token, a, 10_000_000n * 1_000_000n);
        await anvil.testClient.setBalance({ address: a, value: 10n ** 22n });
      }
    }

    const merchants: MerchantKeys[] = [];
    for (let i = 0; i < 2; i++) {
      const m = await createMerchantWithKeys(db, {
        email: `liar-${i}-${randomBytes(4).toString("hex")}@example.com`,
        companyName: `Liar ${i}`,
      });
      const pair = m.keys.find((k) => k.environment === "sandbox");
      if (!pair) throw new Error("no sandbox key pair");
      await updateSettings(
        db,
        m.id,
        "sandbox",
        {
          autoWithdraw: true,
          autoApproveThreshold: Object.fromEntries(CURRENCIES.map((c) => [c, AUTO_APPROVE_THRESHOLD])),
        },
        new Date(),
      );
      merchants.push({ id: m.id, api: { apikey: pair.apiKey, "x-api-secret": pair.apiSecret } });
    }
    const ctx: LoadContext = { apis, merchants, flows: [], idsByKey: new Map(), replays: [], unexpected: [] };
    // Payments come from one anvil account: one at a time (its nonce).
    let payments: Promise<unknown> = Promise.resolve();
    const pay = (c: Currency) => async (address: string, amount: bigint) => {
      const mine = payments.then(() => mintTestUsdt(anvil as AnvilNode, token, evmOf(c, address), amount));
      payments = mine.catch(() => undefined);
      await mine;
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
    const waitUntil = async (what: string, ok: () => Promise<boolean>, ms: number) => {
      const until = Date.now() + ms;
      while (!(await ok())) {
        if (Date.now() > until) throw new Error(`${what} within ${ms} ms\n${logProblems()}`);
        await sleep(500);
      }
    };

    // Funding through real deposits, the liar already lying.
    for (const c of CURRENCIES) liar[c].on = true;
    const funding = await Promise.all(
      merchants.flatMap((_, i) =>
        CURRENCIES.map((c) => depositFlow(ctx, i, c, { amount: FUNDING, pay: pay(c) })),
      ),
    );
    await waitUntil(
      "funding deposits confirmed",
      async () => {
        const rows = await statusOf(funding.map((f) => f.sessionId as string));
        return funding.every((f) => rows.get(f.sessionId as string)?.status === "confirmed");
      },
      90_000,
    );

    // ---- Phase 1: three providers, one liar, load and a worker SIGKILL -----------------------------
    const t0 = Date.now();
    const killWorker = async () => {
      await sleep(10_000);
      const victim = workers[0] as Proc;
      victim.kill("SIGKILL");
      await victim.exited;
      await sleep(2_000);
      workers[0] = launch("worker", "worker-1");
      await workerReady(workers[0]);
    };
    const vu = async () => {
      while (Date.now() < t0 + LOAD_MS) {
        const merchant = Math.floor(Math.random() * merchants.length);
        const currency = CURRENCIES[Math.floor(Math.random() * CURRENCIES.length)] as Currency;
        const r = Math.random();
        if (r < 0.3) await depositFlow(ctx, merchant, currency, { pay: pay(currency) });
        else if (r < 0.4) {
          const f = await depositFlow(ctx, merchant, currency, { unpaid: true });
          if (f.address) unpaid[currency].push(f.address);
        } else if (r < 0.85)
          await withdrawalFlow(ctx, merchant, currency, {
            manual: false,
            failing: false,
            to: recipient(currency),
          });
        else
          await withdrawalFlow(ctx, merchant, currency, {
            manual: true,
            failing: false,
            plan: Math.random() < 0.7 ? "approve" : "reject",
            to: recipient(currency),
          });
        await sleep(Math.random() * 300);
      }
    };
    await Promise.all([killWorker(), ...Array.from({ length: VUS }, vu)]);

    const withdrawals = () => ctx.flows.filter((f): f is WithdrawalFlow => f.kind === "withdrawal");
    const deposits = () => ctx.flows.filter((f): f is DepositFlow => f.kind === "deposit");
    const FINAL = new Set(["completed", "failed", "rejected"]);
    const settled = async () => {
      const rows = await statusOf([
        ...withdrawals().flatMap((w) => (w.id ? [w.id] : [])),
        ...deposits().flatMap((d) => (d.sessionId ? [d.sessionId] : [])),
      ]);
      return (
        withdrawals().every((w) => !w.id || FINAL.has(rows.get(w.id)?.status ?? "")) &&
        deposits().every((d) => d.paid !== "yes" || rows.get(d.sessionId as string)?.status === "confirmed")
      );
    };
    await waitUntil("phase 1 settled", settled, SETTLE_MS);
    const phase1Ms = Date.now() - t0;

    // ---- Checks (run after each phase) ------------------------------------------------------------
    const failures: string[] = [...ctx.unexpected.map((u) => `unexpected answer: ${u}`)];
    const check = async (phase: string) => {
      const fail = (s: string) => failures.push(`${phase}: ${s}`);
      const ids = [
        ...withdrawals().flatMap((w) => (w.id ? [w.id] : [])),
        ...deposits().flatMap((d) => (d.sessionId ? [d.sessionId] : [])),
      ];
      const rows = await statusOf(ids);
      for (const d of deposits()) {
        if (!d.sessionId) continue;
        const r = rows.get(d.sessionId);
        if (d.paid === "yes") {
          if (r?.status !== "confirmed" || BigInt(r.actual_balance ?? -1) !== d.amount)
            fail(`deposit ${d.sessionId}: ${r?.status} received ${r?.actual_balance}, paid ${d.amount}`);
        } else if (r?.status !== "pending" || BigInt(r.actual_balance ?? 0) !== 0n)
          fail(`unpaid deposit ${d.sessionId} (a forged payment?) is ${r?.status} with ${r?.actual_balance}`);
      }
      for (const w of withdrawals()) {
        if (!w.id) continue;
        const status = rows.get(w.id)?.status;
        const want = expectedWithdrawalStatus(w, w.manual ? (answeredWinner(w) ?? "approve") : undefined);
        if (status !== want) fail(`withdrawal ${w.id} (${w.currency}): ${status}, expected ${want}`);
        const got = await testUsdtBalance(anvil as AnvilNode, token, evmOf(w.currency, w.to as string));
        const net = w.amount - (w.fee ?? 0n);
        const paid = want === "completed" ? net : 0n;
        // Paid exactly once, and only when completed: none failed that paid, none paid twice.
        if (got !== paid)
          fail(`withdrawal ${w.id} (${status}): its recipient holds ${got} on chain, expected ${paid}`);
      }
      const books = expectedBalances(
        ctx.flows,
        merchants.length,
        (d) => d.paid === "yes",
        (w) => (w.manual ? (answeredWinner(w) ?? "approve") : undefined),
      );
      for (let i = 0; i < merchants.length; i++) {
        const { answer } = await apis.retrying("balance", "/api/v1/public/balance", {
          headers: (merchants[i] as MerchantKeys).api,
        });
        for (const c of CURRENCIES) {
          const line = (
            (answer?.body?.data ?? []) as { currencyType: string; available: number; held: number }[]
          ).find((b) => b.currencyType === c);
          const available = toUnits(line?.available ?? 0);
          const held = toUnits(line?.held ?? 0);
          const book = (books[i] as Record<Currency, bigint>)[c];
          if (available !== book || held !== 0n)
            fail(`merchant ${i} ${c}: available ${available} held ${held}, books say ${book} and 0`);
        }
      }
      const ledger = await verifyLedger(db);
      if (!ledger.ok) fail(`ledger verify: ${JSON.stringify(ledger.problems.slice(0, 5))}`);
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
      for (const f of ctx.flows) {
        const n = countOf.get(f.key) ?? 0;
        if ((f.kind === "deposit" ? f.sessionId : f.id) && n !== 1)
          fail(`Idempotency-Key ${f.key}: ${n} transactions`);
      }
      const failedTransfers = await db
        .selectFrom("outgoing_transfers")
        .select(["intent_id", "kind", "reason"])
        .where("status", "=", "failed")
        .execute();
      for (const t of failedTransfers) fail(`${t.kind} transfer ${t.intent_id} failed: ${t.reason}`);
    };
    await check("three providers");
    const refused1 = countRefused(processes);
    const told1 = {
      "USDT-ERC20": { ...liar["USDT-ERC20"].told },
      "USDT-TRC20": { ...liar["USDT-TRC20"].told },
    };

    // ---- Phase 2: two providers, one liar reverting every receipt ----------------------------------
    for (const c of CURRENCIES) liar[c].rate = { default: LIE_RATE, receipts: 1 };
    await Promise.all(workers.map((w) => w.stop(15_000)));
    for (let i = 0; i < 2; i++) workers[i] = launch("worker", `worker-${i + 1}`, chainEnv(2));
    await Promise.all(workers.map(workerReady));
    const disputed = await Promise.all(
      CURRENCIES.flatMap((c) =>
        [0, 1].map((m) => withdrawalFlow(ctx, m, c, { manual: false, failing: false, to: recipient(c) })),
      ),
    );
    // Paid on chain…
    await waitUntil(
      "phase 2 withdrawals paid on chain",
      async () => {
        for (const w of disputed)
          if ((await testUsdtBalance(anvil as AnvilNode, token, evmOf(w.currency, w.to as string))) === 0n)
            return false;
        return true;
      },
      60_000,
    );
    // … and an alert for each, while none is decided on one provider's word.
    const alerted = (id: string) =>
      workers.some((p) =>
        p.problems.some((l) => l.includes('"alert":"chain_providers_disagree"') && l.includes(id)),
      );
    await waitUntil(
      "an alert for each disputed withdrawal",
      async () => disputed.every((w) => alerted(w.id as string)),
      60_000,
    );
    const watchUntil = Date.now() + 8_000;
    const seen = new Set<string>();
    while (Date.now() < watchUntil) {
      const rows = await statusOf(disputed.map((w) => w.id as string));
      for (const r of rows.values()) seen.add(r.status);
      await sleep(500);
    }
    if (seen.size !== 1 || !seen.has("processing"))
      failures.push(
        `two providers: disputed withdrawals were ${[...seen].join(", ")}, expected processing only`,
      );
    const held = await db
      .selectFrom("outgoing_transfers")
      .select((eb) => eb.fn.countAll<string>().as("n"))
      .where("status", "in", ["signed", "broadcast"])
      .where("last_error", "like", "disputed: %")
      .where(
        "intent_id",
        "in",
        disputed.map((w) => w.id as string),
      )
      .executeTakeFirstOrThrow();
    if (Number(held.n) !== disputed.length)
      failures.push(`two providers: ${held.n} transfers noted disputed, expected ${disputed.length}`);
    const ports = await api.listening(START_MS);
    const metrics = await fetch(`http://127.0.0.1:${ports.production}/metrics`, {
      headers: { authorization: `Bearer ${settings.metricsToken}` },
    }).then((r) => r.text());
    const gauge = [...metrics.matchAll(/^stablegate_outgoing_disputed\{[^}]*\} (\d+)/gm)].reduce(
      (n, m) => n + Number(m[1]),
      0,
    );
    // Sweeps and gas top-ups sent meanwhile are disputed too.
    if (gauge < disputed.length)
      failures.push(`stablegate_outgoing_disputed totals ${gauge}, expected at least ${disputed.length}`);
    // Balances hold the disputed withdrawals: nothing released, nothing settled.
    for (const w of disputed) {
      const rows = await statusOf([w.id as string]);
      if (rows.get(w.id as string)?.status !== "processing")
        failures.push(`disputed withdrawal ${w.id} is ${rows.get(w.id as string)?.status}`);
    }

    // The liar stops: both providers agree, and the disputed withdrawals complete.
    for (const c of CURRENCIES) liar[c].on = false;
    await waitUntil("disputed withdrawals completed once the liar stopped", settled, 60_000);
    await check("two providers, after the liar stopped");

    // ---- Figures -----------------------------------------------------------------------------------
    const summary = {
      lyingProvider: true,
      wallS: Math.round((Date.now() - wallStart) / 1000),
      phase1S: Math.round(phase1Ms / 1000),
      flows: {
        deposits: deposits().length,
        unpaidSessions: unpaid["USDT-ERC20"].length + unpaid["USDT-TRC20"].length,
        withdrawals: withdrawals().length,
        manual: withdrawals().filter((w) => w.manual).length,
        disputedInPhase2: disputed.length,
      },
      liesTold: {
        threeProviders: told1,
        total: { "USDT-ERC20": liar["USDT-ERC20"].told, "USDT-TRC20": liar["USDT-TRC20"].told },
      },
      // Each lie the service noticed: a disagreement logged with its subject (a provider's answer
      // no quorum shared), or the sender's alert on a disputed transfer ("outcome (sender)").
      disagreementsLogged: { threeProviders: refused1, total: countRefused(processes) },
      wrongRecords: failures.length,
    };
    console.log(JSON.stringify(summary));
    for (const c of CURRENCIES) {
      expect(
        told1[c].receipts + told1[c].logs + told1[c].heads + told1[c].timestamps,
        `${c}: the liar told no lie`,
      ).toBeGreaterThan(0);
    }
    expect(
      failures,
      `${failures.length} problems; logs in ${path.join(root, "logs")}\n${JSON.stringify(summary)}\n${logProblems()}`,
    ).toEqual([]);
    passed = true;
  });
});
