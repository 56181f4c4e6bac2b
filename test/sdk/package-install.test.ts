import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DOWNLOADS_ROOT, SDK_TARBALL_PATH } from "../../src/http/routes/downloads.js";
import { call, keysOf, startTestService, type TestService } from "../support/harness.js";

// Issue 35, item 1: the SDK installs the way the docs say, without the gateway's repository. The
// package is packed as it would be published (`npm pack`, its `prepack` builds it), the gateway
// serves that tarball at a stable URL, and `npm install <that URL>` into an empty ESM project and an
// empty CommonJS project gives a client that imports (`import` / `require`), type-checks
// (TypeScript resolves each format's declarations) and calls the gateway; its `stablegate-dev`
// CLI runs from the project.

const ROOT = path.resolve(import.meta.dirname, "../..");
const TSC = path.join(ROOT, "node_modules", "typescript", "bin", "tsc");
const run = promisify(execFile);
const env = {
  PATH: process.env.PATH ?? "",
  HOME: process.env.HOME ?? tmpdir(),
  npm_config_update_notifier: "false",
};

let svc: TestService;
let work: string;
let keys: { apiKey: string; apiSecret: string };

/** An empty npm project of the given module type, with the SDK installed from the gateway's URL. */
async function project(name: string, type: "module" | "commonjs"): Promise<string> {
  const dir = path.join(work, name);
  await mkdir(dir);
  await writeFile(path.join(dir, "package.json"), JSON.stringify({ name, private: true, type }));
  await run(
    "npm",
    ["install", "--no-audit", "--no-fund", "--loglevel", "error", `${svc.urls.sandbox}${SDK_TARBALL_PATH}`],
    { cwd: dir, env, timeout: 180_000 },
  );
  return dir;
}

// Nothing here touches the gateway's database: the PostgreSQL pass of .ci/run skips it.
describe.skipIf(Boolean(process.env.TEST_DATABASE_URL))("the packed SDK", () => {
  beforeAll(async () => {
    // Packs exactly as `npm run build` does (a fresh clone runs `npm test` without a build).
    await run(process.execPath, [path.join(ROOT, "scripts", "pack-sdk.mjs")], { cwd: ROOT, env });
    svc = await startTestService();
    keys = keysOf(await svc.createMerchant(), "sandbox");
    work = await mkdtemp(path.join(tmpdir(), "sg-sdk-install-"));
  }, 240_000);

  afterAll(async () => {
    await svc?.close();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it("is served by the gateway at its stable URL, byte for byte the packed file, revalidated by ETag", async () => {
    const packed = await readFile(path.join(DOWNLOADS_ROOT, "stablegate-sdk.tgz"));
    const r = await fetch(`${svc.urls.sandbox}${SDK_TARBALL_PATH}`);
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("application/gzip");
    expect(Buffer.from(await r.arrayBuffer()).equals(packed)).toBe(true);
    const etag = r.headers.get("etag");
    expect(etag).toMatch(/^".+"$/);
    const again = await fetch(`${svc.urls.production}${SDK_TARBALL_PATH}`, {
      headers: { "if-none-match": etag ?? "" },
    });
    expect(again.status).toBe(304);
    // Only that one file: no other name, no path under it.
    expect((await call(svc.urls.sandbox, "/downloads/..%2Fweb%2Findex.html")).status).toBe(404);
    expect((await call(svc.urls.sandbox, "/downloads/stablegate-sdk-0.1.0.tgz")).status).toBe(404);
  });

  it("installs from that URL into an empty ESM project: import, types, a call to the gateway, the CLI", async () => {
    const dir = await project("esm-shop", "module");
    await writeFile(
      path.join(dir, "index.mjs"),
      `import { Stablegate, verifyWebhook, ValidationError } from "@stablegate/sdk";
const sg = new Stablegate({ apiKey: process.env.KEY, apiSecret: process.env.SECRET, baseUrl: process.env.BASE });
const account = await sg.account.get();
console.log(JSON.stringify({ env: account.environment, verify: typeof verifyWebhook, errors: typeof ValidationError }));
`,
    );
    const out = await run(process.execPath, ["index.mjs"], {
      cwd: dir,
      env: { ...env, KEY: keys.apiKey, SECRET: keys.apiSecret, BASE: svc.urls.sandbox },
    });
    expect(JSON.parse(out.stdout)).toEqual({ env: "sandbox", verify: "function", errors: "function" });

    await writeFile(
      path.join(dir, "check.ts"),
      `import { Stablegate, type CheckoutSession } from "@stablegate/sdk";
const sg = new Stablegate({ apiKey: "ak_test_x", baseUrl: "http://127.0.0.1:1" });
export const pending: Promise<CheckoutSession> = sg.checkoutSessions.create({ amount: 25, currencyType: "USDT-TRC20", orderId: "1" });
// @ts-expect-error: the types know the currency types
sg.checkoutSessions.create({ amount: 25, currencyType: "DOGE", orderId: "1" });
`,
    );
    await run(
      process.execPath,
      [
        TSC,
        "--noEmit",
        "--strict",
        "--module",
        "nodenext",
        "--moduleResolution",
        "nodenext",
        "--target",
        "es2022",
        "--lib",
        "es2023,dom",
        "check.ts",
      ],
      { cwd: dir, env },
    );

    const help = await run(path.join(dir, "node_modules", ".bin", "stablegate-dev"), ["--help"], {
      cwd: dir,
      env,
    });
    expect(help.stdout).toMatch(/listen/);
    expect(help.stdout).toMatch(/trigger/);
  }, 240_000);

  it("installs from that URL into an empty CommonJS project: require, types, a call to the gateway", async () => {
    const dir = await project("cjs-shop", "commonjs");
    await writeFile(
      path.join(dir, "index.js"),
      `const { Stablegate, verifyWebhook, ValidationError } = require("@stablegate/sdk");
const { version } = require("@stablegate/sdk/package.json");
const sg = new Stablegate({ apiKey: process.env.KEY, apiSecret: process.env.SECRET, baseUrl: process.env.BASE });
sg.account.get().then((account) => {
  console.log(JSON.stringify({ env: account.environment, verify: typeof verifyWebhook, errors: typeof ValidationError, version }));
});
`,
    );
    const out = await run(process.execPath, ["index.js"], {
      cwd: dir,
      env: { ...env, KEY: keys.apiKey, SECRET: keys.apiSecret, BASE: svc.urls.sandbox },
    });
    const sdkVersion = JSON.parse(
      await readFile(path.join(ROOT, "packages", "sdk", "package.json"), "utf8"),
    ).version;
    expect(JSON.parse(out.stdout)).toEqual({
      env: "sandbox",
      verify: "function",
      errors: "function",
      version: sdkVersion,
    });

    // TypeScript compiling to CommonJS resolves the `require` condition's declarations.
    await writeFile(
      path.join(dir, "check.ts"),
      `import { Stablegate, NotFoundError } from "@stablegate/sdk";
const sg = new Stablegate({ apiKey: "ak_test_x", baseUrl: "http://127.0.0.1:1" });
export const isNotFound = (e: unknown): boolean => e instanceof NotFoundError;
export const list = sg.transactions.list({ type: "deposit", limit: 10 });
`,
    );
    await run(
      process.execPath,
      [
        TSC,
        "--strict",
        "--module",
        "nodenext",
        "--moduleResolution",
        "nodenext",
        "--target",
        "es2022",
        "--lib",
        "es2023,dom",
        "--outDir",
        "out",
        "check.ts",
      ],
      { cwd: dir, env },
    );
    expect(await readFile(path.join(dir, "out", "check.js"), "utf8")).toContain('require("@stablegate/sdk")');
  }, 240_000);
});
