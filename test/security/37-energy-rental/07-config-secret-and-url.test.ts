import { describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "../../../src/config/config.js";
import { configForRole } from "../../../src/config/secrets.js";

// Config accepted but dangerous.
// (a) The api role (internet-facing), the signer and migrate START in production mode with
//     TRC20_RENTAL_API_SECRET in their environment: `configForRole` silently drops it from the
//     config object, but the variable stays in the process's environment (process.env, /proc/<pid>/
//     environ, the shared env file), where whoever takes over the api reads it and spends the prepaid
//     balance (orders energy to his own addresses). The same threat made the api REFUSE to start with
//     INTERNAL_SHARED_SECRET, and every non-signing role refuse MASTER_MNEMONIC, in production.
// (b) A production TRC20_RENTAL_URL over plain http:// is accepted: the API-KEY and signed orders
//     travel in clear text, and whoever is on the path answers the quotes and orders (the cost in
//     the books, the "price" compared with the burn).
// Now refused: (a) api, signer and migrate refuse to start in production mode, naming the variable;
// (b) a production rental URL must be https.

const production = {
  NODE_ENV: "production",
  LOG_LEVEL: "silent",
  SECRET_ENCRYPTION_KEY: "a".repeat(64),
  JWT_SECRET: "j".repeat(40),
  METRICS_TOKEN: "m".repeat(32),
  PRODUCTION_BASE_URL: "https://api.stablegate.test",
  SANDBOX_BASE_URL: "https://sandbox.stablegate.test",
};
const rental = {
  TRC20_RENTAL_URL: "https://itrx.example",
  TRC20_RENTAL_API_KEY: "key",
  TRC20_RENTAL_API_SECRET: "rental-secret",
  TRC20_RENTAL_MAX_SUN_PER_ENERGY: "80",
};

function outcome(fn: () => unknown): string {
  try {
    fn();
    return "started";
  } catch (err) {
    return err instanceof ConfigError ? `refused: ${err.message}` : `error: ${(err as Error).message}`;
  }
}

describe("attack: rental configuration accepted but dangerous", () => {
  it("(a) a non-ordering role given the provider's secret in production refuses to start, naming it", () => {
    const c = parseConfig({ ...production, ...rental });
    const results = Object.fromEntries(
      ["api", "signer", "migrate"].map((role) => [role, outcome(() => configForRole(c, role))]),
    );
    for (const [role, r] of Object.entries(results))
      expect(r, role).toMatch(/refused: .*TRC20_RENTAL_API_SECRET/s);
  });

  it("(b) a production rental URL over plain http is refused", () => {
    expect(
      outcome(() => parseConfig({ ...production, ...rental, TRC20_RENTAL_URL: "http://itrx.example" })),
    ).toMatch(/refused: .*TRC20_RENTAL_URL: must be an https URL/s);
  });
});
