import type { Hex } from "viem";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { operatorContext } from "../../src/cli/merchant-create.js";
import { runOperatorCommand } from "../../src/operator/commands.js";
import type { ReserveReport } from "../../src/reserves/index.js";
import { AddressDeriver } from "../../src/wallet/address-deriver.js";
import { HOT_WALLET_INDEX } from "../../src/wallet/derivation-path.js";
import {
  type AnvilNode,
  deployTestUsdt,
  destroyFrozenFunds,
  freezeAddress,
  keepMining,
  mintTestUsdt,
  moveTestTokenAs,
  startAnvil,
  testUsdtBalance,
  unfreezeAddress,
} from "../support/chain/anvil.js";
import { call, startTestService, type TestService } from "../support/harness.js";
import { type Receiver, startReceiver, waitFor } from "../webhooks/support.js";
import { balance, expectLedgerOk, frozenCustody } from "../withdrawals/support.js";

// Our own addresses frozen by the token's issuer (README.md#frozen-funds), on anvil with a test
// USDT that has Tether's real blacklist: the sandbox environment on a real chain (no step-up).
const MNEMONIC = "test test test test test test test test test test test junk";
const ERC = "USDT-ERC20";
const METRICS_TOKEN = "metrics-token-for-tests-0123456789";
let anvil: AnvilNode;
let token: Hex;
let svc: TestService;
let receiver: Receiver;
let api: Record<string, string>;
let hot: Hex;
/** The address of the merchant's first deposit (500, below the sweep threshold: never swept). */
let firstDeposit: Hex;

beforeAll(async () => {
  anvil = await startAnvil();
  token = await deployTestUsdt(anvil);
  svc = await startTestService({
    env: {
      SSRF_ALLOW_CIDRS: "127.0.0.0/8",
      RATE_LIMIT_ENABLED: "false",
      MASTER_MNEMONIC: MNEMONIC,
      METRICS_TOKEN,
      SANDBOX_ERC20_RPC_URL: anvil.rpcUrl,
      SANDBOX_USDT_ERC20_CONTRACT: token,
      CONFIRMATIONS_ERC20: "2",
    },
    ...(process.env.DEBUG_LOG ? { logDestination: process.stderr } : {}),
  });
  receiver = await startReceiver();
  hot = AddressDeriver.fromMnemonic(MNEMONIC).address(ERC, "sandbox", HOT_WALLET_INDEX) as Hex;
  await mintTestUsdt(anvil, token, hot, 10_000_000_000n);
  await anvil.testClient.setBalance({ address: hot, value: 10n ** 20n });
  const reg = await call(svc.urls.sandbox, "/api/v1/auth/register", {
    json: {
      email: `own-frozen-${Date.now()}@example.com`,
      password: "a long passphrase 123",
      companyName: "F Co",
    },
    headers: { "x-token-delivery": "bearer" },
  });
  expect(reg.status, reg.text).toBe(201);
  const pair = reg.body.data.apiKeys.find((k: { environment: string }) => k.environment === "sandbox");
  api = { apikey: pair.apiKey, "x-api-secret": pair.apiSecret };
  await call(svc.urls.sandbox, "/api/v1/webhook/url", { headers: api, json: { webhookUrl: receiver.url() } });
  const s = await call(svc.urls.sandbox, "/checkout/session", {
    headers: api,
    json: { amount: 500, currencyType: ERC },
  });
  firstDeposit = s.body.data.walletAddress;
  await mintTestUsdt(anvil, token, firstDeposit, 500_000_000n);
  const stop = keepMining(anvil);
  try {
    await waitFor(async () => (await balance(svc, api, ERC)).available === 500, 30_000);
  } finally {
    stop();
  }
}, 90_000);
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
  await anvil?.stop();
});
afterEach(async () => {
  await expectLedgerOk(svc);
});

async function sendingCheck() {
  const r = await call(svc.urls.production, "/readyz", {
    headers: { authorization: `Bearer ${METRICS_TOKEN}` },
  });
  return r.body.checks[`sending:${ERC}:sandbox`] as { status: string; detail: string };
}

const custody = () => frozenCustody(svc, ERC);

async function reserves(): Promise<ReserveReport> {
  const reports = (await runOperatorCommand(
    operatorContext(svc.config, svc.database.db),
    "reserves.reconcile",
    {},
  )) as ReserveReport[];
  const report = reports.find((x) => x.network === ERC && x.environment === "sandbox");
  if (!report) throw new Error("no reserve report for USDT-ERC20 sandbox");
  return report;
}

const frozenRows = () =>
  svc.database.db
    .selectFrom("frozen_addresses")
    .select(["address", "role", "released_at"])
    .where("network", "=", ERC)
    .where("environment", "=", "sandbox")
    .execute();

describe("own addresses frozen by the token's issuer (anvil)", () => {
  it("the hot wallet frozen mid-run: recorded, /readyz sending down, nothing signed from it; unfrozen, the withdrawal completes", async () => {
    await freezeAddress(anvil, token, hot, "tether");
    // The wallet recorder checks every 15 s: wait for its row (and the alert it logs).
    await waitFor(
      async () => (await frozenRows()).some((r) => r.role === "hot_wallet" && r.released_at === null),
      30_000,
    );
    // The ledger moved the hot wallet's coins out of the usable custody; the books still match.
    const held = await testUsdtBalance(anvil, token, hot);
    expect((await custody()).frozen).toBe(held);
    expect(await reserves()).toMatchObject({ ok: true, shortfall: 0n, frozen: held, writtenOff: 0n });
    const check = await sendingCheck();
    expect(check.status).toBe("down");
    expect(check.detail).toContain(`hot_wallet ${hot}`);
    const metrics = await call(svc.urls.production, "/metrics", {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    });
    expect(metrics.text).toMatch(
      /stablegate_own_addresses_frozen\{network="USDT-ERC20",environment="sandbox"\} 1/,
    );

    const to: Hex = "0x2000000000000000000000000000000000000002";
    const r = await call(svc.urls.sandbox, "/api/v1/public/withdrawal-requests", {
      headers: api,
      json: { amount: 20, currencyType: ERC, walletAddress: to },
    });
    expect(r.status, r.text).toBe(201);
    const stop = keepMining(anvil);
    try {
      // Several sender rounds pass: nothing is signed from the frozen hot wallet.
      await new Promise((res) => setTimeout(res, 3_000));
      const attempts = await svc.database.db
        .selectFrom("outgoing_transfer_attempts")
        .select("intent_id")
        .where("intent_id", "=", r.body.data.id)
        .execute();
      expect(attempts).toEqual([]);
      const w = await call(svc.urls.sandbox, `/api/v1/public/withdrawal-requests/${r.body.data.id}`, {
        headers: api,
      });
      expect(w.body.data.status).toBe("processing");

      await unfreezeAddress(anvil, token, hot, "tether");
      await waitFor(
        async () => (await frozenRows()).every((x) => x.role !== "hot_wallet" || x.released_at !== null),
        30_000,
      );
      // Released: moved back to the usable custody.
      expect(await custody()).toEqual({ frozen: 0n, writtenOff: 0n });
      const done = await waitFor(async () => {
        const g = await call(svc.urls.sandbox, `/api/v1/public/withdrawal-requests/${r.body.data.id}`, {
          headers: api,
        });
        return ["completed", "failed"].includes(g.body.data.status) ? g.body.data : null;
      }, 40_000);
      expect(done.status).toBe("completed");
      expect(await testUsdtBalance(anvil, token, to)).toBe(15_000_000n);
    } finally {
      stop();
    }
    expect((await sendingCheck()).status).not.toBe("down");
  }, 120_000);

  it("a deposit address frozen before its sweep: credited (the sender is not frozen), recorded, never swept", async () => {
    const s = await call(svc.urls.sandbox, "/checkout/session", {
      headers: api,
      json: { amount: 80, currencyType: ERC },
    });
    const address = s.body.data.walletAddress as Hex;
    await freezeAddress(anvil, token, address, "tether");
    await mintTestUsdt(anvil, token, address, 80_000_000n);
    const stop = keepMining(anvil);
    try {
      await waitFor(async () => {
        const g = await call(svc.urls.sandbox, `/checkout/session/${s.body.data.id}`, { headers: api });
        return g.body.data.status === "confirmed";
      }, 30_000);
      await waitFor(
        async () => (await frozenRows()).some((r) => r.address === address && r.role === "deposit"),
        30_000,
      );
    } finally {
      stop();
    }
    const sweeps = await svc.database.db
      .selectFrom("outgoing_transfers")
      .select("intent_id")
      .where("kind", "=", "sweep")
      .where("to_address", "=", hot)
      .execute();
    // Only the funding deposit's sweep (if any happened), none from the frozen address.
    const fromFrozen = await svc.database.db
      .selectFrom("outgoing_transfers")
      .select("intent_id")
      .where("from_address", "=", address)
      .execute();
    expect(fromFrozen).toEqual([]);
    expect(sweeps.length).toBeLessThanOrEqual(1);
    expect(await testUsdtBalance(anvil, token, address)).toBe(80_000_000n);
    expect((await sendingCheck()).status).toBe("degraded");
    // The books still match the chain: the frozen coins are still there (reserves count them), and
    // the ledger moved them to its frozen custody.
    expect((await custody()).frozen).toBe(80_000_000n);
    expect(await reserves()).toMatchObject({ ok: true, shortfall: 0n, frozen: 80_000_000n });
  }, 120_000);

  it("the issuer destroys a frozen hot wallet's coins: written off in the ledger, the books still match the chain; released, the rest is usable again", async () => {
    const before = await custody();
    // What the issuer destroys must be owed to the merchants (without the write-off the reserves
    // would then show it short): the first deposit's coins go to the hot wallet (as a sweep would),
    // and the hot wallet's surplus beyond what is owed leaves.
    await moveTestTokenAs(anvil, token, firstDeposit, hot, await testUsdtBalance(anvil, token, firstDeposit));
    const start = await reserves();
    const surplus = start.onChain + start.inFlight - start.owed;
    expect(surplus).toBeGreaterThan(0n);
    expect(await testUsdtBalance(anvil, token, hot)).toBeGreaterThan(surplus);
    await moveTestTokenAs(anvil, token, hot, "0x3000000000000000000000000000000000000003", surplus);
    expect(await reserves()).toMatchObject({ ok: true, shortfall: 0n });
    await freezeAddress(anvil, token, hot, "tether");
    const onHot = await testUsdtBalance(anvil, token, hot);
    expect(onHot).toBeGreaterThan(0n);
    await waitFor(async () => (await custody()).frozen === before.frozen + onHot, 30_000);
    await destroyFrozenFunds(anvil, token, hot, "tether");
    expect(await testUsdtBalance(anvil, token, hot)).toBe(0n);
    // The next check of the hot wallet finds it empty: what was frozen there is written off.
    await waitFor(async () => (await custody()).writtenOff === onHot, 30_000);
    expect((await custody()).frozen).toBe(before.frozen);
    const report = await reserves();
    expect(report).toMatchObject({ ok: true, shortfall: 0n, writtenOff: onHot });
    expect(report.notes.join("\n")).toContain("written off");
    // The merchants are still owed it: their balances did not move.
    expect((await balance(svc, api, ERC)).available).toBeGreaterThan(0);

    // New coins while frozen are frozen too; released, they are usable again.
    await mintTestUsdt(anvil, token, hot, 7_000_000n);
    await waitFor(async () => (await custody()).frozen === before.frozen + 7_000_000n, 30_000);
    await unfreezeAddress(anvil, token, hot, "tether");
    await waitFor(async () => (await custody()).frozen === before.frozen, 30_000);
    expect((await custody()).writtenOff).toBe(onHot);
    expect(await reserves()).toMatchObject({ ok: true, shortfall: 0n });
  }, 150_000);
});
