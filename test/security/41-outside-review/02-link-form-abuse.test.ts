import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { payerPost } from "../../links/support.js";
import { call, startTestService, type TestService } from "../../support/harness.js";
import { registerOwner } from "../../team/support.js";

// Outside review of issue #41: the payer's form `POST /l/{id}`. A cross-site form (CSRF) creates
// nothing, and an open amount outside its bounds cannot sneak past the parser (exponent notation,
// signs, other digit scripts, hex, whitespace tricks, huge numbers): nothing is created, 400.
let svc: TestService;
let owner: Awaited<ReturnType<typeof registerOwner>>;
let openLink: string;

const TRC = "USDT-TRC20";

beforeAll(async () => {
  svc = await startTestService({ env: { RATE_LIMIT_ENABLED: "false" } });
  owner = await registerOwner(svc);
  const r = await call(svc.urls.sandbox, "/api/v1/public/payment-links", {
    headers: owner.sandboxApi,
    json: { title: "Donation", minAmount: 5, maxAmount: 100, currencyTypes: [TRC] },
  });
  expect(r.status, r.text).toBe(201);
  openLink = r.body.data.id;
}, 60_000);
afterAll(async () => {
  await svc?.close();
});

async function sessionsOfLink(): Promise<{ amount: string }[]> {
  return svc.database.db
    .selectFrom("transactions")
    .select(["amount"])
    .where("payment_link_id", "=", openLink)
    .execute() as unknown as Promise<{ amount: string }[]>;
}

describe("POST /l/{id}: cross-site forms (CSRF)", () => {
  const hostile: [string, Record<string, string>][] = [
    ["Origin of another site", { origin: "https://evil.example" }],
    ["Origin null (sandboxed iframe, data: URL)", { origin: "null" }],
    ["Sec-Fetch-Site cross-site", { "sec-fetch-site": "cross-site" }],
    ["Sec-Fetch-Site same-site (a sibling subdomain)", { "sec-fetch-site": "same-site" }],
    ["Origin that only starts like ours", { origin: "http://sandbox.stablegate.test.evil.example" }],
    ["Origin with our host as userinfo", { origin: "http://sandbox.stablegate.test@evil.example" }],
  ];
  for (const [name, headers] of hostile) {
    it(`${name}: 403, nothing created`, async () => {
      const before = (await sessionsOfLink()).length;
      const r = await payerPost(svc.urls.sandbox, openLink, { currencyType: TRC, amount: "10" }, headers);
      expect(r.status, r.text).toBe(403);
      expect(r.location).toBeNull();
      expect((await sessionsOfLink()).length).toBe(before);
    });
  }

  it("the configured base URL's own origin is accepted", async () => {
    const r = await payerPost(
      svc.urls.sandbox,
      openLink,
      { currencyType: TRC, amount: "10" },
      { origin: "http://sandbox.stablegate.test", "sec-fetch-site": "same-origin" },
    );
    expect(r.status, r.text).toBe(303);
  });
});

describe("POST /l/{id}: open amount bounds (min 5, max 100)", () => {
  const refused = [
    "1e-7",
    "1e1",
    "5e1",
    "1E2",
    "-0",
    "-10",
    "+10",
    "0x10",
    "1_0",
    "10 0",
    "١٠", // Arabic-Indic digits
    "１０", // full-width digits
    "𝟏𝟎", // mathematical bold digits
    "Infinity",
    "NaN",
    "",
    " ",
    "4.9999999",
    "10.0000001",
    "100.000001",
    "99999999999999999999999999999",
    "1000000000.000001",
    "0",
    "0.0",
    "10\u0000",
    ".",
    "10..0",
  ];
  for (const amount of refused) {
    it(`refuses ${JSON.stringify(amount)} with 400 and creates nothing`, async () => {
      const before = (await sessionsOfLink()).length;
      const r = await payerPost(svc.urls.sandbox, openLink, { currencyType: TRC, amount });
      expect(r.status, r.text).toBe(400);
      expect((await sessionsOfLink()).length).toBe(before);
    });
  }

  it("an amount inside the bounds opens a session of exactly that amount", async () => {
    const before = await sessionsOfLink();
    const r = await payerPost(svc.urls.sandbox, openLink, { currencyType: TRC, amount: "5" });
    expect(r.status, r.text).toBe(303);
    const after = await sessionsOfLink();
    expect(after.length).toBe(before.length + 1);
    const amounts = after.map((s) => BigInt(String(s.amount).split(".")[0] ?? "0"));
    for (const a of amounts) expect(a >= 5_000_000n && a <= 100_000_000n).toBe(true);
  });

  it("an amount field repeated in the body cannot smuggle a second value past the bounds", async () => {
    const before = (await sessionsOfLink()).length;
    const res = await fetch(`${svc.urls.sandbox}/l/${openLink}`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `currencyType=${TRC}&amount=10&amount=0.000001`,
    });
    const text = await res.text();
    if (res.status === 303) {
      const rows = await sessionsOfLink();
      expect(rows.length).toBe(before + 1);
      const min = rows
        .map((s) => BigInt(String(s.amount).split(".")[0] ?? "0"))
        .sort((a, b) => (a < b ? -1 : 1))[0];
      expect(min !== undefined && min >= 5_000_000n, text).toBe(true);
    } else {
      expect(res.status, text).toBe(400);
      expect((await sessionsOfLink()).length).toBe(before);
    }
  });

  it("a network the link does not offer is refused", async () => {
    const before = (await sessionsOfLink()).length;
    const r = await payerPost(svc.urls.sandbox, openLink, { currencyType: "USDT-ERC20", amount: "10" });
    expect(r.status, r.text).toBe(400);
    expect((await sessionsOfLink()).length).toBe(before);
  });

  it("a JSON body on the form route is not an alternative way in", async () => {
    const before = (await sessionsOfLink()).length;
    const r = await call(svc.urls.sandbox, `/l/${openLink}`, {
      json: { currencyType: TRC, amount: 0.000001 },
      headers: { origin: "https://evil.example" },
    });
    expect(r.status).not.toBe(303);
    expect((await sessionsOfLink()).length).toBe(before);
  });
});
