import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { updateBranding } from "../../src/merchants/index.js";
import { call, startTestService, type TestService } from "../support/harness.js";
import { makePng } from "./images.js";
import { createSandboxSession, sandboxHeaders } from "./support.js";

// The hosted page in a real browser (Debian chromium driven by playwright-core): layout at desktop
// and mobile widths (screenshots under test-artifacts/pay/), the page's script under its CSP, and the
// live status flipping to paid without a reload when the sandbox payment lands.
const CHROMIUM = "/usr/bin/chromium";
// CI sets REQUIRE_BROWSER=1 (and installs chromium): there a missing browser fails instead of skipping.
const hasChromium = existsSync(CHROMIUM) || process.env.REQUIRE_BROWSER === "1";
if (!hasChromium)
  console.warn(`test/pay/browser.test.ts skipped: ${CHROMIUM} is missing (apt-get install -y chromium)`);

const ARTIFACTS = path.resolve("test-artifacts/pay");
const DESKTOP = { width: 1280, height: 800 };
const MOBILE = { width: 375, height: 812 };

let svc: TestService;
let browser: Browser;
let headers: Record<string, string>;
let branded: Record<string, string>;

beforeAll(async () => {
  if (!hasChromium) return;
  await mkdir(ARTIFACTS, { recursive: true });
  svc = await startTestService({ env: { RATE_LIMIT_PUBLIC_PAGE: "1000" } });
  headers = sandboxHeaders(await svc.createMerchant());
  // A shop with its branding (the dashboard's use case, as PATCH /api/v1/dashboard/settings/branding runs it).
  const shop = await svc.createMerchant();
  await updateBranding(
    svc.database.db,
    shop.id,
    { displayName: "Acme Coffee", logo: makePng(180, 60, [176, 58, 46]) },
    new Date(),
  );
  branded = sandboxHeaders(shop);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await svc?.close();
});

/** A page that records script errors and CSP violations (there must be none). */
async function open(context: BrowserContext, url: string) {
  const problems: string[] = [];
  const page = await context.newPage();
  page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(`console: ${m.text()}`);
  });
  await page.goto(url);
  return { page, problems };
}

async function shot(page: Page, name: string) {
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/** Nothing sticks out of the viewport horizontally, and the key elements are inside it. */
async function expectFits(page: Page, width: number) {
  const scrollWidth = Number(await page.evaluate("document.documentElement.scrollWidth"));
  expect(scrollWidth).toBeLessThanOrEqual(width);
  for (const selector of ["#address", ".qr-code svg", "h1", ".summary"]) {
    const box = await page.locator(selector).boundingBox();
    expect(box, selector).not.toBeNull();
    expect(box!.x, selector).toBeGreaterThanOrEqual(0);
    expect(box!.x + box!.width, selector).toBeLessThanOrEqual(width);
  }
}

const pay = (id: string, amount?: number, as: Record<string, string> = headers) =>
  call(svc.urls.sandbox, `/api/v1/sandbox/checkout/${id}/pay`, {
    headers: as,
    json: amount === undefined ? {} : { amount },
  });

describe.skipIf(!hasChromium)("hosted page in Chromium", () => {
  it("desktop 1280x800: renders, counts down, copies the address, and flips to paid without a reload", async () => {
    const s = await createSandboxSession(svc, headers, { amount: 49.99, orderId: "A-1001" });
    const context = await browser.newContext({ viewport: DESKTOP, locale: "en-US" });
    await context.grantPermissions(["clipboard-read", "clipboard-write"]);
    const { page, problems } = await open(context, `${svc.urls.sandbox}/pay/${s.id}`);

    await expect(page.locator("h1").textContent()).resolves.toBe("Pay with USDT");
    await expect(page.locator('[data-panel="waiting"]').isVisible()).resolves.toBe(true);
    await expect(page.locator("#address").textContent()).resolves.toBe(s.walletAddress);
    await expect(page.locator(".qr-code svg").isVisible()).resolves.toBe(true);
    await expectFits(page, DESKTOP.width);

    // The countdown runs (the script is allowed by the CSP nonce).
    const first = await page.locator("#countdown").textContent();
    await expect
      .poll(() => page.locator("#countdown").textContent(), { timeout: 5_000, interval: 100 })
      .not.toBe(first);

    // Copy button (hidden without JS) copies the address.
    const copy = page.locator('button[data-copy="address"]');
    await expect(copy.isVisible()).resolves.toBe(true);
    await copy.click();
    await expect(page.evaluate("navigator.clipboard.readText()")).resolves.toBe(s.walletAddress);
    await expect(copy.textContent()).resolves.toBe("Copied");
    await shot(page, "desktop-pending");

    // The payment lands: the page flips through its one SSE connection, no reload.
    await page.evaluate("window.notReloaded = true");
    expect((await pay(s.id)).status).toBe(202);
    await page.locator('[data-panel="paid"]').waitFor({ state: "visible", timeout: 20_000 });
    await expect(page.evaluate("window.notReloaded")).resolves.toBe(true); // same document: no reload
    await expect(page.locator('[data-panel="paid"] p').first().textContent()).resolves.toBe(
      "Payment received. Thank you!",
    );
    await expect(page.locator("#instructions").isHidden()).resolves.toBe(true);
    await expect(page.locator('[data-field="txHash"]').textContent()).resolves.toMatch(/\S{16,}/);
    await expect(page.locator("#pay").getAttribute("data-state")).resolves.toBe("paid");
    await shot(page, "desktop-paid");
    expect(problems).toEqual([]);
    await context.close();
  });

  it("mobile 375x812 (German): fits the screen, shows a partial payment live, then paid", async () => {
    const s = await createSandboxSession(svc, headers, { amount: 10 });
    const context = await browser.newContext({
      viewport: MOBILE,
      deviceScaleFactor: 2,
      isMobile: true,
      hasTouch: true,
      locale: "de-DE",
    });
    const { page, problems } = await open(context, `${svc.urls.sandbox}/pay/${s.id}`);
    await expect(page.locator("html").getAttribute("lang")).resolves.toBe("de");
    await expect(page.locator("h1").textContent()).resolves.toBe("Mit USDT bezahlen");
    await expectFits(page, MOBILE.width);
    await shot(page, "mobile-pending-de");

    expect((await pay(s.id, 4)).status).toBe(202);
    await page.locator('[data-panel="partial"]').waitFor({ state: "visible", timeout: 20_000 });
    await expect(page.locator('[data-panel="partial"]').textContent()).resolves.toContain(
      "4 USDT erhalten. Bitte senden Sie die restlichen 6 USDT.",
    );
    await expect(page.locator(".amount").textContent()).resolves.toBe("6 USDT");
    await expectFits(page, MOBILE.width);
    await shot(page, "mobile-partial-de");

    expect((await pay(s.id, 6)).status).toBe(202);
    await page.locator('[data-panel="paid"]').waitFor({ state: "visible", timeout: 20_000 });
    await expect(page.locator('[data-panel="paid"] p').first().textContent()).resolves.toBe(
      "Zahlung erhalten. Vielen Dank!",
    );
    await shot(page, "mobile-paid-de");
    expect(problems).toEqual([]);
    await context.close();
  });

  it("the browser enforces the CSP: an injected inline script without the nonce does not run", async () => {
    const s = await createSandboxSession(svc, headers, { amount: 1 });
    const context = await browser.newContext({ viewport: DESKTOP });
    const { page, problems } = await open(context, `${svc.urls.sandbox}/pay/${s.id}`);
    await page.addScriptTag({ content: "window.injected = true;" }).catch(() => undefined);
    await expect(page.evaluate("window.injected")).resolves.toBeUndefined();
    expect(problems.some((p) => p.includes("Content Security Policy"))).toBe(true);
    // The page's own script still ran (copy buttons shown).
    await expect(page.locator('button[data-copy="address"]').isVisible()).resolves.toBe(true);
    await context.close();
  });

  it("without JavaScript the essentials are there: amount, address, QR, expiry (UTC), refresh link", async () => {
    const s = await createSandboxSession(svc, headers, { amount: 7.5 });
    const context = await browser.newContext({ viewport: MOBILE, javaScriptEnabled: false });
    const { page } = await open(context, `${svc.urls.sandbox}/pay/${s.id}`);
    await expect(page.locator(".amount").textContent()).resolves.toBe("7.5 USDT");
    await expect(page.locator("#address").isVisible()).resolves.toBe(true);
    await expect(page.locator(".qr-code svg").isVisible()).resolves.toBe(true);
    // Without the script the server's rendering stays: the payer's language, in UTC (zone named).
    await expect(page.locator(".expiry time").textContent()).resolves.toMatch(
      /^\d{1,2} [A-Z][a-z]{2} \d{4}, \d\d:\d\d UTC$/,
    );
    await expect(page.locator('button[data-copy="address"]').isHidden()).resolves.toBe(true);
    await expect(page.getByRole("link", { name: "Refresh status" }).isVisible()).resolves.toBe(true);
    await expectFits(page, MOBILE.width);
    await shot(page, "mobile-nojs");
    await context.close();
  });
});

describe.skipIf(!hasChromium)("the branded page at 375 px in three languages", () => {
  const urls = { successUrl: "https://shop.example/thanks", cancelUrl: "https://shop.example/cart" };
  const cases = [
    {
      locale: "en-US",
      timezoneId: "America/New_York",
      lang: "en",
      payTo: "Payment to Acme Coffee",
      cancel: "Cancel and return to Acme Coffee",
      back: "Back to Acme Coffee",
      zone: /GMT-5|EST/,
    },
    {
      locale: "fr-FR",
      timezoneId: "Europe/Paris",
      lang: "fr",
      payTo: "Paiement à Acme Coffee",
      cancel: "Annuler et revenir à Acme Coffee",
      back: "Retour à Acme Coffee",
      zone: /UTC\+1|CET/,
    },
    {
      locale: "zh-CN",
      timezoneId: "Asia/Shanghai",
      lang: "zh",
      payTo: "收款方：Acme Coffee",
      cancel: "取消并返回 Acme Coffee",
      back: "返回 Acme Coffee",
      zone: /GMT\+8|UTC\+8|CST/,
    },
  ] as const;

  for (const c of cases) {
    it(`${c.lang}: the shop's name and logo, times in the browser's zone, cancel while open, back to the shop once paid (live)`, async () => {
      const s = await createSandboxSession(svc, branded, { amount: 3, ...urls });
      const context = await browser.newContext({
        viewport: MOBILE,
        deviceScaleFactor: 2,
        isMobile: true,
        hasTouch: true,
        locale: c.locale,
        timezoneId: c.timezoneId,
        extraHTTPHeaders: { "accept-language": c.locale },
      });
      const { page, problems } = await open(context, `${svc.urls.sandbox}/pay/${s.id}`);
      await expect(page.locator("html").getAttribute("lang")).resolves.toBe(c.lang);
      await expect(page.locator(".merchant-name").textContent()).resolves.toBe(c.payTo);
      const logo = page.locator("img.logo");
      await expect(logo.isVisible()).resolves.toBe(true);
      // Loaded from our origin under the page's CSP (a refused or broken image has no natural width).
      await expect(
        logo.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth),
      ).resolves.toBe(180);
      const box = await logo.boundingBox();
      expect(box!.height).toBeLessThanOrEqual(48.5);
      // The script re-rendered the expiry in the browser's own time zone.
      await expect(page.locator(".expiry time").textContent()).resolves.toMatch(c.zone);
      const cancel = page.locator('a[data-return="cancel"]');
      await expect(cancel.textContent()).resolves.toBe(c.cancel);
      await expect(cancel.isVisible()).resolves.toBe(true);
      await expect(page.locator('a[data-return="success"]').isVisible()).resolves.toBe(false);
      await expectFits(page, MOBILE.width);
      await shot(page, `branded-375-${c.lang}-pending`);

      // Paid: the "back to the shop" button appears without a reload; nothing redirects.
      await page.evaluate("window.notReloaded = true");
      expect((await pay(s.id, undefined, branded)).status).toBe(202);
      await page.locator('[data-panel="paid"]').waitFor({ state: "visible", timeout: 20_000 });
      const back = page.locator('a[data-return="success"]');
      await expect(back.isVisible()).resolves.toBe(true);
      await expect(back.textContent()).resolves.toBe(c.back);
      await expect(back.getAttribute("href")).resolves.toBe(urls.successUrl);
      await expect(cancel.isVisible()).resolves.toBe(false);
      await expect(page.evaluate("window.notReloaded")).resolves.toBe(true);
      expect(page.url()).toBe(`${svc.urls.sandbox}/pay/${s.id}`);
      await expect(page.locator('time[data-field="confirmedAt"]').textContent()).resolves.toMatch(c.zone);
      await shot(page, `branded-375-${c.lang}-paid`);
      expect(problems).toEqual([]);
      await context.close();
    });
  }
});
