import { readdir, readFile } from "node:fs/promises";
import http from "node:http";
import path from "node:path";
import { gunzipSync } from "node:zlib";
import Fastify from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { App, RouteDeps } from "../../src/http/app-types.js";
import { CLIENT_ROUTES, staticWebRoutes } from "../../src/http/routes/static-web.js";
import { call, startTestService, type TestService } from "../support/harness.js";
import { ensureWebBuild, ROOT, WEB_DIST } from "./build.js";

// Issue #10 "served by stablegate itself": the built dashboard at / on both listeners, deep links
// answered with index.html, hashed assets cached for a year, nothing outside dist/web readable, and
// none of the API's paths shadowed.

let svc: TestService;
let jsAsset: string;

beforeAll(async () => {
  await ensureWebBuild();
  svc = await startTestService();
  const assets = await readdir(path.join(WEB_DIST, "assets"));
  jsAsset = assets.find((f) => /^index-.*\.js$/.test(f)) as string;
}, 180_000);
afterAll(async () => {
  await svc?.close();
});

/** A raw GET that keeps the path exactly as written (fetch would normalise `..`). */
function rawGet(base: string, rawPath: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>(
    (resolve, reject) => {
      const u = new URL(base);
      const req = http.request({ host: u.hostname, port: u.port, path: rawPath, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
      });
      req.on("error", reject);
      req.end();
    },
  );
}

describe("the dashboard at /", () => {
  it("serves index.html on both listeners: no-cache, CSP, frame denial", async () => {
    const index = await readFile(path.join(WEB_DIST, "index.html"), "utf8");
    for (const base of [svc.urls.production, svc.urls.sandbox]) {
      const r = await call(base, "/");
      expect(r.status).toBe(200);
      expect(r.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(r.text).toBe(index);
      expect(r.text).toContain(`/assets/${jsAsset}`);
      expect(r.headers.get("cache-control")).toBe("no-cache");
      expect(r.headers.get("content-security-policy")).toContain("script-src 'self'");
      expect(r.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
      expect(r.headers.get("x-frame-options")).toBe("DENY");
      expect(r.headers.get("etag")).toMatch(/^"[\w-]+"$/);
    }
  });

  it("answers every client route (and its deep links) with index.html, so a reload works", async () => {
    for (const route of CLIENT_ROUTES) {
      for (const p of [`/${route}`, `/${route}/tx_123?page=2`]) {
        const r = await call(svc.urls.sandbox, p);
        expect(r.status, p).toBe(200);
        expect(r.headers.get("content-type"), p).toBe("text/html; charset=utf-8");
      }
    }
  });

  it("the server's client routes are exactly the app's top-level routes (web/src/main.tsx)", async () => {
    const main = await readFile(path.join(ROOT, "web/src/main.tsx"), "utf8");
    const appRoutes = new Set([...main.matchAll(/path="\/([\w-]+)/g)].map((m) => m[1]));
    expect([...appRoutes].sort()).toEqual([...CLIENT_ROUTES].sort());
  });

  it("serves hashed assets with their content type, immutable caching, gzip and ETag revalidation", async () => {
    const file = await readFile(path.join(WEB_DIST, "assets", jsAsset));
    const plain = await rawGet(svc.urls.production, `/assets/${jsAsset}`);
    expect(plain.status).toBe(200);
    expect(plain.headers["content-type"]).toBe("text/javascript; charset=utf-8");
    expect(plain.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
    expect(plain.headers["content-encoding"]).toBeUndefined();
    expect(plain.body.equals(file)).toBe(true);
    const gz = await rawGet(svc.urls.production, `/assets/${jsAsset}`, { "accept-encoding": "gzip, br" });
    expect(gz.headers["content-encoding"]).toBe("gzip");
    expect(gz.headers.vary).toBe("Accept-Encoding");
    expect(gunzipSync(gz.body).equals(file)).toBe(true);
    expect(gz.body.length).toBeLessThan(file.length / 2);
    const again = await rawGet(svc.urls.production, `/assets/${jsAsset}`, {
      "if-none-match": String(plain.headers.etag),
    });
    expect(again.status).toBe(304);
    expect(again.body.length).toBe(0);

    const css = (await readdir(path.join(WEB_DIST, "assets"))).find((f) => f.endsWith(".css")) as string;
    expect((await call(svc.urls.production, `/assets/${css}`)).headers.get("content-type")).toBe(
      "text/css; charset=utf-8",
    );
    const icon = await call(svc.urls.production, "/favicon.svg");
    expect(icon.status).toBe(200);
    expect(icon.headers.get("content-type")).toBe("image/svg+xml");
  });

  it("refuses path traversal: nothing outside dist/web is ever served", async () => {
    const secretLike = await readFile(path.join(ROOT, "package.json"), "utf8");
    for (const p of [
      "/assets/../../../package.json",
      "/assets/..%2f..%2f..%2fpackage.json",
      "/assets/%2e%2e/%2e%2e/%2e%2e/package.json",
      "/assets/....//....//package.json",
      "/assets/..\\..\\..\\package.json",
      "/assets/%5c..%5c..%5cpackage.json",
      "/assets/%00../package.json",
      "/assets//etc/passwd",
      "/assets/../index.html",
      "/assets/",
    ]) {
      const r = await rawGet(svc.urls.production, p);
      const text = r.body.toString("utf8");
      expect(text, p).not.toContain('"name": "stablegate"');
      expect(text, p).not.toContain("root:x:0:0");
      expect(text === secretLike, p).toBe(false);
      expect(r.status, p).toBe(404);
    }
    const missing = await call(svc.urls.production, "/assets/nope-123.js");
    expect(missing.status).toBe(404);
    expect(missing.headers.get("cache-control")).toBe("no-store");
  });

  it("never shadows the API: unknown API paths keep the JSON 404 and their tier; health, docs, checkout, pay answer as before", async () => {
    const api404 = await call(svc.urls.production, "/api/v1/dashboard/nothing-here");
    expect(api404.status).toBe(404);
    expect(api404.body).toMatchObject({ success: false, error: { code: "NOT_FOUND" } });
    expect(api404.headers.get("ratelimit-policy")).toBe("200;w=900");
    for (const p of ["/api/v1/nope", "/docs/nope", "/wallet/nope", "/metricsx", "/unknown-page"]) {
      const r = await call(svc.urls.production, p);
      expect(r.status, p).toBe(404);
      expect(r.body?.error?.code, p).toBe("NOT_FOUND");
    }
    const health = await call(svc.urls.production, "/healthz");
    expect(health.status).toBe(200);
    expect(health.headers.get("content-type")).toMatch(/application\/json/);
    const checkout = await call(svc.urls.sandbox, "/checkout/session/tx_nope");
    expect(checkout.status).toBe(401);
    expect(checkout.body.error.code).toBe("INVALID_AUTH");
    const pay = await call(svc.urls.sandbox, "/pay/tx_nope");
    expect(pay.status).toBe(404); // the hosted page's own answer, not the dashboard
    expect(pay.text).not.toContain('<div id="root">');
  });
});

describe("before the dashboard is built", () => {
  it("/ explains how to build it, and assets answer 404", async () => {
    const app = Fastify();
    staticWebRoutes(app as unknown as App, {} as RouteDeps, path.join(ROOT, "dist/no-such-web-build"));
    try {
      const page = await app.inject({ method: "GET", url: "/" });
      expect(page.statusCode).toBe(404);
      expect(page.headers["content-type"]).toBe("text/html; charset=utf-8");
      expect(page.body).toContain("npm run build");
      expect((await app.inject({ method: "GET", url: "/assets/index-x.js" })).statusCode).toBe(404);
    } finally {
      await app.close();
    }
  });
});
