/**
 * The watcher's must-show cases (issue 5), run against a real chain endpoint: anvil (EVM) and the
 * TRON emulator over anvil. Each case gets a fresh database; the chain (anvil) is shared by a file.
 */
import type { Hex } from "viem";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { ChainAdapter } from "../../src/chains/adapter.js";
import type { Database } from "../../src/db/database.js";
import type { CurrencyType } from "../../src/domain/currency.js";
import { ManualClock } from "../../src/lib/clock.js";
import { createLogger } from "../../src/observability/logger.js";
import { AddressDeriver } from "../../src/wallet/address-deriver.js";
import { allocateDepositAddress } from "../../src/wallet/allocation.js";
import { FIRST_DEPOSIT_INDEX } from "../../src/wallet/derivation-path.js";
import { type ConfirmedTransfer, DepositHandoff } from "../../src/watcher/handoff.js";
import { ChainWatcher, type ChainWatcherOptions } from "../../src/watcher/watcher.js";
import { type AnvilNode, mineBlocks } from "../support/chain/anvil.js";
import { type RpcProxy, startRpcProxy } from "../support/chain/rpc-proxy.js";
import { openTestDatabase } from "../support/db.js";

export const MNEMONIC = "test test test test test test test test test test test junk";
export const deriver = AddressDeriver.fromMnemonic(MNEMONIC);

export interface ChainUnderTest {
  network: CurrencyType;
  anvil: AnvilNode;
  /** The endpoint the adapter talks to (anvil's RPC or the emulator's URL). */
  endpointUrl: string;
  /** An adapter on `url` (a proxy in front of the endpoint). */
  adapter(url: string, timeoutMs: number): ChainAdapter;
  /** Mints `amount` to `address` (network spelling) in a new block; returns the tx hash as the adapter reports it. */
  pay(address: string, amount: bigint): Promise<string>;
  stop(): Promise<void>;
}

const USDT = (n: number) => BigInt(n) * 1_000_000n;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function watcherSuite(name: string, start: () => Promise<ChainUnderTest>) {
  describe(`ChainWatcher on ${name}`, () => {
    let chain: ChainUnderTest;
    let proxy: RpcProxy;
    let database: Database;
    let merchantId: string;
    let clock: ManualClock;
    let seq = 0;
    const logger = createLogger("silent");

    beforeAll(async () => {
      chain = await start();
      proxy = await startRpcProxy(chain.endpointUrl);
    });
    afterAll(async () => {
      await proxy?.stop();
      await chain?.stop();
    });
    beforeEach(async () => {
      proxy.mode = "pass";
      proxy.rewriteResponse = undefined;
      // Cases share the chain and derive the same addresses: bury the previous case's transfers
      // below the safe block where a new watcher starts.
      await mineBlocks(chain.anvil, 10);
      database = await openTestDatabase();
      clock = new ManualClock(Date.now());
      merchantId = `mer_test${++seq}`;
      await database.db
        .insertInto("merchants")
        .values({ id: merchantId, email: `${merchantId}@example.com`, company_name: "Test" })
        .execute();
    });
    afterEach(async () => {
      await database?.close();
    });

    function watcher(handoff: DepositHandoff, extra: Partial<ChainWatcherOptions> = {}) {
      return new ChainWatcher({
        db: database.db,
        network: chain.network,
        environment: "sandbox",
        adapter: chain.adapter(proxy.url, 2_000),
        confirmations: 3,
        scan: { pollIntervalMs: 100, initialRangeBlocks: 5, maxRangeBlocks: 50 },
        handoff,
        derive: (index) => deriver.address(chain.network, "sandbox", index),
        logger,
        clock,
        owner: "worker-a",
        // Cases share the chain and its derived addresses: each starts strictly at the safe block
        // (the "watched" start, which looks back to the oldest address, has its own case).
        start: "safe",
        ...extra,
      });
    }

    function recorder() {
      const handoff = new DepositHandoff();
      const seen: ConfirmedTransfer[] = [];
      handoff.register(async (trx, t) => {
        // Runs inside the hand-off transaction: the observation is already claimed in it.
        const row = await trx
          .selectFrom("chain_observations")
          .select("status")
          .where("id", "=", t.observationId)
          .executeTakeFirstOrThrow();
        expect(row.status).toBe("handed_off");
        seen.push(t);
      });
      return { handoff, seen };
    }

    const allocate = (purpose: "checkout" | "wallet" = "wallet") =>
      database.db.transaction().execute((trx) =>
        allocateDepositAddress(trx, {
          deriver,
          network: chain.network,
          environment: "sandbox",
          merchantId,
          purpose,
        }),
      );

    const observations = () =>
      database.db
        .selectFrom("chain_observations")
        .selectAll()
        .where("network", "=", chain.network)
        .orderBy("block_number")
        .orderBy("log_index")
        .execute();

    it("records a transfer as soon as it is in a block and hands it off once, after N confirmations and not before", async () => {
      const { handoff, seen } = recorder();
      const w = watcher(handoff);
      const { address } = await allocate();
      expect((await w.tick()).kind).toBe("scanned"); // starts at the current safe block

      const txHash = await chain.pay(address, USDT(12));
      const block = Number(await chain.anvil.publicClient.getBlockNumber());
      const mined = await chain.anvil.publicClient.getBlock({ blockNumber: BigInt(block) });
      await w.tick(); // 1 confirmation: recorded (with its block's own time), not handed off
      const first = await observations();
      expect(first).toHaveLength(1);
      expect(first[0]).toMatchObject({ status: "observed", tx_hash: txHash, block_number: BigInt(block) });
      expect(first[0]?.block_time?.getTime()).toBe(Number(mined.timestamp) * 1000);
      await mineBlocks(chain.anvil, 1);
      await w.tick(); // 2 confirmations
      expect(seen).toHaveLength(0);
      expect((await observations()).map((o) => o.status)).toEqual(["observed"]);

      await mineBlocks(chain.anvil, 1);
      const out = await w.tick(); // 3 confirmations: the block is safe
      expect(out).toMatchObject({ kind: "scanned", handedOff: 1 });
      expect(seen).toHaveLength(1);
      expect(seen[0]).toMatchObject({
        network: chain.network,
        environment: "sandbox",
        address,
        txHash,
        blockNumber: block,
        amount: USDT(12),
        merchantId,
        purpose: "wallet",
        referenceId: null,
      });

      await mineBlocks(chain.anvil, 5);
      await w.tick();
      await w.tick();
      expect(seen).toHaveLength(1);
      const rows = await observations();
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ status: "handed_off", tx_hash: txHash, amount: "12000000" });
    });

    it("a chain's first scan starts back at the oldest handed-out address: a payment made before the watcher's first tick is recorded", async () => {
      const { handoff, seen } = recorder();
      // Past the indices earlier cases paid, so this address has only this case's payment.
      for (let i = 0; i < 20; i++) await allocate();
      const { address } = await allocate("checkout");
      const txHash = await chain.pay(address, USDT(7));
      // The api handed the address out and the customer paid before any worker scanned: by the
      // first tick the payment is far below the safe block, where a "safe" start would begin.
      await mineBlocks(chain.anvil, 10);
      const w = watcher(handoff, { start: "watched" });
      expect((await w.tick()).kind).toBe("scanned");
      await w.tick();
      expect(seen.filter((t) => t.address === address).map((t) => t.txHash)).toEqual([txHash]);
    });

    it("refuses at start-up a chain whose blocks carry no usable timestamp (never the worker's clock)", async () => {
      const { handoff, seen } = recorder();
      // A provider whose block answers lose their timestamp (EVM `timestamp`, TRON `raw_data.timestamp`).
      const strip = (v: unknown): unknown => {
        if (Array.isArray(v)) return v.map(strip);
        if (v === null || typeof v !== "object") return v;
        return Object.fromEntries(
          Object.entries(v)
            .filter(([k]) => k !== "timestamp")
            .map(([k, x]) => [k, strip(x)]),
        );
      };
      proxy.rewriteResponse = strip;
      const w = watcher(handoff);
      const { address } = await allocate();
      const first = await w.tick();
      expect(first).toMatchObject({ kind: "failed", error: expect.stringMatching(/no usable timestamp/) });
      // Refused for good: later ticks do not scan, even once the endpoint answers well again.
      proxy.rewriteResponse = undefined;
      await chain.pay(address, USDT(1));
      await mineBlocks(chain.anvil, 4);
      clock.advance(120_000);
      expect((await w.tick()).kind).toBe("failed");
      expect(seen).toHaveLength(0);
      expect(await observations()).toHaveLength(0);
      const cursor = await database.db
        .selectFrom("chain_cursors")
        .select("last_error")
        .executeTakeFirstOrThrow();
      expect(cursor.last_error).toMatch(/no usable timestamp/);
    });

    it("ignores transfers to addresses it does not watch", async () => {
      const { handoff, seen } = recorder();
      const w = watcher(handoff);
      await w.tick();
      const stranger = deriver.address(chain.network, "sandbox", FIRST_DEPOSIT_INDEX + 5_000);
      await chain.pay(stranger, USDT(3));
      await mineBlocks(chain.anvil, 4);
      const out = await w.tick();
      expect(out.kind).toBe("scanned");
      if (out.kind === "scanned") expect(out.scan.scannedBlocks).toBeGreaterThan(0);
      expect(seen).toHaveLength(0);
      expect(await observations()).toHaveLength(0);
    });

    it("a reorg that removes a transfer before its confirmation leaves no trace", async () => {
      const { handoff, seen } = recorder();
      const w = watcher(handoff);
      const { address } = await allocate();
      await w.tick();
      await chain.pay(address, USDT(7));
      await mineBlocks(chain.anvil, 1);
      await w.tick(); // 2 confirmations: seen by the node, not yet by us
      // Replace the last 2 blocks (the transfer's block included) by empty ones.
      await chain.anvil.publicClient.request({ method: "anvil_reorg" as never, params: [2, []] as never });
      await mineBlocks(chain.anvil, 5);
      await w.tick();
      expect(seen).toHaveLength(0);
      expect(await observations()).toHaveLength(0);
    });

    it("a reorg deeper than the confirmations rolls the cursor back and discards what was not handed off", async () => {
      const handoff = new DepositHandoff(); // no handler yet: observations wait
      const w = watcher(handoff, { confirmations: 1 });
      const { address } = await allocate();
      await w.tick();
      const gone = await chain.pay(address, USDT(1));
      await mineBlocks(chain.anvil, 1);
      await w.tick();
      expect((await observations()).map((o) => o.tx_hash)).toEqual([gone]);

      await chain.anvil.publicClient.request({ method: "anvil_reorg" as never, params: [3, []] as never });
      const kept = await chain.pay(address, USDT(2));
      const out = await w.tick();
      expect(out.kind).toBe("scanned");
      if (out.kind === "scanned") expect(out.scan.reorgTo).not.toBeNull();
      const rows = await observations();
      expect(rows.map((o) => o.tx_hash)).toEqual([kept]);

      const seen: ConfirmedTransfer[] = [];
      handoff.register(async (_trx, t) => {
        seen.push(t);
      });
      await w.tick();
      expect(seen.map((t) => [t.txHash, t.amount])).toEqual([[kept, USDT(2)]]);
    });

    it("a watcher restarted mid-range neither misses nor repeats a transfer", async () => {
      const { handoff, seen } = recorder();
      // A lease long enough that a loaded machine cannot let it lapse between two ticks (300 ms
      // did, on a 2-core CI runner under load); the takeover waits it out.
      const first = watcher(handoff, {
        leaseMs: 3_000,
        maxRangesPerTick: 1,
        scan: { pollIntervalMs: 100, initialRangeBlocks: 2, maxRangeBlocks: 2 },
      });
      const { address } = await allocate("checkout");
      const other = await allocate("wallet");
      await first.tick();
      const sent: string[] = [];
      for (let i = 0; i < 4; i++) {
        sent.push(await chain.pay(address, USDT(i + 1)));
        sent.push(await chain.pay(other.address, BigInt(i + 1)));
        await mineBlocks(chain.anvil, 1);
      }
      await mineBlocks(chain.anvil, 3);
      await first.tick(); // one 2-block range, then the process "dies"
      const partial = (await observations()).length;
      expect(partial).toBeLessThan(8);

      // A new process (new lease owner) takes over once the old lease expires; a standby meanwhile.
      const second = watcher(handoff, { owner: "worker-b" });
      expect((await second.tick()).kind).toBe("standby");
      await sleep(3_500);
      await second.tick();
      await second.tick();
      // The old process comes back: it no longer holds the lease and writes nothing.
      expect((await first.tick()).kind).toBe("standby");

      const rows = await observations();
      expect(rows.map((o) => o.tx_hash).sort()).toEqual([...sent].sort());
      expect(seen.map((t) => t.txHash).sort()).toEqual([...sent].sort());
      expect(new Set(seen.map((t) => t.observationId)).size).toBe(8);
    });

    it("a watcher stopped gracefully gives its lease up: another instance scans at once", async () => {
      const { handoff } = recorder();
      const first = watcher(handoff, { owner: "graceful-a", leaseMs: 60_000 });
      const second = watcher(handoff, { owner: "graceful-b", leaseMs: 60_000 });
      await first.tick();
      expect((await second.tick()).kind).toBe("standby"); // a live lease of a minute
      await first.releaseLease();
      expect((await second.tick()).kind).not.toBe("standby");
      // Releasing is only ever done by the owner: the first one's release no longer touches it.
      await first.releaseLease();
      expect((await first.tick()).kind).toBe("standby");
    });

    it("a hanging or erroring endpoint does not crash the worker; it backs off and recovers", async () => {
      const { handoff, seen } = recorder();
      const w = watcher(handoff, {
        adapter: chain.adapter(proxy.url, 300),
        backoff: { minMs: 1_000, maxMs: 8_000 },
      });
      const { address } = await allocate();
      await w.tick();

      proxy.mode = "hang";
      const hung = await w.tick();
      expect(hung).toMatchObject({ kind: "failed" });
      expect((await w.tick()).kind).toBe("backoff");
      const cursor = await database.db
        .selectFrom("chain_cursors")
        .select(["last_error"])
        .executeTakeFirstOrThrow();
      expect(cursor.last_error).toBeTruthy();

      proxy.mode = "error";
      clock.advance(1_500);
      expect((await w.tick()).kind).toBe("failed");
      clock.advance(1_500);
      expect((await w.tick()).kind).toBe("backoff"); // the back-off doubled to 2 s

      proxy.mode = "pass";
      const tx = await chain.pay(address, USDT(9));
      await mineBlocks(chain.anvil, 3);
      clock.advance(5_000);
      expect((await w.tick()).kind).toBe("scanned");
      expect(seen.map((t) => t.txHash)).toEqual([tx]);
    });

    it("one watcher scans at a time; re-scanning a range stores and hands off nothing twice", async () => {
      const { address } = await allocate();
      const { handoff, seen } = recorder();
      const a = watcher(handoff);
      await a.tick();
      const tx = await chain.pay(address, USDT(4));
      await mineBlocks(chain.anvil, 3);
      const b = watcher(handoff, { owner: "worker-b" });
      const outs = await Promise.all([a.tick(), b.tick()]);
      expect(outs.map((o) => o.kind).sort()).toEqual(["scanned", "standby"]);
      expect(await observations()).toHaveLength(1);

      // Force the same range to be scanned again (as after a crash between scan and commit).
      await database.db
        .updateTable("chain_cursors")
        .set((eb) => ({ cursor_block: eb("cursor_block", "-", 6) }))
        .execute();
      await mineBlocks(chain.anvil, 1);
      await a.tick();
      expect(await observations()).toHaveLength(1);
      expect(seen.map((t) => t.txHash)).toEqual([tx]);
    });
  });
}

export type { Hex };
