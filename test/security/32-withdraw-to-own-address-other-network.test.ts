import { hexToBytes } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tronAddressFromBytes, tronAddressToEvm } from "../../src/chains/tron/address.js";
import { AddressDeriver } from "../../src/wallet/address-deriver.js";
import { GAS_TANK_INDEX, HOT_WALLET_INDEX } from "../../src/wallet/derivation-path.js";
import { call, startTestService, type TestService } from "../support/harness.js";
import { type Receiver, startReceiver } from "../webhooks/support.js";
import { balance, expectLedgerOk, type Funded, fundedMerchant } from "../withdrawals/support.js";

// Issue #37 (abuse case of several EVM networks): an EVM address is one key on every EVM network.
// USDT-ERC20's hot wallet is also an address of ours on Base; a deposit address issued for an
// Ethereum session is ours on Polygon. A withdrawal on one network to an own address of ANOTHER
// currency type of the same key space would debit the merchant while the coins stay inside, on an
// address no reserve report of that network counts. Finding 10's check only compared the
// withdrawal's own currency type; it now compares the whole key space (any currency type of the
// registry, enabled or not). The four system-wallet cases fail with `sameKeySpace(network)`
// replaced by `[network]` in src/withdrawals/destinations.ts (tried); the deposit-address cases are
// refused by the wrong-network twin rows as well (an address is recorded on every EVM currency type
// enabled when it was issued).

const MNEMONIC = "test test test test test test test test test test test junk"; // the harness's
const deriver = AddressDeriver.fromMnemonic(MNEMONIC);
const BASE = "USDC-BASE";
const TRC = "USDT-TRC20";
/** The TRON spelling of an EVM address: the same 20 account bytes, so the same key. */
const tronSpelling = (evm: string) => tronAddressFromBytes(hexToBytes(evm as `0x${string}`));

let svc: TestService;
let receiver: Receiver;
let m: Funded;
/** A deposit address of this merchant's Ethereum session, and another merchant's Polygon wallet. */
let ethSessionAddress: string;
let otherPolygonWallet: string;
/** Another merchant's TRON deposit address. */
let otherTronWallet: string;

beforeAll(async () => {
  svc = await startTestService({
    env: {
      SSRF_ALLOW_CIDRS: "127.0.0.0/8",
      RATE_LIMIT_ENABLED: "false",
      CURRENCY_TYPES: "USDT-TRC20,USDT-ERC20,USDC-BASE,USDT-POLYGON",
    },
  });
  receiver = await startReceiver();
  m = await fundedMerchant(svc, receiver, { [BASE]: 500, [TRC]: 500 });
  const settings = await call(svc.urls.sandbox, "/api/v1/dashboard/settings", {
    method: "PATCH",
    headers: m.bearer,
    json: { autoWithdraw: false },
  });
  expect(settings.status, settings.text).toBe(200);
  const s = await call(svc.urls.sandbox, "/checkout/session", {
    headers: m.api,
    json: { amount: 10, currencyType: "USDT-ERC20" },
  });
  expect(s.status, s.text).toBe(201);
  ethSessionAddress = s.body.data.walletAddress;
  const other = await svc.createMerchant();
  const key = other.keys.find((k) => k.environment === "sandbox");
  const w = await call(svc.urls.sandbox, "/wallet/generate", {
    headers: { apikey: key?.apiKey ?? "", "x-api-secret": key?.apiSecret ?? "" },
    json: { currencyType: "USDT-POLYGON" },
  });
  expect(w.status, w.text).toBe(201);
  otherPolygonWallet = w.body.data.address;
  const t = await call(svc.urls.sandbox, "/wallet/generate", {
    headers: { apikey: key?.apiKey ?? "", "x-api-secret": key?.apiSecret ?? "" },
    json: { currencyType: TRC },
  });
  expect(t.status, t.text).toBe(201);
  otherTronWallet = t.body.data.address;
}, 120_000);
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});

describe("a withdrawal on one EVM network to an own address of another currency type is refused", () => {
  const cases: [string, () => string][] = [
    ["USDT-ERC20's sandbox hot wallet", () => deriver.address("USDT-ERC20", "sandbox", HOT_WALLET_INDEX)],
    [
      "USDT-ERC20's production hot wallet",
      () => deriver.address("USDT-ERC20", "production", HOT_WALLET_INDEX),
    ],
    ["USDT-POLYGON's gas tank", () => deriver.address("USDT-POLYGON", "sandbox", GAS_TANK_INDEX)],
    [
      "the hot wallet of a currency type that is not enabled (USDC-ARBITRUM)",
      () => deriver.address("USDC-ARBITRUM", "sandbox", HOT_WALLET_INDEX),
    ],
    ["this merchant's Ethereum session address", () => ethSessionAddress],
    ["another merchant's Polygon wallet address", () => otherPolygonWallet],
  ];
  for (const [name, address] of cases) {
    it(`${name}: 400 on walletAddress, nothing held`, async () => {
      const before = await balance(svc, m.api, BASE);
      const r = await call(svc.urls.sandbox, "/api/v1/public/withdrawal-requests", {
        headers: m.api,
        json: { amount: 20, currencyType: BASE, walletAddress: address() },
      });
      expect(r.status, r.text).toBe(400);
      expect(r.body.error.code).toBe("VALIDATION_ERROR");
      expect(r.body.error.details.fields.map((f: { field: string }) => f.field)).toContain("walletAddress");
      expect(await balance(svc, m.api, BASE)).toEqual(before);
    });
  }

  // The same key in the other family's spelling (found by the outside review of issue #37): a TRON
  // withdrawal to the TRON spelling of an EVM deposit key, or the reverse, would leave the coins on
  // a key of ours that no watcher follows.
  const spellings: [string, string, () => string][] = [
    [
      TRC,
      "the TRON spelling of another merchant's Polygon wallet address",
      () => tronSpelling(otherPolygonWallet),
    ],
    [
      TRC,
      "the TRON spelling of USDT-ERC20's sandbox hot wallet",
      () => tronSpelling(deriver.address("USDT-ERC20", "sandbox", HOT_WALLET_INDEX)),
    ],
    [
      BASE,
      "the EVM spelling of another merchant's TRON wallet address",
      () => tronAddressToEvm(otherTronWallet),
    ],
    [
      BASE,
      "the EVM spelling of USDT-TRC20's production hot wallet",
      () => tronAddressToEvm(deriver.address(TRC, "production", HOT_WALLET_INDEX)),
    ],
  ];
  for (const [currencyType, name, address] of spellings) {
    it(`${currencyType} to ${name}: 400 on walletAddress, nothing held`, async () => {
      const before = await balance(svc, m.api, currencyType);
      const r = await call(svc.urls.sandbox, "/api/v1/public/withdrawal-requests", {
        headers: m.api,
        json: { amount: 20, currencyType, walletAddress: address() },
      });
      expect(r.status, r.text).toBe(400);
      expect(r.body.error.details.fields.map((f: { field: string }) => f.field)).toContain("walletAddress");
      expect(await balance(svc, m.api, currencyType)).toEqual(before);
    });
  }

  it("an outside EVM address is still accepted", async () => {
    const r = await call(svc.urls.sandbox, "/api/v1/public/withdrawal-requests", {
      headers: m.api,
      json: { amount: 20, currencyType: BASE, walletAddress: "0x8ba1f109551bD432803012645Ac136ddd64DBA72" },
    });
    expect(r.status, r.text).toBe(201);
    await expectLedgerOk(svc);
  });

  it("a TRON address for an EVM currency type is named as such", async () => {
    const r = await call(svc.urls.sandbox, "/api/v1/public/withdrawal-requests", {
      headers: m.api,
      json: { amount: 20, currencyType: BASE, walletAddress: "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW" },
    });
    expect(r.status, r.text).toBe(400);
    expect(r.body.error.details.fields).toContainEqual({
      field: "walletAddress",
      message: "is a TRON address, not an EVM (USDC-BASE) one",
    });
  });
});
