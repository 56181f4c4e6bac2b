import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TEST_FAILURE_ADDRESSES } from "../../src/domain/currency.js";
import { isBurnAddress } from "../../src/domain/destination.js";
import { type Call, call, startTestService, type TestService } from "../support/harness.js";
import { type Receiver, startReceiver } from "../webhooks/support.js";
import { balance, expectLedgerOk, type Funded, fundedMerchant } from "../withdrawals/support.js";

// Issue #34, finding 11: withdrawals to the zero address (EVM 0x000…000, TRON's zero address
// T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb, the base58check of 0x41 followed by twenty zero bytes) were
// accepted: whatever reaches it is destroyed. Afterwards they are refused per network with 400
// VALIDATION_ERROR on `walletAddress`, before anything is held, on the API-key channel and on the
// dashboard. EVM's conventional burn address 0x…dEaD is refused the same way.
//
// One exception, by docs/merchants/sandbox.md#test-failure-addresses: in the sandbox the test failure addresses (TRON's zero address
// and EVM's 0x…dEaD) stay accepted — the simulator fails a transfer to them on-chain, so merchants
// can test the `failed` path; nothing is destroyed.

const TRC = "USDT-TRC20";
const ERC = "USDT-ERC20";
const EVM_ZERO = "0x0000000000000000000000000000000000000000";
const EVM_DEAD = "0x000000000000000000000000000000000000dEaD";
const TRON_ZERO = "T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb";

let svc: TestService;
let receiver: Receiver;
let m: Funded;
let prodApi: Record<string, string>;
let prodBearer: Record<string, string>;

async function otpCode(base: string, headers: Record<string, string>, purpose = "payout"): Promise<string> {
  const sent = await call(base, "/api/v1/auth/otp", { headers, json: { purpose } });
  expect(sent.status, sent.text).toBe(200);
  const mail = await call(base, "/api/v1/dashboard/dev/mail?limit=1", { headers });
  const code = /\b(\d{6})\b/.exec(mail.body.data[0].subject ?? "")?.[1];
  if (!code) throw new Error("no OTP in the mail");
  return code;
}

beforeAll(async () => {
  svc = await startTestService({
    env: {
      SSRF_ALLOW_CIDRS: "127.0.0.0/8",
      RATE_LIMIT_ENABLED: "false",
      // Production chains configured (never reached), so production requests get past CHAIN_UNAVAILABLE.
      ERC20_RPC_URL: "http://127.0.0.1:9",
      TRC20_API_URL: "http://127.0.0.1:9",
    },
  });
  receiver = await startReceiver();
  m = await fundedMerchant(svc, receiver, { [TRC]: 500, [ERC]: 500 });
  const settings = await call(svc.urls.sandbox, "/api/v1/dashboard/settings", {
    method: "PATCH",
    headers: m.bearer,
    json: { autoWithdraw: false },
  });
  expect(settings.status, settings.text).toBe(200);
  prodBearer = { ...m.bearer, "x-environment": "production" };
  const pair = await call(svc.urls.production, "/api/v1/dashboard/api-keys", {
    headers: prodBearer,
    json: { environment: "production", otp: await otpCode(svc.urls.production, prodBearer, "sensitive") },
  });
  expect(pair.status, pair.text).toBe(201);
  prodApi = { apikey: pair.body.data.apiKey, "x-api-secret": pair.body.data.apiSecret };
}, 120_000);
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});

function refusedOnWalletAddress(r: Call, what: string) {
  expect(r.status, `${what}: ${r.text}`).toBe(400);
  expect(r.body.error.code, what).toBe("VALIDATION_ERROR");
  expect(
    r.body.error.details.fields.map((f: { field: string }) => f.field),
    what,
  ).toContain("walletAddress");
}

describe("the burn addresses, per network (domain rule)", () => {
  it("EVM: the zero address and 0x…dEaD in any spelling; TRON: its zero address; nothing else", () => {
    expect(isBurnAddress(ERC, EVM_ZERO)).toBe(true);
    expect(isBurnAddress(ERC, EVM_DEAD)).toBe(true);
    expect(isBurnAddress(ERC, EVM_DEAD.toLowerCase())).toBe(true);
    expect(isBurnAddress(ERC, "0x8ba1f109551bD432803012645Ac136ddd64DBA72")).toBe(false);
    expect(isBurnAddress(TRC, TRON_ZERO)).toBe(true);
    expect(isBurnAddress(TRC, "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW")).toBe(false);
    // Each network's zero address is not the other's.
    expect(isBurnAddress(TRC, EVM_ZERO)).toBe(false);
    expect(isBurnAddress(ERC, TRON_ZERO)).toBe(false);
  });
});

describe("withdrawal requests to a burn address are refused (finding 11)", () => {
  it("production, API-key channel: EVM zero, EVM 0x…dEaD, TRON zero", async () => {
    for (const [currencyType, walletAddress] of [
      [ERC, EVM_ZERO],
      [ERC, EVM_DEAD],
      [ERC, EVM_DEAD.toLowerCase()],
      [TRC, TRON_ZERO],
    ] as const) {
      const r = await call(svc.urls.production, "/api/v1/public/withdrawal-requests", {
        headers: prodApi,
        json: { amount: 20, currencyType, walletAddress },
      });
      refusedOnWalletAddress(r, `production ${currencyType} ${walletAddress}`);
    }
  });

  it("sandbox, API-key channel: the EVM zero address is refused, nothing held; the test failure addresses stay usable", async () => {
    const before = await balance(svc, m.api, ERC);
    const r = await call(svc.urls.sandbox, "/api/v1/public/withdrawal-requests", {
      headers: m.api,
      json: { amount: 20, currencyType: ERC, walletAddress: EVM_ZERO },
    });
    refusedOnWalletAddress(r, "sandbox ERC20 zero address");
    expect(await balance(svc, m.api, ERC)).toEqual(before);
    for (const currencyType of [TRC, ERC] as const) {
      const ok = await call(svc.urls.sandbox, "/api/v1/public/withdrawal-requests", {
        headers: m.api,
        json: { amount: 20, currencyType, walletAddress: TEST_FAILURE_ADDRESSES[currencyType] },
      });
      expect(ok.status, ok.text).toBe(201);
    }
    await expectLedgerOk(svc);
  });
});

describe("dashboard payouts to a burn address are refused (finding 11)", () => {
  it("sandbox: the EVM zero address, before the code is spent", async () => {
    const before = await balance(svc, m.api, ERC);
    const code = await otpCode(svc.urls.sandbox, m.bearer);
    const r = await call(svc.urls.sandbox, "/api/v1/dashboard/payouts", {
      headers: m.bearer,
      json: { amount: 20, currencyType: ERC, walletAddress: EVM_ZERO, otp: code },
    });
    refusedOnWalletAddress(r, "sandbox payout to the EVM zero address");
    expect(await balance(svc, m.api, ERC)).toEqual(before);
    const ok = await call(svc.urls.sandbox, "/api/v1/dashboard/payouts", {
      headers: m.bearer,
      json: {
        amount: 20,
        currencyType: ERC,
        walletAddress: "0x8ba1f109551bD432803012645Ac136ddd64DBA72",
        otp: code,
      },
    });
    expect(ok.status, ok.text).toBe(201);
  });

  it("production: EVM zero, EVM 0x…dEaD, TRON zero", async () => {
    for (const [currencyType, walletAddress] of [
      [ERC, EVM_ZERO],
      [ERC, EVM_DEAD],
      [TRC, TRON_ZERO],
    ] as const) {
      const r = await call(svc.urls.production, "/api/v1/dashboard/payouts", {
        headers: prodBearer,
        json: {
          amount: 20,
          currencyType,
          walletAddress,
          otp: await otpCode(svc.urls.production, prodBearer),
        },
      });
      refusedOnWalletAddress(r, `production payout ${currencyType} ${walletAddress}`);
    }
  });
});
