import type { Hex } from "viem";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { operatorContext } from "../../src/cli/merchant-create.js";
import type { CurrencyType } from "../../src/domain/currency.js";
import { runOperatorCommand } from "../../src/operator/commands.js";
import type { ReserveReport } from "../../src/reserves/index.js";
import { AddressDeriver } from "../../src/wallet/address-deriver.js";
import { GAS_TANK_INDEX, HOT_WALLET_INDEX } from "../../src/wallet/derivation-path.js";
import { hooksFor } from "../deposits/support.js";
import {
  type AnvilNode,
  deployTestToken,
  keepMining,
  mintTestToken,
  startAnvil,
  testTokenFreezeOf,
  testUsdtBalance,
} from "../support/chain/anvil.js";
import { call, startTestService, type TestService } from "../support/harness.js";
import { type Receiver, sleep, startReceiver, waitFor } from "../webhooks/support.js";
import { balance, expectLedgerOk, hookStatuses } from "../withdrawals/support.js";

// The registry's new EVM networks end to end, each on an anvil of its own running the network's real
// chain id: one service with the three currency types enabled (sandbox pointed at the anvils), a
// merchant paid through a checkout session by a real token transfer, a withdrawal signed and sent
// on-chain, the deposit swept into the hot wallet by the real sweep job, then the ledger and the
// reserves checked. USDT-BEP20 runs an 18-decimal token: the API keeps 6 decimals, the finer rest of
// a payment ("dust") is never credited and stays on the deposit address.

const MNEMONIC = "test test test test test test test test test test test junk";
const CONFIRMATIONS = 2;
const deriver = AddressDeriver.fromMnemonic(MNEMONIC);

interface Case {
  currencyType: CurrencyType;
  network: string;
  token: string;
  chainId: number;
  decimals: number;
  /** What the customer pays on chain for a session of 10 (on-chain base units). */
  paid: bigint;
  /** The part of `paid` finer than the API's 6 decimals: never credited, never swept. */
  dust: bigint;
  /** The withdrawal's recipient. */
  recipient: Hex;
}

const CASES: Case[] = [
  {
    currencyType: "USDT-BEP20",
    network: "BEP20",
    token: "USDT",
    chainId: 56,
    decimals: 18,
    paid: 10_000_000_123_400_000_000n, // 10.0000001234
    dust: 123_400_000_000n,
    recipient: "0x1000000000000000000000000000000000000056",
  },
  {
    currencyType: "USDC-BASE",
    network: "BASE",
    token: "USDC",
    chainId: 8453,
    decimals: 6,
    paid: 10_000_000n,
    dust: 0n,
    recipient: "0x1000000000000000000000000000000000008453",
  },
  {
    currencyType: "USDT-POLYGON",
    network: "POLYGON",
    token: "USDT",
    chainId: 137,
    decimals: 6,
    paid: 10_000_000n,
    dust: 0n,
    recipient: "0x1000000000000000000000000000000000000137",
  },
];

/** What the hot wallet holds before anything happens: 1,000 tokens. */
const HOT_FUNDING_API_UNITS = 1_000_000_000n;
const SESSION_AMOUNT = 10;
const WITHDRAWAL_AMOUNT = 5;
/** The default withdrawal fee of every network but Ethereum (1 token). */
const WITHDRAWAL_FEE = 1;

/** On-chain base units per API base unit (10^12 for an 18-decimal token). */
const scaleOf = (c: Case) => 10n ** BigInt(c.decimals - 6);
const apiUnits = (amount: number) => BigInt(Math.round(amount * 1_000_000));

interface Chain {
  anvil: AnvilNode;
  token: Hex;
  hot: Hex;
  /** Filled by the deposit test. */
  sessionId?: string;
  depositAddress?: Hex;
  /** Set once the deposit test has credited the merchant (the later tests build on it). */
  credited?: boolean;
  /** Filled by the withdrawal test: API units sent to the recipient. */
  withdrawnNet?: bigint;
}

const chains = new Map<CurrencyType, Chain>();
let svc: TestService;
let receiver: Receiver;
let api: Record<string, string>;
/** The service's error log lines (level ≥ 50), quoted by the assertions: a 500 says why. */
const serverErrors: string[] = [];
/** The service's errors logged for one request: the message and the frames in src/. */
const errorsOf = (requestId: string | undefined) =>
  serverErrors
    .filter((line) => requestId !== undefined && line.includes(requestId))
    .map((line) => {
      const err = (JSON.parse(line) as { err?: { message?: string; stack?: string } }).err;
      const frames = (err?.stack ?? "").split("\n").filter((f) => f.includes("/src/"));
      return [err?.message, ...frames].join("\n");
    })
    .join("\n");

beforeAll(async () => {
  const started = await Promise.all(
    CASES.map(async (c) => {
      const anvil = await startAnvil(["--chain-id", String(c.chainId)]);
      // Freezing as the network's issuer does (the registry's kind): its freeze view answers.
      const token = await deployTestToken(anvil, {
        symbol: c.token,
        decimals: c.decimals,
        freeze: testTokenFreezeOf(c.currencyType),
      });
      const hot = deriver.address(c.currencyType, "sandbox", HOT_WALLET_INDEX) as Hex;
      const gasTank = deriver.address(c.currencyType, "sandbox", GAS_TANK_INDEX) as Hex;
      // The hot wallet holds the tokens it pays out and the coin for its gas; the gas tank pays the
      // deposit addresses' gas top-ups of the sweeps.
      await mintTestToken(anvil, token, hot, HOT_FUNDING_API_UNITS * scaleOf(c));
      await anvil.testClient.setBalance({ address: hot, value: 10n ** 20n });
      await anvil.testClient.setBalance({ address: gasTank, value: 10n ** 20n });
      return [c.currencyType, { anvil, token, hot }] as const;
    }),
  );
  for (const [currencyType, chain] of started) chains.set(currencyType, chain);

  const env: Record<string, string> = {
    SSRF_ALLOW_CIDRS: "127.0.0.0/8",
    RATE_LIMIT_ENABLED: "false",
    MASTER_MNEMONIC: MNEMONIC,
    CURRENCY_TYPES: CASES.map((c) => c.currencyType).join(","),
  };
  for (const c of CASES) {
    const chain = chains.get(c.currencyType)!;
    env[`SANDBOX_${c.network}_RPC_URL`] = chain.anvil.rpcUrl;
    env[`SANDBOX_${c.token}_${c.network}_CONTRACT`] = chain.token;
    env[`CONFIRMATIONS_${c.network}`] = `${CONFIRMATIONS}`;
    env[`SWEEP_THRESHOLD_${c.network}`] = "1";
  }
  svc = await startTestService({
    env,
    logDestination: {
      write(line: string) {
        try {
          if ((JSON.parse(line) as { level?: number }).level! >= 50) serverErrors.push(line);
        } catch {
          // not a JSON line
        }
      },
    },
  });
  receiver = await startReceiver();

  const reg = await call(svc.urls.sandbox, "/api/v1/auth/register", {
    json: {
      email: `networks-${Date.now()}@example.com`,
      password: "a long passphrase 123",
      companyName: "Networks Co",
    },
    headers: { "x-token-delivery": "bearer" },
  });
  expect(reg.status, reg.text).toBe(201);
  const pair = reg.body.data.apiKeys.find((k: { environment: string }) => k.environment === "sandbox");
  api = { apikey: pair.apiKey, "x-api-secret": pair.apiSecret };
  const hook = await call(svc.urls.sandbox, "/api/v1/webhook/url", {
    headers: api,
    json: { webhookUrl: receiver.url() },
  });
  expect(hook.status, hook.text).toBe(200);
}, 120_000);

afterAll(async () => {
  await receiver?.close();
  await svc?.close();
  await Promise.all([...chains.values()].map((c) => c.anvil.stop()));
});

// `stablegate ledger verify` after every test: every posting balances, every balance matches its journal.
afterEach(async () => {
  if (svc) await expectLedgerOk(svc);
});

/** Runs `fn` while the anvil mines a block every 300 ms (confirmations come while a test waits). */
async function mining<T>(anvil: AnvilNode, fn: () => Promise<T>): Promise<T> {
  const stop = keepMining(anvil);
  try {
    return await fn();
  } finally {
    stop();
  }
}

describe("GET /api/v1/public/currencies", () => {
  it("lists exactly the three enabled currency types with their chain id, decimals and sandbox contract", async () => {
    const r = await call(svc.urls.sandbox, "/api/v1/public/currencies", { headers: api });
    expect(r.status, r.text).toBe(200);
    const listed = (r.body.data as Record<string, unknown>[])
      .map((x) => ({
        currencyType: x.currencyType,
        token: x.token,
        network: x.network,
        chainId: x.chainId,
        decimals: x.decimals,
        contract: typeof x.contract === "string" ? x.contract.toLowerCase() : x.contract,
        confirmations: x.confirmations,
      }))
      .sort((a, b) => String(a.currencyType).localeCompare(String(b.currencyType)));
    const expected = CASES.map((c) => ({
      currencyType: c.currencyType,
      token: c.token,
      network: c.network,
      chainId: c.chainId,
      decimals: c.decimals,
      contract: chains.get(c.currencyType)!.token.toLowerCase(),
      confirmations: CONFIRMATIONS,
    })).sort((a, b) => a.currencyType.localeCompare(b.currencyType));
    expect(listed).toEqual(expected);
  });
});

for (const c of CASES) {
  describe(`${c.currencyType} on anvil (chain id ${c.chainId}, ${c.decimals}-decimal token)`, () => {
    const scale = scaleOf(c);
    const chain = () => chains.get(c.currencyType)!;

    it("a checkout session paid on chain is confirmed, credited (6 decimals) and notified once", async () => {
      const { anvil, token } = chain();
      const s = await call(svc.urls.sandbox, "/checkout/session", {
        headers: api,
        json: { amount: SESSION_AMOUNT, currencyType: c.currencyType },
      });
      expect(s.status, `${s.text}\n${errorsOf(s.body?.error?.requestId)}`).toBe(201);
      const session = s.body.data;
      chain().sessionId = session.id;
      chain().depositAddress = session.walletAddress as Hex;
      const receipt = await mintTestToken(anvil, token, session.walletAddress, c.paid);
      expect(receipt.status).toBe("success");
      const done = await mining(anvil, () =>
        waitFor(async () => {
          const r = await call(svc.urls.sandbox, `/checkout/session/${session.id}`, { headers: api });
          return r.body.data.status === "confirmed" ? r.body.data : null;
        }, 40_000),
      );
      expect(done.actualBalance).toBe(SESSION_AMOUNT);
      expect(done.blockchainTxHash).toBe(receipt.transactionHash);
      await waitFor(() => hooksFor(receiver, session.id).length >= 1, 15_000);
      // Long enough for a duplicate delivery to show.
      await sleep(1_500);
      const hooks = hooksFor(receiver, session.id);
      expect(hooks.map((h) => h.body.data.status)).toEqual(["confirmed"]);
      expect(hooks[0]!.body.data).toMatchObject({
        status: "confirmed",
        currencyType: c.currencyType,
        amount: SESSION_AMOUNT,
        actualBalance: SESSION_AMOUNT,
        blockchainTxHash: receipt.transactionHash,
      });
      expect(await balance(svc, api, c.currencyType)).toEqual({ available: SESSION_AMOUNT, held: 0 });
      chain().credited = true;
    }, 90_000);

    it("a withdrawal is completed on chain: the recipient receives netAmount in the token's own decimals", async () => {
      const { anvil, token } = chain();
      expect(chain().credited, "builds on the deposit test, which failed").toBe(true);
      const r = await call(svc.urls.sandbox, "/api/v1/public/withdrawal-requests", {
        headers: api,
        json: { amount: WITHDRAWAL_AMOUNT, currencyType: c.currencyType, walletAddress: c.recipient },
      });
      expect(r.status, r.text).toBe(201);
      expect(r.body.data.status).toBe("processing");
      const done = await mining(anvil, () =>
        waitFor(async () => {
          const x = await call(svc.urls.sandbox, `/api/v1/public/withdrawal-requests/${r.body.data.id}`, {
            headers: api,
          });
          return ["completed", "failed"].includes(x.body.data.status) ? x.body.data : null;
        }, 60_000),
      );
      expect(done.status, JSON.stringify(done)).toBe("completed");
      expect(done.fee).toBe(WITHDRAWAL_FEE);
      expect(done.netAmount).toBe(WITHDRAWAL_AMOUNT - WITHDRAWAL_FEE);
      const net = apiUnits(done.netAmount);
      chain().withdrawnNet = net;
      expect(await testUsdtBalance(anvil, token, c.recipient)).toBe(net * scale);
      const receipt = await anvil.publicClient.getTransactionReceipt({ hash: done.blockchainTxHash });
      expect(receipt.status).toBe("success");
      expect(receipt.to?.toLowerCase()).toBe(token.toLowerCase());
      await waitFor(() => hookStatuses(receiver, done.id).length >= 1, 15_000);
      expect(hookStatuses(receiver, done.id)).toEqual(["completed"]);
      expect(await balance(svc, api, c.currencyType)).toEqual({
        available: SESSION_AMOUNT - WITHDRAWAL_AMOUNT,
        held: 0,
      });
    }, 90_000);

    it("the deposit is swept into the hot wallet (the dust stays on the deposit address)", async () => {
      const { anvil, token, hot, depositAddress, sessionId } = chain();
      expect(chain().credited, "builds on the deposit test, which failed").toBe(true);
      const credited = apiUnits(SESSION_AMOUNT) * scale;
      expect(c.paid - credited).toBe(c.dust);
      const sweepsOf = () =>
        svc.database.db
          .selectFrom("outgoing_transfers")
          .select(["status", "amount", "from_address", "to_address"])
          .where("network", "=", c.currencyType)
          .where("environment", "=", "sandbox")
          .where("kind", "=", "sweep")
          .execute();
      // The sweep job looks every 10 s; the gas top-up and the sweep each need their confirmations.
      await mining(anvil, () =>
        waitFor(
          async () =>
            (await testUsdtBalance(anvil, token, depositAddress!)) === c.dust &&
            (await sweepsOf()).some((s) => s.status === "confirmed"),
          75_000,
          500,
        ),
      );
      const withdrawn = chain().withdrawnNet ?? 0n;
      expect(await testUsdtBalance(anvil, token, hot)).toBe(
        (HOT_FUNDING_API_UNITS - withdrawn) * scale + credited,
      );
      const sweeps = await sweepsOf();
      expect(
        sweeps.map((s) => [
          s.status,
          BigInt(s.amount),
          s.from_address?.toLowerCase(),
          s.to_address.toLowerCase(),
        ]),
      ).toEqual([["confirmed", apiUnits(SESSION_AMOUNT), depositAddress!.toLowerCase(), hot.toLowerCase()]]);
      // Moving custody sends no webhook: still the one `confirmed` of the deposit.
      expect(hookStatuses(receiver, sessionId!)).toEqual(["confirmed"]);
      expect(await balance(svc, api, c.currencyType)).toEqual({
        available: SESSION_AMOUNT - WITHDRAWAL_AMOUNT,
        held: 0,
      });
    }, 120_000);

    it("the reserve reconciliation reports ok: the hot wallet covers what the ledger owes", async () => {
      expect(chain().withdrawnNet, "builds on the withdrawal test, which failed").toBeDefined();
      const ctx = operatorContext(svc.config, svc.database.db);
      const reports = (await runOperatorCommand(ctx, "reserves.reconcile", {})) as ReserveReport[];
      const report = reports.find((x) => x.network === c.currencyType && x.environment === "sandbox");
      expect(report, JSON.stringify(reports.map((x) => [x.network, x.environment]))).toBeDefined();
      const withdrawn = chain().withdrawnNet!;
      expect(report).toMatchObject({
        ok: true,
        shortfall: 0n,
        inFlight: 0n,
        // API units: an 18-decimal balance is read truncated.
        hotWallet: HOT_FUNDING_API_UNITS - withdrawn + apiUnits(SESSION_AMOUNT),
        owedToMerchants: apiUnits(SESSION_AMOUNT - WITHDRAWAL_AMOUNT),
        fees: apiUnits(WITHDRAWAL_FEE),
        // What an 18-decimal payment left below 6 decimals: reported, never credited.
        dust: c.dust,
      });
      expect(report!.owed).toBe(apiUnits(SESSION_AMOUNT - WITHDRAWAL_AMOUNT + WITHDRAWAL_FEE));
    }, 60_000);
  });
}

// Wrong network (README.md#wrong-network-payments): one deposit address, paid on two anvils with
// their own chain ids. The session's own network confirms it; the other network's transfer is its
// own deposit in that currency type, flagged, swept on its own chain, and both reserves reconcile.
describe("the same address paid on two networks (Base 8453 and Polygon 137)", () => {
  it("one webhook each, the second with wrongNetwork: true; balances in the right currency types; swept on Polygon", async () => {
    const base = chains.get("USDC-BASE")!;
    const polygon = chains.get("USDT-POLYGON")!;
    const before = {
      base: await balance(svc, api, "USDC-BASE"),
      polygon: await balance(svc, api, "USDT-POLYGON"),
    };
    const s = await call(svc.urls.sandbox, "/checkout/session", {
      headers: api,
      json: { amount: SESSION_AMOUNT, currencyType: "USDC-BASE", orderId: "wrong-network-1" },
    });
    expect(s.status, s.text).toBe(201);
    const session = s.body.data;
    const address = session.walletAddress as Hex;
    const onPolygon = await mintTestToken(polygon.anvil, polygon.token, address, 4_000_000n);
    const onBase = await mintTestToken(base.anvil, base.token, address, 10_000_000n);
    expect([onPolygon.status, onBase.status]).toEqual(["success", "success"]);
    const stopBase = keepMining(base.anvil);
    const stopPolygon = keepMining(polygon.anvil);
    try {
      await waitFor(async () => {
        const r = await call(svc.urls.sandbox, `/checkout/session/${session.id}`, { headers: api });
        return r.body.data.status === "confirmed" ? true : null;
      }, 60_000);
      const ofSession = () =>
        receiver.received
          .map((r) => JSON.parse(r.raw.toString("utf8")))
          .filter((b) => b.data?.transactionId === session.id || b.data?.checkoutSessionId === session.id);
      await waitFor(() => (ofSession().length >= 2 ? true : null), 60_000);
      await sleep(1_500); // long enough for a duplicate delivery to show
      const hooks = ofSession();
      expect(hooks).toHaveLength(2);
      const own = hooks.find((b) => b.data.transactionId === session.id);
      const wrong = hooks.find((b) => b.data.transactionId !== session.id);
      expect(own.data).toMatchObject({
        status: "confirmed",
        currencyType: "USDC-BASE",
        amount: SESSION_AMOUNT,
        blockchainTxHash: onBase.transactionHash,
      });
      expect(own.data.wrongNetwork).toBeUndefined();
      expect(wrong.data).toMatchObject({
        type: "deposit",
        status: "confirmed",
        currencyType: "USDT-POLYGON",
        amount: 4,
        walletAddress: address,
        checkoutSessionId: session.id,
        orderId: "wrong-network-1",
        blockchainTxHash: onPolygon.transactionHash,
        wrongNetwork: true,
      });
      expect(await balance(svc, api, "USDC-BASE")).toEqual({
        available: before.base.available + SESSION_AMOUNT,
        held: 0,
      });
      expect(await balance(svc, api, "USDT-POLYGON")).toEqual({
        available: before.polygon.available + 4,
        held: 0,
      });

      // Swept on Polygon by the ordinary sweep job, from the same key (one account for every EVM
      // network's deposit addresses), into Polygon's hot wallet.
      const sweptFrom = (network: CurrencyType) =>
        svc.database.db
          .selectFrom("outgoing_transfers")
          .select(["status", "amount", "to_address"])
          .where("network", "=", network)
          .where("kind", "=", "sweep")
          .where("from_address", "=", address)
          .execute();
      await waitFor(
        async () =>
          (await testUsdtBalance(polygon.anvil, polygon.token, address)) === 0n &&
          (await sweptFrom("USDT-POLYGON")).some((x) => x.status === "confirmed") &&
          (await testUsdtBalance(base.anvil, base.token, address)) === 0n &&
          (await sweptFrom("USDC-BASE")).some((x) => x.status === "confirmed")
            ? true
            : null,
        90_000,
        500,
      );
      expect(
        (await sweptFrom("USDT-POLYGON")).map((x) => [x.status, BigInt(x.amount), x.to_address]),
      ).toEqual([["confirmed", 4_000_000n, polygon.hot]]);
    } finally {
      stopBase();
      stopPolygon();
    }
    const ctx = operatorContext(svc.config, svc.database.db);
    const reports = (await runOperatorCommand(ctx, "reserves.reconcile", {})) as ReserveReport[];
    for (const network of ["USDC-BASE", "USDT-POLYGON"]) {
      const report = reports.find((x) => x.network === network && x.environment === "sandbox");
      expect(report, network).toMatchObject({ ok: true, shortfall: 0n, inFlight: 0n });
    }
  }, 180_000);
});
