import type { Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CurrencyType, registerNetwork } from "../../src/domain/currency.js";

// A new EVM network, defined here and nowhere else (ARCHITECTURE.md "Adding a network"): one
// definition and one registry line. Nothing in src/ knows it; the configuration reads its
// variables by the naming rule, `evmChain(definition)` serves it, the schemas list its currency type,
// the ledger opens its system accounts on its first posting. Then a checkout session, a withdrawal
// and a sweep run on it against its own anvil, with its own chain id.
registerNetwork({
  network: "TESTNET",
  family: "evm",
  name: "Test Network",
  label: "Test Network",
  chainId: 31_999,
  coinType: 60,
  defaultConfirmations: 2,
  defaultSweepThreshold: "1",
  defaultWithdrawalFee: "0.5",
  pollIntervalMs: 200,
  tokens: [
    {
      token: "USDT",
      decimals: 6,
      defaultContract: "0x0000000000000000000000000000000000000001",
      accountSlot: 40,
      freeze: "none",
    },
  ],
});
const NET = "USDT-TESTNET" as CurrencyType;

// Imported after the registration: the route schemas read the registry when their modules load.
const { AddressDeriver } = await import("../../src/wallet/address-deriver.js");
const { GAS_TANK_INDEX, HOT_WALLET_INDEX } = await import("../../src/wallet/derivation-path.js");
const anvilKit = await import("../support/chain/anvil.js");
const { call, keysOf, startTestService } = await import("../support/harness.js");
const { startReceiver, waitFor } = await import("../webhooks/support.js");
const { balance, expectLedgerOk, hookStatuses } = await import("../withdrawals/support.js");

const MNEMONIC = "test test test test test test test test test test test junk";
const deriver = AddressDeriver.fromMnemonic(MNEMONIC);
let anvil: Awaited<ReturnType<typeof anvilKit.startAnvil>>;
let token: Hex;
let svc: Awaited<ReturnType<typeof startTestService>>;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let api: Record<string, string>;

beforeAll(async () => {
  anvil = await anvilKit.startAnvil(["--chain-id", "31999"]);
  token = await anvilKit.deployTestToken(anvil, { symbol: "USDT", decimals: 6 });
  svc = await startTestService({
    env: {
      SSRF_ALLOW_CIDRS: "127.0.0.0/8",
      RATE_LIMIT_ENABLED: "false",
      MASTER_MNEMONIC: MNEMONIC,
      CURRENCY_TYPES: "USDT-TRC20,USDT-TESTNET",
      SANDBOX_TESTNET_RPC_URL: anvil.rpcUrl,
      SANDBOX_USDT_TESTNET_CONTRACT: token,
    },
  });
  receiver = await startReceiver();
  // The hot wallet pays withdrawals (tokens and gas); the gas tank tops deposit addresses up for sweeps.
  const hot = deriver.address(NET, "sandbox", HOT_WALLET_INDEX) as Hex;
  const tank = deriver.address(NET, "sandbox", GAS_TANK_INDEX) as Hex;
  await anvilKit.mintTestToken(anvil, token, hot, 1_000_000_000n);
  await anvil.testClient.setBalance({ address: hot, value: 10n ** 20n });
  await anvil.testClient.setBalance({ address: tank, value: 10n ** 20n });
  const key = keysOf(await svc.createMerchant(), "sandbox");
  api = { apikey: key.apiKey, "x-api-secret": key.apiSecret };
  const hook = await call(svc.urls.sandbox, "/api/v1/webhook/url", {
    headers: api,
    json: { webhookUrl: receiver.url() },
  });
  expect(hook.status, hook.text).toBe(200);
}, 90_000);

afterAll(async () => {
  await receiver?.close();
  await svc?.close();
  await anvil?.stop();
});

async function mining<T>(fn: () => Promise<T>): Promise<T> {
  const stop = anvilKit.keepMining(anvil);
  try {
    return await fn();
  } finally {
    stop();
  }
}

describe("a network defined only in this test", () => {
  it("is listed, with its chain id and the anvil token, and nothing else enabled besides TRON", async () => {
    const r = await call(svc.urls.sandbox, "/api/v1/public/currencies", { headers: api });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.map((c: { currencyType: string }) => c.currencyType)).toEqual(["USDT-TRC20", NET]);
    expect(r.body.data[1]).toMatchObject({
      token: "USDT",
      network: "TESTNET",
      chainId: 31_999,
      contract: token,
      decimals: 6,
    });
  });

  it("takes a checkout session to confirmed, pays a withdrawal out and sweeps the deposit", async () => {
    const s = await call(svc.urls.sandbox, "/checkout/session", {
      headers: api,
      json: { amount: 40, currencyType: NET },
    });
    expect(s.status, s.text).toBe(201);
    expect(s.body.data).toMatchObject({ currencyType: NET, network: NET });
    const deposit = s.body.data.walletAddress as Hex;
    await anvilKit.mintTestToken(anvil, token, deposit, 40_000_000n);
    const confirmed = await mining(() =>
      waitFor(async () => {
        const r = await call(svc.urls.sandbox, `/checkout/session/${s.body.data.id}`, { headers: api });
        return r.body.data.status === "confirmed" ? r.body.data : null;
      }, 40_000),
    );
    expect(confirmed.actualBalance).toBe(40);
    await waitFor(() => hookStatuses(receiver, s.body.data.id).length >= 1);
    expect(hookStatuses(receiver, s.body.data.id)).toEqual(["confirmed"]);
    expect(await balance(svc, api, NET)).toEqual({ available: 40, held: 0 });

    const to = "0x3000000000000000000000000000000000000003";
    const w = await call(svc.urls.sandbox, "/api/v1/public/withdrawal-requests", {
      headers: api,
      json: { amount: 10, currencyType: NET, walletAddress: to },
    });
    expect(w.status, w.text).toBe(201);
    const done = await mining(() =>
      waitFor(async () => {
        const r = await call(svc.urls.sandbox, `/api/v1/public/withdrawal-requests/${w.body.data.id}`, {
          headers: api,
        });
        return ["completed", "failed"].includes(r.body.data.status) ? r.body.data : null;
      }, 40_000),
    );
    expect(done.status).toBe("completed");
    // 10 − the network's default 0.5 fee, on this chain.
    expect(await anvilKit.testUsdtBalance(anvil, token, to)).toBe(9_500_000n);
    expect(await anvil.publicClient.getChainId()).toBe(31_999);

    // The sweep job (every 10 s) tops the deposit address up from the gas tank and moves its tokens.
    await mining(() =>
      waitFor(
        async () => ((await anvilKit.testUsdtBalance(anvil, token, deposit)) === 0n ? true : null),
        60_000,
      ),
    );
    expect(await balance(svc, api, NET)).toEqual({ available: 30, held: 0 });
    await expectLedgerOk(svc);
  }, 150_000);
});
