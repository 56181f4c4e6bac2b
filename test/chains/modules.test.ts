import { secp256k1 } from "@noble/curves/secp256k1.js";
import { describe, expect, it } from "vitest";
import { accountBytesFromPublicKey } from "../../src/chains/evm/index.js";
import {
  addressCodec,
  buildChainRegistry,
  CHAIN_MODULES,
  createChainWriter,
  DEFAULT_CONFIRMATIONS,
  NETWORK_CHAINS,
  SIMULATOR_DEFINITION,
} from "../../src/chains/index.js";
import { ConfigError, parseConfig } from "../../src/config/config.js";
import type { Db } from "../../src/db/database.js";
import { CURRENCY_TYPES } from "../../src/domain/currency.js";
import { systemClock } from "../../src/lib/clock.js";
import { COIN_TYPE } from "../../src/wallet/index.js";

// The chain modules are one shape: what a module's definition names, the configuration reads, and
// the registry, the address codec and the writer factory iterate over the modules.
const base = { NODE_ENV: "test", DATA_DIR: "/tmp/unused-chain-modules", LOG_LEVEL: "silent" };
// Building a registry touches no database (the simulator creates its chain on first use).
const db = {} as Db;
const registry = (env: Record<string, string>) =>
  buildChainRegistry(parseConfig({ ...base, ...env }), { db, clock: systemClock });

describe("chain modules", () => {
  it("serve every currency type once, the simulator last", () => {
    expect(NETWORK_CHAINS.map((m) => m.network).sort()).toEqual([...CURRENCY_TYPES].sort());
    expect(CHAIN_MODULES.map((m) => m.kind)).toEqual([...NETWORK_CHAINS.map((m) => m.kind), "simulator"]);
    for (const m of NETWORK_CHAINS) {
      expect(DEFAULT_CONFIRMATIONS[m.network]).toBe(m.definition.defaultConfirmations);
      expect(COIN_TYPE[m.network]).toBe(m.definition.coinType);
    }
  });

  it("name variables the configuration reads", () => {
    for (const m of NETWORK_CHAINS) {
      const { variables } = m.definition;
      for (const variable of [variables.endpoint.production, variables.endpoint.sandbox]) {
        expect(() => parseConfig({ ...base, [variable]: "not a url" })).toThrow(new RegExp(variable));
      }
    }
  });

  it("build the registry: production unset is unavailable naming the variable, sandbox unset is the simulator", () => {
    const chains = registry({});
    for (const m of NETWORK_CHAINS) {
      const production = chains.entry(m.network, "production");
      expect(production).toMatchObject({
        status: "unavailable",
        reason: `not configured (set ${m.definition.variables.endpoint.production})`,
      });
      const sandbox = chains.get(m.network, "sandbox");
      expect(sandbox.kind).toBe("simulator");
      expect(sandbox.confirmations).toBe(SIMULATOR_DEFINITION.confirmations);
      expect(sandbox.scan).toEqual(SIMULATOR_DEFINITION.scan);
      expect(sandbox.simulator?.network).toBe(m.network);
    }
  });

  it("build a configured chain with its module's defaults, and refuse a contract of another network", () => {
    for (const m of NETWORK_CHAINS) {
      const other = NETWORK_CHAINS.find((o) => o !== m)!;
      const url = "http://127.0.0.1:1/path?key=secret";
      const chains = registry({ [m.definition.variables.endpoint.production]: url });
      const chain = chains.get(m.network, "production");
      expect(chain).toMatchObject({ kind: m.kind, endpoint: "127.0.0.1:1", simulator: null });
      expect(chain.confirmations).toBe(m.definition.defaultConfirmations);
      expect(chain.scan).toEqual(m.definition.scan);
      const contractVar = m.definition.variables.contract.sandbox;
      expect(
        registry({ [m.definition.variables.endpoint.sandbox]: url }).entry(m.network, "sandbox"),
      ).toMatchObject({
        status: "unavailable",
        reason: `not configured (set ${contractVar})`,
      });
      const foreign = (other.definition as { defaultContract?: string }).defaultContract!;
      const bad = () => registry({ [m.definition.variables.endpoint.sandbox]: url, [contractVar]: foreign });
      expect(bad).toThrow(ConfigError);
      expect(bad).toThrow(new RegExp(contractVar));
    }
  });

  it("build each available chain's writer by its module", () => {
    const env = Object.fromEntries(
      NETWORK_CHAINS.map((m) => [m.definition.variables.endpoint.production, "http://127.0.0.1:1"]),
    );
    const config = parseConfig({ ...base, ...env });
    const chains = buildChainRegistry(config, { db, clock: systemClock });
    for (const chain of chains.available()) {
      const hot = addressCodec(chain.network).fromAccountBytes(new Uint8Array(20).fill(7));
      const writer = createChainWriter(chain, config, hot);
      expect(writer.network).toBe(chain.network);
      expect(writer.kind).toBe(chain.kind === "simulator" ? "database" : "signed");
    }
  });

  it("spell addresses: from a public key as from its account bytes, normalized and valid", () => {
    const publicKey = secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true);
    for (const m of NETWORK_CHAINS) {
      const codec = addressCodec(m.network);
      expect(codec).toBe(m.address);
      const address = codec.fromPublicKey(publicKey);
      expect(codec.fromAccountBytes(accountBytesFromPublicKey(publicKey))).toBe(address);
      expect(codec.validate(address)).toBe(true);
      expect(codec.normalize(address)).toBe(address);
    }
  });
});
