import { describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "../../src/config/config.js";

// EXCHANGE_RATE_SOURCE, FIXED_RATES, EXCHANGE_RATE_MAX_AGE_SECONDS (and the ticker's URL and
// timeout): validated at start-up, a bad value named with its variable.

function problemsOf(env: Record<string, string>) {
  try {
    parseConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error("expected a ConfigError");
}

describe("exchange rate configuration", () => {
  it("defaults: fixed, no rates, 300 s", () => {
    const c = parseConfig({});
    expect(c.rates).toMatchObject({ source: "fixed", maxAgeSeconds: 300, url: undefined, timeoutMs: 3000 });
    expect(c.rates.fixed.size).toBe(0);
  });

  it("parses FIXED_RATES exactly and a ticker with its URL", () => {
    const c = parseConfig({
      FIXED_RATES: "EUR=1.08,GBP=1.27",
      EXCHANGE_RATE_SOURCE: "kraken",
      EXCHANGE_RATE_URL: "http://127.0.0.1:9999",
      EXCHANGE_RATE_MAX_AGE_SECONDS: "60",
    });
    expect(c.rates.fixed.get("EUR")).toBe(1_080_000_000_000_000_000n);
    expect(c.rates).toMatchObject({ source: "kraken", url: "http://127.0.0.1:9999", maxAgeSeconds: 60 });
  });

  it.each([
    ["EXCHANGE_RATE_SOURCE", "binance"],
    ["FIXED_RATES", "EUR=0"],
    ["FIXED_RATES", "EUR:1.08"],
    ["FIXED_RATES", "XXX=1"],
    ["FIXED_RATES", "EUR=1.08,EUR=1.09"],
    ["EXCHANGE_RATE_MAX_AGE_SECONDS", "0"],
    ["EXCHANGE_RATE_MAX_AGE_SECONDS", "five"],
    ["EXCHANGE_RATE_URL", "ftp://rates.example"],
    ["EXCHANGE_RATE_TIMEOUT_MS", "-1"],
  ])("%s=%s is a named start-up problem", (variable, value) => {
    expect(problemsOf({ [variable]: value }).map((p) => p.variable)).toContain(variable);
  });
});
