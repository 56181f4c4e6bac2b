import { existsSync } from "node:fs";
import { mkdir, readFile, rm } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { generate } from "otplib";
import { type Browser, type BrowserContext, chromium, type Locator, type Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { listOutbox } from "../../src/mail/index.js";
import { onPostgres } from "../support/db.js";
import { call, startTestService, type TestService } from "../support/harness.js";
import { freePort, retryUntil, waitingLocator } from "./browser.js";
import { ensureWebBuild, ROOT } from "./build.js";

/**
 * Issue #10's tour, end to end in a real browser (Debian's chromium driven by playwright-core)
 * against the real service (PGlite, or PostgreSQL with TEST_DATABASE_URL), in the sandbox: sign up
 * and get sandbox keys, see a test payment arrive, debug a failing webhook, manage keys and
 * settings with 2FA, approve a withdrawal, send a payout with an e-mailed OTP, sign in again with
 * 2FA — then the team of issue #21: invite a finance member through the step-up dialog, who joins
 * from the mailed link in a second browser, sees only what the role allows and gives the first of
 * two approvals of a withdrawal (four-eyes) that the owner's second sends, both in the audit log;
 * a role change to viewer hides the decisions; removal ends the member's session — and every
 * screen at 375 px. Screenshots of each screen go to test-artifacts/web/<db>/.
 */

// Functions given to page.evaluate run in the browser; this file is compiled without the DOM lib.
declare const document: {
  activeElement: unknown;
  documentElement: { scrollWidth: number; clientWidth: number };
};

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const ARTIFACTS = path.join(ROOT, "test-artifacts/web", onPostgres ? "postgres" : "pglite");
const PASSWORD = "correct horse battery staple";
const TRON_ADDRESS = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
const STEP = 10_000;

const eventually = <T>(assertion: () => Promise<T>, timeout = STEP) => retryUntil(assertion, timeout);

/** Web-first waits on playwright-core's auto-waiting locators (test/web/browser.ts), and this file's own. */
function pwExpect(loc: Locator) {
  const text = async () => (await loc.textContent()) ?? "";
  return {
    ...waitingLocator(loc),
    toHaveCount: (n: number) => eventually(async () => expect(await loc.count()).toBe(n)),
    toHaveText: (t: string | RegExp) =>
      eventually(async () =>
        typeof t === "string" ? expect(await text()).toBe(t) : expect(await text()).toMatch(t),
      ),
    toBeChecked: () => eventually(async () => expect(await loc.isChecked()).toBe(true)),
    toBeFocused: () =>
      eventually(async () => expect(await loc.evaluate((el) => el === document.activeElement)).toBe(true)),
    toHaveAttribute: (name: string, value: string) =>
      eventually(async () => expect(await loc.getAttribute(name)).toBe(value)),
  };
}

let svc: TestService;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let base: string;
let receiver: http.Server;
let receiverStatus = 500;
const received: string[] = [];
const email = `e2e-${Date.now()}@example.com`;
/** The team member the owner invites (issue #21), in a browser context of its own. */
const invitee = `e2e-finance-${Date.now()}@example.com`;
let memberContext: BrowserContext | undefined;
let member: Page;
const keys: { apiKey?: string; apiSecret?: string } = {};
let shots = 0;

async function shot(name: string, target: Page = page) {
  shots += 1;
  await target.screenshot({
    path: path.join(ARTIFACTS, `${String(shots).padStart(2, "0")}-${name}.png`),
    fullPage: true,
  });
}

async function nav(label: string, target: Page = page) {
  const menu = target.getByRole("button", { name: "Menu" });
  if (await menu.isVisible()) await menu.click();
  await target.getByRole("navigation", { name: "Main" }).getByRole("link", { name: label }).click();
  await pwExpect(target.getByRole("heading", { level: 1, name: label })).toBeVisible();
}

/** The labels of the main navigation `target` shows. */
async function navLabels(target: Page): Promise<string[]> {
  const links = target.getByRole("navigation", { name: "Main" }).getByRole("link");
  await pwExpect(links.first()).toBeVisible();
  return (await links.allTextContents()).map((t) => t.trim());
}

/** A pending withdrawal request of the sandbox, made by the merchant's server (API key). */
async function pendingWithdrawal(externalUserId: string) {
  const created = await call(base, "/api/v1/public/withdrawal-requests", {
    headers: { apikey: keys.apiKey as string, "x-api-secret": keys.apiSecret as string },
    json: { amount: 6, currencyType: "USDT-TRC20", walletAddress: TRON_ADDRESS, externalUserId },
  });
  expect(created.status, created.text).toBe(201);
  expect(created.body.data.status).toBe("pending");
}

const usedCodeMails = new Set<string>();
/** The last TOTP time step the server accepted (a code is accepted once, at a later step each time). */
let lastTotpStep = 0;

/** A TOTP code of a later step than the last accepted one, within the server's ±1 step (waits for it). */
async function freshTotp(seed: string): Promise<string> {
  for (;;) {
    const step = Math.floor(Date.now() / 30_000) + 1;
    if (step > lastTotpStep) {
      lastTotpStep = step;
      return generate({ secret: seed, epoch: step * 30 });
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** The code of the newest OTP mail in the development outbox not read before (waits for it). */
async function latestCode(): Promise<string> {
  let code = "";
  await eventually(async () => {
    const r = await page.request.get(`${base}/api/v1/dashboard/dev/mail?limit=1`);
    const mail = ((await r.json()) as { data: { id: string; subject: string }[] }).data[0];
    const m = /code: (\d{6})/.exec(mail?.subject ?? "");
    if (!mail || !m?.[1] || usedCodeMails.has(mail.id)) throw new Error("no new code mail in the outbox");
    usedCodeMails.add(mail.id);
    code = m[1];
  });
  return code;
}

// CI sets REQUIRE_BROWSER=1 (and installs chromium): there a missing browser fails instead of skipping.
const haveChromium = existsSync(CHROMIUM);

/** In the browser: the elements sticking out to the right of the viewport (for the failure message). */
const WIDEST = `[...document.querySelectorAll("body *")]
  .filter((e) => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
  .slice(-3).map((e) => e.tagName + "." + e.className + " " + Math.round(e.getBoundingClientRect().right)).join(", ")`;

// Steps wait on a browser and a busy CI machine (2 cores shared with the rest of the suite): 60 s each.
describe.skipIf(!haveChromium && process.env.REQUIRE_BROWSER !== "1")(
  "dashboard tour in the sandbox (Playwright, real service)",
  { timeout: 60_000 },
  () => {
    beforeAll(async () => {
      await rm(ARTIFACTS, { recursive: true, force: true });
      await Promise.all([ensureWebBuild(), mkdir(ARTIFACTS, { recursive: true })]);
      receiver = http.createServer((req, res) => {
        let body = "";
        req.on("data", (c) => {
          body += c;
        });
        req.on("end", () => {
          received.push(body);
          res.writeHead(receiverStatus, { "content-type": "text/plain" });
          res.end(receiverStatus === 200 ? "ok" : "boom: database down");
        });
      });
      await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", () => r()));
      // Fixed ports so the base URLs (and so the dashboard's allowed origins) are the real ones.
      const [prod, sandbox] = [await freePort(), await freePort()];
      svc = await startTestService({
        env: {
          PORT: String(prod),
          SANDBOX_PORT: String(sandbox),
          PRODUCTION_BASE_URL: `http://127.0.0.1:${prod}`,
          SANDBOX_BASE_URL: `http://127.0.0.1:${sandbox}`,
          SSRF_ALLOW_CIDRS: "127.0.0.0/8",
          RATE_LIMIT_AUTH: "1000",
        },
      });
      base = svc.urls.sandbox;
      browser = await chromium.launch({
        executablePath: CHROMIUM,
        headless: true,
        args: [
          "--no-sandbox",
          "--disable-gpu",
          "--disable-quic",
          "--no-first-run",
          "--disable-background-networking",
          "--disable-component-update",
          "--disable-sync",
        ],
      });
      context = await browser.newContext({ viewport: { width: 1280, height: 860 }, acceptDownloads: true });
      context.setDefaultTimeout(STEP);
      page = await context.newPage();
    }, 180_000);

    afterAll(async () => {
      await memberContext?.close();
      await context?.close();
      await browser?.close();
      await svc?.close();
      await new Promise<void>((r) => (receiver ? receiver.close(() => r()) : r()));
    });

    // A failing step leaves a picture of what the browser showed.
    afterEach(async (ctx) => {
      if (ctx.task.result?.state === "fail" && page) {
        await page.screenshot({
          path: path.join(ARTIFACTS, `FAILED-${ctx.task.name.slice(0, 40)}.png`),
          fullPage: true,
        });
        await page.keyboard.press("Escape"); // a dialog left open would block the next step
        // The team member's browser too, while it is open.
        if (memberContext && member && !member.isClosed())
          await member.screenshot({
            path: path.join(ARTIFACTS, `FAILED-member-${ctx.task.name.slice(0, 33)}.png`),
            fullPage: true,
          });
      }
    });

    it("signs up and shows the sandbox key pair once", async () => {
      await page.goto(`${base}/`);
      await pwExpect(page.getByRole("heading", { name: "Sign in" })).toBeVisible();
      await shot("sign-in");
      await page.getByRole("link", { name: "Create an account" }).click();
      await page.getByLabel("Company name").fill("Tour Coffee Ltd");
      await page.getByLabel("E-mail").fill(email);
      await page.getByLabel("Password").fill("short");
      await page.getByRole("button", { name: "Create account" }).click();
      // The browser's own check keeps a too-short password from being sent.
      await pwExpect(page.getByRole("heading", { name: "Create your account" })).toBeVisible();
      await page.getByLabel("Password").fill(PASSWORD);
      await page.getByRole("button", { name: "Create account" }).click();
      await pwExpect(page.getByRole("heading", { name: "Your account is ready" })).toBeVisible();
      keys.apiKey = (await page.getByTestId("reveal-API key").textContent()) ?? "";
      keys.apiSecret = (await page.getByTestId("reveal-API secret").textContent()) ?? "";
      expect(keys.apiKey).toMatch(/^ak_test_/);
      expect(keys.apiSecret).toMatch(/^sk_test_/);
      await shot("sign-up-sandbox-keys");
      await page.getByRole("button", { name: "I've saved them" }).click();
      await pwExpect(page.getByRole("heading", { level: 1, name: "Overview" })).toBeVisible();
      // The environment switch is always there, and the sandbox is unmistakable.
      await pwExpect(page.getByRole("radio", { name: "Sandbox" })).toBeChecked();
      await pwExpect(page.getByRole("note")).toContainText("No real money moves here");
      await pwExpect(page.getByText("No transactions yet")).toBeVisible();
      await shot("overview-empty");
    });

    it("creates a test checkout session, opens its hosted page, pays it with the simulator, and the deposit arrives", async () => {
      await nav("Checkout sessions");
      await page.getByLabel("Amount (USDT)").fill("25");
      await page.getByLabel("Order ID (optional)").fill("order-tour-1");
      await page.getByRole("button", { name: "Create session" }).click();
      const card = page.getByTestId("session-card");
      await pwExpect(card).toContainText("pending");
      const link = card.getByRole("link", { name: /hosted payment page/ });
      const href = (await link.getAttribute("href")) ?? "";
      expect(href).toMatch(new RegExp(`^${base}/pay/`));
      await shot("checkout-session-created");

      const [hosted] = await Promise.all([context.waitForEvent("page"), link.click()]);
      await hosted.waitForLoadState();
      await pwExpect(hosted.locator("body")).toContainText("25");
      await shot("hosted-payment-page", hosted);
      await hosted.close();

      await card.getByRole("button", { name: "Pay with the simulator" }).click();
      await pwExpect(card).toContainText("confirmed", { timeout: 20_000 });
      await pwExpect(card).toContainText("your balance is credited");
      await shot("checkout-session-paid");

      await nav("Overview");
      const api = await page.request.get(`${base}/api/v1/dashboard/balance`);
      const [trc] = ((await api.json()) as { data: { currencyType: string; available: number }[] }).data;
      expect(trc?.available).toBeGreaterThan(0);
      await pwExpect(page.getByTestId("available-USDT-TRC20")).toHaveText(
        new Intl.NumberFormat("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 6 }).format(
          trc?.available ?? 0,
        ),
      );
      await pwExpect(page.getByRole("img", { name: /USDT received/ })).toBeVisible();
      await pwExpect(page.getByRole("table", { name: "Recent transactions" })).toContainText("order-tour-1");
      await shot("overview-with-deposit");
    });

    it("lists transactions with filters, literal search, sort and pagination, and exports CSV", async () => {
      await nav("Transactions");
      const table = page.getByRole("table", { name: "Transactions" });
      await pwExpect(table.getByRole("row")).toHaveCount(2); // header + the deposit
      await page.getByLabel("Search").fill("%");
      await page.getByRole("button", { name: "Search", exact: true }).click();
      await pwExpect(page.getByText("No transactions match these filters")).toBeVisible();
      await page.getByLabel("Search").fill("ORDER-TOUR");
      await page.getByRole("button", { name: "Search", exact: true }).click();
      await pwExpect(table.getByRole("row")).toHaveCount(2);
      await page.getByLabel("Type").selectOption("withdrawal");
      await pwExpect(page.getByText("No transactions match these filters")).toBeVisible();
      await page.getByRole("button", { name: "Clear filters" }).click();
      await page.getByLabel("Sort by").selectOption("amount");
      await pwExpect(table).toContainText("25.00");
      expect(page.url()).toContain("sortBy=amount");
      const [download] = await Promise.all([
        page.waitForEvent("download"),
        page.getByRole("button", { name: "Export CSV" }).click(),
      ]);
      expect(download.suggestedFilename()).toMatch(/^stablegate-sandbox-transactions-.*\.csv$/);
      const csv = await readFile((await download.path()) as string, "utf8");
      const lines = csv.trim().split("\r\n");
      expect(lines[0]).toMatch(/^transactionId,type,status,amount,/);
      expect(lines).toHaveLength(2);
      expect(lines[1]).toContain(",deposit,confirmed,25,");
      expect(lines[1]).toContain("order-tour-1");
      await shot("transactions");
      // The export is in the audit log, with who did it (issue #21).
      await nav("Audit log");
      const audit = page.getByRole("table", { name: "Audit records" });
      await pwExpect(audit.getByRole("row").filter({ hasText: "export.transactions" })).toHaveCount(1);
      await pwExpect(audit.getByRole("row").filter({ hasText: "export.transactions" })).toContainText(
        "(owner)",
      );
      await shot("audit-log");
      // Signed up, never signed in: the filter leaves nothing.
      await page.getByLabel("Action").selectOption("auth.sign_in");
      await pwExpect(page.getByText("No records")).toBeVisible();
      await nav("Transactions");
      await table.getByRole("link").first().click();
      await pwExpect(page.getByRole("heading", { level: 1, name: "Transaction" })).toBeVisible();
      await pwExpect(page.getByText("order-tour-1")).toBeVisible();
      await shot("transaction-detail");
    });

    it("debugs a failing webhook: test delivery, the attempt's answer, retry; masked secret, rotate and reveal once", async () => {
      await nav("Webhooks");
      const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
      await page.getByLabel("Webhook URL").fill(hookUrl);
      await page.getByRole("button", { name: "Save URL" }).click();
      await pwExpect(page.getByText(`Webhook URL saved: ${hookUrl}`)).toBeVisible();

      receiverStatus = 500;
      await page.getByRole("button", { name: "Send a test event" }).click();
      await pwExpect(page.getByTestId("test-result")).toContainText(
        "not delivered — your endpoint answered HTTP 500",
      );
      await page.getByRole("button", { name: "See the attempt" }).click();
      const detail = page.getByTestId("event-detail");
      await pwExpect(detail).toContainText("HTTP 500");
      await pwExpect(detail).toContainText("boom: database down");
      await shot("webhook-failing-attempt");

      receiverStatus = 200;
      await detail.getByRole("button", { name: "Retry now" }).click();
      await pwExpect(detail).toContainText("Retry: delivered (HTTP 200)");
      expect(received.length).toBeGreaterThanOrEqual(2);

      // The deposit's event went nowhere (no URL then): find it with the status filter and retry it.
      await detail.getByRole("button", { name: "Close" }).click();
      await page.getByLabel("Delivery status").selectOption("failed");
      const log = page.getByRole("table", { name: "Webhook events" });
      await pwExpect(log).toContainText("deposit · confirmed");
      await log.getByRole("button", { name: /^View/ }).first().click();
      // The detail loads the event and its attempts: slower than a step on a loaded runner.
      await pwExpect(detail).toContainText("failed", { timeout: 30_000 });
      await detail.getByRole("button", { name: "Retry now" }).click();
      await pwExpect(detail).toContainText("Retry: delivered (HTTP 200)");
      expect(received.some((b) => b.includes('"type":"deposit"'))).toBe(true);
      await page.getByLabel("Delivery status").selectOption("delivered");
      await pwExpect(log.getByRole("row")).toHaveCount(3);
      await shot("webhook-event-log");

      const masked = (await page.getByTestId("masked-secret").textContent()) ?? "";
      expect(masked).toMatch(/^\*+[^*]{8}$/);
      await page.getByRole("button", { name: "Rotate secret…" }).click();
      const dialog = page.getByRole("dialog", { name: "Rotate the webhook secret?" });
      await pwExpect(dialog).toBeVisible();
      await dialog.getByRole("button", { name: "Rotate" }).click();
      const secret = (await page.getByTestId("reveal-Webhook secret").textContent()) ?? "";
      expect(secret.length).toBeGreaterThan(16);
      expect(secret).not.toContain("*");
      await shot("webhook-secret-revealed-once");
      await page.getByRole("button", { name: "I've saved it" }).click();
      // The secret's last 8 characters may hold regex metacharacters (base64's + and /): escaped.
      const tail = secret.slice(-8).replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
      await pwExpect(page.getByTestId("masked-secret")).toHaveText(new RegExp(`^\\*+${tail}$`));
      await pwExpect(page.getByTestId("reveal-Webhook secret")).toHaveCount(0);
    });

    it("creates, rotates and revokes API keys, each secret shown once", async () => {
      await nav("API keys");
      await page.getByRole("button", { name: "Create sandbox key pair" }).click();
      const created = (await page.getByTestId("reveal-API key").textContent()) ?? "";
      expect(created).toMatch(/^ak_test_/);
      await page.getByRole("button", { name: "I've saved them" }).click();
      const table = page.getByRole("table", { name: "Active API keys" });
      await pwExpect(table.getByRole("row")).toHaveCount(3);

      await table.getByRole("button", { name: `Rotate ${created}` }).click();
      const rotate = page.getByRole("dialog", { name: "Rotate this key pair?" });
      await rotate.getByRole("button", { name: "Rotate" }).click();
      const rotated = (await page.getByTestId("reveal-API key").textContent()) ?? "";
      expect(rotated).toMatch(/^ak_test_/);
      expect(rotated).not.toBe(created);
      await shot("api-keys-rotated");
      await page.getByRole("button", { name: "I've saved them" }).click();

      await table.getByRole("button", { name: `Revoke ${rotated}` }).click();
      await page
        .getByRole("dialog", { name: "Revoke this key pair?" })
        .getByRole("button", { name: "Revoke" })
        .click();
      await pwExpect(page.getByText(`Key ${rotated} is revoked`)).toBeVisible();
      await pwExpect(table.getByRole("row")).toHaveCount(2);
      // The rotated-away and the revoked keys no longer work.
      for (const k of [created, rotated]) {
        const r = await call(base, "/api/v1/public/balance", { headers: { apikey: k } });
        expect([401, 403]).toContain(r.status);
      }
      await shot("api-keys");
    });

    it("saves settings (with the API's errors in plain words) and turns on 2FA with a QR code", async () => {
      await nav("Settings");
      await page.getByLabel("Send withdrawal requests automatically").uncheck();
      await page.getByLabel("Auto-approve threshold, USDT on TRON (TRC-20)").fill("5");
      await page.getByLabel("IP allowlist").fill("not-an-ip");
      await page.getByRole("button", { name: "Save settings" }).click();
      const alert = page.getByRole("alert");
      await pwExpect(alert).toContainText("Some details need fixing.");
      await pwExpect(alert).toContainText("IP allowlist");
      await shot("settings-error");
      await page.getByLabel("IP allowlist").fill("");
      await page.getByRole("button", { name: "Save settings" }).click();
      await pwExpect(page.getByText("Settings saved.")).toBeVisible();
      const saved = await (await page.request.get(`${base}/api/v1/dashboard/settings`)).json();
      expect(saved.data).toMatchObject({ autoWithdraw: false, ipAllowlist: [] });
      expect(saved.data.autoApproveThreshold["USDT-TRC20"]).toBe(5);

      await page.getByRole("button", { name: "Set up two-factor authentication" }).click();
      const qr = page.getByRole("img", { name: "QR code for your authenticator app" });
      await pwExpect(qr).toBeVisible();
      expect(
        await qr.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth),
      ).toBeGreaterThan(50);
      const seed = (await page.getByTestId("totp-secret").textContent()) ?? "";
      await shot("settings-2fa-qr");
      await page.getByLabel("Enter the 6-digit code it shows").fill(await generate({ secret: seed }));
      await page.getByRole("button", { name: "Turn on" }).click();
      // Turning 2FA on is account-wide step-up (docs/merchants/authentication.md#step-up-for-production-changes): the e-mailed code, in any environment.
      const twofaStepUp = page.getByRole("dialog", { name: "Confirm it's you" });
      await pwExpect(twofaStepUp).toContainText("Two-factor authentication guards every sign-in");
      await twofaStepUp.getByRole("button", { name: "E-mail me a code" }).click();
      await twofaStepUp.getByLabel("E-mailed code").fill(await latestCode());
      await twofaStepUp.getByRole("button", { name: "Confirm" }).click();
      await pwExpect(page.getByTestId("twofa-status")).toHaveText("on");
      (globalThis as { totpSeed?: string }).totpSeed = seed;
    });

    it("approves a pending withdrawal request after a confirmation dialog", async () => {
      // auto-withdraw is off (previous step): the requests wait for the merchant.
      for (const user of ["user-41", "user-42"]) {
        const created = await call(base, "/api/v1/public/withdrawal-requests", {
          headers: { apikey: keys.apiKey as string, "x-api-secret": keys.apiSecret as string },
          json: { amount: 6, currencyType: "USDT-TRC20", walletAddress: TRON_ADDRESS, externalUserId: user },
        });
        expect(created.status, created.text).toBe(201);
        expect(created.body.data.status).toBe("pending");
      }
      await nav("Withdrawal requests");
      const table = page.getByRole("table", { name: "Withdrawal requests, pending" });
      await pwExpect(table).toContainText("user-42");
      await shot("withdrawals-pending");
      // Reject the first, with a reason: the held amount comes back.
      await table
        .getByRole("row")
        .filter({ hasText: "user-41" })
        .getByRole("button", { name: "Reject" })
        .click();
      const reject = page.getByRole("dialog", { name: "Reject this withdrawal?" });
      await reject.getByLabel("Reason (optional, sent in the webhook)").fill("Suspicious activity");
      await reject.getByRole("button", { name: "Reject" }).click();
      await pwExpect(page.getByText(/is now rejected/)).toBeVisible();
      await pwExpect(table.getByRole("row")).toHaveCount(2);
      await page.getByRole("button", { name: "rejected" }).click();
      await pwExpect(page.getByRole("table", { name: "Withdrawal requests, rejected" })).toContainText(
        "Suspicious activity",
      );
      await page.getByRole("button", { name: "pending" }).click();
      await table.getByRole("button", { name: "Approve" }).click();
      const dialog = page.getByRole("dialog", { name: "Approve this withdrawal?" });
      await pwExpect(dialog).toContainText(TRON_ADDRESS);
      await shot("withdrawal-approve-dialog");
      await dialog.getByRole("button", { name: "Approve and send" }).click();
      await pwExpect(page.getByText(/is now (processing|completed)/)).toBeVisible();
      // The notice follows the request while the simulator sends it: processing, then completed.
      await pwExpect(page.getByText(/is now completed/)).toBeVisible({ timeout: 20_000 });
      await pwExpect(page.getByText("Nothing waits for your approval")).toBeVisible();
    });

    it("sends a payout with the e-mailed OTP (wrong code first), and shows the result", async () => {
      await nav("Payouts");
      // Too much: the API's INSUFFICIENT_BALANCE in words.
      await page.getByLabel("Amount (USDT)").fill("100000");
      await page.getByLabel("Recipient wallet address").fill(TRON_ADDRESS);
      await page.getByRole("button", { name: "Continue: e-mail me a code" }).click();
      await pwExpect(page.getByLabel("6-digit code")).toBeVisible();
      await page.getByLabel("6-digit code").fill(await latestCode());
      await page.getByRole("button", { name: "Confirm and send" }).click();
      await pwExpect(page.getByRole("alert")).toContainText(
        "Your available balance is too low for this amount.",
      );
      await shot("payout-insufficient-balance");
      await page.getByRole("button", { name: "Back" }).click();

      await page.getByLabel("Amount (USDT)").fill("3");
      await page.getByLabel("Recipient wallet address").fill(TRON_ADDRESS);
      await page.getByRole("button", { name: "Continue: e-mail me a code" }).click();
      await pwExpect(page.getByLabel("6-digit code")).toBeFocused();
      await shot("payout-otp-step");
      await page.getByLabel("6-digit code").fill("000000");
      await page.getByRole("button", { name: "Confirm and send" }).click();
      await pwExpect(page.getByRole("alert")).toContainText("Some details need fixing.");
      await page.getByLabel("6-digit code").fill(await latestCode());
      await page.getByRole("button", { name: "Confirm and send" }).click();
      const result = page.getByTestId("payout-result");
      await pwExpect(result).toContainText(/processing|completed/);
      await shot("payout-sent");
      await pwExpect(result).toContainText("completed", { timeout: 20_000 });
      await pwExpect(result).toContainText("2.00 USDT on TRON (TRC-20) sent (fee 1.00)");
      await shot("payout-result");
    });

    it("shows the development mail outbox", async () => {
      await nav("Mail outbox");
      await pwExpect(page.getByText(/Your stablegate code: \d{6}/).first()).toBeVisible();
      await shot("mail-outbox");
    });

    it("signs out, refuses a wrong password in plain words, and signs in again with 2FA", async () => {
      await page.getByRole("button", { name: "Sign out" }).click();
      await pwExpect(page.getByRole("heading", { name: "Sign in" })).toBeVisible();
      await page.getByLabel("E-mail").fill(email);
      await page.getByLabel("Password").fill("not the password");
      await page.getByRole("button", { name: "Sign in" }).click();
      await pwExpect(page.getByRole("alert")).toContainText(
        "That e-mail and password don't match an account",
      );
      await page.getByLabel("Password").fill(PASSWORD);
      await page.getByRole("button", { name: "Sign in" }).click();
      await pwExpect(page.getByRole("heading", { name: "Two-factor code" })).toBeVisible();
      await shot("sign-in-2fa");
      const seed = (globalThis as { totpSeed?: string }).totpSeed as string;
      // The enabling code's time step is spent (no replay): use the next step's, within the ±30 s tolerance.
      const next = await generate({ secret: seed, epoch: Math.floor(Date.now() / 1000) + 30 });
      lastTotpStep = Math.floor((Date.now() + 30_000) / 30_000);
      await page.getByLabel("6-digit code from your authenticator app").fill(next);
      await page.getByRole("button", { name: "Verify and sign in" }).click();
      await pwExpect(page.getByRole("heading", { level: 1, name: "Overview" })).toBeVisible();
    });

    it("switches to production and back: production is marked and holds its own (empty) data", async () => {
      await page.getByRole("radio", { name: "Production" }).check();
      await pwExpect(page.getByRole("note")).toHaveCount(0);
      await pwExpect(page.getByText("Payments your customers make appear here.")).toBeVisible();
      await shot("overview-production");
      await page.getByRole("radio", { name: "Sandbox" }).check();
      await pwExpect(page.getByRole("note")).toBeVisible();
      await pwExpect(page.getByRole("table", { name: "Recent transactions" })).toContainText("order-tour-1");
    });

    // Waits up to one TOTP step (30 s) for a code the sign-in has not used.
    it("production key pairs need a step-up dialog: the e-mailed code (a wrong one first) and the authenticator code", {
      timeout: 120_000,
    }, async () => {
      await page.getByRole("radio", { name: "Production" }).check();
      await nav("API keys");
      await page.getByRole("button", { name: "Create production key pair" }).click();
      const dialog = page.getByRole("dialog", { name: "Confirm it's you" });
      await pwExpect(dialog).toBeVisible();
      await dialog.getByRole("button", { name: "E-mail me a code" }).click();
      await pwExpect(dialog.getByLabel("E-mailed code")).toBeVisible();
      const code = await latestCode();
      const seed = (globalThis as { totpSeed?: string }).totpSeed as string;
      const totp = await freshTotp(seed);
      await dialog.getByLabel("E-mailed code").fill(String((Number(code) + 1) % 1_000_000).padStart(6, "0"));
      await dialog.getByLabel("Authenticator code").fill(totp);
      await dialog.getByRole("button", { name: "Confirm" }).click();
      await pwExpect(dialog.getByRole("alert")).toContainText("Code");
      await shot("step-up-wrong-code");
      // A wrong e-mailed code is refused before the authenticator code is looked at (its step stays
      // unused); the dialog stays open with the authenticator field cleared.
      await dialog.getByLabel("E-mailed code").fill(code);
      await dialog.getByLabel("Authenticator code").fill(totp);
      await dialog.getByRole("button", { name: "Confirm" }).click();
      const pair = (await page.getByTestId("reveal-API key").textContent()) ?? "";
      expect(pair).toMatch(/^ak_live_/);
      await shot("step-up-production-key-pair");
      await page.getByRole("button", { name: "I've saved them" }).click();
      const listed = await (
        await page.request.get(`${base}/api/v1/dashboard/api-keys`, {
          headers: { "x-environment": "production" },
        })
      ).json();
      expect(listed.data.map((k: { apiKey: string }) => k.apiKey)).toContain(pair);
      await page.getByRole("radio", { name: "Sandbox" }).check();
      await pwExpect(page.getByRole("note")).toBeVisible();
    });

    // Team accounts (issue #21). Granting access is an account-wide write: the step-up dialog asks
    // in the sandbox too. Waits up to one TOTP step (30 s) for a code the last step-up has not used.
    it("invites a finance member from the Team screen through the step-up dialog", {
      timeout: 120_000,
    }, async () => {
      await nav("Team");
      const members = page.getByRole("table", { name: "Members" });
      await pwExpect(members.getByRole("row").filter({ hasText: email })).toContainText("owner");
      await page.getByLabel("E-mail address").fill(invitee);
      await page.getByLabel("Role", { exact: true }).selectOption("finance");
      await page.getByRole("button", { name: "Send invitation" }).click();
      const dialog = page.getByRole("dialog", { name: "Confirm it's you" });
      await pwExpect(dialog).toContainText("Team changes decide who can reach your account");
      await dialog.getByRole("button", { name: "E-mail me a code" }).click();
      await dialog.getByLabel("E-mailed code").fill(await latestCode());
      const seed = (globalThis as { totpSeed?: string }).totpSeed as string;
      await dialog.getByLabel("Authenticator code").fill(await freshTotp(seed));
      await shot("team-invite-step-up");
      await dialog.getByRole("button", { name: "Confirm" }).click();
      await pwExpect(page.getByText(`Invitation sent to ${invitee} as finance`)).toBeVisible();
      const invitations = page.getByRole("table", { name: "Invitations" });
      await pwExpect(invitations.getByRole("row").filter({ hasText: invitee })).toContainText("pending");
      await shot("team-invited");
    });

    it("the invitee joins from the mailed link in another browser and sees only what finance may do", async () => {
      // The invitee's mailbox: the development outbox, read where the server keeps it.
      const { rows } = await listOutbox(svc.database.db, invitee, 1, 0);
      const mail = rows[0]?.body ?? "";
      const link = /(https?:\/\/\S+\/accept-invite#token=[\w%-]+)/.exec(mail)?.[1];
      expect(link, mail).toBeTruthy();
      expect(mail).toContain("Or use this invitation token: ");
      memberContext = await browser.newContext({ viewport: { width: 1280, height: 860 } });
      memberContext.setDefaultTimeout(STEP);
      member = await memberContext.newPage();
      await member.goto(link as string);
      await pwExpect(member.getByRole("heading", { name: "Join your team" })).toBeVisible();
      // The token is read once and leaves the address bar (like the password reset's).
      await eventually(async () => expect(member.url()).not.toContain("token"));
      await member.getByLabel("Password", { exact: true }).fill(PASSWORD);
      await member.getByLabel("Confirm password").fill(`${PASSWORD}!`);
      await member.getByRole("button", { name: "Join and sign in" }).click();
      await pwExpect(member.getByRole("alert")).toContainText("The two passwords don't match.");
      await member.getByLabel("Confirm password").fill(PASSWORD);
      await shot("accept-invite", member);
      await member.getByRole("button", { name: "Join and sign in" }).click();
      await pwExpect(member.getByRole("heading", { level: 1, name: "Overview" })).toBeVisible();
      // The mailed link is on the first allowed origin (a base URL): look at the tour's sandbox.
      await member.getByRole("radio", { name: "Sandbox" }).check();
      await pwExpect(member.getByRole("note")).toContainText("No real money moves here");
      const labels = await navLabels(member);
      expect(labels).toEqual(
        expect.arrayContaining(["Overview", "Withdrawal requests", "Payouts", "Settings"]),
      );
      for (const hidden of ["API keys", "Webhooks", "Team", "Audit log"])
        expect(labels).not.toContain(hidden);
      await shot("finance-overview", member);
      // A bookmark to a screen the role cannot open says so (no 403 to decipher).
      await member.goto(`${new URL(member.url()).origin}/api-keys`);
      await pwExpect(member.getByRole("heading", { level: 1, name: "Not available" })).toBeVisible();
      await pwExpect(member.getByText("Your role (finance) can't open this screen.")).toBeVisible();
      // Finance sends payouts: the form is there.
      await nav("Payouts", member);
      await pwExpect(member.getByRole("heading", { name: "Send a payout" })).toBeVisible();
    });

    it("four-eyes: the finance member's approval is the first of two, the owner's sends the withdrawal", async () => {
      // The owner asks for two approvals above 5 USDT on TRON (TRC-20) in the sandbox (no step-up there).
      await nav("Settings");
      await page.getByLabel("Two approvals above, USDT on TRON (TRC-20)").fill("5");
      await page.getByRole("button", { name: "Save settings" }).click();
      await pwExpect(page.getByText("Settings saved.")).toBeVisible();
      await pendingWithdrawal("user-43");

      await nav("Withdrawal requests", member);
      const table = member.getByRole("table", { name: "Withdrawal requests, pending" });
      const row = table.getByRole("row").filter({ hasText: "user-43" });
      await pwExpect(row).toBeVisible();
      await shot("finance-withdrawals", member);
      await row.getByRole("button", { name: "Approve" }).click();
      const dialog = member.getByRole("dialog", { name: "Approve this withdrawal?" });
      await pwExpect(dialog).toContainText(TRON_ADDRESS);
      await pwExpect(dialog.getByTestId("approval-state")).toContainText("needs 2 approvals");
      await pwExpect(dialog.getByTestId("approval-state")).toContainText("none yet");
      await shot("finance-approve-first-of-two", member);
      await dialog.getByRole("button", { name: "Approve", exact: true }).click();
      await pwExpect(member.getByText("1 of 2 approvals")).toBeVisible();
      await pwExpect(row).toBeVisible(); // still pending: one more approval sends it

      await nav("Withdrawal requests");
      const ownerRow = page
        .getByRole("table", { name: "Withdrawal requests, pending" })
        .getByRole("row")
        .filter({ hasText: "user-43" });
      await ownerRow.getByRole("button", { name: "Approve" }).click();
      const second = page.getByRole("dialog", { name: "Approve this withdrawal?" });
      await pwExpect(second.getByTestId("approval-state")).toContainText(`1 so far (${invitee})`);
      await shot("owner-approve-second");
      await second.getByRole("button", { name: "Approve and send" }).click();
      await pwExpect(page.getByText(/is now (processing|completed)/)).toBeVisible();
      await pwExpect(page.getByText(/is now completed/)).toBeVisible({ timeout: 20_000 });
    });

    it("the owner finds the finance member's approval and join in the audit log", async () => {
      await nav("Audit log");
      const audit = page.getByRole("table", { name: "Audit records" });
      const rowsOf = (action: string) =>
        audit.getByRole("row").filter({ hasText: action }).filter({ hasText: invitee });
      await page.getByLabel("Action").selectOption("withdrawal.approve");
      await pwExpect(rowsOf("withdrawal.approve")).toHaveCount(1);
      await pwExpect(rowsOf("withdrawal.approve")).toContainText(`${invitee} (finance)`);
      // The owner's: user-42's earlier, and the second of user-43's two.
      await pwExpect(audit.getByRole("row").filter({ hasText: "(owner)" })).toHaveCount(2);
      await shot("audit-log-finance-approval");
      await page.getByLabel("Action").selectOption("member.join");
      await pwExpect(rowsOf("member.join")).toHaveCount(1);
      await pwExpect(rowsOf("member.join")).toContainText("Member joined");
      await page.getByLabel("Action").selectOption("member.invite");
      await pwExpect(audit.getByRole("row").filter({ hasText: "member.invite" })).toHaveCount(1);
      await pwExpect(audit.getByRole("row").filter({ hasText: "member.invite" })).toContainText("(owner)");
      await page.getByLabel("Action").selectOption("");
    });

    // Waits up to one TOTP step (30 s) for a code the invitation has not used.
    it("the owner makes the member a viewer (step-up): no approve buttons, no payout form; then removes them", {
      timeout: 120_000,
    }, async () => {
      await nav("Team");
      const row = page.getByRole("table", { name: "Members" }).getByRole("row").filter({ hasText: invitee });
      await pwExpect(row).toContainText("finance");
      await row.getByRole("button", { name: `Change role of ${invitee}` }).click();
      const change = page.getByRole("dialog", { name: "Change this member's role?" });
      await change.getByLabel("New role").selectOption("viewer");
      await change.getByRole("button", { name: "Change role" }).click();
      const stepUp = page.getByRole("dialog", { name: "Confirm it's you" });
      await stepUp.getByRole("button", { name: "E-mail me a code" }).click();
      await stepUp.getByLabel("E-mailed code").fill(await latestCode());
      const seed = (globalThis as { totpSeed?: string }).totpSeed as string;
      await stepUp.getByLabel("Authenticator code").fill(await freshTotp(seed));
      await stepUp.getByRole("button", { name: "Confirm" }).click();
      await pwExpect(page.getByText(`${invitee} is now viewer`)).toBeVisible();
      await pwExpect(row).toContainText("viewer");
      await shot("team-role-changed");

      // The viewer's next page load: pending requests without decisions, payouts without the form.
      await pendingWithdrawal("user-44");
      await member.reload();
      await pwExpect(member.getByRole("heading", { level: 1, name: "Withdrawal requests" })).toBeVisible();
      const table = member.getByRole("table", { name: "Withdrawal requests, pending" });
      await pwExpect(table.getByRole("row").filter({ hasText: "user-44" })).toBeVisible();
      await pwExpect(
        member.getByText("Your role can see these requests but not approve or reject them."),
      ).toBeVisible();
      await pwExpect(member.getByRole("button", { name: "Approve", exact: true })).toHaveCount(0);
      await pwExpect(member.getByRole("button", { name: "Reject", exact: true })).toHaveCount(0);
      await shot("viewer-withdrawals", member);
      await nav("Payouts", member);
      await pwExpect(member.getByRole("heading", { name: "Payout history" })).toBeVisible();
      await pwExpect(member.getByRole("heading", { name: "Send a payout" })).toHaveCount(0);

      // Removal ends the member's sessions at once: the other browser is back at sign-in.
      await row.getByRole("button", { name: `Remove ${invitee}` }).click();
      const remove = page.getByRole("dialog", { name: "Remove this member?" });
      await pwExpect(remove).toContainText(invitee);
      await shot("team-remove-dialog");
      await remove.getByRole("button", { name: "Remove" }).click();
      await pwExpect(page.getByText(`${invitee} is removed`)).toBeVisible();
      await pwExpect(row).toHaveCount(0);
      await member.reload();
      await pwExpect(member.getByRole("heading", { name: "Sign in" })).toBeVisible();
      await memberContext?.close();
      memberContext = undefined;
    });

    it("creates a payment link, opens it as a payer at 375 px, picks a network, pays in the sandbox and returns to the shop through successUrl", async () => {
      // The shop the payer returns to: a local page (http is allowed in the sandbox).
      let shopVisits = 0;
      const shop = http.createServer((req, res) => {
        if (req.url === "/thanks") shopVisits += 1; // (the browser asks for /favicon.ico too)
        res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
        res.end("<!doctype html><title>Tour Coffee</title><h1>Thanks for your order at Tour Coffee</h1>");
      });
      await new Promise<void>((r) => shop.listen(0, "127.0.0.1", () => r()));
      const shopUrl = `http://127.0.0.1:${(shop.address() as AddressInfo).port}/thanks`;
      const payerContext = await browser.newContext({
        viewport: { width: 375, height: 812 },
        locale: "en-GB",
        extraHTTPHeaders: { "Accept-Language": "en-GB,en;q=0.9" },
      });
      payerContext.setDefaultTimeout(STEP);
      try {
        await nav("Payment links");
        await page.getByLabel("Title").fill("Coffee beans 1 kg");
        await page.getByLabel("Amount", { exact: true }).fill("12");
        await page.getByLabel("Success URL (optional)").fill(shopUrl);
        await page.getByRole("button", { name: "Create link" }).click();
        const row = page.getByTestId("payment-link-row").filter({ hasText: "Coffee beans 1 kg" });
        await pwExpect(row).toContainText("active");
        const url = ((await row.locator("code").first().textContent()) ?? "").trim();
        expect(url).toMatch(new RegExp(`^${base}/l/pl_`));
        await row.getByRole("button", { name: "QR code" }).click();
        await pwExpect(row.getByRole("img")).toBeVisible();
        await shot("payment-link-created");

        // The payer opens the link on a phone, picks TRON and continues to the ordinary checkout.
        const payer = await payerContext.newPage();
        await payer.goto(url);
        await pwExpect(payer.getByRole("heading", { level: 1, name: "Coffee beans 1 kg" })).toBeVisible();
        const overflow = await payer.evaluate(
          () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
        );
        expect(overflow, "the link's page scrolls sideways at 375 px").toBeLessThanOrEqual(0);
        await shot("payment-link-page-375", payer);
        await payer.getByRole("radio", { name: /TRON/ }).check();
        const [posted] = await Promise.all([
          payer.waitForResponse((r) => r.request().method() === "POST"),
          payer.getByRole("button", { name: "Continue to payment" }).click(),
        ]);
        expect(posted.status(), await posted.text().catch(() => "")).toBe(303);
        await payer.waitForURL(/\/pay\/tx_/);
        const sessionId = new URL(payer.url()).pathname.split("/").pop() as string;
        await pwExpect(payer.locator("body")).toContainText("12");
        await pwExpect(payer.locator("body")).toContainText("Tour Coffee Ltd");
        await shot("payment-link-checkout-375", payer);

        // Paid in the sandbox: the page flips to paid and offers the way back to the shop.
        const paid = await call(base, `/api/v1/sandbox/checkout/${sessionId}/pay`, {
          headers: { apikey: keys.apiKey as string, "x-api-secret": keys.apiSecret as string },
          json: {},
        });
        expect(paid.status, paid.text).toBeLessThan(300);
        const back = payer.getByRole("link", { name: "Back to Tour Coffee Ltd" });
        await pwExpect(back).toBeVisible({ timeout: 30_000 });
        await pwExpect(back).toHaveAttribute("href", shopUrl);
        expect(shopVisits).toBe(0); // a button, never an automatic redirect
        await shot("payment-link-paid-375", payer);
        await back.click();
        await payer.waitForURL(shopUrl);
        await pwExpect(
          payer.getByRole("heading", { name: "Thanks for your order at Tour Coffee" }),
        ).toBeVisible();
        expect(shopVisits).toBe(1);

        // The dashboard counts the payment on the link.
        const session = await call(base, `/checkout/session/${sessionId}`, {
          headers: { apikey: keys.apiKey as string, "x-api-secret": keys.apiSecret as string },
        });
        expect(session.body.data).toMatchObject({ status: "confirmed", successUrl: shopUrl });
        expect(session.body.data.paymentLinkId).toMatch(/^pl_/);
        await page.reload();
        await pwExpect(row).toContainText(/\b1\b/);
        await shot("payment-link-paid-in-list");
      } finally {
        await payerContext.close();
        await new Promise<void>((r) => shop.close(() => r()));
      }
    });

    it("works at 375 px: every screen fits without horizontal scrolling and the menu is keyboard-usable", async () => {
      await page.setViewportSize({ width: 375, height: 760 });
      const screens = [
        ["/", "overview"],
        ["/transactions", "transactions"],
        ["/sessions", "sessions"],
        ["/payment-links", "payment-links"],
        ["/withdrawals", "withdrawals"],
        ["/payouts", "payouts"],
        ["/webhooks", "webhooks"],
        ["/api-keys", "api-keys"],
        ["/settings", "settings"],
        ["/team", "team"],
        ["/audit-log", "audit-log"],
        ["/mail", "mail"],
      ] as const;
      for (const [url, name] of screens) {
        await page.goto(`${base}${url}`);
        await pwExpect(page.getByRole("heading", { level: 1 })).toBeVisible();
        await eventually(async () => expect(await page.getByText(/^\s*Loading/).count()).toBe(0));
        const overflow = await page.evaluate(
          () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
        );
        const wide = overflow > 0 ? await page.evaluate(WIDEST) : "";
        expect(overflow, `${url} scrolls sideways: ${wide}`).toBeLessThanOrEqual(0);
        await shot(`mobile-${name}`);
      }
      // The menu opens from the keyboard and its links are reachable with Tab.
      await page.getByRole("button", { name: "Menu" }).focus();
      await page.keyboard.press("Enter");
      await pwExpect(page.getByRole("button", { name: "Menu" })).toHaveAttribute("aria-expanded", "true");
      await pwExpect(page.getByRole("link", { name: "Webhooks" })).toBeVisible();
      // Tab reaches the menu's links (after the header's controls) and Enter follows one.
      let reached = false;
      for (let i = 0; i < 12 && !reached; i++) {
        await page.keyboard.press("Tab");
        reached =
          (await page.evaluate(
            () => (document.activeElement as { textContent: string | null } | null)?.textContent,
          )) === "Webhooks";
      }
      expect(reached).toBe(true);
      await shot("mobile-menu-open");
      await page.keyboard.press("Enter");
      await pwExpect(page.getByRole("heading", { level: 1, name: "Webhooks" })).toBeVisible();
      await pwExpect(page.getByRole("button", { name: "Menu" })).toHaveAttribute("aria-expanded", "false");
    });
  },
);
