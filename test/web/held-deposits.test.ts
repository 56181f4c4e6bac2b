import { existsSync } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import path from "node:path";
import { type Browser, type BrowserContext, chromium, type Locator, type Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { holdReasonText } from "../../web/src/lib/held.js";
import { onPostgres } from "../support/db.js";
import { call, startTestService, type TestService } from "../support/harness.js";
import { addMember, PASSWORD, registerOwner } from "../team/support.js";
import { freePort, retryUntil, waitingLocator } from "./browser.js";
import { ensureWebBuild, ROOT } from "./build.js";

/**
 * Frozen funds in the dashboard (issue #40, README.md#frozen-funds), in Debian's chromium driven by
 * playwright-core against the real service in the sandbox: two sessions paid by the simulator from
 * the test frozen address make two held deposits. A viewer sees them held, with the reason in
 * words, and no decision; the owner releases one from the transactions list (confirmation, a
 * message that it is being carried out, then the row confirmed) and returns the other from its
 * detail screen (then returned). Screenshots go to test-artifacts/web-held/<db>/.
 */

// Functions given to page.evaluate run in the browser; this file is compiled without the DOM lib.
declare const document: { documentElement: { scrollWidth: number; clientWidth: number } };

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const ARTIFACTS = path.join(ROOT, "test-artifacts/web-held", onPostgres ? "postgres" : "pglite");
const TRON_FROZEN = "T9yD14Nj9j7xAB4dbGeiX9h8upGUqmaajC";
const TRC = "USDT-TRC20";
const FROZEN_WORDS = "The token's issuer froze the sender's address";
const STEP = 15_000;

const eventually = <T>(assertion: () => Promise<T>, timeout = STEP) => retryUntil(assertion, timeout);

/** Web-first waits on playwright-core's auto-waiting locators (test/web/browser.ts), and this file's own. */
function pwExpect(loc: Locator) {
  return {
    ...waitingLocator(loc),
    toHaveCount: (n: number) => eventually(async () => expect(await loc.count()).toBe(n)),
  };
}

let svc: TestService;
let browser: Browser;
let base: string;
let owner: Awaited<ReturnType<typeof registerOwner>>;
let ownerContext: BrowserContext;
let page: Page;
let viewerContext: BrowserContext | undefined;
let viewer: Page | undefined;
/** The two held deposits: one released from the list, one returned from its detail. */
const held = { released: "", returned: "" };

/** A browser context signed in as `email` (the dashboard's session cookies, as the sign-in screen sets them). */
async function signedIn(email: string): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  context.setDefaultTimeout(STEP);
  const p = await context.newPage();
  const r = await p.request.post(`${base}/api/v1/auth/login`, {
    headers: { origin: base },
    data: { email, password: PASSWORD },
  });
  expect(r.status(), await r.text()).toBe(200);
  return { context, page: p };
}

/** A checkout session paid by the simulator from the test frozen address; the held deposit it made. */
async function heldDeposit(amount: number): Promise<string> {
  const s = await call(base, "/checkout/session", {
    headers: owner.sandboxApi,
    json: { amount, currencyType: TRC },
  });
  expect(s.status, s.text).toBe(201);
  const sessionId = s.body.data.id as string;
  const pay = await call(base, `/api/v1/sandbox/checkout/${sessionId}/pay`, {
    headers: owner.sandboxApi,
    json: { from: TRON_FROZEN },
  });
  expect(pay.status, pay.text).toBe(202);
  return eventually(async () => {
    const r = await call(base, "/api/v1/dashboard/transactions?status=held&limit=100", {
      headers: owner.bearer,
    });
    expect(r.status, r.text).toBe(200);
    const t = (r.body.data as { id: string; checkoutSessionId: string | null; holdReason?: string }[]).find(
      (x) => x.checkoutSessionId === sessionId,
    );
    expect(t?.holdReason).toBe("token_blacklist");
    return (t as { id: string }).id;
  });
}

async function statusOf(id: string): Promise<string> {
  const r = await call(base, `/api/v1/dashboard/transactions/${id}`, { headers: owner.bearer });
  expect(r.status, r.text).toBe(200);
  return r.body.data.status as string;
}

/** The row `label` of the transaction detail (its value is the row's text after the label). */
function detailRow(target: Page, label: string): Locator {
  return target
    .locator(".details > div")
    .filter({ has: target.locator("dt", { hasText: new RegExp(`^${label}$`) }) });
}

/** The row of transaction `id` in the transactions table of `target`. */
function rowOf(target: Page, id: string): Locator {
  return target
    .getByRole("table", { name: "Transactions" })
    .getByRole("row")
    .filter({ has: target.locator(`a[title="${id}"]`) });
}

describe("hold reasons in words", () => {
  it("token_blacklist and screening: <reason>; anything else as it is", () => {
    expect(holdReasonText("token_blacklist")).toBe(FROZEN_WORDS);
    expect(holdReasonText("screening: sanctions list")).toBe("Refused by screening: sanctions list");
    expect(holdReasonText("screening")).toBe("Refused by screening");
    expect(holdReasonText("something_new")).toBe("something_new");
    expect(holdReasonText(undefined)).toBeNull();
  });
});

describe.skipIf(!existsSync(CHROMIUM) && process.env.REQUIRE_BROWSER !== "1")(
  "held deposits in the dashboard (issue #40; Playwright, real service, sandbox)",
  { timeout: 90_000 },
  () => {
    beforeAll(async () => {
      await rm(ARTIFACTS, { recursive: true, force: true });
      await Promise.all([ensureWebBuild(), mkdir(ARTIFACTS, { recursive: true })]);
      // Fixed ports so the base URLs (and so the dashboard's allowed origins) are the real ones.
      const [prod, sandbox] = [await freePort(), await freePort()];
      svc = await startTestService({
        env: {
          PORT: String(prod),
          SANDBOX_PORT: String(sandbox),
          PRODUCTION_BASE_URL: `http://127.0.0.1:${prod}`,
          SANDBOX_BASE_URL: `http://127.0.0.1:${sandbox}`,
          RATE_LIMIT_AUTH: "1000",
        },
      });
      base = svc.urls.sandbox;
      browser = await chromium.launch({
        executablePath: CHROMIUM,
        headless: true,
        args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
      });
      owner = await registerOwner(svc);
      held.released = await heldDeposit(30);
      held.returned = await heldDeposit(12.5);
      ({ context: ownerContext, page } = await signedIn(owner.email));
    }, 180_000);

    afterAll(async () => {
      await viewerContext?.close();
      await ownerContext?.close();
      await browser?.close();
      await svc?.close();
    });

    // A failing step leaves a picture of what the browsers showed.
    afterEach(async (ctx) => {
      if (ctx.task.result?.state !== "fail") return;
      const name = ctx.task.name.slice(0, 40).replace(/[^a-z0-9]+/gi, "-");
      if (page && !page.isClosed())
        await page.screenshot({ path: path.join(ARTIFACTS, `FAILED-${name}.png`), fullPage: true });
      if (viewer && !viewer.isClosed())
        await viewer.screenshot({ path: path.join(ARTIFACTS, `FAILED-viewer-${name}.png`), fullPage: true });
    });

    it("a viewer sees the held deposits and why, but no release or return", async () => {
      const member = await addMember(svc, owner.bearer, "viewer");
      ({ context: viewerContext, page: viewer } = await signedIn(member.email));
      await viewer.goto(`${base}/transactions`);
      await pwExpect(viewer.getByRole("heading", { level: 1, name: "Transactions" })).toBeVisible();
      await pwExpect(viewer.getByText("2 deposits are held")).toBeVisible();
      await pwExpect(viewer.getByText("The owner or an admin decides")).toBeVisible();
      const row = rowOf(viewer, held.released);
      await pwExpect(row).toContainText(FROZEN_WORDS);
      await pwExpect(row).toContainText("held");
      await pwExpect(viewer.getByRole("button", { name: /Release \(credit it\)/ })).toHaveCount(0);
      await pwExpect(viewer.getByRole("button", { name: /Return to sender/ })).toHaveCount(0);
      await pwExpect(viewer.getByRole("columnheader", { name: "Decision" })).toHaveCount(0);
      await viewer.screenshot({ path: path.join(ARTIFACTS, "01-viewer-transactions.png"), fullPage: true });

      await row.getByRole("link").click();
      await pwExpect(viewer.getByRole("heading", { level: 1, name: "Transaction" })).toBeVisible();
      await pwExpect(detailRow(viewer, "Held because")).toContainText(FROZEN_WORDS);
      await pwExpect(viewer.getByText("the owner or an admin decides whether to release")).toBeVisible();
      await pwExpect(viewer.getByRole("button", { name: /Release \(credit it\)/ })).toHaveCount(0);
      await pwExpect(viewer.getByRole("button", { name: /Return to sender/ })).toHaveCount(0);
      await viewer.screenshot({ path: path.join(ARTIFACTS, "02-viewer-detail.png"), fullPage: true });
      // The server agrees: the viewer's role may not decide.
      const refused = await viewer.request.post(
        `${base}/api/v1/dashboard/transactions/${held.released}/release`,
        {
          headers: { origin: base, "x-environment": "sandbox" },
          data: {},
        },
      );
      expect(refused.status()).toBe(403);
      expect(await statusOf(held.released)).toBe("held");
    });

    it("the owner finds the held deposits (the status filter offers held and returned) with the reason", async () => {
      await page.goto(`${base}/transactions`);
      await pwExpect(page.getByRole("heading", { level: 1, name: "Transactions" })).toBeVisible();
      const options = await page.getByLabel("Status").locator("option").allTextContents();
      expect(options).toEqual(expect.arrayContaining(["held", "returned"]));
      await pwExpect(page.getByText("2 deposits are held")).toBeVisible();
      await page.getByRole("button", { name: "Show held deposits" }).click();
      await eventually(async () => expect(new URL(page.url()).searchParams.get("status")).toBe("held"));
      await pwExpect(page.getByText("2 transactions")).toBeVisible();
      for (const id of [held.released, held.returned])
        await pwExpect(rowOf(page, id)).toContainText(FROZEN_WORDS);
      await pwExpect(page.getByRole("columnheader", { name: "Decision" })).toBeVisible();
      await page.screenshot({ path: path.join(ARTIFACTS, "03-owner-held-filter.png"), fullPage: true });
      // At 375 px the reasons and the buttons stay inside the table's own scroll box.
      await page.setViewportSize({ width: 375, height: 812 });
      await eventually(async () =>
        expect(
          await page.evaluate(
            () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
          ),
        ).toBeLessThanOrEqual(0),
      );
      await page.screenshot({ path: path.join(ARTIFACTS, "03-owner-held-375.png"), fullPage: true });
      await page.setViewportSize({ width: 1280, height: 860 });
      await page.getByRole("button", { name: "Clear filters" }).click();
      await pwExpect(rowOf(page, held.released)).toContainText(FROZEN_WORDS);
    });

    it("the owner releases one from the list: confirmation, being carried out, then confirmed", async () => {
      const row = rowOf(page, held.released);
      await row.getByRole("button", { name: /Release \(credit it\)/ }).click();
      const dialog = page.getByRole("dialog", { name: "Release this deposit?" });
      await pwExpect(dialog).toBeVisible();
      await pwExpect(dialog).toContainText(`Held because: ${FROZEN_WORDS}.`);
      await pwExpect(dialog).toContainText("credited to your available balance, minus the deposit fee");
      await page.screenshot({ path: path.join(ARTIFACTS, "04-owner-release-confirm.png"), fullPage: true });
      await dialog.getByRole("button", { name: "Release and credit" }).click();
      await pwExpect(dialog).toBeHidden();
      // The message while the worker carries it out, then (the deposit read again) the outcome.
      const message = page.getByTestId("held-decision");
      await pwExpect(message).toContainText(/Releasing deposit|is now confirmed/);
      await pwExpect(message).toContainText("is now confirmed", { timeout: 12_000 });
      await pwExpect(message).toContainText("is credited to your available balance");
      await pwExpect(row.locator(".badge")).toContainText("confirmed");
      await pwExpect(row.getByRole("button", { name: /Release \(credit it\)/ })).toHaveCount(0);
      await pwExpect(row.getByText(FROZEN_WORDS)).toHaveCount(0);
      await pwExpect(page.getByText("1 deposit is held")).toBeVisible();
      await page.screenshot({ path: path.join(ARTIFACTS, "05-owner-released.png"), fullPage: true });
      expect(await statusOf(held.released)).toBe("confirmed");
      // The other one is still held, with its decisions.
      await pwExpect(
        rowOf(page, held.returned).getByRole("button", { name: /Return to sender/ }),
      ).toBeVisible();
    });

    it("the owner returns the other from its detail screen: then returned", async () => {
      await rowOf(page, held.returned).getByRole("link").click();
      await pwExpect(page.getByRole("heading", { level: 1, name: "Transaction" })).toBeVisible();
      await pwExpect(detailRow(page, "Held because")).toContainText(FROZEN_WORDS);
      await page.getByRole("button", { name: /Return to sender/ }).click();
      const dialog = page.getByRole("dialog", { name: "Return this deposit to its sender?" });
      await pwExpect(dialog).toContainText("Exactly what arrived");
      await pwExpect(dialog).toContainText("12.50");
      await pwExpect(dialog).toContainText("in one transfer from the deposit address");
      await page.screenshot({ path: path.join(ARTIFACTS, "06-owner-return-confirm.png"), fullPage: true });
      await dialog.getByRole("button", { name: "Return to sender" }).click();
      await pwExpect(dialog).toBeHidden();
      await pwExpect(page.getByTestId("held-decision")).toContainText("is now returned", { timeout: 12_000 });
      await pwExpect(page.locator(".details .badge")).toContainText("returned");
      await pwExpect(detailRow(page, "Was held because")).toContainText(FROZEN_WORDS);
      await pwExpect(page.getByRole("button", { name: /Return to sender/ })).toHaveCount(0);
      await page.screenshot({ path: path.join(ARTIFACTS, "07-owner-returned.png"), fullPage: true });
      expect(await statusOf(held.returned)).toBe("returned");
    });
  },
);
