import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AddressDeriver } from "../../src/wallet/address-deriver.js";
import { GAS_TANK_INDEX, HOT_WALLET_INDEX } from "../../src/wallet/derivation-path.js";
import { type Call, call, startTestService, type TestService } from "../support/harness.js";
import { type Receiver, startReceiver } from "../webhooks/support.js";
import { balance, expectLedgerOk, type Funded, fundedMerchant } from "../withdrawals/support.js";

// Issue #34, finding 10: a withdrawal (or payout) to one of the gateway's own addresses — the hot
// wallet, the gas tank, a deposit address it issued, in either environment — was accepted and
// completed: the merchant was debited while the coins stayed inside, so the books and the chain
// disagreed. Afterwards it is refused at request time with 400 VALIDATION_ERROR on
// `walletAddress`, before anything is held (and, for a payout, before its single-use code is
// spent), on the API-key channel and on the dashboard, in both environments.

const MNEMONIC = "test test test test test test test test test test test junk"; // the harness's
const TRC = "USDT-TRC20";
const ERC = "USDT-ERC20";
const TRON_TO = "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW";
const EVM_TO = "0x8ba1f109551bD432803012645Ac136ddd64DBA72";
const deriver = AddressDeriver.fromMnemonic(MNEMONIC);

let svc: TestService;
let receiver: Receiver;
let m: Funded;
/** The same merchant's production credentials. */
let prodApi: Record<string, string>;
let prodBearer: Record<string, string>;
/** Deposit addresses the gateway issued, per network: sandbox and production. */
const issued: Record<string, { sandbox: string; production: string; otherMerchant: string }> = {};

beforeAll(async () => {
  svc = await startTestService({
    env: {
      SSRF_ALLOW_CIDRS: "127.0.0.0/8",
      RATE_LIMIT_ENABLED: "false",
      // Production chains configured (never reached: every request here is refused or waits for
      // approval), so production requests get past CHAIN_UNAVAILABLE.
      ERC20_RPC_URL: "http://127.0.0.1:9",
      TRC20_API_URL: "http://127.0.0.1:9",
    },
  });
  receiver = await startReceiver();
  m = await fundedMerchant(svc, receiver, { [TRC]: 500, [ERC]: 500 });
  // Manual approval: a request that is accepted waits (pending), so nothing reaches a chain.
  const settings = await call(svc.urls.sandbox, "/api/v1/dashboard/settings", {
    method: "PATCH",
    headers: m.bearer,
    json: { autoWithdraw: false },
  });
  expect(settings.status, settings.text).toBe(200);
  prodBearer = { ...m.bearer, "x-environment": "production" };
  // A production key pair of the owner (production writes need a fresh e-mailed code).
  const pair = await call(svc.urls.production, "/api/v1/dashboard/api-keys", {
    headers: prodBearer,
    json: { environment: "production", otp: await otpCode(svc.urls.production, prodBearer, "sensitive") },
  });
  expect(pair.status, pair.text).toBe(201);
  prodApi = { apikey: pair.body.data.apiKey, "x-api-secret": pair.body.data.apiSecret };

  const other = await svc.createMerchant();
  const otherKey = other.keys.find((k) => k.environment === "sandbox");
  for (const currencyType of [TRC, ERC]) {
    const sandbox = await call(svc.urls.sandbox, "/checkout/session", {
      headers: m.api,
      json: { amount: 10, currencyType },
    });
    expect(sandbox.status, sandbox.text).toBe(201);
    const production = await call(svc.urls.production, "/checkout/session", {
      headers: prodApi,
      json: { amount: 10, currencyType },
    });
    expect(production.status, production.text).toBe(201);
    const theirs = await call(svc.urls.sandbox, "/wallet/generate", {
      headers: { apikey: otherKey?.apiKey ?? "", "x-api-secret": otherKey?.apiSecret ?? "" },
      json: { currencyType },
    });
    expect(theirs.status, theirs.text).toBeLessThan(300);
    issued[currencyType] = {
      sandbox: sandbox.body.data.walletAddress,
      production: production.body.data.walletAddress,
      otherMerchant: theirs.body.data.walletAddress ?? theirs.body.data.address,
    };
  }
}, 120_000);
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});

/** A fresh e-mailed code of `purpose` from the dev outbox. */
async function otpCode(base: string, headers: Record<string, string>, purpose = "payout"): Promise<string> {
  const sent = await call(base, "/api/v1/auth/otp", { headers, json: { purpose } });
  expect(sent.status, sent.text).toBe(200);
  const mail = await call(base, "/api/v1/dashboard/dev/mail?limit=1", { headers });
  const code = /\b(\d{6})\b/.exec(mail.body.data[0].subject ?? "")?.[1];
  if (!code) throw new Error("no OTP in the mail");
  return code;
}

/** The gateway's own addresses on `network`, named, in both environments. */
function ownAddresses(network: typeof TRC | typeof ERC): [string, string][] {
  const list: [string, string][] = [];
  for (const env of ["sandbox", "production"] as const) {
    list.push([`${env} hot wallet`, deriver.address(network, env, HOT_WALLET_INDEX)]);
    list.push([`${env} gas tank`, deriver.address(network, env, GAS_TANK_INDEX)]);
  }
  const i = issued[network];
  if (!i) throw new Error("no issued addresses");
  list.push(["sandbox deposit address (this merchant's session)", i.sandbox]);
  list.push(["production deposit address (this merchant's session)", i.production]);
  list.push(["another merchant's deposit address (wallet/generate)", i.otherMerchant]);
  if (network === ERC) {
    const hot = deriver.address(ERC, "sandbox", HOT_WALLET_INDEX);
    list.push(["sandbox hot wallet, all lower case", hot.toLowerCase()]);
  }
  return list;
}

function refusedOnWalletAddress(r: Call, what: string) {
  expect(r.status, `${what}: ${r.text}`).toBe(400);
  expect(r.body.error.code, what).toBe("VALIDATION_ERROR");
  expect(
    r.body.error.details.fields.map((f: { field: string }) => f.field),
    what,
  ).toContain("walletAddress");
}

async function transactionsOf(merchantId: string): Promise<number> {
  const rows = await svc.database.db
    .selectFrom("transactions")
    .select((eb) => eb.fn.countAll<string>().as("n"))
    .where("merchant_id", "=", merchantId)
    .where("type", "in", ["withdrawal", "payout"])
    .executeTakeFirstOrThrow();
  return Number(rows.n);
}

describe("withdrawal requests to the gateway's own addresses are refused (finding 10)", () => {
  for (const network of [TRC, ERC] as const) {
    it(`${network}, sandbox, API-key channel: every own address answers 400 on walletAddress; nothing held`, async () => {
      const before = await balance(svc, m.api, network);
      const count = await transactionsOf(m.merchantId);
      for (const [name, address] of ownAddresses(network)) {
        const r = await call(svc.urls.sandbox, "/api/v1/public/withdrawal-requests", {
          headers: m.api,
          json: { amount: 20, currencyType: network, walletAddress: address },
        });
        refusedOnWalletAddress(r, `${network} ${name} ${address}`);
      }
      expect(await balance(svc, m.api, network)).toEqual(before);
      expect(await transactionsOf(m.merchantId)).toBe(count);
      // An outside address is still accepted.
      const ok = await call(svc.urls.sandbox, "/api/v1/public/withdrawal-requests", {
        headers: m.api,
        json: { amount: 20, currencyType: network, walletAddress: network === TRC ? TRON_TO : EVM_TO },
      });
      expect(ok.status, ok.text).toBe(201);
      await expectLedgerOk(svc);
    });
  }

  it("production, API-key channel: the production and sandbox hot wallets and an issued deposit address", async () => {
    for (const network of [TRC, ERC] as const) {
      for (const [name, address] of ownAddresses(network)) {
        const r = await call(svc.urls.production, "/api/v1/public/withdrawal-requests", {
          headers: prodApi,
          json: { amount: 20, currencyType: network, walletAddress: address },
        });
        refusedOnWalletAddress(r, `production ${network} ${name}`);
      }
    }
  });
});

describe("dashboard payouts to the gateway's own addresses are refused (finding 10)", () => {
  it("sandbox: refused on walletAddress before the code is spent and before anything is held", async () => {
    const before = await balance(svc, m.api, TRC);
    const code = await otpCode(svc.urls.sandbox, m.bearer);
    for (const [name, address] of ownAddresses(TRC)) {
      const r = await call(svc.urls.sandbox, "/api/v1/dashboard/payouts", {
        headers: m.bearer,
        json: { amount: 20, currencyType: TRC, walletAddress: address, otp: code },
      });
      refusedOnWalletAddress(r, `payout to ${name}`);
    }
    expect(await balance(svc, m.api, TRC)).toEqual(before);
    // The code was not spent by the refusals: it pays an outside address.
    const ok = await call(svc.urls.sandbox, "/api/v1/dashboard/payouts", {
      headers: m.bearer,
      json: { amount: 20, currencyType: TRC, walletAddress: TRON_TO, otp: code },
    });
    expect(ok.status, ok.text).toBe(201);
  });

  it("production: refused on walletAddress (ERC20 hot wallet, gas tank, an issued deposit address)", async () => {
    for (const [name, address] of ownAddresses(ERC)) {
      const r = await call(svc.urls.production, "/api/v1/dashboard/payouts", {
        headers: prodBearer,
        json: {
          amount: 20,
          currencyType: ERC,
          walletAddress: address,
          otp: await otpCode(svc.urls.production, prodBearer),
        },
      });
      refusedOnWalletAddress(r, `production payout to ${name}`);
    }
  });
});
