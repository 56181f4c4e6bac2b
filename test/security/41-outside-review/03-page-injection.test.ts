import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { payerPost, sessionIdOf } from "../../links/support.js";
import { insertSession } from "../../pay/support.js";
import { call, startTestService, type TestService } from "../../support/harness.js";
import { registerOwner } from "../../team/support.js";

// Outside review of issue #41: what a hostile merchant (title, description, display name, metadata,
// return URLs) or a hostile payer (form fields, Accept-Language, ?lang) puts on the link page and
// the hosted page is text, never markup; the pages keep their strict headers.
let svc: TestService;
let owner: Awaited<ReturnType<typeof registerOwner>>;

const TRC = "USDT-TRC20";
const XSS = `"><script>alert(1)</script><img src=x onerror=alert(2)>'\`<svg/onload=alert(3)>`;
const MARKERS = ["<script>alert(1)", "<img src=x", "<svg/onload", 'onerror=alert(2)>"'];

function expectNoMarkup(text: string) {
  for (const m of MARKERS) expect(text).not.toContain(m);
}

beforeAll(async () => {
  svc = await startTestService({ env: { RATE_LIMIT_ENABLED: "false" } });
  owner = await registerOwner(svc);
}, 60_000);
afterAll(async () => {
  await svc?.close();
});

async function hostileLink(extra: Record<string, unknown> = {}) {
  const r = await call(svc.urls.sandbox, "/api/v1/public/payment-links", {
    headers: owner.sandboxApi,
    json: {
      title: `Ticket ${XSS}`,
      description: `Desc ${XSS}`,
      minAmount: 1,
      maxAmount: 50,
      currencyTypes: [TRC],
      metadata: { note: XSS, marker: "META-MARKER-7731" },
      orderIdPrefix: `=HYPERLINK("https://evil.example")-`,
      ...extra,
    },
  });
  expect(r.status, r.text).toBe(201);
  return r.body.data.id as string;
}

describe("link page: merchant text is escaped", () => {
  it("GET /l/{id}: title and description are text; strict CSP, no framing", async () => {
    const id = await hostileLink();
    const res = await fetch(`${svc.urls.sandbox}/l/${id}`);
    const text = await res.text();
    expect(res.status).toBe(200);
    expectNoMarkup(text);
    expect(text).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(text).not.toContain("HYPERLINK"); // the order id prefix and metadata are never shown
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toMatch(/script-src[^;]*'unsafe-inline'/);
    expect(csp).toContain("frame-ancestors 'none'");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
  });

  it("POST /l/{id} echoes the payer's entry as text (reflected XSS)", async () => {
    const id = await hostileLink();
    const r = await payerPost(svc.urls.sandbox, id, {
      currencyType: `${TRC}${XSS}`.slice(0, 64),
      amount: XSS.slice(0, 64),
    });
    expect(r.status, r.text).toBe(400);
    expectNoMarkup(r.text);
    const r2 = await payerPost(svc.urls.sandbox, id, { currencyType: TRC, amount: XSS.slice(0, 64) });
    expect(r2.status, r2.text).toBe(400);
    expectNoMarkup(r2.text);
  });

  it("the closed page (deactivated) still escapes the title", async () => {
    const id = await hostileLink();
    const off = await call(svc.urls.sandbox, `/api/v1/public/payment-links/${id}/deactivate`, {
      method: "POST",
      headers: owner.sandboxApi,
    });
    expect(off.status, off.text).toBe(200);
    const res = await fetch(`${svc.urls.sandbox}/l/${id}`);
    const text = await res.text();
    expect(res.status).toBe(410);
    expectNoMarkup(text);
  });

  it("?lang and Accept-Language never reach the page or its headers as given", async () => {
    const id = await hostileLink();
    const res = await fetch(`${svc.urls.sandbox}/l/${id}?lang=${encodeURIComponent('x"><b>')}`, {
      headers: { "accept-language": `${"zz;q=0.5,".repeat(400)}"><script>,de;q=0.9` },
    });
    const text = await res.text();
    expect([200, 400]).toContain(res.status);
    if (res.status === 200) {
      expect(["en", "de", "fr", "es", "pt", "tr", "ru", "zh"]).toContain(res.headers.get("content-language"));
      expect(text).not.toContain('x"><b>');
    }
    const weird = await fetch(`${svc.urls.sandbox}/l/${id}`, {
      headers: { "accept-language": "de;q=NaN, fr;q=1e9, ru;q=-1, tr;q=0.001" },
    });
    await weird.text();
    expect(weird.status).toBe(200);
    expect(["en", "de", "fr", "es", "pt", "tr", "ru", "zh"]).toContain(weird.headers.get("content-language"));
  });

  it("the 303 goes to our own /pay/{id}, whatever the link's successUrl", async () => {
    const id = await hostileLink({ successUrl: "https://evil.example/phish" });
    const r = await payerPost(svc.urls.sandbox, id, { currencyType: TRC, amount: "2" });
    const sid = sessionIdOf(r);
    expect(r.location).toBe(`/pay/${sid}`);
  });
});

describe("hosted page: display name, metadata and return URLs", () => {
  it("a hostile display name is text on the hosted page; metadata is never shown", async () => {
    const b = await call(svc.urls.sandbox, "/api/v1/dashboard/settings/branding", {
      method: "PATCH",
      headers: owner.bearer,
      json: { displayName: `Shop ${XSS}`.slice(0, 80) },
    });
    expect(b.status, b.text).toBe(200);
    const id = await hostileLink();
    const r = await payerPost(svc.urls.sandbox, id, { currencyType: TRC, amount: "3" });
    const sid = sessionIdOf(r);
    const res = await fetch(`${svc.urls.sandbox}/pay/${sid}`);
    const text = await res.text();
    expect(res.status).toBe(200);
    expectNoMarkup(text);
    expect(text).not.toContain("META-MARKER-7731");
  });

  it("a stored return URL with quotes or a script scheme never becomes a live attribute", async () => {
    const bad = [
      `https://shop.example/"><script>alert(1)</script>`,
      "javascript:alert(1)//https://shop.example",
      "JaVaScRiPt:alert(1)",
      "data:text/html,<script>alert(1)</script>",
      "https://user:pass@shop.example/",
      "//evil.example/",
      "https:\\\\evil.example",
      " https://shop.example/",
    ];
    for (const url of bad) {
      const sid = await insertSession(svc.database.db, {
        merchantId: owner.merchantId,
        environment: "sandbox",
        network: TRC,
        address: `T${Math.random().toString(36).slice(2).padEnd(33, "x")}`.slice(0, 34),
        amount: 1_000_000n,
        expiresAt: new Date(Date.now() + 600_000),
      });
      await sql`update checkout_sessions set success_url = ${url}, cancel_url = ${url} where id = ${sid}`.execute(
        svc.database.db,
      );
      const res = await fetch(`${svc.urls.sandbox}/pay/${sid}`);
      const text = await res.text();
      expect(res.status).toBe(200);
      expectNoMarkup(text);
      expect(text.toLowerCase()).not.toContain('href="javascript:');
      expect(text.toLowerCase()).not.toContain('href="data:text');
      expect(text).not.toContain("user:pass@");
      expect(text).not.toContain('href="//evil.example');
    }
  });

  it("the API refuses return URLs with a script scheme, credentials or plain http in production", async () => {
    for (const successUrl of [
      "javascript:alert(1)",
      "https://a:b@shop.example/",
      "data:text/html,x",
      "/relative",
    ]) {
      const r = await call(svc.urls.sandbox, "/api/v1/public/payment-links", {
        headers: owner.sandboxApi,
        json: { title: "x", amount: 1, currencyTypes: [TRC], successUrl },
      });
      expect(r.status, `${successUrl}: ${r.text}`).toBe(400);
    }
    for (const field of ["successUrl", "cancelUrl"]) {
      const r = await call(svc.urls.sandbox, "/checkout/session", {
        headers: owner.sandboxApi,
        json: { amount: 1, currencyType: TRC, [field]: "javascript:alert(1)" },
      });
      expect(r.status, r.text).toBe(400);
    }
  });
});
