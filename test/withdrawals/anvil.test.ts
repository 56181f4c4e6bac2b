import type { Hex } from "viem";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { AddressDeriver } from "../../src/wallet/address-deriver.js";
import { HOT_WALLET_INDEX } from "../../src/wallet/derivation-path.js";
import {
  type AnvilNode,
  deployTestUsdt,
  keepMining,
  mintTestUsdt,
  startAnvil,
  testUsdtBalance,
} from "../support/chain/anvil.js";
import { call, startTestService, type TestService } from "../support/harness.js";
import { type Receiver, startReceiver, waitFor } from "../webhooks/support.js";
import { balance, expectLedgerOk, hookStatuses } from "./support.js";

// The full auto and manual withdrawal flows once on anvil, with real token transfers: the sandbox
// configured with an EVM "testnet" (anvil + a 6-decimal test USDT), the hot wallet funded on-chain,
// the merchant funded by a real deposit, the recipient's token balance read back from the chain.
const MNEMONIC = "test test test test test test test test test test test junk";
const ERC = "USDT-ERC20";
const CONFIRMATIONS = 2;
let anvil: AnvilNode;
let token: Hex;
let svc: TestService;
let receiver: Receiver;
let api: Record<string, string>;
let bearer: Record<string, string>;

beforeAll(async () => {
  anvil = await startAnvil();
  token = await deployTestUsdt(anvil);
  svc = await startTestService({
    env: {
      SSRF_ALLOW_CIDRS: "127.0.0.0/8",
      RATE_LIMIT_ENABLED: "false",
      MASTER_MNEMONIC: MNEMONIC,
      SANDBOX_ERC20_RPC_URL: anvil.rpcUrl,
      SANDBOX_USDT_ERC20_CONTRACT: token,
      CONFIRMATIONS_ERC20: `${CONFIRMATIONS}`,
    },
  });
  receiver = await startReceiver();
  // The hot wallet holds the tokens it pays out and the ETH for gas.
  const hot = AddressDeriver.fromMnemonic(MNEMONIC).address(ERC, "sandbox", HOT_WALLET_INDEX) as Hex;
  await mintTestUsdt(anvil, token, hot, 10_000_000_000n);
  await anvil.testClient.setBalance({ address: hot, value: 10n ** 20n });

  const reg = await call(svc.urls.sandbox, "/api/v1/auth/register", {
    json: {
      email: `anvil-${Date.now()}@example.com`,
      password: "a long passphrase 123",
      companyName: "Anvil Co",
    },
    headers: { "x-token-delivery": "bearer" },
  });
  expect(reg.status, reg.text).toBe(201);
  const pair = reg.body.data.apiKeys.find((k: { environment: string }) => k.environment === "sandbox");
  api = { apikey: pair.apiKey, "x-api-secret": pair.apiSecret };
  bearer = { authorization: `Bearer ${reg.body.data.accessToken}`, "x-environment": "sandbox" };
  await call(svc.urls.sandbox, "/api/v1/webhook/url", { headers: api, json: { webhookUrl: receiver.url() } });

  // Fund the merchant with a real deposit of 500 USDT.
  const s = await call(svc.urls.sandbox, "/checkout/session", {
    headers: api,
    json: { amount: 500, currencyType: ERC },
  });
  await mintTestUsdt(anvil, token, s.body.data.walletAddress, 500_000_000n);
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

// `stablegate ledger verify` after every test: every posting balances, every balance matches its journal.
afterEach(async () => {
  await expectLedgerOk(svc);
});

async function settled(id: string) {
  const stop = keepMining(anvil);
  try {
    return await waitFor(async () => {
      const r = await call(svc.urls.sandbox, `/api/v1/public/withdrawal-requests/${id}`, { headers: api });
      return ["completed", "failed"].includes(r.body.data.status) ? r.body.data : null;
    }, 40_000);
  } finally {
    stop();
  }
}

describe("withdrawals on anvil with real token transfers", () => {
  it("auto: executed at once, the recipient receives netAmount on-chain, one webhook", async () => {
    const to = "0x1000000000000000000000000000000000000001";
    const r = await call(svc.urls.sandbox, "/api/v1/public/withdrawal-requests", {
      headers: api,
      json: { amount: 100, currencyType: ERC, walletAddress: to },
    });
    expect(r.status, r.text).toBe(201);
    expect(r.body.data.status).toBe("processing");
    const done = await settled(r.body.data.id);
    expect(done.status).toBe("completed");
    expect(await testUsdtBalance(anvil, token, to)).toBe(95_000_000n); // 100 − the 5 USDT ERC20 fee
    const receipt = await anvil.publicClient.getTransactionReceipt({ hash: done.blockchainTxHash });
    expect(receipt.status).toBe("success");
    await waitFor(() => hookStatuses(receiver, done.id).length >= 1);
    expect(hookStatuses(receiver, done.id)).toEqual(["completed"]);
    expect(await balance(svc, api, ERC)).toEqual({ available: 400, held: 0 });
  }, 60_000);

  it("manual: pending, approved from the dashboard, completed on-chain, two webhooks", async () => {
    const to = "0x2000000000000000000000000000000000000002";
    const off = await call(svc.urls.sandbox, "/api/v1/dashboard/settings", {
      method: "PATCH",
      headers: bearer,
      json: { autoWithdraw: false },
    });
    expect(off.status, off.text).toBe(200);
    const r = await call(svc.urls.sandbox, "/api/v1/public/withdrawal-requests", {
      headers: api,
      json: { amount: 50, currencyType: ERC, walletAddress: to },
    });
    expect(r.body.data.status).toBe("pending");
    expect(await balance(svc, api, ERC)).toEqual({ available: 350, held: 50 });
    const ok = await call(
      svc.urls.sandbox,
      `/api/v1/dashboard/withdrawal-requests/${r.body.data.id}/approve`,
      {
        headers: bearer,
        json: {},
      },
    );
    expect(ok.status, ok.text).toBe(200);
    const done = await settled(r.body.data.id);
    expect(done.status).toBe("completed");
    expect(await testUsdtBalance(anvil, token, to)).toBe(45_000_000n);
    await waitFor(() => hookStatuses(receiver, done.id).length >= 2);
    expect(hookStatuses(receiver, done.id)).toEqual(["pending", "completed"]);
    expect(await balance(svc, api, ERC)).toEqual({ available: 350, held: 0 });
    await expectLedgerOk(svc);
  }, 60_000);
});
