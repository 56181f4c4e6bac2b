import path from "node:path";
import { describe, expect, it } from "vitest";
import { fixtureRoot, runLint } from "./support.js";

// Issue #36: one route shape — a route never builds a service; `npm run lint:deps` runs
// scripts/route-shape.mjs, which must fail on a route that does (each shape the old routes had).

function check(routes: Record<string, string>) {
  const files = Object.fromEntries(
    Object.entries(routes).map(([name, text]) => [`http/routes/${name}`, text]),
  );
  return runLint("route-shape.mjs", fixtureRoot("route-shape-", files));
}

describe("lint:deps — a route that builds a service fails", () => {
  it("the real routes pass", async () => {
    const { out } = await runLint("route-shape.mjs", path.resolve("src"));
    expect(out).toMatch(/route files build no service/);
  });

  it("new of a feature's class, a factory call while registering, a typed dependency literal", async () => {
    const r = await check({
      "pay.ts": `import { PayPages } from "../../pay/index.js";
export function payRoutes(app, deps) { const pages = new PayPages({ db: deps.database.db }); }`,
      "checkout.ts": `import { checkoutDeps, openCheckoutSession } from "../../deposits/index.js";
export function checkoutRoutes(app, deps) {
  const checkout = checkoutDeps({ db: deps.database.db });
  app.post("/x", {}, async (request) => openCheckoutSession(deps.useCases.checkout, request.body));
}`,
      "withdrawals.ts": `import type { PayoutDesk } from "../../withdrawals/index.js";
export function withdrawalRoutes(app, deps) { const desk: PayoutDesk = { db: deps.database.db }; }`,
      "stream.ts": `import * as webhooks from "../../webhooks/index.js";
import { SecretBox } from "../../lib/secret-box.js";
export function streamRoutes(app, deps) {
  app.get("/y", {}, async () => new webhooks.WebhookStreamHub({ box: new SecretBox("k") }));
}`,
    });
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/pay\.ts:2: a route builds new PayPages/);
    expect(r.out).toMatch(/checkout\.ts:3: a route builds checkoutDeps/);
    expect(r.out).toMatch(/withdrawals\.ts:2: a route builds a PayoutDesk/);
    expect(r.out).toMatch(/stream\.ts:4: a route builds new WebhookStreamHub/);
    expect(r.out).toMatch(/stream\.ts:4: a route builds new SecretBox/);
    // A use case called by a handler is the route shape, not a finding.
    expect(r.out).not.toMatch(/openCheckoutSession/);
    expect(r.out).toMatch(/route shape: 5 route\(s\) build a service/);
  });

  it("handlers calling use cases, errors and pure helpers are the shape", async () => {
    const r = await check({
      "ok.ts": `import { AppError } from "../../domain/errors.js";
import { formatAmount } from "../../domain/money.js";
import { getBalance } from "../../ledger/index.js";
const LIMIT = formatAmount(5n);
export function okRoutes(app, deps) {
  app.get("/z", {}, async () => {
    if (!deps) throw new AppError("NOT_FOUND", "none");
    return getBalance(deps.useCases.x, LIMIT);
  });
}`,
    });
    expect(r).toEqual({ code: 0, out: expect.stringMatching(/1 route files build no service/) });
  });
});
