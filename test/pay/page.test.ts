import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { localTimeText } from "../../src/pay/page.js";
import { qrSvg } from "../../src/pay/qr.js";
import { call, startTestService, type TestService } from "../support/harness.js";
import {
  createSandboxSession,
  insertSession,
  openEvents,
  sandboxHeaders,
  setSessionState,
} from "./support.js";

// The hosted payment page and its live status, through the real service (both listeners, real
// database, the sandbox simulator and its watcher for payments).
let svc: TestService;
let headers: Record<string, string>;
let merchantId: string;

beforeAll(async () => {
  svc = await startTestService({
    env: { RATE_LIMIT_PUBLIC_PAGE: "1000", DOCS_USER: "docs", DOCS_PASSWORD: "pw" },
  });
  const m = await svc.createMerchant();
  merchantId = m.id;
  headers = sandboxHeaders(m);
});
afterAll(async () => {
  await svc?.close();
});

const USDT_MAINNET = "0xdAC17F958D2ee523a2206206994597C13D831ec7";
const EVM_ADDRESS = "0x1234567890AbcdEF1234567890aBcdef12345678";
const TRON_ADDRESS = "TJRabPrwbZy45sbavfcjinPJC18kjpRTv8";

async function page(base: string, path: string, h: Record<string, string> = {}) {
  const r = await call(base, path, { headers: h });
  return r;
}

function visiblePanel(text: string): string | undefined {
  const m = /<div class="panel panel-(\w+)" data-panel="\w+">/.exec(text);
  return m?.[1];
}

describe("GET /pay/{id}", () => {
  it("renders a pending sandbox session: amount, network, address, QR, expiry (UTC, in the language), countdown, status", async () => {
    const s = await createSandboxSession(svc, headers, { amount: 25.5, orderId: "order-77" });
    const r = await page(svc.urls.sandbox, `/pay/${s.id}`);
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(r.text).toMatch(/^<!doctype html>\n<html lang="en">/);
    expect(r.text).toContain("<strong>25.5 USDT</strong> · TRON (TRC-20)");
    expect(r.text).toContain(`<code id="address">${s.walletAddress}</code>`);
    // The QR code is server-side SVG of the payment text (TRON: the bare address, see payment-uri.ts).
    expect(r.text).toContain(await qrSvg(s.walletAddress));
    const expiresAt = new Date(s.expiresAt);
    expect(r.text).toContain(
      `<time datetime="${expiresAt.toISOString()}" data-local>${localTimeText(expiresAt, "en")}</time>`,
    );
    expect(r.text).toMatch(/<span id="countdown" role="timer">(29:[0-5]\d|30:00)<\/span>/);
    expect(r.text).toContain('role="status" aria-live="polite"');
    expect(visiblePanel(r.text)).toBe("waiting");
    expect(r.text).toContain("Order: order-77");
    expect(r.text).toContain("Sandbox: test payment, no real funds");
    // Without JavaScript: a 30 s refresh and a refresh link; copy buttons only appear with the script.
    expect(r.text).toContain('<noscript><meta http-equiv="refresh" content="30"></noscript>');
    expect(r.text).toContain(`<a href="/pay/${s.id}?lang=en">Refresh status</a>`);
    expect(r.text).toMatch(/<button type="button" class="copy" data-copy="address" hidden>/);
  });

  it("is in the Public Page tier, uncacheable, unframeable, with a strict CSP whose nonce is on its only style and script", async () => {
    const s = await createSandboxSession(svc, headers, { amount: 1 });
    const r = await page(svc.urls.sandbox, `/pay/${s.id}`);
    expect(r.headers.get("ratelimit-policy")).toBe("1000;w=900");
    expect(r.headers.get("cache-control")).toBe("no-store");
    expect(r.headers.get("x-frame-options")).toBe("DENY");
    expect(r.headers.get("referrer-policy")).toBe("no-referrer");
    const csp = r.headers.get("content-security-policy") ?? "";
    const nonce = /script-src 'nonce-([A-Za-z0-9+/=]+)'/.exec(csp)?.[1];
    expect(nonce).toBeDefined();
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain(`style-src 'nonce-${nonce}'`);
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(r.text.match(/<script/g)).toHaveLength(1);
    expect(r.text).toContain(`<script nonce="${nonce}">`);
    expect(r.text.match(/<style/g)).toHaveLength(1);
    expect(r.text).toContain(`<style nonce="${nonce}">`);
    expect(r.text).not.toMatch(/\sstyle="/); // no inline style attributes (the CSP would block them)
    expect(r.text).not.toMatch(/(src|href)="(https?:)?\/\//); // no external assets
    const again = await page(svc.urls.sandbox, `/pay/${s.id}`);
    expect(again.headers.get("content-security-policy")).not.toBe(csp); // a fresh nonce per response
  });

  it("never shows the merchant's callbackUrl, metadata, ids or keys; escapes what it shows", async () => {
    const id = await insertSession(svc.database.db, {
      merchantId,
      environment: "sandbox",
      network: "USDT-TRC20",
      address: TRON_ADDRESS,
      amount: 3_000_000n,
      expiresAt: new Date(Date.now() + 600_000),
      orderId: `<script>alert("o")</script>`,
      metadata: { internalNote: "META-SECRET-123" },
      callbackUrl: "https://merchant.example/CALLBACK-SECRET-456",
    });
    const r = await page(svc.urls.sandbox, `/pay/${id}`);
    expect(r.status).toBe(200);
    for (const secret of [
      "META-SECRET-123",
      "CALLBACK-SECRET-456",
      "merchant.example",
      merchantId,
      "ak_test_",
    ]) {
      expect(r.text).not.toContain(secret);
    }
    expect(r.text).toContain("Order: &lt;script&gt;alert(&quot;o&quot;)&lt;/script&gt;");
    expect(r.text.match(/<script/g)).toHaveLength(1);
  });

  it("speaks German for ?lang=de or Accept-Language: de-CH; ?lang= wins; English for an unsupported language", async () => {
    const s = await createSandboxSession(svc, headers, { amount: 12.5 });
    const byQuery = await page(svc.urls.sandbox, `/pay/${s.id}?lang=de`);
    expect(byQuery.text).toMatch(/<html lang="de">/);
    expect(byQuery.headers.get("content-language")).toBe("de");
    expect(byQuery.text).toContain("Mit USDT bezahlen");
    expect(byQuery.text).toContain("<strong>12,5 USDT</strong>");
    expect(byQuery.text).toContain("Warten auf Ihre Zahlung");
    const byHeader = await page(svc.urls.sandbox, `/pay/${s.id}`, {
      "accept-language": "de-CH,de;q=0.9,en;q=0.5",
    });
    expect(byHeader.text).toMatch(/<html lang="de">/);
    expect(byHeader.headers.get("vary")).toContain("Accept-Language");
    const overridden = await page(svc.urls.sandbox, `/pay/${s.id}?lang=en`, { "accept-language": "de" });
    expect(overridden.text).toMatch(/<html lang="en">/);
    const other = await page(svc.urls.sandbox, `/pay/${s.id}`, { "accept-language": "it-IT,it;q=0.9" });
    expect(other.text).toMatch(/<html lang="en">/);
    expect(other.text).toContain('<a href="/pay/' + s.id + '?lang=de" lang="de" hreflang="de">Deutsch</a>');
  });

  it("404 HTML page for an unknown id, an over-long id, or a session of the other environment", async () => {
    const s = await createSandboxSession(svc, headers, { amount: 1 });
    for (const [base, path] of [
      [svc.urls.sandbox, "/pay/tx_doesnotexist"],
      [svc.urls.sandbox, `/pay/${"x".repeat(150)}`],
      [svc.urls.production, `/pay/${s.id}`], // a sandbox session is not on the production base URL
    ] as const) {
      const r = await page(base, path, { "accept-language": "de" });
      expect(r.status, path).toBe(404);
      expect(r.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(r.headers.get("content-security-policy")).toContain("default-src 'none'");
      expect(r.text).toContain("Zahlung nicht gefunden");
      expect(r.text).not.toContain(s.walletAddress);
    }
  });

  it("ERC20 with the mainnet USDT contract: the QR code is an EIP-681 transfer of what is still due", async () => {
    const id = await insertSession(svc.database.db, {
      merchantId,
      environment: "production",
      network: "USDT-ERC20",
      address: EVM_ADDRESS,
      amount: 10_000_000n,
      expiresAt: new Date(Date.now() + 600_000),
    });
    const full = await page(svc.urls.production, `/pay/${id}`);
    expect(full.status).toBe(200);
    expect(full.text).toContain("Ethereum (ERC-20)");
    expect(full.text).not.toContain("Sandbox:");
    const uri = (units: string) =>
      `ethereum:${USDT_MAINNET}@1/transfer?address=${EVM_ADDRESS}&uint256=${units}`;
    expect(full.text).toContain(await qrSvg(uri("10000000")));
    expect(full.text).toContain('data-qr-amount="10"');

    await setSessionState(svc.database.db, id, { status: "pending", actualBalance: 4_000_000n });
    const partial = await page(svc.urls.production, `/pay/${id}`);
    expect(visiblePanel(partial.text)).toBe("partial");
    expect(partial.text).toContain(
      'Partially paid: <span data-field="received">4</span> USDT received. Please send the remaining <span data-field="remaining">6</span> USDT.',
    );
    expect(partial.text).toContain(await qrSvg(uri("6000000")));
  });

  it("shows each end state clearly, without instructions, QR code, script or refresh", async () => {
    const make = async () =>
      insertSession(svc.database.db, {
        merchantId,
        environment: "sandbox",
        network: "USDT-TRC20",
        address: `T${Math.random().toString(36).slice(2).padEnd(33, "x")}`.slice(0, 34),
        amount: 10_000_000n,
        expiresAt: new Date(Date.now() + 600_000),
      });
    const paid = await make();
    await setSessionState(svc.database.db, paid, {
      status: "confirmed",
      actualBalance: 12_000_000n,
      txHash: "0xfeedbeef",
      at: new Date("2026-02-03T04:05:06Z"),
    });
    const expired = await make();
    await setSessionState(svc.database.db, expired, { status: "failed", actualBalance: 0n });
    const partialExpired = await make();
    await setSessionState(svc.database.db, partialExpired, { status: "failed", actualBalance: 2_500_000n });

    const p = await page(svc.urls.sandbox, `/pay/${paid}`);
    expect(visiblePanel(p.text)).toBe("paid");
    expect(p.text).toContain("Payment received. Thank you!");
    expect(p.text).toContain("0xfeedbeef");
    expect(p.text).toContain(
      '<time datetime="2026-02-03T04:05:06.000Z" data-local data-field="confirmedAt">3 Feb 2026, 04:05 UTC</time>',
    );
    const e = await page(svc.urls.sandbox, `/pay/${expired}`);
    expect(visiblePanel(e.text)).toBe("expired");
    expect(e.text).toContain("This payment to Test Co has expired");
    const pe = await page(svc.urls.sandbox, `/pay/${partialExpired}?lang=de`);
    expect(visiblePanel(pe.text)).toBe("partialExpired");
    expect(pe.text).toContain('Teilzahlung von <span data-field="received">2,5</span> USDT abgelaufen');
    for (const r of [p, e, pe]) {
      expect(r.text).toMatch(/<section id="instructions"[^>]* hidden>/);
      expect(r.text).not.toContain("<svg");
      expect(r.text).not.toContain("<script");
      expect(r.text).not.toContain("http-equiv");
    }
  });

  it("an open session past its deadline is shown as expired before the expiry job closes it", async () => {
    const id = await insertSession(svc.database.db, {
      merchantId,
      environment: "sandbox",
      network: "USDT-TRC20",
      address: "TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf",
      amount: 1_000_000n,
      expiresAt: new Date(Date.now() - 1_000),
    });
    const r = await page(svc.urls.sandbox, `/pay/${id}`);
    expect(visiblePanel(r.text)).toBe("expired");
    expect(r.text).not.toContain("<svg");
  });
});

describe("GET /pay/{id}/events", () => {
  it("streams the status at once and on every change until the session is paid (sandbox payments)", async () => {
    const s = await createSandboxSession(svc, headers, { amount: 10 });
    const events = await openEvents(`${svc.urls.sandbox}/pay/${s.id}/events`);
    expect(events.res.status).toBe(200);
    expect(events.res.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    expect(events.res.headers.get("cache-control")).toBe("no-cache, no-transform");
    expect(events.res.headers.get("ratelimit-policy")).toBe("1000;w=900");
    expect(events.res.headers.get("x-request-id")).toBeTruthy();
    expect((await events.next())?.retry).toBe(3000);
    expect(await events.nextStatus()).toEqual({
      status: "pending",
      actualBalance: 0,
      remaining: 10,
      confirmedAt: null,
      blockchainTxHash: null,
      detectedAmount: 0,
      confirmations: { current: 0, required: 1 },
    });
    // A payment may first show as detected (stored by the watcher, not yet handed off) — the
    // sandbox needs one confirmation, so the next read usually has it settled already.
    const settled = async () => {
      for (;;) {
        const e = await events.nextStatus();
        if (!e || Number(e.detectedAmount) <= Number(e.actualBalance)) return e;
        expect(e).toMatchObject({ status: "pending", confirmations: { required: 1 } });
      }
    };

    const pay = (amount: number) =>
      call(svc.urls.sandbox, `/api/v1/sandbox/checkout/${s.id}/pay`, { headers, json: { amount } });
    expect((await pay(4)).status).toBe(202);
    expect(await settled()).toMatchObject({
      status: "pending",
      actualBalance: 4,
      remaining: 6,
      detectedAmount: 4,
    });
    const paid = await pay(6);
    expect(paid.status).toBe(202);
    const confirmed = await settled();
    expect(confirmed).toMatchObject({ status: "confirmed", actualBalance: 10, remaining: 0 });
    expect(typeof confirmed?.confirmedAt).toBe("string");
    expect(confirmed?.blockchainTxHash).toBeTruthy();
    // A closed session never changes again: the server ends the stream.
    expect(await events.next()).toBeNull();
    await events.ended;
  });

  it("flips to failed (a change written the way the expiry job writes it) and ends", async () => {
    const id = await insertSession(svc.database.db, {
      merchantId,
      environment: "sandbox",
      network: "USDT-TRC20",
      address: "TVj7RNVHy6thbM7BWdSe9G6gXwKhjhdNZS",
      amount: 5_000_000n,
      expiresAt: new Date(Date.now() + 600_000),
    });
    const events = await openEvents(`${svc.urls.sandbox}/pay/${id}/events`);
    expect(await events.nextStatus()).toMatchObject({ status: "pending" });
    await setSessionState(svc.database.db, id, { status: "failed", actualBalance: 1_500_000n });
    expect(await events.nextStatus()).toEqual({
      status: "failed",
      actualBalance: 1.5,
      remaining: 3.5,
      confirmedAt: null,
      blockchainTxHash: null,
      detectedAmount: 0,
      confirmations: { current: 0, required: 1 },
    });
    expect(await events.next()).toBeNull();
  });

  it("a closed session: one event, then the stream ends", async () => {
    const id = await insertSession(svc.database.db, {
      merchantId,
      environment: "sandbox",
      network: "USDT-TRC20",
      address: "TNPeeaaFB7K9cmo4uQpcU32zGK8G1NYqeL",
      amount: 5_000_000n,
      expiresAt: new Date(Date.now() + 600_000),
    });
    await setSessionState(svc.database.db, id, {
      status: "confirmed",
      actualBalance: 5_000_000n,
      txHash: "h1",
    });
    const events = await openEvents(`${svc.urls.sandbox}/pay/${id}/events`);
    expect(await events.nextStatus()).toMatchObject({ status: "confirmed", blockchainTxHash: "h1" });
    expect(await events.next()).toBeNull();
  });

  it("HEAD answers the stream's headers with an empty body (and subscribes to nothing)", async () => {
    const s = await createSandboxSession(svc, headers, { amount: 1 });
    const r = await fetch(`${svc.urls.sandbox}/pay/${s.id}/events`, { method: "HEAD" });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    expect(await r.text()).toBe("");
  });

  it("404 JSON envelope for an unknown id and for a session of the other environment", async () => {
    const s = await createSandboxSession(svc, headers, { amount: 1 });
    for (const [base, path] of [
      [svc.urls.sandbox, "/pay/tx_nope/events"],
      [svc.urls.production, `/pay/${s.id}/events`],
    ] as const) {
      const r = await call(base, path);
      expect(r.status).toBe(404);
      expect(r.body).toMatchObject({ success: false, error: { code: "NOT_FOUND" } });
    }
  });

  it("one open stream is one request of the Public Page tier however long it lives", async () => {
    const s = await createSandboxSession(svc, headers, { amount: 2 });
    const remaining = async () =>
      Number((await page(svc.urls.sandbox, `/pay/${s.id}`)).headers.get("ratelimit-remaining"));
    const before = await remaining();
    const events = await openEvents(`${svc.urls.sandbox}/pay/${s.id}/events`);
    expect(Number(events.res.headers.get("ratelimit-remaining"))).toBe(before - 1);
    await events.nextStatus();
    await call(svc.urls.sandbox, `/api/v1/sandbox/checkout/${s.id}/pay`, { headers, json: {} });
    expect(await events.nextStatus()).toMatchObject({ status: "confirmed" });
    expect(await remaining()).toBe(before - 2); // the page before, the stream, this page: nothing else
  });

  it("several streams on several sessions (one shared poller) each get their own change", async () => {
    const ids = await Promise.all(
      ["TQ5NMzpEk7jA8kTH6DEg3kVPEHUt7WGxHn", "TFdxNfj2h7pHbJJ3ZrWv1hGvtSrHn5Bo6N"].map((address) =>
        insertSession(svc.database.db, {
          merchantId,
          environment: "sandbox",
          network: "USDT-TRC20",
          address,
          amount: 1_000_000n,
          expiresAt: new Date(Date.now() + 600_000),
        }),
      ),
    );
    const streams = await Promise.all(
      [ids[0], ids[0], ids[1]].map((id) => openEvents(`${svc.urls.sandbox}/pay/${id}/events`)),
    );
    for (const st of streams) expect(await st.nextStatus()).toMatchObject({ status: "pending" });
    for (const id of ids) {
      await setSessionState(svc.database.db, id as string, {
        status: "confirmed",
        actualBalance: 1_000_000n,
      });
    }
    for (const st of streams) expect(await st.nextStatus()).toMatchObject({ status: "confirmed" });
    for (const st of streams) expect(await st.next()).toBeNull();
  });

  it("a client that goes away is dropped; the service keeps serving", async () => {
    const s = await createSandboxSession(svc, headers, { amount: 1 });
    const events = await openEvents(`${svc.urls.sandbox}/pay/${s.id}/events`);
    await events.nextStatus();
    events.close();
    await events.ended;
    const r = await page(svc.urls.sandbox, `/pay/${s.id}`);
    expect(r.status).toBe(200);
  });
});

describe("graceful stop with open streams", () => {
  it("ends every open stream at once, so the stop does not wait for the shutdown timeout", async () => {
    const own = await startTestService({ env: { SHUTDOWN_TIMEOUT_MS: "60000" } });
    try {
      const m = await own.createMerchant();
      const s = await createSandboxSession(own, sandboxHeaders(m), { amount: 1 });
      const streams = await Promise.all(
        [1, 2].map(() => openEvents(`${own.urls.sandbox}/pay/${s.id}/events`)),
      );
      for (const st of streams) expect(await st.nextStatus()).toMatchObject({ status: "pending" });
      const started = Date.now();
      await own.proc.stop();
      // The stop waited neither for the 60 s shutdown timeout nor for the clients.
      expect(Date.now() - started).toBeLessThan(15_000);
      await Promise.all(streams.map((st) => st.ended));
      for (const st of streams) expect(await st.next()).toBeNull();
    } finally {
      await own.close();
    }
  });
});

it("the OpenAPI document lists both routes with their HTML and event-stream responses", async () => {
  const r = await call(svc.urls.production, "/docs/openapi.json", {
    headers: { authorization: `Basic ${Buffer.from("docs:pw").toString("base64")}` },
  });
  expect(r.status).toBe(200);
  const paths = r.body.paths;
  expect(paths["/pay/{id}"].get.responses["200"].content["text/html"]).toBeDefined();
  expect(paths["/pay/{id}"].get.responses["404"].content["text/html"]).toBeDefined();
  expect(paths["/pay/{id}/events"].get.responses["200"].content["text/event-stream"]).toBeDefined();
  expect(paths["/pay/{id}/events"].get.responses["404"].content["application/json"]).toBeDefined();
});
