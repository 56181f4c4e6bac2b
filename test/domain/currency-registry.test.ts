import { describe, expect, it } from "vitest";
import {
  API_DECIMALS,
  CURRENCY_TYPES,
  type CurrencyType,
  chainScale,
  currencyOf,
  DEFAULT_ENABLED_CURRENCY_TYPES,
  depositAccountOf,
  fromChainUnits,
  NETWORKS,
  sameKeySpace,
  wrongNetworkTwins,
} from "../../src/domain/currency.js";
import { accountNumber } from "../../src/wallet/derivation-path.js";

// The one registry of networks and currency types (src/domain/currency.ts): what the contract's
// table names, and the invariants the code relies on (account slots, decimals, the shared deposit
// account of a coin type).

/** The contract's table (the currency types and their chains), written out here on purpose. */
const CONTRACT: Record<CurrencyType, { chainId: number | null; decimals: number }> = {
  "USDT-TRC20": { chainId: null, decimals: 6 },
  "USDT-ERC20": { chainId: 1, decimals: 6 },
  "USDC-ERC20": { chainId: 1, decimals: 6 },
  "USDT-BEP20": { chainId: 56, decimals: 18 },
  "USDC-BEP20": { chainId: 56, decimals: 18 },
  "USDT-POLYGON": { chainId: 137, decimals: 6 },
  "USDC-POLYGON": { chainId: 137, decimals: 6 },
  "USDT-ARBITRUM": { chainId: 42161, decimals: 6 },
  "USDC-ARBITRUM": { chainId: 42161, decimals: 6 },
  "USDC-BASE": { chainId: 8453, decimals: 6 },
};

describe("the currency registry", () => {
  it("holds exactly the contract's currency types, with their chain ids and on-chain decimals", () => {
    expect([...CURRENCY_TYPES].sort()).toEqual(Object.keys(CONTRACT).sort());
    for (const c of CURRENCY_TYPES) {
      const d = currencyOf(c);
      expect({ chainId: d.definition.chainId, decimals: d.decimals }, c).toEqual(CONTRACT[c]);
      expect(c).toBe(`${d.token}-${d.network}`);
    }
    expect(DEFAULT_ENABLED_CURRENCY_TYPES).toEqual(["USDT-TRC20", "USDT-ERC20"]);
  });

  it("default confirmations are the contract's (TRC20 19, ERC20 12, BEP20 15, POLYGON 128, ARBITRUM 20, BASE 20)", () => {
    const byNetwork = Object.fromEntries(NETWORKS.map((n) => [n.network, n.defaultConfirmations]));
    expect(byNetwork).toMatchObject({
      TRC20: 19,
      ERC20: 12,
      BEP20: 15,
      POLYGON: 128,
      ARBITRUM: 20,
      BASE: 20,
    });
  });

  it("every token has at least the API's 6 decimals; the scale and the dust follow from them", () => {
    for (const c of CURRENCY_TYPES) expect(currencyOf(c).decimals, c).toBeGreaterThanOrEqual(API_DECIMALS);
    expect(chainScale("USDT-BEP20")).toBe(10n ** 12n);
    expect(chainScale("USDC-BASE")).toBe(1n);
    expect(fromChainUnits(10_000_000_123_400_000_000n, chainScale("USDT-BEP20"))).toEqual({
      units: 10_000_000n,
      dust: 123_400_000_000n,
    });
  });

  it("account slots are unique per coin type, and USDT-ERC20 and USDT-TRC20 keep slot 0 (their accounts since the start)", () => {
    const seen = new Map<string, CurrencyType>();
    for (const c of CURRENCY_TYPES) {
      const d = currencyOf(c);
      const key = `${d.definition.coinType}/${d.accountSlot}`;
      expect(seen.get(key), `${c} shares slot ${key} with ${seen.get(key)}`).toBeUndefined();
      seen.set(key, c);
    }
    expect(currencyOf("USDT-ERC20").accountSlot).toBe(0);
    expect(currencyOf("USDT-TRC20").accountSlot).toBe(0);
    expect(accountNumber("USDT-ERC20", "production")).toBe(0);
    expect(accountNumber("USDT-ERC20", "sandbox")).toBe(1);
  });

  it("deposit addresses of every EVM currency type come from USDT-ERC20's account; TRON's from its own", () => {
    for (const c of CURRENCY_TYPES) {
      expect(depositAccountOf(c), c).toBe(
        currencyOf(c).definition.family === "evm" ? "USDT-ERC20" : "USDT-TRC20",
      );
    }
  });

  it("wrong-network twins are the other enabled types of the same key space; TRON has none among EVM ones", () => {
    const enabled: CurrencyType[] = ["USDT-TRC20", "USDT-ERC20", "USDC-BASE", "USDT-BEP20"];
    expect(wrongNetworkTwins("USDC-BASE", enabled)).toEqual(["USDT-ERC20", "USDT-BEP20"]);
    expect(wrongNetworkTwins("USDT-TRC20", enabled)).toEqual([]);
    expect(wrongNetworkTwins("USDT-ERC20", ["USDT-TRC20", "USDT-ERC20"])).toEqual([]);
    // The key space spans the whole registry, enabled or not (the destination checks use it).
    expect(sameKeySpace("USDC-BASE")[0]).toBe("USDC-BASE");
    expect(new Set(sameKeySpace("USDC-BASE"))).toEqual(
      new Set(CURRENCY_TYPES.filter((c) => currencyOf(c).definition.family === "evm")),
    );
    expect(sameKeySpace("USDT-TRC20")).toEqual(["USDT-TRC20"]);
  });
});
