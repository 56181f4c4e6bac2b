import { mkdtemp, readFile, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "../../src/config/config.js";
import { configForRole, resolveSecrets } from "../../src/config/secrets.js";

function problemsOf(env: Record<string, string>): { variable: string; message: string }[] {
  try {
    parseConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error("expected a ConfigError");
}

describe("configuration", () => {
  it("has the contract's defaults", () => {
    const c = parseConfig({});
    expect(c.http).toMatchObject({ port: 8080, sandboxPort: 8081, host: "127.0.0.1", trustProxy: false });
    expect(c.http.productionBaseUrl).toBe("http://localhost:8080");
    expect(c.http.sandboxBaseUrl).toBe("http://localhost:8081");
    // Outside production mode the dashboard's Origin check takes every loopback spelling (#35).
    expect(c.corsOrigins).toEqual(
      expect.arrayContaining(["http://localhost:8081", "http://127.0.0.1:8081", "http://[::1]:8081"]),
    );
    expect(parseConfig({ NODE_ENV: "production" }).corsOrigins).toEqual([
      "http://localhost:8080",
      "http://localhost:8081",
    ]);
    expect(c.rateLimit.windowMs).toBe(900_000);
    expect(c.rateLimit.limits).toEqual({
      auth: 15,
      financial: 30,
      wallet: 20,
      standard: 100,
      dashboard: 200,
      publicPage: 60,
    });
    expect(c.webhooks.retryScheduleSeconds).toEqual([60, 300, 1800, 7200, 43200]);
    expect(c.webhooks.timeoutMs).toBe(10_000);
    expect(c.checkout).toEqual({ minExpirySeconds: 300, latePaymentWatchHours: 168 });
    expect(c.otpTtlSeconds).toBe(600);
    expect(c.database.url).toBeUndefined();
    expect(c.dataDir).toBe(path.resolve("./data"));
  });

  it("names the bad variable", () => {
    expect(problemsOf({ PORT: "eighty" })[0]?.variable).toBe("PORT");
    expect(problemsOf({ RATE_LIMIT_AUTH: "-1" })[0]?.variable).toBe("RATE_LIMIT_AUTH");
    expect(problemsOf({ DATABASE_URL: "not a url" })[0]?.variable).toBe("DATABASE_URL");
    expect(problemsOf({ WEBHOOK_RETRY_SCHEDULE: "60,soon" })[0]?.variable).toBe("WEBHOOK_RETRY_SCHEDULE");
    expect(problemsOf({ TRUST_PROXY: "maybe" })[0]?.variable).toBe("TRUST_PROXY");
    expect(problemsOf({ SANDBOX_PORT: "8080" })[0]?.variable).toBe("SANDBOX_PORT");
    expect(problemsOf({ SECRET_ENCRYPTION_KEY: "short" })[0]?.variable).toBe("SECRET_ENCRYPTION_KEY");
    const both = problemsOf({ PORT: "x", SANDBOX_PORT: "y" }).map((p) => p.variable);
    expect(both).toEqual(["PORT", "SANDBOX_PORT"]);
    expect(() => parseConfig({ PORT: "x" })).toThrow(/PORT/);
  });

  it("treats empty variables as unset", () => {
    expect(parseConfig({ DATABASE_URL: "", PORT: "" }).http.port).toBe(8080);
  });

  it("production mode refuses to start on generated secrets and names each missing one", () => {
    const prod = parseConfig({ NODE_ENV: "production" });
    const missing = (role: string) => {
      try {
        configForRole(prod, role);
      } catch (err) {
        if (err instanceof ConfigError) return err.problems.map((p) => p.variable);
        throw err;
      }
      return [];
    };
    // The key material depends on the role too (the mnemonic on the signer only):
    // test/signer/key-custody.test.ts; INTERNAL_SHARED_SECRET (api must not hold it): test/security/07.
    expect(missing("api")).toEqual(["SECRET_ENCRYPTION_KEY", "JWT_SECRET", "METRICS_TOKEN"]);
    expect(missing("worker")).toEqual([
      "SECRET_ENCRYPTION_KEY",
      "JWT_SECRET",
      "METRICS_TOKEN",
      "INTERNAL_SHARED_SECRET",
    ]);
    expect(missing("ledger verify")).toEqual(["SECRET_ENCRYPTION_KEY", "JWT_SECRET", "METRICS_TOKEN"]);
    // Least privilege: the signer host holds INTERNAL_SHARED_SECRET and the mnemonic, never the key
    // that forges dashboard sessions or the one that unseals webhook secrets; migrate needs none.
    expect(missing("signer")).toEqual(["INTERNAL_SHARED_SECRET"]);
    expect(missing("signer export-xpubs")).toEqual([]);
    expect(missing("migrate")).toEqual([]);
    const ok = parseConfig({
      NODE_ENV: "production",
      SECRET_ENCRYPTION_KEY: "a".repeat(64),
      JWT_SECRET: "j".repeat(40),
      METRICS_TOKEN: "m".repeat(32),
    });
    expect(configForRole(ok, "api").config.production).toBe(true);
  });

  it("an energy rental provider (TRON): all four variables or none; only the ordering roles keep its key", () => {
    const rental = {
      TRC20_RENTAL_URL: "https://itrx.example",
      TRC20_RENTAL_API_KEY: "key",
      TRC20_RENTAL_API_SECRET: "rental-secret",
      TRC20_RENTAL_MAX_SUN_PER_ENERGY: "80.5",
    };
    const c = parseConfig(rental);
    expect(c.chains.networks.TRC20!.production.rental).toEqual({
      url: "https://itrx.example",
      apiKey: "key",
      apiSecret: "rental-secret",
      maxSunPerEnergy: 80.5,
    });
    expect(c.chains.networks.TRC20!.sandbox.rental).toBeUndefined();
    expect(
      parseConfig({
        SANDBOX_TRC20_RENTAL_URL: "http://127.0.0.1:9",
        SANDBOX_TRC20_RENTAL_API_KEY: "k",
        SANDBOX_TRC20_RENTAL_API_SECRET: "s",
        SANDBOX_TRC20_RENTAL_MAX_SUN_PER_ENERGY: "60",
      }).chains.networks.TRC20!.sandbox.rental?.maxSunPerEnergy,
    ).toBe(60);
    // Half a provider, a bad URL or cap, or a network without TRON's resources: named, not ignored.
    expect(problemsOf({ TRC20_RENTAL_URL: "https://itrx.example" }).map((p) => p.variable)).toEqual([
      "TRC20_RENTAL_API_KEY",
      "TRC20_RENTAL_API_SECRET",
      "TRC20_RENTAL_MAX_SUN_PER_ENERGY",
    ]);
    expect(problemsOf({ ...rental, TRC20_RENTAL_URL: "ftp://itrx.example" })[0]?.variable).toBe(
      "TRC20_RENTAL_URL",
    );
    expect(problemsOf({ ...rental, TRC20_RENTAL_MAX_SUN_PER_ENERGY: "-1" })[0]?.variable).toBe(
      "TRC20_RENTAL_MAX_SUN_PER_ENERGY",
    );
    expect(problemsOf({ ...rental, TRC20_RENTAL_MAX_SUN_PER_ENERGY: "cheap" })[0]?.variable).toBe(
      "TRC20_RENTAL_MAX_SUN_PER_ENERGY",
    );
    expect(problemsOf({ ERC20_RENTAL_URL: "https://itrx.example" })[0]).toEqual({
      variable: "ERC20_RENTAL_URL",
      message: "energy rental exists on TRON networks only",
    });
    // The api (internet-facing), the signer and migrate never order: the key and secret are dropped.
    for (const role of ["api", "signer", "migrate"])
      expect(configForRole(c, role).config.chains.networks.TRC20!.production.rental).toBeUndefined();
    for (const role of ["serve", "worker"])
      expect(configForRole(c, role).config.chains.networks.TRC20!.production.rental?.apiSecret).toBe(
        "rental-secret",
      );
  });

  it("generates missing secrets outside production, once, into DATA_DIR with mode 0600", async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), "sg-cfg-"));
    const c = parseConfig({ DATA_DIR: dataDir, JWT_SECRET: "configured-jwt-secret-0123456789abcdef" });
    const first = await resolveSecrets(c);
    expect(first.JWT_SECRET).toBe("configured-jwt-secret-0123456789abcdef");
    expect(first.SECRET_ENCRYPTION_KEY).toMatch(/^[0-9a-f]{64}$/);
    const second = await resolveSecrets(c);
    expect(second).toEqual(first); // restarts keep them
    const file = path.join(dataDir, "secrets.json");
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(await readFile(file, "utf8")).not.toContain("configured-jwt-secret");
  });
});
