import { existsSync } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import path from "node:path";
import { type Browser, chromium, type Locator } from "playwright-core";
import type { Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type AnvilNode,
  deployTestUsdt,
  mineBlocks,
  mintTestUsdt,
  startAnvil,
} from "../support/chain/anvil.js";
import { onPostgres } from "../support/db.js";
import { call, keysOf, startTestService, type TestService } from "../support/harness.js";
import { waitFor } from "../webhooks/support.js";
import { ROOT } from "./build.js";

/**
 * Issue 19's tour of the hosted payment page in Chromium (Debian's chromium, playwright-core) on a
 * production ERC20 chain (anvil, 3 confirmations) served by the real service: the customer's
 * payment is mined, the open page shows "Payment detected — confirming 1 of 3" over its live
 * status stream, then "Payment received" once the transfer has its confirmations. Screenshots go
 * to test-artifacts/web/<db>-pay/.
 */

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const ARTIFACTS = path.join(ROOT, "test-artifacts/web", `${onPostgres ? "postgres" : "pglite"}-pay`);

/** Web-first waits on playwright-core's auto-waiting locators (the tour's own helper, e2e.test.ts). */
function pwExpect(loc: Locator) {
  return {
    toBeVisible: (o?: { timeout?: number }) => loc.first().waitFor({ state: "visible", ...o }),
    toBeHidden: (o?: { timeout?: number }) => loc.first().waitFor({ state: "hidden", ...o }),
    toContainText: (t: string | RegExp, o?: { timeout?: number }) =>
      loc
        .filter({ hasText: t })
        .first()
        .waitFor({ state: "visible", ...o }),
  };
}

let anvil: AnvilNode;
let token: Hex;
let svc: TestService;
let browser: Browser;

describe.skipIf(!existsSync(CHROMIUM) && process.env.REQUIRE_BROWSER !== "1")(
  "hosted page while a payment confirms (Chromium, anvil with 3 confirmations)",
  { timeout: 90_000 },
  () => {
    beforeAll(async () => {
      await rm(ARTIFACTS, { recursive: true, force: true });
      await mkdir(ARTIFACTS, { recursive: true });
      anvil = await startAnvil();
      token = await deployTestUsdt(anvil);
      svc = await startTestService({
        env: { ERC20_RPC_URL: anvil.rpcUrl, USDT_ERC20_CONTRACT: token, CONFIRMATIONS_ERC20: "3" },
      });
      browser = await chromium.launch({
        executablePath: CHROMIUM,
        headless: true,
        args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
      });
    }, 120_000);
    afterAll(async () => {
      await browser?.close();
      await svc?.close();
      await anvil?.stop();
    });

    it("shows the payment detected and confirming, then paid", async () => {
      const merchant = await svc.createMerchant();
      const k = keysOf(merchant, "production");
      const headers = { apikey: k.apiKey, "x-api-secret": k.apiSecret };
      // The watcher has started on the chain (it starts at the safe block of its first run).
      await waitFor(() =>
        svc.database.db
          .selectFrom("chain_cursors")
          .select("cursor_block")
          .where("network", "=", "USDT-ERC20")
          .where("environment", "=", "production")
          .executeTakeFirst(),
      );
      const created = await call(svc.urls.production, "/checkout/session", {
        headers,
        json: { amount: 12.5, currencyType: "USDT-ERC20", orderId: "tour-confirming" },
      });
      expect(created.status, created.text).toBe(201);
      const session = created.body.data as { id: string; walletAddress: Hex };

      const context = await browser.newContext({ viewport: { width: 420, height: 900 } });
      const page = await context.newPage();
      await page.goto(`${svc.urls.production}/pay/${session.id}`);
      await pwExpect(page.locator('[data-panel="waiting"]')).toBeVisible();

      // Mined (automine: one block = one confirmation of 3).
      await mintTestUsdt(anvil, token, session.walletAddress, 12_500_000n);
      const confirming = page.locator('[data-panel="confirming"]');
      await pwExpect(confirming).toBeVisible({ timeout: 15_000 });
      await pwExpect(confirming).toContainText("Payment detected — confirming 1 of 3");
      await pwExpect(page.locator("#instructions")).toBeHidden();
      await page.screenshot({ path: path.join(ARTIFACTS, "01-pay-detected-confirming.png"), fullPage: true });
      const api = await call(svc.urls.production, `/checkout/session/${session.id}`, { headers });
      expect(api.body.data).toMatchObject({
        status: "pending",
        detectedAmount: 12.5,
        confirmations: { required: 3 },
      });
      expect(typeof api.body.data.detectedAt).toBe("string");

      await mineBlocks(anvil, 2);
      const paidPanel = page.locator('[data-panel="paid"]');
      await pwExpect(paidPanel).toBeVisible({ timeout: 15_000 });
      await pwExpect(paidPanel).toContainText("Payment received");
      await pwExpect(confirming).toBeHidden();
      await page.screenshot({ path: path.join(ARTIFACTS, "02-pay-paid.png"), fullPage: true });
      const paid = await call(svc.urls.production, `/checkout/session/${session.id}`, { headers });
      expect(paid.body.data).toMatchObject({
        status: "confirmed",
        actualBalance: 12.5,
        confirmations: { current: 3, required: 3 },
      });
      await context.close();
    });
  },
);
