import { describe, expect, it } from "vitest";
import {
  networkVariableClasses,
  PLAIN_VARIABLES,
  SECRET_VARIABLES,
  splitConfiguration,
} from "../../src/backup/configuration.js";
import { envSchema } from "../../src/config/schema.js";

// What a backup records of the configuration in plain text, and what only sealed.

describe("backup configuration", () => {
  it("classifies every variable of the schema exactly once", () => {
    const plain = new Set<string>(PLAIN_VARIABLES);
    const secret = new Set<string>(SECRET_VARIABLES);
    for (const name of Object.keys(envSchema.shape)) {
      expect(plain.has(name) || secret.has(name), `${name} is neither plain nor secret`).toBe(true);
      expect(plain.has(name) && secret.has(name), `${name} is both`).toBe(false);
    }
    // CURRENCY_TYPES is read by config/chains.ts with the networks' variables, not by the schema.
    for (const name of [...plain, ...secret])
      if (name !== "CURRENCY_TYPES") expect(Object.keys(envSchema.shape)).toContain(name);
    const networks = networkVariableClasses();
    expect(networks.secret).toEqual(
      expect.arrayContaining([
        "TRC20_API_URL",
        "SANDBOX_ERC20_RPC_URLS",
        "TRC20_RENTAL_API_SECRET",
        "TRC20_RENTAL_API_KEY",
      ]),
    );
    expect(networks.plain).toEqual(
      expect.arrayContaining([
        "USDT_ERC20_CONTRACT",
        "COLD_WALLET_TRC20",
        "CONFIRMATIONS_ERC20",
        "TRC20_FEE_LIMIT_SUN",
      ]),
    );
    expect(networks.plain.filter((n) => networks.secret.includes(n))).toEqual([]);
  });

  it("keeps secrets, connection URLs and credentials in URLs out of the plain part; ignores foreign variables", () => {
    const split = splitConfiguration({
      PATH: "/usr/bin",
      HOME: "/root",
      PORT: "8080",
      JWT_SECRET: "j".repeat(40),
      DATABASE_URL: "postgres://u:p@db/x",
      ERC20_RPC_URL: "https://mainnet.example/v3/key",
      SCREENING_URL: "https://user:pass@screening.example/check",
      // A provider's URL holds its key in the path (`/v6/<key>/latest`): secret as a whole.
      EXCHANGE_RATE_URL: "https://v6.exchange.example/v6/key/latest",
      TRC20_RENTAL_URL: "https://rental.example/api",
      // Any plain variable holding a URL with a query string (where API keys go) is secret.
      SIGNER_URL: "http://signer.internal:8090/?token=abc",
      PRODUCTION_BASE_URL: "https://pay.example.com",
      MASTER_XPUBS: "USDT-TRC20/production=xpub…",
      EMPTY: "",
    });
    expect(split.plain).toEqual({
      MASTER_XPUBS: "USDT-TRC20/production=xpub…",
      PORT: "8080",
      PRODUCTION_BASE_URL: "https://pay.example.com",
    });
    expect(Object.keys(split.secret)).toEqual([
      "DATABASE_URL",
      "ERC20_RPC_URL",
      "EXCHANGE_RATE_URL",
      "JWT_SECRET",
      "SCREENING_URL",
      "SIGNER_URL",
      "TRC20_RENTAL_URL",
    ]);
  });
});
