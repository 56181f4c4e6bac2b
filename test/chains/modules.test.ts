import { secp256k1 } from "@noble/curves/secp256k1.js";
import { describe, expect, it } from "vitest";
import { accountBytesFromPublicKey } from "../../src/chains/evm/index.js";
import {
  addressCodec,
  buildChainRegistry,
  chainModules,
  createChainWriter,
  defaultConfirmations,
  networkChains,
  SIMULATOR_DEFINITION,
} from "../../src/chains/index.js";
import { networkVariables } from "../../src/config/chains.js";
import { ConfigError, parseConfig } from "../../src/config/config.js";
import type { Db } from "../../src/db/database.js";
import { CURRENCY_TYPES, currencyOf, NETWORKS } from "../../src/domain/currency.js";
import { systemClock } from "../../src/lib/clock.js";
import { derivationPath } from "../../src/wallet/index.js";

// The chain modules are one shape: the registry (domain/currency.ts) names the networks, the
// configuration reads their variables by one rule, and the chain registry, the address codec and the
// writer factory iterate over the modules built from it.
const ALL = CURRENCY_TYPES.join(",");
const base = {
  NODE_ENV: "test",
  DATA_DIR: "/tmp/unused-chain-modules",
  LOG_LEVEL: "silent",
  CURRENCY_TYPES: ALL,
};
// Building a registry touches no database (the simulator creates its chain on first use).
const db = {} as Db;
const registry = (env: Record<string, string>) =>
  buildChainRegistry(parseConfig({ ...base, ...env }), { db, clock: systemClock });
const vars = (network: string, environment: "production" | "sandbox") =>
  networkVariables(NETWORKS.find((n) => n.network === network)!, environment);

describe("chain modules", () => {
  it("serve every network of the registry once, the simulator last", () => {
    expect(networkChains().map((m) => m.network)).toEqual(NETWORKS.map((n) => n.network));
    expect(chainModules().map((m) => m.kind)).toEqual([...networkChains().map((m) => m.kind), "simulator"]);
    for (const c of CURRENCY_TYPES) {
      expect(defaultConfirmations(c)).toBe(currencyOf(c).definition.defaultConfirmations);
      expect(derivationPath(c, "production", 5)).toMatch(
        new RegExp(`^m/44'/${currencyOf(c).definition.coinType}'/`),
      );
    }
  });

  it("read the variables the naming rule gives", () => {
    for (const n of NETWORKS) {
      for (const environment of ["production", "sandbox"] as const) {
        const variable = vars(n.network, environment).endpoint;
        expect(() => parseConfig({ ...base, [variable]: "not a url" })).toThrow(new RegExp(variable));
      }
    }
  });

  it("build the registry: production unset is unavailable naming the variable, sandbox unset is the simulator", () => {
    const chains = registry({});
    for (const c of CURRENCY_TYPES) {
      const production = chains.entry(c, "production");
      expect(production).toMatchObject({
        status: "unavailable",
        reason: `not configured (set ${vars(currencyOf(c).network, "production").endpoint})`,
      });
      const sandbox = chains.get(c, "sandbox");
      expect(sandbox.kind).toBe("simulator");
      expect(sandbox.confirmations).toBe(SIMULATOR_DEFINITION.confirmations);
      expect(sandbox.scan).toEqual(SIMULATOR_DEFINITION.scan);
      expect(sandbox.simulator?.network).toBe(c);
    }
  });

  it("build a configured chain with its network's defaults, and refuse a contract of another family", () => {
    for (const c of CURRENCY_TYPES) {
      const { network, token, definition } = currencyOf(c);
      const module = networkChains().find((m) => m.network === network)!;
      const url = "http://127.0.0.1:1/path?key=secret";
      const chains = registry({ [vars(network, "production").endpoint]: url });
      const chain = chains.get(c, "production");
      expect(chain).toMatchObject({ kind: module.kind, endpoint: "127.0.0.1:1", simulator: null });
      expect(chain.confirmations).toBe(definition.defaultConfirmations);
      expect(chain.scan).toEqual(module.scan);
      const contractVar = vars(network, "sandbox").contract(token);
      expect(registry({ [vars(network, "sandbox").endpoint]: url }).entry(c, "sandbox")).toMatchObject({
        status: "unavailable",
        reason: `not configured (set ${contractVar})`,
      });
      const foreign = NETWORKS.find((n) => n.family !== definition.family)!.tokens[0]!.defaultContract;
      const bad = () => registry({ [vars(network, "sandbox").endpoint]: url, [contractVar]: foreign });
      expect(bad).toThrow(ConfigError);
      expect(bad).toThrow(new RegExp(contractVar));
    }
  });

  it("build each available chain's writer by its module", () => {
    const env = Object.fromEntries(
      NETWORKS.map((n) => [vars(n.network, "production").endpoint, "http://127.0.0.1:1"]),
    );
    const config = parseConfig({ ...base, ...env });
    const chains = buildChainRegistry(config, { db, clock: systemClock });
    expect(chains.available().length).toBe(2 * CURRENCY_TYPES.length);
    for (const chain of chains.available()) {
      const hot = addressCodec(chain.network).fromAccountBytes(new Uint8Array(20).fill(7));
      const writer = createChainWriter(chain, config, hot);
      expect(writer.network).toBe(chain.network);
      expect(writer.kind).toBe(chain.kind === "simulator" ? "database" : "signed");
    }
  });

  it("spell addresses: from a public key as from its account bytes, normalized and valid", () => {
    const publicKey = secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true);
    for (const m of networkChains()) {
      const c = CURRENCY_TYPES.find((t) => currencyOf(t).network === m.network)!;
      const codec = addressCodec(c);
      expect(codec).toBe(m.address);
      const address = codec.fromPublicKey(publicKey);
      expect(codec.fromAccountBytes(accountBytesFromPublicKey(publicKey))).toBe(address);
      expect(codec.validate(address)).toBe(true);
      expect(codec.normalize(address)).toBe(address);
    }
  });

  it("a currency type not enabled has no chain, and asking for it is a 400 on currencyType", () => {
    const chains = buildChainRegistry(parseConfig({ ...base, CURRENCY_TYPES: "USDT-TRC20" }), {
      db,
      clock: systemClock,
    });
    expect(chains.enabledCurrencyTypes()).toEqual(["USDT-TRC20"]);
    expect(chains.available().every((c) => c.network === "USDT-TRC20")).toBe(true);
    expect(() => chains.get("USDC-BASE", "sandbox")).toThrow(
      expect.objectContaining({
        code: "VALIDATION_ERROR",
        details: { fields: [expect.objectContaining({ field: "currencyType" })] },
      }),
    );
  });
});
