import { createHash } from "node:crypto";
import { getAddress } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAdmin } from "../../src/auth/index.js";
import {
  CURRENCY_TYPES,
  type CurrencyType,
  currencyOf,
  DEFAULT_ENABLED_CURRENCY_TYPES,
  TEST_FAILURE_ADDRESSES,
} from "../../src/domain/currency.js";
import { Browser, outboxOtp } from "../dashboard/support.js";
import { type Call, call, startTestService, type TestService } from "../support/harness.js";

// "Bad input gets a clear 4xx error in the contract's envelope, never a 500, a hang or lost data."
// This sweep takes every operation of the OpenAPI document (so a new route is covered the day it
// is added) and sends it:
//  - hostile path parameters, query values, header values, raw bodies and content types;
//  - starting from a body valid for the route (checked first, so changes reach the handler),
//    every body field replaced by each hostile value in turn;
//  - hostile credentials and request headers on each channel;
//  - the same writing request eight times at once (real concurrency on PostgreSQL);
//  - another merchant's ids through every route with a path parameter (must be 404);
//  - every currency type of the registry (all enabled here): each route that takes a
//    `currencyType` with a valid body of each one (its own family's address), then hostile values
//    on each field, hostile currency types and addresses of the other family; sandbox payments of
//    each one with hostile amounts; and, on a second service, the currency types it does not enable.
// Every answer must come (the test's timeout is the hang check), be below 500, and a 4xx must be
// the contract's error envelope.

const PASSWORD = "correct horse battery";
const TRC = "USDT-TRC20";
const TRON_TO = "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW";
/** An outside EVM address (EIP-55), nobody's: derived from a fixed text, so a failure reproduces. */
const EVM_TO = getAddress(`0x${createHash("sha256").update("hostile-input evm").digest("hex").slice(0, 40)}`);
const familyOf = (c: CurrencyType) => currencyOf(c).definition.family;
/** A valid outside destination of the currency type's family. */
const destinationOf = (c: CurrencyType) => (familyOf(c) === "tron" ? TRON_TO : EVM_TO);

/** Strings that have broken parsers, coercions and SQL elsewhere (path and query values). */
const HOSTILE_TEXT = [
  "",
  " ",
  "0",
  "-1",
  "1e309",
  "NaN",
  "Infinity",
  "null",
  "undefined",
  "true",
  "[object Object]",
  "9".repeat(400),
  "x".repeat(5000),
  "\u0000",
  "../../etc/passwd",
  "' or 1=1 --",
  '"; drop table merchants; --',
  "%",
  "💥",
  "\u202e",
  "2026-13-45T99:99:99Z",
  "-0",
  "0x10",
  "1.0000001",
  "__proto__",
  "constructor",
  // URL-shaped (webhook and callback URLs).
  `https://example.com/${"a".repeat(3000)}`,
  "https://ex ample.com/",
  "https://xn--80ak6aa92e.com/",
  "https://пример.рф/hook",
  "https://user:pass@example.com/",
  "https://[::1]/",
  "https://[fe80::1%25eth0]/",
  "https://example.com:99999/",
  "https://0x7f.1/",
  "javascript:alert(1)",
  "file:///etc/passwd",
  "https://example.com/%00",
  "//example.com",
];

/** JSON values of every type and edge (body fields). */
const HOSTILE_VALUES: unknown[] = [
  null,
  true,
  false,
  0,
  -1,
  -0,
  0.1,
  1.5,
  1e-30,
  1e21,
  Number.MAX_SAFE_INTEGER + 2,
  1e308,
  -1e308,
  [],
  [1, 2],
  {},
  { $gt: "" },
  { "a\u0000b": 1 },
  { a: "\u0000" },
  { a: "\ud800" },
  ["\udfff"],
  "\ud800",
  "a\udc00b",
  ...HOSTILE_TEXT,
  "x".repeat(20_000),
];

/** Raw bodies a JSON route must refuse cleanly (or accept, when the route takes no body). */
const RAW_BODIES = [
  "",
  "null",
  "[]",
  "1",
  '"s"',
  "{",
  '{"a":1,}',
  "{'a':1}",
  '{"amount":1e400}',
  '{"amount":123456789012345678901234567890.123456789}',
  '{"__proto__":{"polluted":true}}',
  '{"constructor":{"prototype":{"polluted":true}}}',
  `${"[".repeat(20_000)}${"]".repeat(20_000)}`,
  `{"a":${'{"a":'.repeat(5000)}1${"}".repeat(5000)}}`,
  "\u0000",
  "\ufeff{}",
  `{"x":"${"\\ud800"}"}`,
];

/**
 * Currency types that do not exist, spelled like ones that do (body fields and query values):
 * other cases, spaces, look-alike characters, a token not on that network (USDC-TRC20), a token the
 * network has not (USDT-BASE: Base lists only USDC), halves, lists, object-prototype names.
 */
const HOSTILE_CURRENCY_TYPES: unknown[] = [
  ...CURRENCY_TYPES.map((c) => c.toLowerCase()),
  "Usdc-Base",
  "USDC-BASE ",
  " USDC-BASE",
  "USDC-BASE\n",
  "USDC-BASE\u0000",
  "USDC-BASE\u200b",
  "USDC\u2013BASE",
  "ＵＳＤＣ-ＢＡＳＥ",
  "USD\u0421-BASE",
  "USDC_BASE",
  "USDCBASE",
  "USDC-BASE-",
  "USDC-TRC20",
  "USDT-BASE",
  "USDC-TRON",
  "USDT-ERC-20",
  "USDT-ETH",
  "DAI-ERC20",
  "USDT",
  "BASE",
  "ERC20",
  "-",
  "USDT-ERC20,USDC-BASE",
  "USDT-ERC20 USDC-BASE",
  "toString",
  "hasOwnProperty",
  "valueOf",
  ["USDC-BASE"],
  { "USDC-BASE": true },
];

/** Amounts at the edges of the API's scale, of the 18-decimal tokens' (BEP20) and of the maximum. */
const HOSTILE_AMOUNTS: unknown[] = [
  0.000001,
  0.0000001,
  "0.000001",
  "0.0000001",
  "0.0000010",
  1_000_000_000,
  1_000_000_000.000001,
  "999999999.999999",
  "1000000000.000001",
  "1e2",
  "+1",
  " 1",
  "1 ",
  "1,5",
  "1_000",
  "\u0663",
  "0b1",
  "9007199254740993",
  2 ** 53,
  1e18,
  "1".padEnd(40, "0"),
];

/** Subset of the hostile values for the fields whose meaning does not depend on the currency type. */
const HOSTILE_SUBSET: unknown[] = [null, -1, [], { $gt: "" }, "\ud800", "", "' or 1=1 --", "x".repeat(5000)];

type Channel = "apiKey" | "merchant" | "admin" | "none";

interface Op {
  method: string;
  path: string;
  params: { in: string; name: string }[];
  bodyFields: string[] | undefined;
}

let svc: TestService;
let merchant: Browser;
/** A second session of the merchant, for the currency sweeps (see `merchantSession`). */
let currencyMerchant: Browser;
let admin: Browser;
let api: Record<string, string>;
/** Real values for path parameters, so hostile bodies reach the handlers behind the lookups. */
const real: Record<string, string> = {};
/** Every id the first merchant owns (for the cross-merchant sweep). */
const owned: string[] = [];
/** A payout OTP sent to the merchant (read from the development outbox). */
let payoutOtp = "000000";
/** A step-up code (purpose `sensitive`): 2FA disable needs it whatever the environment. */
let sensitiveOtp = "000000";
/** A sandbox deposit address of the merchant per currency type (funded), and a checkout session. */
const depositAddress = {} as Record<CurrencyType, string>;
const sessionOf = {} as Record<CurrencyType, string>;

function channelOf(path: string): Channel {
  if (path.startsWith("/api/v1/admin/")) return "admin";
  if (path.startsWith("/api/v1/auth/") || path.startsWith("/api/v1/dashboard/")) return "merchant";
  if (path === "/healthz" || path === "/readyz" || path.startsWith("/pay/") || path.startsWith("/l/"))
    return "none";
  return "apiKey";
}

/** A body the route accepts (or refuses for a business reason), the base for one-field changes. */
function validBody(method: string, path: string): Record<string, unknown> | undefined {
  const bodies: Record<string, Record<string, unknown>> = {
    "POST /api/v1/auth/register": {
      email: "hostile-new@example.com",
      password: PASSWORD,
      companyName: "H Co",
    },
    "POST /api/v1/auth/login": { email: "hostile@example.com", password: PASSWORD },
    "POST /api/v1/auth/password/forgot": { email: "hostile@example.com" },
    "POST /api/v1/auth/password/reset": { token: "a".repeat(43), newPassword: PASSWORD },
    "POST /api/v1/auth/otp": { purpose: "payout" },
    "POST /api/v1/auth/password/change": {
      currentPassword: "wrong password!",
      newPassword: PASSWORD,
      otp: "123456",
    },
    // Step-up in every environment (docs/merchants/authentication.md#step-up-for-production-changes); no setup yet: refused (409) after the check,
    // which gives the code back.
    "POST /api/v1/auth/2fa/enable": { code: "123456", otp: sensitiveOtp },
    // 2FA is off: refused (409) after the step-up check, which gives the code back.
    "POST /api/v1/auth/2fa/disable": { otp: sensitiveOtp, totp: "123456" },
    "POST /api/v1/dashboard/api-keys": { environment: "sandbox" },
    // Team accounts: step-up everywhere (account-wide); the merchant's own address is refused
    // after the check (400 on email), which gives the code back for the next change.
    "POST /api/v1/dashboard/invitations": { email: "hostile@example.com", role: "viewer", otp: sensitiveOtp },
    "PATCH /api/v1/dashboard/members/{id}": { role: "viewer", otp: sensitiveOtp },
    "POST /api/v1/dashboard/members/{id}/transfer-ownership": { otp: sensitiveOtp },
    "POST /api/v1/auth/invitations/accept": { token: `ivt_${"a".repeat(43)}`, password: PASSWORD },
    // Step-up routes that take nothing else (otp/totp are needed in production only).
    "POST /api/v1/dashboard/api-keys/{id}/rotate": {},
    // Issue #34: whom a pair acts for (a member's id; step-up for a production pair only).
    "POST /api/v1/dashboard/api-keys/{id}/reassign": { memberId: "usr_hostile" },
    "POST /api/v1/webhook/secret/rotate": {},
    // Issue #40: the decisions on a held deposit take only the step-up codes.
    "POST /api/v1/dashboard/transactions/{id}/release": {},
    "POST /api/v1/dashboard/transactions/{id}/return": {},
    "PATCH /api/v1/dashboard/settings": {
      autoWithdraw: false,
      autoApproveThreshold: { [TRC]: 10 },
      ipAllowlist: [],
    },
    // The checkout page's name and a 1×1 PNG (issue #41).
    "PATCH /api/v1/dashboard/settings/branding": {
      displayName: "Hostile Shop",
      logo: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
    },
    // A public address literal: this machine resolves no public names.
    "POST /api/v1/webhook/url": { webhookUrl: "https://93.184.216.34/hooks" },
    "POST /checkout/session": { amount: 5, currencyType: TRC, orderId: "o-1", expiresInMinutes: 30 },
    "POST /wallet/generate": { currencyType: TRC, label: "l", externalUserId: "u-1" },
    "POST /api/v1/sandbox/checkout/{id}/pay": { amount: 1 },
    "POST /api/v1/sandbox/wallet/{address}/pay": { amount: 1, currencyType: TRC },
    "POST /api/v1/public/withdrawal-requests": { amount: 5, currencyType: TRC, walletAddress: TRON_TO },
    // Issue #41: payment links on both channels.
    "POST /api/v1/public/payment-links": {
      title: "Hostile",
      amount: 5,
      currencyTypes: [TRC],
      maxPayments: 3,
    },
    "POST /api/v1/dashboard/payment-links": {
      title: "Hostile",
      amount: 5,
      currencyTypes: [TRC],
      maxPayments: 3,
    },
    // The payer's form (sent as JSON here): the path's id is a session's, so the answer is the 404 page.
    "POST /l/{id}": { currencyType: TRC },
    "POST /api/v1/public/withdrawal-requests/{id}/reject": { reason: "no" },
    "POST /api/v1/dashboard/withdrawal-requests/{id}/reject": { reason: "no" },
    // More than the balance with a real code: refused (422) after the OTP check, which keeps the
    // code, so every one-field change reaches the payout's own checks.
    "POST /api/v1/dashboard/payouts": {
      amount: 1_000_000,
      currencyType: TRC,
      walletAddress: TRON_TO,
      otp: payoutOtp,
    },
  };
  return bodies[`${method.toUpperCase()} ${path}`];
}

async function send(
  channel: Channel,
  method: string,
  path: string,
  init: { json?: unknown; body?: string; headers?: Record<string, string> } = {},
): Promise<Call> {
  const base =
    path.startsWith("/api/v1/sandbox/") || channel === "apiKey" ? svc.urls.sandbox : svc.urls.production;
  const withBody = init.json !== undefined || init.body !== undefined;
  const headers = {
    ...(withBody && init.body !== undefined ? { "content-type": "application/json" } : {}),
    ...init.headers,
  };
  if (channel === "merchant" || channel === "admin") {
    const b = channel === "merchant" ? merchant : admin;
    // The dashboard's payouts run in sandbox (production has no chain configured here).
    if (channel === "merchant") Object.assign(headers, { "x-environment": "sandbox", ...init.headers });
    const r = await b.req(path, {
      method,
      headers,
      ...(init.json !== undefined ? { json: init.json } : {}),
      ...bodyOf(init),
    });
    // A new code replaces the one before: keep the payout base body's code current.
    if (channel === "merchant" && path === "/api/v1/auth/otp" && r.status === 200) await readPayoutOtp();
    // A sign-in (or a registration) starts another session, and an e-mailed code works only in the
    // session that requested it (issue #34): request the step-up and payout codes again.
    if (
      channel === "merchant" &&
      (path === "/api/v1/auth/login" || path === "/api/v1/auth/register") &&
      r.status < 300
    )
      await renewCodes();
    return r;
  }
  return call(base, path, {
    method,
    headers: { ...(channel === "apiKey" ? api : {}), ...headers },
    ...(init.json !== undefined ? { json: init.json } : {}),
    ...bodyOf(init),
  });
}

let renewing: Promise<void> = Promise.resolve();

/**
 * Fresh `sensitive` and `payout` codes for the merchant browser's current session, one renewal at
 * a time (racing sign-ins each end in one; the last runs with the session the browser kept).
 */
function renewCodes(): Promise<void> {
  const renew = async () => {
    sensitiveOtp = await outboxOtp(merchant, "sensitive");
    const otp = await merchant.req("/api/v1/auth/otp", { json: { purpose: "payout" } });
    expect(otp.status, otp.text).toBe(200);
    await readPayoutOtp();
  };
  renewing = renewing.then(renew, renew);
  return renewing;
}

/** The newest code in the development outbox. */
async function readPayoutOtp(): Promise<void> {
  const mail = await merchant.req("/api/v1/dashboard/dev/mail?limit=1");
  payoutOtp = /code: (\d{6})/.exec(mail.body?.data?.[0]?.subject ?? "")?.[1] ?? "no code";
}

function bodyOf(init: { body?: string }) {
  return init.body !== undefined ? { body: init.body } : {};
}

/**
 * Fills `{name}` path parameters with real values (`{id}` with an object of the route's own kind,
 * so bodies reach the handler behind the lookup), `overrides` first.
 */
function fill(path: string, overrides: Record<string, string> = {}): string {
  const id = path.includes("/withdrawal-requests/")
    ? real.withdrawalId
    : path.includes("/payment-links/")
      ? real.paymentLinkId
      : path.includes("/transactions/")
        ? real.transactionId
        : real.id;
  const values: Record<string, string | undefined> = { ...real, id, ...overrides };
  return path.replace(/\{(\w+)\}/g, (_, name: string) => values[name] ?? "x");
}

function problem(r: Call, what: string): string | undefined {
  if (r.status >= 500) return `${what} → ${r.status} ${r.text.slice(0, 200)}`;
  // docs/merchants/errors.md#429-rate-limited: a throttled request has the rate-limit body and Retry-After (the sweep's many
  // failed sign-ins from one address meet the login throttle, security #18 finding 10).
  if (r.status === 429) {
    if (r.body?.success !== false || typeof r.body?.message !== "string" || !r.headers.get("retry-after"))
      return `${what} → 429 outside the contract's rate-limit body: ${r.text.slice(0, 200)}`;
    return undefined;
  }
  if (r.status >= 400 && r.status !== 404 && r.status !== 405) {
    const e = r.body?.error;
    if (r.body?.success !== false || typeof e?.code !== "string" || typeof e?.message !== "string")
      return `${what} → ${r.status} outside the error envelope: ${r.text.slice(0, 200)}`;
  }
  if (
    r.status === 404 &&
    r.text &&
    r.body?.success !== false &&
    !r.headers.get("content-type")?.includes("html")
  )
    return `${what} → 404 outside the error envelope: ${r.text.slice(0, 200)}`;
  return undefined;
}

let ops: Op[] = [];

/** The routes whose body takes a `currencyType` (from the document: a new one is swept the day it is added). */
const bodyCurrencyOps = () => ops.filter((o) => o.bodyFields?.includes("currencyType"));
/** The routes whose query takes a `currencyType`. */
const queryCurrencyOps = () =>
  ops.filter((o) => o.params.some((p) => p.in === "query" && p.name === "currencyType"));

/** The route's base body in currency type `c`: its family's destination, its own deposit address. */
function currencyBody(op: Op, c: CurrencyType): Record<string, unknown> | undefined {
  const base = validBody(op.method, op.path);
  if (!base) return undefined;
  return {
    ...base,
    currencyType: c,
    ...("walletAddress" in base ? { walletAddress: destinationOf(c) } : {}),
    // A withdrawal request above every network's default fee (ERC20's is 5), within the balance.
    ...(op.path === "/api/v1/public/withdrawal-requests" ? { amount: 10 } : {}),
  };
}

function currencyPath(op: Op, c: CurrencyType): string {
  return fill(op.path, { address: depositAddress[c] });
}

/** A fresh Idempotency-Key where the route takes one (so no answer is a replay of another). */
function freshKey(op: Op): { headers?: Record<string, string> } {
  return op.params.some((p) => p.name === "idempotency-key")
    ? { headers: { "idempotency-key": `k-${Math.random()}` } }
    : {};
}

/**
 * Destinations that are not an outside address of the currency type: the other family's, wrong
 * checksums and lengths, other spellings, burn and test failure addresses, the gateway's own.
 */
function hostileAddresses(): string[] {
  const flipped = EVM_TO.replace(/[a-f]/, (x) => x.toUpperCase()).replace(/[A-F]/, (x) => x.toLowerCase());
  return [
    TRON_TO,
    EVM_TO,
    EVM_TO.toLowerCase(),
    `0x${EVM_TO.slice(2).toUpperCase()}`,
    flipped === EVM_TO ? `${EVM_TO.slice(0, 41)}g` : flipped,
    `0X${EVM_TO.slice(2)}`,
    EVM_TO.slice(2),
    EVM_TO.slice(0, -1),
    `${EVM_TO}0`,
    ` ${EVM_TO}`,
    `${EVM_TO} `,
    `${EVM_TO}\u0000`,
    `0x${"0".repeat(40)}`,
    `0x${"f".repeat(40)}`,
    ...new Set(Object.values(TEST_FAILURE_ADDRESSES)),
    TRON_TO.toLowerCase(),
    `${TRON_TO.slice(0, -1)}${TRON_TO.endsWith("W") ? "X" : "W"}`,
    TRON_TO.slice(0, -1),
    `41${"0".repeat(40)}`,
    "T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwc",
    "vitalik.eth",
    `0x${"g".repeat(40)}`,
    ...new Set(Object.values(depositAddress)),
  ];
}

/** The first currency type of each family (USDT-TRC20, USDT-ERC20). */
const FAMILY_FIRSTS = new Set(
  CURRENCY_TYPES.filter((c, i) => CURRENCY_TYPES.findIndex((d) => familyOf(d) === familyOf(c)) === i),
);

/**
 * The values swept on `field` of a route's body in currency type `c`. The full product of every
 * hostile value, field and currency type would be ten times the field sweep above (which already
 * sends every value to every field in USDT-TRC20), so each currency type gets the values whose
 * handling depends on it, and a subset of the others: the schema refuses those the same way
 * whatever the currency type.
 */
function currencyFieldValues(field: string, c: CurrencyType): unknown[] {
  switch (field) {
    case "currencyType":
      // Another currency type with this one's address (the other family's: a mismatch); the
      // hostile spellings once per family, since the rest of the body only differs by its address.
      return FAMILY_FIRSTS.has(c)
        ? [...CURRENCY_TYPES, ...HOSTILE_CURRENCY_TYPES, ...HOSTILE_SUBSET]
        : [...CURRENCY_TYPES];
    case "walletAddress":
      return [...hostileAddresses(), ...HOSTILE_SUBSET];
    case "amount":
      // Fees, minimums and the on-chain scale (10^12 on BEP20) are the currency type's.
      return [...HOSTILE_VALUES.filter((v) => typeof v === "number"), ...HOSTILE_AMOUNTS, ...HOSTILE_SUBSET];
    default:
      // Labels, references, URLs, codes: the same for every currency type.
      return HOSTILE_SUBSET;
  }
}

/**
 * Points the sweep's merchant browser at the session kept aside for the currency sweeps (signed in
 * as the merchant in `beforeAll`), with fresh codes: the sweeps above register other accounts and
 * sign in as them, and their failed sign-ins lock the merchant's login from this address.
 */
async function merchantSession(): Promise<void> {
  merchant = currencyMerchant;
  let me = await merchant.req("/api/v1/auth/me");
  // A slow run may outlive the access token (15 minutes): the refresh cookie renews it.
  if (me.status === 401) {
    await merchant.req("/api/v1/auth/refresh", { method: "POST", json: {} });
    me = await merchant.req("/api/v1/auth/me");
  }
  expect(me.status, me.text).toBe(200);
  expect(me.body.data.user.email).toBe("hostile@example.com");
  await renewCodes();
}

beforeAll(async () => {
  svc = await startTestService({
    env: {
      DOCS_USER: "docs",
      DOCS_PASSWORD: "s3cret-docs",
      RATE_LIMIT_ENABLED: "false",
      BODY_LIMIT_BYTES: "65536",
      // Every currency type of the registry (sandbox: each on the built-in simulator).
      CURRENCY_TYPES: CURRENCY_TYPES.join(","),
    },
  });
  expect(svc.config.chains.enabled).toEqual(CURRENCY_TYPES);
  const doc = await call(svc.urls.production, "/docs/openapi.json", {
    headers: { authorization: `Basic ${Buffer.from("docs:s3cret-docs").toString("base64")}` },
  });
  expect(doc.status).toBe(200);
  for (const [path, byMethod] of Object.entries(doc.body.paths as Record<string, Record<string, any>>)) {
    for (const [method, op] of Object.entries(byMethod)) {
      const schema = op.requestBody?.content?.["application/json"]?.schema;
      ops.push({
        method: method.toUpperCase(),
        path,
        params: (op.parameters ?? []).map((p: { in: string; name: string }) => ({ in: p.in, name: p.name })),
        bodyFields: schema ? Object.keys(schema.properties ?? {}) : undefined,
      });
    }
  }
  // Logging out or changing the session's credentials last keeps the session for the rest.
  const last = (o: Op) => (o.path === "/api/v1/auth/logout" ? 1 : 0);
  ops = ops.sort((a, b) => last(a) - last(b));

  merchant = new Browser(svc.urls.production);
  const reg = await merchant.req("/api/v1/auth/register", {
    json: { email: "hostile@example.com", password: PASSWORD, companyName: "Hostile Co" },
  });
  expect(reg.status, reg.text).toBe(201);
  const key = (reg.body.data.apiKeys as { environment: string; apiKey: string; apiSecret: string }[]).find(
    (k) => k.environment === "sandbox",
  );
  api = { apikey: key?.apiKey ?? "", "x-api-secret": key?.apiSecret ?? "" };
  await createAdmin(svc.database.db, { email: "hostile-admin@example.com", password: PASSWORD });
  admin = new Browser(svc.urls.production);
  expect(
    (
      await admin.req("/api/v1/auth/login", {
        json: { email: "hostile-admin@example.com", password: PASSWORD },
      })
    ).status,
  ).toBe(200);

  // Real ids: a paid checkout session (its transaction, a webhook event) and a withdrawal request.
  const session = await call(svc.urls.sandbox, "/checkout/session", {
    headers: api,
    json: { amount: 50, currencyType: TRC },
  });
  expect(session.status, session.text).toBe(201);
  real.id = session.body.data.id;
  const paid = await call(svc.urls.sandbox, `/api/v1/sandbox/checkout/${real.id}/pay`, {
    headers: api,
    json: {},
  });
  expect(paid.status, paid.text).toBeLessThan(300);
  const wallet = await call(svc.urls.sandbox, "/wallet/generate", {
    headers: api,
    json: { currencyType: TRC },
  });
  expect(wallet.status, wallet.text).toBeLessThan(300);
  real.address = wallet.body.data.address ?? wallet.body.data.walletAddress;
  // The payment is confirmed by the sandbox chain's watcher, which writes the webhook event.
  let events = await call(svc.urls.sandbox, "/api/v1/webhook/events", { headers: api });
  for (let i = 0; i < 200 && events.body?.data?.length === 0; i++) {
    await new Promise((r) => setTimeout(r, 50));
    events = await call(svc.urls.sandbox, "/api/v1/webhook/events", { headers: api });
  }
  expect(events.status, events.text).toBe(200);
  expect(events.body.data.length).toBeGreaterThan(0);
  real.webhookEventId = events.body.data[0].webhookEventId;
  real.transactionId = events.body.data[0].transactionId;
  const withdrawal = await call(svc.urls.sandbox, "/api/v1/public/withdrawal-requests", {
    headers: api,
    json: { amount: 5, currencyType: TRC, walletAddress: TRON_TO },
  });
  expect(withdrawal.status, withdrawal.text).toBe(201);
  real.withdrawalId = withdrawal.body.data.id;
  const link = await call(svc.urls.sandbox, "/api/v1/public/payment-links", {
    headers: api,
    json: { title: "Hostile link", amount: 5, currencyTypes: [TRC] },
  });
  expect(link.status, link.text).toBe(201);
  real.paymentLinkId = link.body.data.id;
  owned.push(
    session.body.data.id,
    events.body.data[0].transactionId,
    events.body.data[0].webhookEventId,
    withdrawal.body.data.id,
    link.body.data.id,
    real.address ?? "",
  );
  sensitiveOtp = await outboxOtp(merchant, "sensitive");
  const otp = await merchant.req("/api/v1/auth/otp", { json: { purpose: "payout" } });
  expect(otp.status, otp.text).toBe(200);
  await readPayoutOtp();
  expect(payoutOtp).toMatch(/^\d{6}$/);
  const keys = await merchant.req("/api/v1/dashboard/api-keys", { headers: { "x-environment": "sandbox" } });
  expect(keys.status, keys.text).toBe(200);
  owned.push(...keys.body.data.map((k: { id: string }) => k.id));

  currencyMerchant = new Browser(svc.urls.production);
  const signIn = await currencyMerchant.req("/api/v1/auth/login", {
    json: { email: "hostile@example.com", password: PASSWORD },
  });
  expect(signIn.status, signIn.text).toBe(200);

  // Each currency type: a deposit address paid from the faucet (a balance, so withdrawals reach
  // past the balance check) and a checkout session (for its sandbox payment).
  for (const c of CURRENCY_TYPES) {
    const w = await call(svc.urls.sandbox, "/wallet/generate", { headers: api, json: { currencyType: c } });
    expect(w.status, `${c}: ${w.text}`).toBeLessThan(300);
    depositAddress[c] = w.body.data.address ?? w.body.data.walletAddress;
    expect(depositAddress[c]).toMatch(familyOf(c) === "tron" ? /^T/ : /^0x[0-9a-fA-F]{40}$/);
    const funded = await call(svc.urls.sandbox, `/api/v1/sandbox/wallet/${depositAddress[c]}/pay`, {
      headers: api,
      json: { amount: 50, currencyType: c },
    });
    expect(funded.status, `${c}: ${funded.text}`).toBe(202);
    const s = await call(svc.urls.sandbox, "/checkout/session", {
      headers: api,
      json: { amount: 20, currencyType: c },
    });
    expect(s.status, `${c}: ${s.text}`).toBe(201);
    sessionOf[c] = s.body.data.id;
  }
}, 60_000);

afterAll(() => svc?.close());

describe("every operation of the OpenAPI document refuses hostile input cleanly", () => {
  it("the document lists the operations the sweep expects (the sweep is not empty)", () => {
    expect(ops.length).toBeGreaterThan(50);
    expect(ops.filter((o) => o.bodyFields).length).toBeGreaterThan(15);
    // Every body-taking route has a valid base body here, so one-field changes reach its handler.
    const missing = ops.filter(
      (o) => o.bodyFields && o.bodyFields.length > 0 && !validBody(o.method, o.path),
    );
    expect(missing.map((o) => `${o.method} ${o.path}`)).toEqual([]);
  });

  it("each base body passes validation (a refusal, if any, is the business rule of a named field)", async () => {
    // Refused on purpose: a made-up reset token, a wrong current password.
    const businessRefusals: Record<string, string> = {
      "POST /api/v1/auth/password/reset": "token",
      "POST /api/v1/auth/password/change": "currentPassword",
      "POST /api/v1/dashboard/invitations": "email",
      "POST /api/v1/auth/invitations/accept": "token",
    };
    const wrong: string[] = [];
    for (const op of ops) {
      const base = validBody(op.method, op.path);
      if (!base) continue;
      const r = await send(channelOf(op.path), op.method, fill(op.path), {
        json: base,
        ...(op.params.some((p) => p.name === "idempotency-key")
          ? { headers: { "idempotency-key": `base-${op.path}` } }
          : {}),
      });
      const expected = businessRefusals[`${op.method} ${op.path}`];
      const fields = (r.body?.error?.details?.fields ?? []).map((f: { field: string }) => f.field);
      if (r.status === 400 && !(expected && fields.length === 1 && fields[0] === expected))
        wrong.push(`${op.method} ${op.path} → 400 ${r.text.slice(0, 200)}`);
      if (r.status !== 400 && expected)
        wrong.push(`${op.method} ${op.path} → ${r.status}, expected a 400 on ${expected}`);
    }
    expect(wrong).toEqual([]);
  });

  it("path parameters, query values, raw bodies, content types and headers", async () => {
    const problems: string[] = [];
    let authenticated = 0;
    for (const op of ops) {
      const channel = channelOf(op.path);
      const pathParams = op.params.filter((p) => p.in === "path").map((p) => p.name);
      const queryParams = op.params.filter((p) => p.in === "query").map((p) => p.name);
      const headerParams = op.params.filter((p) => p.in === "header").map((p) => p.name);
      const realPath = fill(op.path);
      const base = validBody(op.method, op.path);
      const json = base ?? (op.method === "GET" || op.method === "DELETE" ? undefined : {});
      const check = async (what: string, init: Parameters<typeof send>[3], path = realPath) => {
        const r = await send(channel, op.method, path, init);
        if (r.status !== 401 && r.status !== 403) authenticated++;
        const p = problem(r, `${op.method} ${path.slice(0, 80)} ${what}`);
        if (p) problems.push(p);
      };
      // An SSE stream answered "as is" would stay open (the hosted page's, the webhook stream):
      // only hostile ids and queries there.
      const isStream =
        (op.path.startsWith("/pay/") && op.path.endsWith("/events")) || op.path.endsWith("/webhook/stream");
      if (!isStream) await check("as is", { json });
      for (const name of pathParams) {
        for (const v of HOSTILE_TEXT) {
          if (v === "") continue; // an empty segment is another route
          await check(
            `path ${name}=${JSON.stringify(v).slice(0, 20)}`,
            { json },
            fill(op.path, { [name]: encodeURIComponent(v) }),
          );
        }
        for (const raw of ["%ZZ", "%00", "%2e%2e", "a%2Fb", "%C0%AF"]) {
          await check(`path ${name}=${raw}`, { json }, fill(op.path, { [name]: raw }));
        }
      }
      if (op.path.startsWith("/pay/") && op.path.endsWith("/events")) continue;
      for (const name of queryParams) {
        for (const v of HOSTILE_TEXT) {
          await check(
            `query ${name}=${JSON.stringify(v).slice(0, 20)}`,
            { json },
            `${realPath}?${name}=${encodeURIComponent(v)}`,
          );
        }
        for (const raw of [`${name}=1&${name}=2`, `${name}[a]=1`, `${name}=%ZZ`, `${name}`, `${name}=%00`]) {
          await check(`query ${raw}`, { json }, `${realPath}?${raw}`);
        }
      }
      for (const name of headerParams) {
        for (const v of ["", "x".repeat(300), "💥", " a ", "\t"]) {
          await check(`header ${name}=${JSON.stringify(v).slice(0, 20)}`, {
            json,
            headers: { [name]: encodeURI(v) === v ? v : encodeURIComponent(v) },
          });
        }
      }
      if (op.method === "GET" || op.method === "DELETE") continue;
      for (const raw of RAW_BODIES) await check(`body ${JSON.stringify(raw.slice(0, 30))}`, { body: raw });
      for (const type of [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/json; charset=latin1",
        "application/xml",
      ]) {
        await check(`content-type ${type}`, {
          body: JSON.stringify(json ?? {}),
          headers: { "content-type": type },
        });
      }
      await check("body over the limit", { body: JSON.stringify({ ...json, pad: "x".repeat(70_000) }) });
    }
    expect(problems).toEqual([]);
    // The sweep reached past authentication (a broken session would make every answer a 401).
    expect(authenticated).toBeGreaterThan(1000);
  }, 600_000);

  it("another merchant's ids are not found through any route, on either channel", async () => {
    const other = new Browser(svc.urls.production);
    const reg = await other.req("/api/v1/auth/register", {
      json: { email: "hostile-other@example.com", password: PASSWORD, companyName: "Other Co" },
    });
    expect(reg.status, reg.text).toBe(201);
    const key = (reg.body.data.apiKeys as { environment: string; apiKey: string; apiSecret: string }[]).find(
      (k) => k.environment === "sandbox",
    );
    const otherApi = { apikey: key?.apiKey ?? "", "x-api-secret": key?.apiSecret ?? "" };
    expect(owned.length).toBeGreaterThanOrEqual(6);
    expect(owned.every((id) => typeof id === "string" && id.length > 5)).toBe(true);
    const leaks: string[] = [];
    let tried = 0;
    for (const op of ops) {
      const names = op.params.filter((p) => p.in === "path").map((p) => p.name);
      // Admin routes are cross-merchant by design, the payment page is public, and a sandbox
      // payment to an address is what any customer can make.
      if (
        names.length === 0 ||
        op.path.startsWith("/api/v1/admin/") ||
        op.path.startsWith("/pay/") ||
        op.path.startsWith("/l/")
      )
        continue;
      if (op.path.startsWith("/api/v1/sandbox/wallet/")) continue;
      const channel = channelOf(op.path);
      const body = validBody(op.method, op.path);
      for (const id of owned) {
        const path = op.path.replace(/\{\w+\}/g, encodeURIComponent(id));
        const init = {
          method: op.method,
          headers: { "x-environment": "sandbox" },
          ...(body ? { json: body } : op.method === "POST" ? { json: {} } : {}),
        };
        const r =
          channel === "merchant"
            ? await other.req(path, init)
            : await call(svc.urls.sandbox, path, { ...init, headers: { ...init.headers, ...otherApi } });
        tried++;
        if (r.status !== 404 && r.status !== 400)
          leaks.push(`${op.method} ${path} → ${r.status} ${r.text.slice(0, 120)}`);
      }
    }
    expect(leaks).toEqual([]);
    expect(tried).toBeGreaterThan(60);
  });

  it("the same request eight times at once, on every writing route: no 5xx (races end in a 4xx or a success)", async () => {
    const problems: string[] = [];
    for (const op of ops) {
      if (op.method === "GET" || op.path === "/api/v1/auth/logout" || op.path.startsWith("/pay/")) continue;
      const channel = channelOf(op.path);
      const path = fill(op.path);
      const body = validBody(op.method, op.path);
      // The same Idempotency-Key on all eight where the route takes one: one creation, seven replays.
      const headers = op.params.some((p) => p.name === "idempotency-key")
        ? { "idempotency-key": `race-${op.path}` }
        : undefined;
      const answers = await Promise.all(
        Array.from({ length: 8 }, () =>
          send(channel, op.method, path, {
            ...(body ? { json: body } : op.method === "POST" ? { json: {} } : {}),
            ...(headers ? { headers } : {}),
          }),
        ),
      );
      for (const r of answers) {
        const p = problem(r, `${op.method} ${path} ×8`);
        if (p) problems.push(p);
      }
    }
    expect(problems).toEqual([]);
  });

  it("hostile credentials and request headers on each channel", async () => {
    const problems: string[] = [];
    const values = [
      "",
      " ",
      "x".repeat(4000),
      "💥",
      "\u00ff\u00fe",
      "Bearer",
      "Bearer ",
      "Basic Og==",
      "a=b; c",
      "null",
    ];
    const targets: [string, string][] = [
      [svc.urls.sandbox, "/api/v1/public/account"],
      [svc.urls.sandbox, "/checkout/session/x"],
      [svc.urls.production, "/api/v1/dashboard/balance"],
      [svc.urls.production, "/api/v1/admin/merchants"],
      [svc.urls.production, "/pay/x"],
    ];
    const headerNames = [
      "apikey",
      "x-api-secret",
      "authorization",
      "cookie",
      "x-environment",
      "origin",
      "x-request-id",
      "x-forwarded-for",
      "accept",
      "accept-language",
    ];
    for (const [base, path] of targets) {
      for (const name of headerNames) {
        for (const v of values) {
          // Header values are bytes: anything beyond Latin-1 goes as its UTF-8 bytes read as Latin-1.
          const raw = Buffer.from(v, "utf8").toString("latin1");
          const headers = { ...(name === "apikey" || name === "x-api-secret" ? {} : api), [name]: raw };
          const r = await call(base, path, { headers });
          const p = problem(r, `GET ${path} ${name}=${JSON.stringify(v).slice(0, 20)}`);
          if (p) problems.push(p);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it("every body field, replaced by each hostile value in turn (the rest of the body valid)", async () => {
    const problems: string[] = [];
    let reached = 0;
    for (const op of ops) {
      const base = validBody(op.method, op.path);
      if (!op.bodyFields || !base || op.path === "/api/v1/auth/logout") continue;
      const channel = channelOf(op.path);
      const path = fill(op.path);
      for (const field of [...op.bodyFields, "unknownField"]) {
        for (const v of HOSTILE_VALUES) {
          const r = await send(channel, op.method, path, {
            json: { ...base, [field]: v },
            ...(op.params.some((p) => p.name === "idempotency-key")
              ? { headers: { "idempotency-key": `k-${Math.random()}` } }
              : {}),
          });
          if (r.status !== 400) reached++;
          const p = problem(r, `${op.method} ${path} ${field}=${JSON.stringify(v)?.slice(0, 30)}`);
          if (p) problems.push(p);
        }
      }
    }
    expect(problems).toEqual([]);
    // Some hostile values are valid for some fields, and those reach the handlers.
    expect(reached).toBeGreaterThan(50);
  }, 600_000);

  it("each currency type: the routes that take a currencyType accept a valid body and query of it", async () => {
    await merchantSession();
    const routes = bodyCurrencyOps().map((o) => `${o.method} ${o.path}`);
    expect(routes).toEqual(
      expect.arrayContaining([
        "POST /checkout/session",
        "POST /wallet/generate",
        "POST /api/v1/sandbox/wallet/{address}/pay",
        "POST /api/v1/public/withdrawal-requests",
        "POST /api/v1/dashboard/payouts",
      ]),
    );
    expect(queryCurrencyOps().length).toBeGreaterThanOrEqual(3);
    // Made at once in any currency type (the withdrawal request and the payout may be refused
    // after validation: the balance).
    const mustSucceed = new Set([
      "POST /checkout/session",
      "POST /wallet/generate",
      "POST /api/v1/sandbox/wallet/{address}/pay",
    ]);
    const wrong: string[] = [];
    for (const c of CURRENCY_TYPES) {
      for (const op of bodyCurrencyOps()) {
        const body = currencyBody(op, c);
        if (!body) {
          wrong.push(`${op.method} ${op.path}: no base body`);
          continue;
        }
        const path = currencyPath(op, c);
        const r = await send(channelOf(op.path), op.method, path, { json: body, ...freshKey(op) });
        const p = problem(r, `${c} ${op.method} ${path}`);
        if (p) wrong.push(p);
        if (r.status === 400 || (mustSucceed.has(`${op.method} ${op.path}`) && r.status >= 300))
          wrong.push(`${c} ${op.method} ${path} → ${r.status} ${r.text.slice(0, 200)}`);
      }
      for (const op of queryCurrencyOps()) {
        const path = `${fill(op.path)}?currencyType=${c}`;
        const r = await send(channelOf(op.path), op.method, path);
        if (r.status !== 200) wrong.push(`${op.method} ${path} → ${r.status} ${r.text.slice(0, 200)}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it("each currency type: hostile values on each field of the routes that take a currencyType", async () => {
    await merchantSession();
    const problems: string[] = [];
    let reached = 0;
    for (const c of CURRENCY_TYPES) {
      for (const op of bodyCurrencyOps()) {
        const channel = channelOf(op.path);
        const path = currencyPath(op, c);
        for (const field of [...(op.bodyFields ?? []), "unknownField"]) {
          for (const v of currencyFieldValues(field, c)) {
            const r = await send(channel, op.method, path, {
              json: { ...currencyBody(op, c), [field]: v },
              ...freshKey(op),
            });
            if (r.status !== 400) reached++;
            const p = problem(r, `${c} ${op.method} ${path} ${field}=${JSON.stringify(v)?.slice(0, 40)}`);
            if (p) problems.push(p);
          }
        }
      }
    }
    for (const op of queryCurrencyOps()) {
      const channel = channelOf(op.path);
      const path = fill(op.path);
      const strings = HOSTILE_CURRENCY_TYPES.filter((v): v is string => typeof v === "string");
      const queries = [
        ...[...CURRENCY_TYPES, ...strings].map((v) => `currencyType=${encodeURIComponent(v)}`),
        "currencyType=USDT-TRC20&currencyType=USDC-BASE",
        "currencyType[]=USDC-BASE",
        "currencyType=USDC%2DBASE",
        "currencyType=USDC-BASE%00",
        "currencyType=USDC+BASE",
      ];
      for (const q of queries) {
        const r = await send(channel, op.method, `${path}?${q}`);
        const p = problem(r, `${op.method} ${path}?${q.slice(0, 60)}`);
        if (p) problems.push(p);
      }
    }
    expect(problems).toEqual([]);
    // Valid values of some fields (another currency type, a valid amount) reach the handlers.
    expect(reached).toBeGreaterThan(500);
  }, 600_000);

  it("each currency type: another family's address is refused, and sandbox payments take hostile addresses and amounts", async () => {
    await merchantSession();
    const problems: string[] = [];
    const byPath = (method: string, path: string) => {
      const op = ops.find((o) => o.method === method && o.path === path);
      if (!op) throw new Error(`${method} ${path} is not in the document`);
      return op;
    };
    const walletPay = byPath("POST", "/api/v1/sandbox/wallet/{address}/pay");
    const sessionPay = byPath("POST", "/api/v1/sandbox/checkout/{id}/pay");
    const destinations = [
      byPath("POST", "/api/v1/public/withdrawal-requests"),
      byPath("POST", "/api/v1/dashboard/payouts"),
    ];
    for (const c of CURRENCY_TYPES) {
      const others = CURRENCY_TYPES.filter((o) => familyOf(o) !== familyOf(c));
      // A TRON address with an EVM currency type and an EVM address with TRC20: a 400, not a transfer.
      for (const op of destinations) {
        for (const a of new Set(others.map(destinationOf))) {
          const r = await send(channelOf(op.path), op.method, op.path, {
            json: { ...currencyBody(op, c), walletAddress: a },
            ...freshKey(op),
          });
          const what = `${c} ${op.method} ${op.path} walletAddress=${a}`;
          const p = problem(r, what);
          if (p) problems.push(p);
          if (r.status !== 400)
            problems.push(`${what} → ${r.status}, expected a 400 (another network's address)`);
        }
      }
      // The faucet pays only the merchant's own addresses of that currency type's family.
      for (const a of new Set(others.map((o) => depositAddress[o]))) {
        const path = fill(walletPay.path, { address: a });
        const r = await send("apiKey", "POST", path, { json: { amount: 1, currencyType: c } });
        const what = `${c} POST ${path}`;
        const p = problem(r, what);
        if (p) problems.push(p);
        if (r.status < 400)
          problems.push(`${what} → ${r.status}, expected a refusal (another network's address)`);
      }
      for (const a of hostileAddresses()) {
        const path = fill(walletPay.path, { address: encodeURIComponent(a) });
        const r = await send("apiKey", "POST", path, { json: { amount: 1, currencyType: c } });
        const p = problem(r, `${c} POST ${path}`);
        if (p) problems.push(p);
      }
      // A checkout session of each currency type paid by the faucet with hostile amounts (the
      // address payments' amounts are swept in the test above, on the route's `amount` field).
      const path = fill(sessionPay.path, { id: sessionOf[c] });
      for (const v of currencyFieldValues("amount", c)) {
        const r = await send("apiKey", "POST", path, { json: { amount: v } });
        const p = problem(r, `${c} POST ${path} amount=${JSON.stringify(v)?.slice(0, 40)}`);
        if (p) problems.push(p);
      }
    }
    expect(problems).toEqual([]);
  }, 600_000);
});

describe("a currency type that exists but is not enabled is refused cleanly", () => {
  let svc2: TestService;
  let merchant2: Browser;
  let admin2: Browser;
  let api2: Record<string, string> = {};
  const address2: Partial<Record<"tron" | "evm", string>> = {};
  const enabled = DEFAULT_ENABLED_CURRENCY_TYPES;
  const disabled = CURRENCY_TYPES.filter((c) => !enabled.includes(c));

  beforeAll(async () => {
    // `CURRENCY_TYPES` unset: the default (USDT-TRC20 and USDT-ERC20) only.
    svc2 = await startTestService({ env: { RATE_LIMIT_ENABLED: "false" } });
    expect(svc2.config.chains.enabled).toEqual(enabled);
    merchant2 = new Browser(svc2.urls.production);
    const reg = await merchant2.req("/api/v1/auth/register", {
      json: { email: "hostile-two@example.com", password: PASSWORD, companyName: "Two Co" },
    });
    expect(reg.status, reg.text).toBe(201);
    const key = (reg.body.data.apiKeys as { environment: string; apiKey: string; apiSecret: string }[]).find(
      (k) => k.environment === "sandbox",
    );
    api2 = { apikey: key?.apiKey ?? "", "x-api-secret": key?.apiSecret ?? "" };
    await createAdmin(svc2.database.db, { email: "hostile-admin2@example.com", password: PASSWORD });
    admin2 = new Browser(svc2.urls.production);
    const login = await admin2.req("/api/v1/auth/login", {
      json: { email: "hostile-admin2@example.com", password: PASSWORD },
    });
    expect(login.status, login.text).toBe(200);
    for (const c of enabled) {
      const w = await call(svc2.urls.sandbox, "/wallet/generate", {
        headers: api2,
        json: { currencyType: c },
      });
      expect(w.status, w.text).toBeLessThan(300);
      address2[familyOf(c)] = w.body.data.address ?? w.body.data.walletAddress;
    }
  }, 60_000);

  afterAll(() => svc2?.close());

  it("every route that takes a currencyType: 4xx in the envelope for each one not enabled", async () => {
    expect(disabled.length).toBeGreaterThan(0);
    expect(address2.tron && address2.evm).toBeTruthy();
    const ask = async (op: Op, path: string, json?: unknown) => {
      const channel = channelOf(op.path);
      const headers = { "x-environment": "sandbox", ...freshKey(op).headers };
      const init = { method: op.method, headers, ...(json !== undefined ? { json } : {}) };
      if (channel === "merchant") return merchant2.req(path, init);
      if (channel === "admin") return admin2.req(path, init);
      return call(svc2.urls.sandbox, path, { ...init, headers: { ...headers, ...api2 } });
    };
    const mustSucceed = new Set([
      "POST /checkout/session",
      "POST /wallet/generate",
      "POST /api/v1/sandbox/wallet/{address}/pay",
    ]);
    const problems: string[] = [];
    for (const c of CURRENCY_TYPES) {
      const on = enabled.includes(c);
      for (const op of bodyCurrencyOps()) {
        const body = {
          ...currencyBody(op, c),
          ...(op.path === "/api/v1/dashboard/payouts" ? { otp: await outboxOtp(merchant2, "payout") } : {}),
        };
        const path = fill(op.path, { address: address2[familyOf(c)] ?? "x" });
        const r = await ask(op, path, body);
        const what = `${c} (${on ? "enabled" : "not enabled"}) ${op.method} ${path}`;
        const p = problem(r, what);
        if (p) problems.push(p);
        // Enabled: valid (the setup reaches the handlers); not enabled: refused, never made.
        if (on && (r.status === 400 || (mustSucceed.has(`${op.method} ${op.path}`) && r.status >= 300)))
          problems.push(`${what} → ${r.status} ${r.text.slice(0, 200)}`);
        if (!on && (r.status < 400 || r.status >= 500))
          problems.push(`${what} → ${r.status}, expected a 4xx: ${r.text.slice(0, 200)}`);
      }
      for (const op of queryCurrencyOps()) {
        const path = `${fill(op.path)}?currencyType=${c}`;
        const r = await ask(op, path);
        const p = problem(r, `${c} ${op.method} ${path}`);
        if (p) problems.push(p);
      }
    }
    expect(problems).toEqual([]);
  });
});
