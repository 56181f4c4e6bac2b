import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, startTestService, type TestService } from "../support/harness.js";
import { addMember, type Headers, registerOwner } from "../team/support.js";
import { jpegHeader, makePng, webpHeader } from "./images.js";
import { insertSession, setSessionState } from "./support.js";

// Issue #41: the hosted page belongs to the shop. Through the real service: the dashboard's branding
// settings (upload accepted and refused, permission), the logo served from our origin, the page
// naming the shop in every language, and the return buttons to the shop.
let svc: TestService;
let owner: Awaited<ReturnType<typeof registerOwner>>;
let developer: Headers;

const BRANDING = "/api/v1/dashboard/settings/branding";
const b64 = (bytes: Uint8Array | string) => Buffer.from(bytes).toString("base64");

beforeAll(async () => {
  svc = await startTestService({ env: { RATE_LIMIT_ENABLED: "false" } });
  owner = await registerOwner(svc);
  developer = (await addMember(svc, owner.bearer, "developer")).bearer;
}, 60_000);
afterAll(async () => {
  await svc?.close();
});

function setBranding(json: Record<string, unknown>, headers: Headers = owner.bearer) {
  return call(svc.urls.sandbox, BRANDING, { method: "PATCH", headers, json });
}

async function session(opts: { successUrl?: string; cancelUrl?: string; expired?: boolean } = {}) {
  const id = await insertSession(svc.database.db, {
    merchantId: owner.merchantId,
    environment: "sandbox",
    network: "USDT-TRC20",
    address: `T${Math.random().toString(36).slice(2).padEnd(33, "x")}`.slice(0, 34),
    amount: 10_000_000n,
    expiresAt: new Date(Date.now() + (opts.expired ? -1_000 : 600_000)),
  });
  // Written straight to the row, past the API's own check: the page must check again.
  await sql`update checkout_sessions set success_url = ${opts.successUrl ?? null}, cancel_url = ${opts.cancelUrl ?? null} where id = ${id}`.execute(
    svc.database.db,
  );
  return id;
}

const page = (id: string, headers: Record<string, string> = {}) =>
  call(svc.urls.sandbox, `/pay/${id}`, { headers });

function expectFieldError(r: Awaited<ReturnType<typeof call>>, field: string, message?: RegExp) {
  expect(r.status, r.text).toBe(400);
  expect(r.body.success).toBe(false);
  expect(r.body.error.code).toBe("VALIDATION_ERROR");
  const f = (r.body.error.details.fields as { field: string; message: string }[]).find(
    (x) => x.field === field,
  );
  expect(f, JSON.stringify(r.body.error.details)).toBeDefined();
  if (message) expect(f!.message).toMatch(message);
}

describe("checkout page branding (dashboard settings)", () => {
  it("a PNG logo and a display name: saved, shown back, and served from our origin with its exact type", async () => {
    const png = makePng(120, 40);
    const r = await setBranding({ displayName: "  Acme Coffee  ", logo: b64(png) });
    expect(r.status, r.text).toBe(200);
    const data = r.body.data;
    expect(data.displayName).toBe("Acme Coffee");
    expect(data.companyName).toBe("Team Ltd");
    expect(data.logo).toMatchObject({ contentType: "image/png", width: 120, height: 40, bytes: png.length });
    expect(data.logo.url).toMatch(/^\/pay\/logo\/[0-9a-f]{64}$/);
    const read = await call(svc.urls.sandbox, BRANDING, { headers: owner.bearer });
    expect(read.body.data).toEqual(data);

    // Public, from both listeners, no credentials.
    for (const base of [svc.urls.sandbox, svc.urls.production]) {
      const res = await fetch(`${base}${data.logo.url}`);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("image/png");
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
      expect(res.headers.get("content-security-policy")).toBe("default-src 'none'; sandbox");
      expect(res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      expect(Buffer.from(await res.arrayBuffer()).equals(png)).toBe(true);
    }
    const unknown = await call(svc.urls.sandbox, `/pay/logo/${"0".repeat(64)}`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe("NOT_FOUND");
    expect((await call(svc.urls.sandbox, "/pay/logo/not-a-hash")).status).toBe(404);
  });

  it("JPEG and WebP are accepted (type from the bytes), the logo can be removed, the name cleared", async () => {
    const jpeg = await setBranding({ logo: b64(jpegHeader(300, 100)) });
    expect(jpeg.status, jpeg.text).toBe(200);
    expect(jpeg.body.data.logo).toMatchObject({ contentType: "image/jpeg", width: 300, height: 100 });
    const served = await fetch(`${svc.urls.sandbox}${jpeg.body.data.logo.url}`);
    expect(served.headers.get("content-type")).toBe("image/jpeg");
    const webp = await setBranding({ logo: b64(webpHeader(64, 32)) });
    expect(webp.body.data.logo).toMatchObject({ contentType: "image/webp", width: 64, height: 32 });
    const oldUrl = webp.body.data.logo.url as string;
    const removed = await setBranding({ logo: null, displayName: null });
    expect(removed.status).toBe(200);
    expect(removed.body.data.logo).toBeNull();
    expect(removed.body.data.displayName).toBeNull();
    expect((await call(svc.urls.sandbox, oldUrl)).status).toBe(404);
  });

  it("refuses SVG, an HTML file named .png, an oversized or empty file, bad base64 and huge dimensions: 400 on `logo`", async () => {
    const svg = '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(1)</script></svg>';
    expectFieldError(await setBranding({ logo: b64(svg) }), "logo", /PNG, JPEG or WebP/);
    // What the client calls it does not matter: the bytes are HTML.
    expectFieldError(
      await setBranding({ logo: b64("<!doctype html><script>alert(1)</script>") }),
      "logo",
      /PNG/,
    );
    const oversize = Buffer.concat([makePng(1, 1), Buffer.alloc(256 * 1024)]);
    expectFieldError(await setBranding({ logo: b64(oversize) }), "logo", /256 KiB/);
    expectFieldError(await setBranding({ logo: "" }), "logo", /empty/);
    expectFieldError(await setBranding({ logo: "not base64!" }), "logo", /base64/);
    expectFieldError(await setBranding({ logo: b64(makePng(4000, 10)) }), "logo", /2048/);
    // Far over the limit: the body limit answers, in the same envelope, never a 500.
    const huge = await setBranding({ logo: "A".repeat(1_100_000) });
    expect(huge.status).toBe(400);
    expect(huge.body.error.code).toBe("VALIDATION_ERROR");
    // Nothing was stored.
    const read = await call(svc.urls.sandbox, BRANDING, { headers: owner.bearer });
    expect(read.body.data.logo).toBeNull();
  });

  it("display names: trimmed, 1–80 characters, no control characters; every field's error at once", async () => {
    expectFieldError(await setBranding({ displayName: "   " }), "displayName", /empty/);
    expectFieldError(await setBranding({ displayName: "x".repeat(81) }), "displayName", /80/);
    expectFieldError(await setBranding({ displayName: "Acme\u0007" }), "displayName", /control/);
    expectFieldError(await setBranding({ displayName: "Acme\u202eepahS" }), "displayName", /control/);
    const both = await setBranding({ displayName: "", logo: b64("GIF89a") });
    expect(both.status).toBe(400);
    expect((both.body.error.details.fields as { field: string }[]).map((f) => f.field).sort()).toEqual([
      "displayName",
      "logo",
    ]);
    expectFieldError(await setBranding({ displayName: "ok", color: "red" }), "color");
  });

  it("needs settings:write: a developer may read but not change it (403), no session is 401", async () => {
    const read = await call(svc.urls.sandbox, BRANDING, { headers: developer });
    expect(read.status).toBe(200);
    const w = await setBranding({ displayName: "Hijacked", logo: b64(makePng(2, 2)) }, developer);
    expect(w.status).toBe(403);
    expect(w.body.error.code).toBe("FORBIDDEN");
    expect(w.body.error.details.permission).toBe("settings:write");
    const anonymous = await call(svc.urls.sandbox, BRANDING, { method: "PATCH", json: { displayName: "x" } });
    expect(anonymous.status).toBe(401);
    expect(
      (await call(svc.urls.sandbox, BRANDING, { headers: owner.bearer })).body.data.displayName,
    ).not.toBe("Hijacked");
  });

  it("a change is in the audit log (who, before and after; never the file's bytes)", async () => {
    await setBranding({ displayName: "Audited Shop" });
    const log = await call(svc.urls.sandbox, "/api/v1/dashboard/audit-log?action=settings.branding_update", {
      headers: owner.bearer,
    });
    expect(log.status, log.text).toBe(200);
    const last = log.body.data[0];
    expect(last.action).toBe("settings.branding_update");
    expect(last.details.after.displayName).toBe("Audited Shop");
    expect(JSON.stringify(last.details)).not.toMatch(/iVBOR/);
  });
});

describe("the hosted page names the shop", () => {
  it("display name and logo at the top; the company name when no display name is set", async () => {
    const logo = (await setBranding({ displayName: "Acme Coffee", logo: b64(makePng(90, 30)) })).body.data
      .logo;
    const r = await page(await session());
    expect(r.text).toContain("Payment to Acme Coffee");
    expect(r.text).toContain(
      `<img class="logo" src="${logo.url}" alt="Acme Coffee logo" width="90" height="30">`,
    );
    expect(r.headers.get("content-security-policy")).toContain("img-src 'self' data:");
    await setBranding({ displayName: null, logo: null });
    const plain = await page(await session());
    expect(plain.text).toContain("Payment to Team Ltd");
    expect(plain.text).not.toContain("<img");
  });

  it("HTML in the display name is escaped wherever it appears", async () => {
    await setBranding({ displayName: `<script>alert("x")</script><b>Shop</b>` });
    const id = await session({ cancelUrl: "https://shop.example/back" });
    for (const r of [await page(id), await page(await session({ expired: true }))]) {
      expect(r.text).toContain("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;b&gt;Shop&lt;/b&gt;");
      expect(r.text).not.toContain('<script>alert("x")');
      expect(r.text).not.toContain("<b>Shop</b>");
    }
    await setBranding({ displayName: "Acme Coffee" });
  });

  it("the expired page names the shop, with a return button to it (cancelUrl)", async () => {
    const id = await session({ expired: true, cancelUrl: "https://shop.example/cart" });
    const r = await page(id);
    expect(r.text).toContain("This payment to Acme Coffee has expired.");
    expect(r.text).toContain(
      '<a class="button button-return" href="https://shop.example/cart" rel="noopener noreferrer" data-return="return">Return to Acme Coffee</a>',
    );
    expect(r.text).not.toMatch(/http-equiv="refresh" content="\d+;/); // never an automatic redirect
  });

  it("Accept-Language picks each of the eight languages (q-values, regional tags)", async () => {
    const id = await session({ expired: true });
    const cases: [string, string, string][] = [
      ["en-US,en;q=0.9", "en", "This payment to Acme Coffee has expired."],
      ["de-CH", "de", "Diese Zahlung an Acme Coffee ist abgelaufen."],
      ["fr-CA,fr;q=0.9,en;q=0.5", "fr", "Ce paiement à Acme Coffee a expiré."],
      ["es-MX", "es", "Este pago a Acme Coffee ha caducado."],
      ["pt-BR,pt;q=0.9", "pt", "Este pagamento para Acme Coffee expirou."],
      ["tr", "tr", "Acme Coffee için bu ödemenin süresi doldu."],
      ["en;q=0.3,ru;q=0.8", "ru", "Срок этого платежа в пользу Acme Coffee истёк."],
      ["zh-CN,zh;q=0.9", "zh", "这笔向 Acme Coffee 的付款已过期。"],
    ];
    for (const [header, lang, text] of cases) {
      const r = await page(id, { "accept-language": header });
      expect(r.text, header).toMatch(new RegExp(`<html lang="${lang}">`));
      expect(r.headers.get("content-language")).toBe(lang);
      expect(r.text, header).toContain(text);
    }
  });

  it("success button only once confirmed; cancel button while open; no automatic redirect", async () => {
    const urls = {
      successUrl: "https://shop.example/thanks?order=7",
      cancelUrl: "https://shop.example/cart",
    };
    const open = await page(await session(urls));
    // Open: the cancel button is shown; the success button is in the hidden paid panel (the live
    // status shows it when the payment confirms), never visible yet.
    expect(open.text).toContain(
      '<a class="button button-cancel" href="https://shop.example/cart" rel="noopener noreferrer" data-return="cancel">Cancel and return to Acme Coffee</a>',
    );
    expect(open.text).toMatch(
      /<div class="panel panel-paid" data-panel="paid" hidden>[\s\S]*data-return="success">Back to Acme Coffee<\/a>/,
    );
    const paidId = await session(urls);
    await setSessionState(svc.database.db, paidId, {
      status: "confirmed",
      actualBalance: 10_000_000n,
      txHash: "0xab",
    });
    const paid = await page(paidId);
    expect(paid.text).toMatch(
      /<div class="panel panel-paid" data-panel="paid">[\s\S]*href="https:\/\/shop.example\/thanks\?order=7"[^>]*data-return="success">Back to Acme Coffee<\/a>/,
    );
    expect(paid.text).not.toContain('data-return="cancel"');
    const expired = await page(await session({ ...urls, expired: true }));
    expect(expired.text).not.toMatch(/<div class="panel panel-paid" data-panel="paid">/);
    expect(expired.text).toContain('data-return="return"');
    for (const r of [open, paid, expired])
      expect(r.text).not.toMatch(/http-equiv="refresh" content="\d+;\s*url/i);
    // No URL, no button.
    const none = await page(await session());
    expect(none.text).not.toContain("data-return=");
  });

  it("javascript:, data: and plain http in production are never rendered, whatever was stored", async () => {
    for (const bad of [
      "javascript:alert(document.cookie)",
      "JaVaScRiPt:alert(1)",
      "data:text/html,<script>alert(1)</script>",
    ]) {
      const id = await session({ successUrl: bad, cancelUrl: bad });
      await setSessionState(svc.database.db, id, { status: "confirmed", actualBalance: 10_000_000n });
      const r = await page(id);
      expect(r.text.toLowerCase()).not.toContain("javascript:");
      expect(r.text).not.toContain("data:text/html");
      expect(r.text).not.toContain("data-return=");
      const open = await page(await session({ cancelUrl: bad }));
      expect(open.text.toLowerCase()).not.toContain("javascript:");
      expect(open.text).not.toContain("data-return=");
    }
    // Plain http is a sandbox convenience only: a production session's page does not link it.
    const prodId = await insertSession(svc.database.db, {
      merchantId: owner.merchantId,
      environment: "production",
      network: "USDT-TRC20",
      address: "TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf",
      amount: 1_000_000n,
      expiresAt: new Date(Date.now() + 600_000),
    });
    await sql`update checkout_sessions set cancel_url = 'http://shop.example/cart' where id = ${prodId}`.execute(
      svc.database.db,
    );
    const prod = await call(svc.urls.production, `/pay/${prodId}`);
    expect(prod.status).toBe(200);
    expect(prod.text).not.toContain("data-return=");
  });
});
