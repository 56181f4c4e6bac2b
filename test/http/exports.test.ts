import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../../src/domain/ids.js";
import { UNIT } from "../../src/domain/money.js";
import { getBalances } from "../../src/ledger/index.js";
import { csvCell, csvRow } from "../../src/lib/csv.js";
import type { CreatedMerchant } from "../../src/merchants/index.js";
import { EXPORT_COLUMNS, exportTransactionsCsv, insertTransaction } from "../../src/transactions/index.js";
import { Browser } from "../dashboard/support.js";
import { call, keysOf, startTestService, type TestService } from "../support/harness.js";

// Issue #21 "Exports": GET …/exports/transactions.csv on both channels, streamed, RFC 4180,
// formula-injection-safe cells, netAmount summing to the ledger.

/** RFC 4180 parser (the test's own, independent of `src/lib/csv.ts`): records of fields. */
function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let field = "";
  let record: string[] = [];
  let i = 0;
  let quoted = false;
  while (i < text.length) {
    const c = text[i] as string;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i += 2;
      } else if (c === '"') {
        quoted = false;
        i++;
      } else {
        field += c;
        i++;
      }
    } else if (c === '"' && field === "") {
      quoted = true;
      i++;
    } else if (c === ",") {
      record.push(field);
      field = "";
      i++;
    } else if (c === "\r" && text[i + 1] === "\n") {
      record.push(field);
      records.push(record);
      record = [];
      field = "";
      i += 2;
    } else {
      if (c === "\n" || c === "\r" || c === '"') throw new Error(`bare ${JSON.stringify(c)} at ${i}`);
      field += c;
      i++;
    }
  }
  if (quoted || field !== "" || record.length > 0) throw new Error("the last record has no CRLF");
  return records;
}

type Row = Record<(typeof EXPORT_COLUMNS)[number], string>;

function objects(text: string): Row[] {
  const [header, ...rows] = parseCsv(text);
  expect(header).toEqual([...EXPORT_COLUMNS]);
  return rows.map((r) => {
    expect(r).toHaveLength(EXPORT_COLUMNS.length);
    return Object.fromEntries(EXPORT_COLUMNS.map((c, i) => [c, r[i] as string])) as Row;
  });
}

/** Exact sum of decimal USDT texts, in base units. */
function sumUnits(values: string[]): bigint {
  return values.reduce((s, v) => {
    const [whole = "0", frac = ""] = v.split(".");
    return s + BigInt(whole) * UNIT + BigInt(frac.padEnd(6, "0"));
  }, 0n);
}

describe("csvCell", () => {
  it("quotes per RFC 4180 and defuses formula starts", () => {
    expect(csvCell("plain")).toBe("plain");
    expect(csvCell(null)).toBe("");
    expect(csvCell('a "b", c')).toBe('"a ""b"", c"');
    expect(csvCell("two\nlines")).toBe('"two\nlines"');
    for (const start of ["=", "+", "-", "@", "\t", "\r"]) {
      expect(
        csvCell(`${start}1+1`).startsWith(`'${start}`) || csvCell(`${start}1+1`).startsWith(`"'${start}`),
      ).toBe(true);
    }
    expect(csvCell('=HYPERLINK("http://x","y")')).toBe(`"'=HYPERLINK(""http://x"",""y"")"`);
    expect(csvRow(["a", null, "b,c"])).toBe('a,,"b,c"\r\n');
  });
});

let svc: TestService;
let merchant: CreatedMerchant;
let other: CreatedMerchant;
let headers: Record<string, string>;

async function addTx(
  m: CreatedMerchant,
  t: {
    orderId?: string;
    reference?: string;
    amount?: bigint;
    status?: "pending" | "confirmed";
    createdAt?: Date;
    wrongNetwork?: boolean;
  },
) {
  const id = newId("tx");
  await insertTransaction(svc.database.db, {
    id,
    merchantId: m.id,
    environment: "sandbox",
    type: "deposit",
    status: t.status ?? "pending",
    currencyType: "USDT-TRC20",
    amount: t.amount ?? UNIT,
    fee: 0n,
    orderId: t.orderId ?? null,
    reference: t.reference ?? null,
    ...(t.createdAt ? { createdAt: t.createdAt } : {}),
    ...(t.wrongNetwork ? { wrongNetwork: true } : {}),
  });
  return id;
}

async function waitFor<T>(read: () => Promise<T>, done: (v: T) => boolean, ms = 20_000): Promise<T> {
  const start = Date.now();
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    if (Date.now() - start > ms) throw new Error(`timed out; last: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

beforeAll(async () => {
  svc = await startTestService();
  merchant = await svc.createMerchant();
  other = await svc.createMerchant();
  const k = keysOf(merchant, "sandbox");
  headers = { apikey: k.apiKey, "x-api-secret": k.apiSecret };
});
afterAll(async () => {
  await svc?.close();
});

describe("GET /api/v1/public/exports/transactions.csv", () => {
  it("streams real deposits as CSV whose netAmount sums to the ledger's balance", async () => {
    const amounts = [12.5, 0.000001, 1234.56789];
    for (const amount of amounts) {
      const s = await call(svc.urls.sandbox, "/checkout/session", {
        headers,
        json: { amount, currencyType: "USDT-TRC20" },
      });
      expect(s.status, s.text).toBe(201);
      const paid = await call(svc.urls.sandbox, `/api/v1/sandbox/checkout/${s.body.data.id}/pay`, {
        headers,
        method: "POST",
      });
      expect(paid.status, paid.text).toBe(202);
    }
    await waitFor(
      () => call(svc.urls.sandbox, "/api/v1/public/transactions?status=confirmed", { headers }),
      (r) => r.body?.pagination?.total === amounts.length,
    );

    const r = await call(svc.urls.sandbox, "/api/v1/public/exports/transactions.csv", { headers });
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    expect(r.headers.get("content-disposition")).toMatch(
      /^attachment; filename="stablegate-sandbox-transactions-\d{4}-\d{2}-\d{2}\.csv"$/,
    );
    const rows = objects(r.text);
    const confirmed = rows.filter((x) => x.type === "deposit" && x.status === "confirmed");
    expect(confirmed.map((x) => x.amount)).toEqual(["12.5", "0.000001", "1234.56789"]);

    const balance = await call(svc.urls.sandbox, "/api/v1/public/balance", { headers });
    const trc = (balance.body.data as { currencyType: string; total: number }[]).find(
      (b) => b.currencyType === "USDT-TRC20",
    );
    const [ledger] = (await getBalances(svc.database.db, merchant.id, "sandbox")).filter(
      (b) => b.currencyType === "USDT-TRC20",
    );
    expect(sumUnits(confirmed.map((x) => x.netAmount))).toBe(ledger?.total);
    expect(Number(sumUnits(confirmed.map((x) => x.netAmount))) / Number(UNIT)).toBe(trc?.total);
  });

  it("neutralises formula cells and quotes per RFC 4180; another merchant's rows never appear", async () => {
    await addTx(merchant, { orderId: '=HYPERLINK("http://evil.example","click")', reference: "a,b\r\nc" });
    await addTx(merchant, { orderId: "+1-2", reference: "@SUM(A1)" });
    await addTx(other, { orderId: "other-merchant" });
    const r = await call(svc.urls.sandbox, "/api/v1/public/exports/transactions.csv", { headers });
    expect(r.status, r.text).toBe(200);
    expect(r.text).toContain(`"'=HYPERLINK(""http://evil.example"",""click"")"`);
    expect(r.text).not.toContain(",=");
    expect(r.text).not.toContain("other-merchant");
    const rows = objects(r.text);
    const byOrder = new Map(rows.map((x) => [x.orderId, x]));
    expect(byOrder.get(`'=HYPERLINK("http://evil.example","click")`)?.reference).toBe("a,b\r\nc");
    expect(byOrder.get("'+1-2")?.reference).toBe("'@SUM(A1)");
  });

  it("the column after confirmedAt says whether a deposit was paid on the wrong network (issue #37)", async () => {
    await addTx(merchant, { orderId: "wn-export", wrongNetwork: true });
    await addTx(merchant, { orderId: "own-export" });
    const r = await call(svc.urls.sandbox, "/api/v1/public/exports/transactions.csv", { headers });
    expect(r.status, r.text).toBe(200);
    // Columns are only ever added at the end: wrongNetwork (issue #37), then the price columns (issue #41).
    expect(EXPORT_COLUMNS.indexOf("wrongNetwork")).toBe(EXPORT_COLUMNS.indexOf("confirmedAt") + 1);
    const byOrder = new Map(objects(r.text).map((x) => [x.orderId, x]));
    expect(byOrder.get("wn-export")?.wrongNetwork).toBe("true");
    expect(byOrder.get("own-export")?.wrongNetwork).toBe("false");
  });

  it("applies the list's filters and refuses bad ones with 400 in the envelope", async () => {
    const pending = await call(svc.urls.sandbox, "/api/v1/public/exports/transactions.csv?status=pending", {
      headers,
    });
    expect(pending.status).toBe(200);
    const rows = objects(pending.text);
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.every((x) => x.status === "pending")).toBe(true);

    for (const q of ["status=nope", "from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z", "from=yesterday"]) {
      const bad = await call(svc.urls.sandbox, `/api/v1/public/exports/transactions.csv?${q}`, { headers });
      expect(bad.status, q).toBe(400);
      expect(bad.body.success).toBe(false);
      expect(bad.body.error.code).toBe("VALIDATION_ERROR");
    }
  });

  it("refuses a missing or wrong key, and the production key on the sandbox host", async () => {
    const none = await call(svc.urls.sandbox, "/api/v1/public/exports/transactions.csv");
    expect(none.status).toBe(401);
    expect(none.body.success).toBe(false);
    const wrong = await call(svc.urls.sandbox, "/api/v1/public/exports/transactions.csv", {
      headers: { apikey: "sk_sandbox_nope", "x-api-secret": "nope" },
    });
    expect(wrong.status).toBe(401);
    const prod = keysOf(merchant, "production");
    const cross = await call(svc.urls.sandbox, "/api/v1/public/exports/transactions.csv", {
      headers: { apikey: prod.apiKey, "x-api-secret": prod.apiSecret },
    });
    expect([401, 403]).toContain(cross.status);
  });
});

describe("keyset pages", () => {
  it("every row once, in order, across pages of rows that share a timestamp to the microsecond", async () => {
    const m = await svc.createMerchant();
    const at = new Date("2026-03-01T00:00:00.000Z");
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push(await addTx(m, { orderId: `same-${i}`, createdAt: at }));
    // Two rows a microsecond apart: a JS Date cursor (milliseconds) would lose one of them.
    for (const micros of ["000001", "000002"]) {
      const id = await addTx(m, { orderId: `micro-${micros}` });
      ids.push(id);
      await sql`update transactions set created_at = ${`2026-03-01T00:00:00.${micros}Z`}::timestamptz
        where id = ${id}`.execute(svc.database.db);
    }
    for (const pageSize of [1, 2, 3, 100]) {
      let text = "";
      let chunks = 0;
      for await (const chunk of exportTransactionsCsv(
        svc.database.db,
        { merchantId: m.id, environment: "sandbox" },
        {},
        pageSize,
      )) {
        text += chunk;
        // A cursor that does not advance would read the same page forever: fail instead of hanging.
        if (++chunks > ids.length + 2) throw new Error(`page size ${pageSize}: more pages than rows`);
      }
      const rows = objects(text);
      expect(rows.map((x) => x.transactionId).sort(), `page size ${pageSize}`).toEqual([...ids].sort());
      expect(new Set(rows.map((x) => x.transactionId)).size).toBe(ids.length);
      const order = rows.map((x) => x.orderId);
      expect(order.slice(-2), `page size ${pageSize}`).toEqual(["micro-000001", "micro-000002"]);
    }
  });

  it("an empty export is the header alone", async () => {
    const m = await svc.createMerchant();
    const k = keysOf(m, "sandbox");
    const r = await call(svc.urls.sandbox, "/api/v1/public/exports/transactions.csv", {
      headers: { apikey: k.apiKey, "x-api-secret": k.apiSecret },
    });
    expect(r.status).toBe(200);
    expect(r.text).toBe(`${EXPORT_COLUMNS.join(",")}\r\n`);
  });
});

describe("GET /api/v1/dashboard/exports/transactions.csv", () => {
  it("exports the session's merchant in the chosen environment; no session is 401", async () => {
    const b = new Browser(svc.urls.production);
    const reg = await b.req("/api/v1/auth/register", {
      json: {
        email: `export-${Date.now()}@example.com`,
        password: "correct horse battery",
        companyName: "Ex Co",
      },
    });
    expect(reg.status, reg.text).toBe(201);
    const merchantId = reg.body.data.user.merchantId as string;
    const mine = await addTx({ id: merchantId } as CreatedMerchant, { orderId: "dash-export" });
    const r = await b.req("/api/v1/dashboard/exports/transactions.csv", {
      headers: { "x-environment": "sandbox" },
    });
    expect(r.status, r.text).toBe(200);
    const rows = objects(r.text);
    expect(rows.map((x) => x.transactionId)).toEqual([mine]);
    const prod = await b.req("/api/v1/dashboard/exports/transactions.csv", {
      headers: { "x-environment": "production" },
    });
    expect(prod.status).toBe(200);
    expect(objects(prod.text)).toEqual([]);

    const anonymous = await call(svc.urls.production, "/api/v1/dashboard/exports/transactions.csv");
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.success).toBe(false);
  });
});
