import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createChainAdapter } from "../../src/chains/create-adapter.js";
import { InvalidAddressError } from "../../src/chains/errors.js";
import { EvmChainAdapter } from "../../src/chains/evm/evm-adapter.js";
import { SimulatedChain } from "../../src/chains/simulator/simulated-chain.js";
import { SimulatorChainAdapter } from "../../src/chains/simulator/simulator-adapter.js";
import { TronChainAdapter } from "../../src/chains/tron/tron-adapter.js";
import { type Database, openDatabase } from "../../src/db/database.js";
import { TEST_FAILURE_ADDRESSES } from "../../src/domain/currency.js";
import { AddressDeriver } from "../../src/wallet/address-deriver.js";
import { FIRST_DEPOSIT_INDEX, HOT_WALLET_INDEX } from "../../src/wallet/derivation-path.js";
import { openTestDatabase } from "../support/db.js";

const wallet = AddressDeriver.fromMnemonic("test test test test test test test test test test test junk");
const fixedClock = { now: () => 1_700_000_000_000 };

let database: Database & { url: string | undefined };
beforeEach(async () => {
  database = await openTestDatabase();
});
afterEach(async () => {
  await database?.close();
});

for (const network of ["USDT-ERC20", "USDT-TRC20"] as const) {
  const addr = (i: number) => wallet.address(network, "sandbox", FIRST_DEPOSIT_INDEX + i);
  const hot = wallet.address(network, "sandbox", HOT_WALLET_INDEX);
  const sim = (db = database.db) => new SimulatedChain(db, { network, clock: fixedClock });

  describe(`simulator ${network} (database-backed)`, () => {
    it("mines a block per payment and reports transfers, balances and hashes", async () => {
      const chain = sim();
      const adapter = new SimulatorChainAdapter(chain);
      expect(adapter.network).toBe(network);
      expect(await adapter.headBlock()).toBe(0);

      const p1 = await chain.pay(addr(0), 12_500_000n);
      await chain.mine(3);
      const p2 = await chain.pay(addr(1), 1n);
      expect(p1.blockNumber).toBe(1);
      expect(p2.blockNumber).toBe(5);
      expect(await adapter.headBlock()).toBe(5);
      expect(await adapter.safeBlock(1)).toBe(5);
      expect(await adapter.safeBlock(5)).toBe(1);
      expect(await adapter.safeBlock(7)).toBe(-1);

      const all = await adapter.tokenTransfers({ fromBlock: 0, toBlock: 100 });
      expect(all).toEqual([
        {
          txHash: p1.txHash,
          logIndex: 0,
          blockNumber: 1,
          blockHash: p1.blockHash,
          from: chain.faucetAddress,
          to: addr(0),
          amount: 12_500_000n,
        },
        expect.objectContaining({ txHash: p2.txHash, blockNumber: 5, to: addr(1), amount: 1n }),
      ]);
      expect(await adapter.tokenTransfers({ fromBlock: 2, toBlock: 4 })).toEqual([]);
      expect(await adapter.tokenTransfers({ fromBlock: 0, toBlock: 9, addresses: [addr(1)] })).toHaveLength(
        1,
      );
      expect(await adapter.blockHash(1)).toBe(p1.blockHash);
      expect(await adapter.blockHash(6)).toBeNull();
      expect(await adapter.tokenBalance(addr(0))).toBe(12_500_000n);
      expect(await adapter.tokenBalance(addr(2))).toBe(0n);
      expect(adapter.validateAddress(addr(0))).toBe(true);
      await expect(adapter.tokenBalance("nope")).rejects.toThrow(InvalidAddressError);
      if (network === "USDT-ERC20") expect(p1.txHash).toMatch(/^0x[0-9a-f]{64}$/);
      else expect(p1.txHash).toMatch(/^[0-9a-f]{64}$/);
    });

    it("is deterministic: the same operations on another database give the same hashes", async () => {
      const a = await sim().pay(addr(0), 12_500_000n);
      const other = await openTestDatabase();
      try {
        const b = await new SimulatedChain(other.db, { network, clock: fixedClock }).pay(
          addr(0),
          12_500_000n,
        );
        expect(b.txHash).toBe(a.txHash);
        expect(b.blockHash).toBe(a.blockHash);
      } finally {
        await other.close();
      }
    });

    it("fails transfers to the test failure address and beyond the balance, on-chain", async () => {
      const chain = sim();
      const adapter = new SimulatorChainAdapter(chain);
      await chain.pay(hot, 10_000_000n);

      const ok = await chain.transfer(hot, addr(5), 4_000_000n);
      expect(ok.status).toBe("success");
      const failed = await chain.transfer(hot, TEST_FAILURE_ADDRESSES[network], 1_000_000n);
      expect(failed).toMatchObject({ status: "failed", failureReason: "test failure address" });
      expect(failed.blockNumber).toBe(3);
      expect((await chain.transaction(failed.txHash))?.status).toBe("failed");
      const tooMuch = await chain.transfer(hot, addr(5), 7_000_000n);
      expect(tooMuch).toMatchObject({ status: "failed", failureReason: "insufficient balance" });
      expect(chain.isTestFailureAddress(TEST_FAILURE_ADDRESSES[network])).toBe(true);
      // The faucet pays the failure address too, and that payment fails as well.
      expect((await chain.pay(TEST_FAILURE_ADDRESSES[network], 5n)).status).toBe("failed");

      expect(await adapter.tokenBalance(hot)).toBe(6_000_000n);
      expect(await adapter.tokenBalance(addr(5))).toBe(4_000_000n);
      expect(await adapter.tokenBalance(TEST_FAILURE_ADDRESSES[network])).toBe(0n);
      // Failed transactions are in blocks but emit no Transfer.
      const transfers = await adapter.tokenTransfers({ fromBlock: 0, toBlock: await chain.head() });
      expect(transfers.map((t) => t.txHash)).not.toContain(failed.txHash);
      expect(transfers).toHaveLength(2);
    });

    it("reorgs: replaced blocks get new hashes, their transfers vanish and balances revert", async () => {
      const chain = sim();
      const adapter = new SimulatorChainAdapter(chain);
      await chain.pay(addr(0), 5n);
      const late = await chain.pay(addr(1), 7n);
      const oldHash = await adapter.blockHash(2);

      const dropped = await chain.reorg(1);
      expect(dropped.map((t) => t.txHash)).toEqual([late.txHash]);
      expect(await adapter.headBlock()).toBe(3);
      expect(await adapter.blockHash(2)).not.toBe(oldHash);
      expect(await adapter.tokenBalance(addr(1))).toBe(0n);
      expect(await adapter.tokenBalance(addr(0))).toBe(5n);
      expect(await chain.transaction(late.txHash)).toBeUndefined();
      expect((await adapter.tokenTransfers({ fromBlock: 0, toBlock: 3 })).map((t) => t.amount)).toEqual([5n]);
      await expect(chain.reorg(0)).rejects.toThrow(RangeError);
      await expect(chain.pay(addr(0), 0n)).rejects.toThrow(RangeError);
    });

    it("is one chain for every process on the database, and survives a restart", async () => {
      // A second connection pool on the same database stands for another process.
      const second = database.url
        ? await openDatabase({ kind: "postgres", url: database.url, poolSize: 5 })
        : null;
      try {
        const a = sim();
        const b = sim(second?.db ?? database.db);
        // Concurrent payments from both "processes": distinct, consecutive blocks.
        const paid = await Promise.all(
          Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).pay(addr(i), BigInt(i + 1))),
        );
        expect(paid.map((p) => p.blockNumber).sort((x, y) => x - y)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        expect(await a.head()).toBe(10);
        expect(await b.head()).toBe(10);
        expect(await new SimulatorChainAdapter(b).tokenBalance(addr(3))).toBe(4n);
        // "Restart": a brand-new instance continues the same chain.
        const restarted = sim();
        expect(await restarted.head()).toBe(10);
        expect((await restarted.pay(addr(0), 1n)).blockNumber).toBe(11);
        // The other environment's chain is separate.
        expect(await new SimulatedChain(database.db, { network, environment: "production" }).head()).toBe(0);
      } finally {
        await second?.close();
      }
    });

    it("pays inside the caller's transaction: a rollback leaves no block", async () => {
      const chain = sim();
      await expect(
        database.db.transaction().execute(async (trx) => {
          await chain.pay(addr(0), 3n, { trx });
          throw new Error("caller failed");
        }),
      ).rejects.toThrow("caller failed");
      expect(await chain.head()).toBe(0);
      expect(await chain.balanceOf(addr(0))).toBe(0n);
    });
  });
}

describe("createChainAdapter", () => {
  it("builds the simulator, EVM and TRON adapters and refuses mismatched endpoints", () => {
    const sim = createChainAdapter("USDT-TRC20", { kind: "simulator", db: database.db, clock: fixedClock });
    expect(sim).toBeInstanceOf(SimulatorChainAdapter);
    expect(sim.network).toBe("USDT-TRC20");
    const evm = createChainAdapter("USDT-ERC20", {
      kind: "evm",
      rpcUrl: "http://127.0.0.1:1",
      tokenAddress: "0xdAC17F958D2ee523a2206206994597C13D831ec7",
    });
    expect(evm).toBeInstanceOf(EvmChainAdapter);
    const tron = createChainAdapter("USDT-TRC20", {
      kind: "tron",
      apiUrl: "http://127.0.0.1:1",
      tokenAddress: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t",
    });
    expect(tron).toBeInstanceOf(TronChainAdapter);
    expect(() =>
      createChainAdapter("USDT-TRC20", {
        kind: "evm",
        rpcUrl: "http://x",
        tokenAddress: "0x" + "1".repeat(40),
      }),
    ).toThrow();
  });
});

describe("AddressDeriver watch-only", () => {
  it("derives the same addresses from the account xpubs", () => {
    const xpubs = {
      "USDT-ERC20/sandbox": wallet.accountExtendedPublicKey("USDT-ERC20", "sandbox"),
      "USDT-TRC20/production": wallet.accountExtendedPublicKey("USDT-TRC20", "production"),
    };
    expect(xpubs["USDT-ERC20/sandbox"]).toMatch(/^xpub/);
    const watchOnly = AddressDeriver.fromAccountExtendedPublicKeys(xpubs);
    expect(watchOnly.address("USDT-ERC20", "sandbox", 100)).toBe(
      wallet.address("USDT-ERC20", "sandbox", 100),
    );
    expect(watchOnly.address("USDT-TRC20", "production", 0)).toBe("TWer2Ygk5TEheHp3TPuYeqxmB6SsGZmaL6");
    expect(() => watchOnly.address("USDT-ERC20", "production", 0)).toThrow(/No account key/);
  });
});

describe("the simulator's freeze list follows the token's kind (issue #40, outside review)", () => {
  it("freezes the test address where the token has a freeze function, nowhere else (Binance-Peg: none)", () => {
    const frozen = "0x000000000000000000000000000000000000B10C";
    const on = (network: "USDT-ERC20" | "USDC-BASE" | "USDT-POLYGON" | "USDT-BEP20" | "USDC-BEP20") =>
      new SimulatedChain(database.db, { network, clock: fixedClock }).isFrozen(frozen);
    expect([on("USDT-ERC20"), on("USDC-BASE"), on("USDT-POLYGON")]).toEqual([true, true, true]);
    expect([on("USDT-BEP20"), on("USDC-BEP20")]).toEqual([false, false]);
    expect(
      new SimulatedChain(database.db, { network: "USDT-TRC20", clock: fixedClock }).isFrozen(
        "T9yD14Nj9j7xAB4dbGeiX9h8upGUqmaajC",
      ),
    ).toBe(true);
  });
});
