import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Browser } from "../dashboard/support.js";
import { hooksFor, type SandboxMerchant, sandboxMerchant } from "../deposits/support.js";
import { call, keysOf, startTestService, type TestService } from "../support/harness.js";
import { callOperation, dataOf } from "../support/operation.js";
import { type Receiver, sleep, startReceiver, waitFor } from "../webhooks/support.js";
import { createLink, payerPost, sandboxPay, sessionIdOf, sessionOf } from "./support.js";

// Payment links (issue #41) through the real service: the merchant's API on both channels' API-key
// side, the payer's page and its form post, the sessions it opens (paymentLinkId on the session, its
// transaction and its webhook), and the refusals.
let svc: TestService;
let receiver: Receiver;
let m: SandboxMerchant;

const TRC = "USDT-TRC20";

beforeAll(async () => {
  svc = await startTestService({ env: { SSRF_ALLOW_CIDRS: "127.0.0.0/8", RATE_LIMIT_ENABLED: "false" } });
  receiver = await startReceiver();
  m = await sandboxMerchant(svc, receiver);
});
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});

async function linkCount(): Promise<number> {
  const rows = await svc.database.db
    .selectFrom("transactions")
    .select("id")
    .where("merchant_id", "=", m.merchant.id)
    .where("payment_link_id", "is not", null)
    .execute();
  return rows.length;
}

describe("payment links: the merchant's API", () => {
  it("creates, reads, lists and deactivates a link", async () => {
    const link = await createLink(svc, m.headers, {
      title: "Workshop ticket",
      description: "One seat",
      amount: 25,
      currencyTypes: [TRC],
      orderIdPrefix: "ticket-",
      metadata: { event: "w1" },
      maxPayments: 3,
      successUrl: "https://shop.example/thanks",
    });
    expect(link.id).toMatch(/^pl_/);
    expect(link).toMatchObject({
      url: `http://sandbox.stablegate.test/l/${link.id}`,
      title: "Workshop ticket",
      description: "One seat",
      amount: 25,
      priceAmount: null,
      minAmount: null,
      currencyTypes: [TRC],
      orderIdPrefix: "ticket-",
      metadata: { event: "w1" },
      maxPayments: 3,
      successUrl: "https://shop.example/thanks",
      active: true,
      payments: 0,
      totalPaid: 0,
      deactivatedAt: null,
    });
    const got = dataOf(
      await callOperation(svc.urls.sandbox, "getPaymentLink", {
        headers: m.headers,
        params: { id: link.id },
      }),
      200,
    );
    expect(got).toEqual(link);
    const listed = await callOperation(svc.urls.sandbox, "listPaymentLinks", {
      headers: m.headers,
      query: { limit: 100 },
    });
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.pagination).toMatchObject({ page: 1, limit: 100 });
    expect((listed.body.data as { id: string }[]).map((l) => l.id)).toContain(link.id);

    const off = dataOf(
      await callOperation(svc.urls.sandbox, "deactivatePaymentLink", {
        headers: m.headers,
        params: { id: link.id },
      }),
      200,
    );
    expect(off.active).toBe(false);
    expect(off.deactivatedAt).not.toBeNull();
    const inactive = await callOperation(svc.urls.sandbox, "listPaymentLinks", {
      headers: m.headers,
      query: { active: false },
    });
    expect((inactive.body.data as { id: string }[]).map((l) => l.id)).toEqual([link.id]);
  });

  it("defaults to every enabled currency type; writes need the secret", async () => {
    const link = await createLink(svc, m.headers, { title: "Open" });
    expect([...link.currencyTypes].sort()).toEqual(["USDT-ERC20", "USDT-TRC20"]);
    expect(link).toMatchObject({ amount: null, minAmount: null, maxAmount: null });
    const noSecret = await call(svc.urls.sandbox, "/api/v1/public/payment-links", {
      headers: { apikey: m.headers.apikey as string },
      json: { title: "x", amount: 1 },
    });
    expect(noSecret.status, noSecret.text).toBe(401);
  });

  it("refuses bad links with 400 VALIDATION_ERROR naming the field", async () => {
    const production = keysOf(m.merchant, "production");
    const prodHeaders = { apikey: production.apiKey, "x-api-secret": production.apiSecret };
    const cases: [Record<string, unknown>, string, Record<string, string>?, string?][] = [
      [{ title: "t", amount: 5, priceAmount: 5, priceCurrency: "USD" }, "priceAmount"],
      [{ title: "t", minAmount: 10, maxAmount: 5 }, "minAmount"],
      [{ title: "t", amount: -5 }, "amount"],
      [{ title: "t", amount: 5, minAmount: 1 }, "minAmount"],
      [{ title: "t", priceAmount: 5 }, "priceCurrency"],
      [{ title: "t", priceAmount: 5, priceCurrency: "usd" }, "priceCurrency"],
      [{ title: "t", currencyTypes: ["USDT-NOPE"] }, "currencyTypes"],
      [{ title: "t", currencyTypes: ["USDC-BASE"] }, "currencyTypes"],
      [{ title: "t", successUrl: "javascript:alert(1)" }, "successUrl"],
      [
        { title: "t", successUrl: "http://shop.example/thanks" },
        "successUrl",
        prodHeaders,
        svc.urls.production,
      ],
      [{ title: "t", metadata: { pad: "x".repeat(4100) } }, "metadata"],
      [{ title: "t", expiresAt: "2020-01-01T00:00:00Z" }, "expiresAt"],
      [{ title: "t", maxPayments: 0 }, "maxPayments"],
      [{ title: "" }, "title"],
    ];
    for (const [json, field, headers = m.headers, base = svc.urls.sandbox] of cases) {
      const r = await call(base, "/api/v1/public/payment-links", { headers, json });
      expect(r.status, `${JSON.stringify(json)} → ${r.text}`).toBe(400);
      expect(r.body.error.code).toBe("VALIDATION_ERROR");
      const fields = (r.body.error.details.fields as { field: string }[]).map((f) => f.field);
      expect(fields.join(","), JSON.stringify(json)).toContain(field);
    }
    // http is fine in the sandbox.
    await createLink(svc, m.headers, { title: "t", successUrl: "http://shop.example/thanks" });
  });

  it("another merchant's link is 404 on every route", async () => {
    const link = await createLink(svc, m.headers, { title: "Mine", amount: 1 });
    const other = await svc.createMerchant();
    const k = keysOf(other, "sandbox");
    const headers = { apikey: k.apiKey, "x-api-secret": k.apiSecret };
    const get = await callOperation(svc.urls.sandbox, "getPaymentLink", { headers, params: { id: link.id } });
    expect(get.status, get.text).toBe(404);
    expect(get.body.error.code).toBe("NOT_FOUND");
    const off = await callOperation(svc.urls.sandbox, "deactivatePaymentLink", {
      headers,
      params: { id: link.id },
    });
    expect(off.status, off.text).toBe(404);
    const list = await callOperation(svc.urls.sandbox, "listPaymentLinks", { headers });
    expect(list.body.data).toEqual([]);
    // A sandbox link is not found on the production base URL either.
    const page = await fetch(`${svc.urls.production}/l/${link.id}`);
    expect(page.status).toBe(404);
  });
});

describe("payment links: the dashboard channel", () => {
  it("a member creates, lists and deactivates links with a session", async () => {
    const browser = new Browser(svc.urls.production);
    const reg = await browser.req("/api/v1/auth/register", {
      json: { email: "links-owner@example.com", password: "correct horse battery", companyName: "Links Co" },
    });
    expect(reg.status, reg.text).toBe(201);
    const sandbox = { "x-environment": "sandbox" };
    const created = await browser.req("/api/v1/dashboard/payment-links", {
      headers: sandbox,
      json: { title: "From the dashboard", minAmount: 1, currencyTypes: [TRC] },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body.data.url).toBe(`http://sandbox.stablegate.test/l/${created.body.data.id}`);
    const listed = await browser.req("/api/v1/dashboard/payment-links", { headers: sandbox });
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.data.map((l: { id: string }) => l.id)).toEqual([created.body.data.id]);
    const off = await browser.req(`/api/v1/dashboard/payment-links/${created.body.data.id}/deactivate`, {
      method: "POST",
      headers: sandbox,
      json: {},
    });
    expect(off.status, off.text).toBe(200);
    expect(off.body.data.active).toBe(false);
    // Production holds none of the sandbox's links.
    const prod = await browser.req("/api/v1/dashboard/payment-links");
    expect(prod.body.data).toEqual([]);
  });
});

describe("payment links: the payer's page", () => {
  it("shows the link, opens a session with paymentLinkId and redirects to its page; paid, it is counted", async () => {
    const link = await createLink(svc, m.headers, {
      title: "Coffee <beans>",
      description: "1 kg",
      amount: 12.5,
      currencyTypes: [TRC],
      orderIdPrefix: "cof-",
      metadata: { sku: "b1" },
      successUrl: "https://shop.example/thanks",
    });
    const page = await fetch(`${svc.urls.sandbox}/l/${link.id}`);
    const text = await page.text();
    expect(page.status).toBe(200);
    expect(page.headers.get("content-security-policy")).toContain("form-action 'self'");
    expect(text).toContain("Coffee &lt;beans&gt;");
    expect(text).toContain("12.5 USDT");
    expect(text).toContain(`value="${TRC}"`);

    const opened = await payerPost(svc.urls.sandbox, link.id, { currencyType: TRC });
    const id = sessionIdOf(opened);
    const s = await sessionOf(svc, m.headers, id);
    expect(s).toMatchObject({
      paymentLinkId: link.id,
      amount: 12.5,
      currencyType: TRC,
      orderId: "cof-1",
      metadata: { sku: "b1" },
      status: "pending",
    });
    expect(s.successUrl).toBe("https://shop.example/thanks");
    const second = sessionIdOf(await payerPost(svc.urls.sandbox, link.id, { currencyType: TRC }));
    expect((await sessionOf(svc, m.headers, second)).orderId).toBe("cof-2");

    await sandboxPay(svc, m.headers, id);
    const [hook] = await waitFor(() => {
      const h = hooksFor(receiver, id).filter((x) => x.body.data.status === "confirmed");
      return h.length > 0 ? h : null;
    }, 15_000);
    expect(hook?.body.data.paymentLinkId).toBe(link.id);
    const tx = await call(svc.urls.sandbox, `/api/v1/public/transactions/${id}`, { headers: m.headers });
    expect(tx.status, tx.text).toBe(200);
    expect(tx.body.data.paymentLinkId).toBe(link.id);
    const counted = dataOf(
      await callOperation(svc.urls.sandbox, "getPaymentLink", {
        headers: m.headers,
        params: { id: link.id },
      }),
      200,
    );
    expect(counted).toMatchObject({ payments: 1, totalPaid: 12.5 });
  });

  it("a deactivated link says it is closed (410) and opens no session", async () => {
    const link = await createLink(svc, m.headers, { title: "Gone", amount: 3, currencyTypes: [TRC] });
    await callOperation(svc.urls.sandbox, "deactivatePaymentLink", {
      headers: m.headers,
      params: { id: link.id },
    });
    const before = await linkCount();
    const page = await fetch(`${svc.urls.sandbox}/l/${link.id}`);
    expect(page.status).toBe(410);
    expect(await page.text()).toContain("This payment link is closed");
    const post = await payerPost(svc.urls.sandbox, link.id, { currencyType: TRC });
    expect(post.status).toBe(410);
    expect(post.text).toContain("no longer accepts payments");
    expect(await linkCount()).toBe(before);
  });

  it("an expired link is closed at open time", async () => {
    const link = await createLink(svc, m.headers, {
      title: "Soon over",
      amount: 3,
      currencyTypes: [TRC],
      expiresAt: new Date(Date.now() + 1_500).toISOString(),
    });
    expect((await fetch(`${svc.urls.sandbox}/l/${link.id}`)).status).toBe(200);
    await sleep(1_600);
    const before = await linkCount();
    const post = await payerPost(svc.urls.sandbox, link.id, { currencyType: TRC });
    expect(post.status).toBe(410);
    expect(post.text).toContain("This link has expired.");
    expect(await linkCount()).toBe(before);
  });

  it("an open amount is taken within its bounds and refused outside them (400, no session)", async () => {
    const link = await createLink(svc, m.headers, {
      title: "Donation",
      minAmount: 5,
      maxAmount: 100,
      currencyTypes: [TRC],
    });
    const page = await (await fetch(`${svc.urls.sandbox}/l/${link.id}`)).text();
    expect(page).toContain('name="amount"');
    expect(page).toContain("Between 5 USDT and 100 USDT");
    const before = await linkCount();
    for (const amount of ["4.99", "100.000001", "-1", "abc", ""]) {
      const r = await payerPost(svc.urls.sandbox, link.id, { currencyType: TRC, amount });
      expect(r.status, amount).toBe(400);
      expect(r.text).toContain("Please check your entry");
    }
    expect(await linkCount()).toBe(before);
    const id = sessionIdOf(await payerPost(svc.urls.sandbox, link.id, { currencyType: TRC, amount: "42,5" }));
    expect((await sessionOf(svc, m.headers, id)).amount).toBe(42.5);
    expect(await linkCount()).toBe(before + 1);
  });

  it("the page speaks the payer's language from Accept-Language (the hosted page's choice)", async () => {
    const link = await createLink(svc, m.headers, { title: "Tea", amount: 12.5, currencyTypes: [TRC] });
    const pageIn = async (acceptLanguage: string) => {
      const r = await fetch(`${svc.urls.sandbox}/l/${link.id}`, {
        headers: { "accept-language": acceptLanguage },
      });
      return { lang: r.headers.get("content-language"), text: await r.text() };
    };
    const fr = await pageIn("fr-FR,fr;q=0.9,en;q=0.5");
    expect(fr.lang).toBe("fr");
    expect(fr.text).toContain('<html lang="fr">');
    expect(fr.text).toContain("Continuer vers le paiement");
    expect(fr.text).toContain("12,5 USDT");
    const zh = await pageIn("zh-CN,zh;q=0.9");
    expect(zh.lang).toBe("zh");
    expect(zh.text).toContain('<html lang="zh">');
    expect(zh.text).toContain("继续付款");
    expect(zh.text).toContain("12.5 USDT");
  });

  it("refuses a network the link does not offer, and a form posted from another site", async () => {
    const link = await createLink(svc, m.headers, { title: "TRON only", amount: 1, currencyTypes: [TRC] });
    const wrong = await payerPost(svc.urls.sandbox, link.id, { currencyType: "USDT-ERC20" });
    expect(wrong.status).toBe(400);
    const cross = await payerPost(
      svc.urls.sandbox,
      link.id,
      { currencyType: TRC },
      { origin: "https://evil.example", "sec-fetch-site": "cross-site" },
    );
    expect(cross.status).toBe(403);
    // The page's own origin (the request's host, or the environment's base URL) is fine.
    for (const origin of [svc.urls.sandbox, "http://sandbox.stablegate.test"]) {
      const own = await payerPost(
        svc.urls.sandbox,
        link.id,
        { currencyType: TRC },
        { origin, "sec-fetch-site": "same-origin" },
      );
      expect(own.status, origin).toBe(303);
    }
    // What Chromium sends for the page's own form (its referrer policy is no-referrer): Origin null.
    const browser = await payerPost(
      svc.urls.sandbox,
      link.id,
      { currencyType: TRC },
      { origin: "null", "sec-fetch-site": "same-origin" },
    );
    expect(browser.status).toBe(303);
    // Without the browser's word, an opaque or foreign Origin is refused.
    for (const origin of ["null", "https://evil.example"]) {
      const bare = await payerPost(svc.urls.sandbox, link.id, { currencyType: TRC }, { origin });
      expect(bare.status, origin).toBe(403);
    }
    const unknown = await payerPost(svc.urls.sandbox, "pl_nope", { currencyType: TRC });
    expect(unknown.status).toBe(404);
  });

  it("a fiat-priced link opens a session converted at the rate of the moment", async () => {
    const link = await createLink(svc, m.headers, {
      title: "Priced in USD",
      priceAmount: 10,
      priceCurrency: "USD",
      currencyTypes: [TRC],
    });
    expect(link).toMatchObject({ amount: null, priceAmount: 10, priceCurrency: "USD" });
    const id = sessionIdOf(await payerPost(svc.urls.sandbox, link.id, { currencyType: TRC }));
    const s = await sessionOf(svc, m.headers, id);
    expect(s).toMatchObject({ paymentLinkId: link.id, priceAmount: 10, priceCurrency: "USD", amount: 10 });
  });
});
