import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import type { Db } from "../../db/database.js";
import {
  type CurrencyType,
  currencyOf,
  testFailureAddress,
  testFrozenAddress,
} from "../../domain/currency.js";
import type { Environment } from "../../domain/environment.js";
import { type Clock, systemClock } from "../../lib/clock.js";
import type { TokenTransfer } from "../adapter.js";
import { addressCodec, normalizeAddress } from "../address.js";
import {
  createSimChain,
  type SimChainState,
  type SimSealedTransaction,
  sealSimBlock,
  withLockedSimChain,
} from "./chain-store.js";
import { SIMULATOR_DEFINITION } from "./definition.js";

/** NOTIFY channel of newly mined simulator blocks (payload `<network>/<environment>`). */
export const SIM_BLOCK_CHANNEL = SIMULATOR_DEFINITION.blockChannel;

export type SimTransactionStatus = "success" | "failed";

/** A token transfer transaction of the simulated chain, successful or failed on-chain. */
export interface SimTransaction {
  txHash: string;
  blockNumber: number;
  blockHash: string;
  from: string;
  to: string;
  amount: bigint;
  status: SimTransactionStatus;
  /** Why it failed (`test failure address`, `insufficient balance`), for the write side. */
  failureReason?: string;
}

export interface SimBlock {
  number: number;
  hash: string;
  parentHash: string;
  /** Milliseconds since the epoch, from the injected clock. */
  timestamp: number;
}

export interface SimulatedChainOptions {
  network: CurrencyType;
  /** Sandbox by default; the simulator never serves production (docs/chains.md#the-simulator-sandbox-default). */
  environment?: Environment;
  /** Clock for block timestamps. */
  clock?: Clock;
}

/** Per call: run inside the caller's transaction (e.g. a sandbox pay endpoint's own transaction). */
export interface SimWriteOptions {
  trx?: Db;
}

export interface SimTransferOptions extends SimWriteOptions {
  /**
   * The faucet first pays `from` whatever it lacks of `amount`, as its own block, under the same
   * chain lock as the transfer (the sandbox hot wallet always has funds). The balance is read
   * after the lock is taken: a balance read before it may miss another process's transfer that
   * commits in between, and the transfer would then be mined failed (issue 25).
   */
  fundShortfall?: boolean;
}

/**
 * The sandbox USDT chain (docs/chains.md#the-simulator-sandbox-default), kept in the database (`sim_chains`, `sim_blocks`,
 * `sim_transactions`): every api and worker process of a deployment sees the same chain, and a
 * restart keeps it. Deterministic: hashes are sha256 of the content, timestamps come from the clock.
 *
 * - `pay(to, amount)` is what the sandbox pay endpoints call: the faucet (unlimited funds, never
 *   debited) sends `amount` to `to`, mined at once as its own block.
 * - `transfer(from, to, amount)` moves tracked balances; a transfer to the network's test failure
 *   address, or beyond the sender's balance, is mined as a FAILED transaction: no Transfer event,
 *   no balance change (what the write side must detect on-chain).
 * - `reorg(depth)` replaces the last blocks by a longer fork, for testing reorg handling.
 *
 * Writers serialise on the `sim_chains` row (`select … for update`), so concurrent payments from
 * several processes get distinct, consecutive blocks. What a write decides from (a balance) is read
 * after that lock is taken, never before (see `SimTransferOptions.fundShortfall`).
 */
/** How each chain family spells a hash. */
const HASH_PREFIX = { evm: "0x", tron: "" } as const;

export class SimulatedChain {
  readonly network: CurrencyType;
  readonly environment: Environment;
  readonly faucetAddress: string;
  private readonly clock: Clock;
  private readonly failureAddress: string;
  private readonly frozenAddress: string;
  /** The token checks the recipient too (`usdc`), not only the sender. */
  private readonly refusesFrozenRecipient: boolean;
  private ready: Promise<void> | undefined;

  constructor(
    private readonly db: Db,
    options: SimulatedChainOptions,
  ) {
    this.network = options.network;
    this.environment = options.environment ?? "sandbox";
    this.clock = options.clock ?? systemClock;
    this.failureAddress = normalizeAddress(this.network, testFailureAddress(this.network));
    this.frozenAddress = normalizeAddress(this.network, testFrozenAddress(this.network));
    this.refusesFrozenRecipient = currencyOf(this.network).freeze === "usdc";
    const faucet = sha256(utf8ToBytes("stablegate simulator faucet")).slice(0, 20);
    this.faucetAddress = addressCodec(this.network).fromAccountBytes(faucet);
  }

  isTestFailureAddress(address: string): boolean {
    return normalizeAddress(this.network, address) === this.failureAddress;
  }

  /**
   * The simulator's token has the test frozen address on its blacklist
   * (docs/merchants/sandbox.md#test-frozen-addresses), like the issuers' freeze views; a token
   * without a freeze function (the Binance-Peg ones) freezes nothing, as in production (outside
   * review of #40: the sandbox held deposits production never would).
   */
  isFrozen(address: string): boolean {
    if (currencyOf(this.network).freeze === "none") return false;
    return normalizeAddress(this.network, address) === this.frozenAddress;
  }

  async head(): Promise<number> {
    await this.init();
    const row = await this.db
      .selectFrom("sim_chains")
      .select("head")
      .where("network", "=", this.network)
      .where("environment", "=", this.environment)
      .executeTakeFirstOrThrow();
    return Number(row.head);
  }

  async block(n: number): Promise<SimBlock | undefined> {
    await this.init();
    const row = await this.db
      .selectFrom("sim_blocks")
      .selectAll()
      .where("network", "=", this.network)
      .where("environment", "=", this.environment)
      .where("number", "=", n)
      .executeTakeFirst();
    return row
      ? {
          number: Number(row.number),
          hash: row.hash,
          parentHash: row.parent_hash,
          timestamp: row.mined_at.getTime(),
        }
      : undefined;
  }

  /** Transfer events of successful transactions in `[fromBlock, toBlock]`, in (block, log) order. */
  async transfers(fromBlock: number, toBlock: number): Promise<TokenTransfer[]> {
    await this.init();
    const rows = await this.db
      .selectFrom("sim_transactions as t")
      .innerJoin("sim_blocks as b", (j) =>
        j
          .onRef("b.network", "=", "t.network")
          .onRef("b.environment", "=", "t.environment")
          .onRef("b.number", "=", "t.block_number"),
      )
      .select([
        "t.tx_hash",
        "t.log_index",
        "t.block_number",
        "b.hash",
        "t.from_address",
        "t.to_address",
        "t.amount",
      ])
      .where("t.network", "=", this.network)
      .where("t.environment", "=", this.environment)
      .where("t.status", "=", "success")
      .where("t.block_number", ">=", fromBlock)
      .where("t.block_number", "<=", toBlock)
      .orderBy("t.block_number")
      .orderBy("t.log_index")
      .execute();
    return rows.map((r) => ({
      txHash: r.tx_hash,
      logIndex: r.log_index ?? 0,
      blockNumber: Number(r.block_number),
      blockHash: r.hash,
      from: r.from_address,
      to: r.to_address,
      amount: BigInt(r.amount),
    }));
  }

  async balanceOf(address: string, trx: Db = this.db): Promise<bigint> {
    const a = normalizeAddress(this.network, address);
    if (a === this.faucetAddress) return 0n;
    const row = await trx
      .selectFrom("sim_transactions")
      .select((eb) => [
        eb.fn
          .sum<string | null>(eb.case().when("to_address", "=", a).then(eb.ref("amount")).else(0).end())
          .as("incoming"),
        eb.fn
          .sum<string | null>(eb.case().when("from_address", "=", a).then(eb.ref("amount")).else(0).end())
          .as("outgoing"),
      ])
      .where("network", "=", this.network)
      .where("environment", "=", this.environment)
      .where("status", "=", "success")
      .where((eb) => eb.or([eb("to_address", "=", a), eb("from_address", "=", a)]))
      .executeTakeFirst();
    return BigInt(row?.incoming ?? "0") - BigInt(row?.outgoing ?? "0");
  }

  async transaction(txHash: string, trx: Db = this.db): Promise<SimTransaction | undefined> {
    const row = await trx
      .selectFrom("sim_transactions as t")
      .innerJoin("sim_blocks as b", (j) =>
        j
          .onRef("b.network", "=", "t.network")
          .onRef("b.environment", "=", "t.environment")
          .onRef("b.number", "=", "t.block_number"),
      )
      .selectAll("t")
      .select("b.hash")
      .where("t.network", "=", this.network)
      .where("t.environment", "=", this.environment)
      .where("t.tx_hash", "=", txHash)
      .executeTakeFirst();
    if (!row) return undefined;
    return {
      txHash: row.tx_hash,
      blockNumber: Number(row.block_number),
      blockHash: row.hash,
      from: row.from_address,
      to: row.to_address,
      amount: BigInt(row.amount),
      status: row.status,
      ...(row.failure_reason ? { failureReason: row.failure_reason } : {}),
    };
  }

  /** Mines `count` empty blocks; returns the new head. */
  async mine(count = 1, options: SimWriteOptions = {}): Promise<number> {
    if (!Number.isSafeInteger(count) || count < 1) throw new RangeError("count must be a positive integer.");
    return this.write(options, async (trx, chain) => {
      for (let i = 0; i < count; i++) await this.seal(trx, chain, null);
      return chain.head;
    });
  }

  /** The faucet pays `to`, mined at once as its own block (the sandbox pay endpoints). */
  pay(to: string, amount: bigint, options: SimWriteOptions = {}): Promise<SimTransaction> {
    return this.execute(this.faucetAddress, to, amount, options);
  }

  /**
   * The faucet pays `to` as if `from` sent it (the sandbox pay endpoints' `from`): the faucet first
   * gives `from` exactly `amount`, then `from` pays `to`, each mined as its own block in one write;
   * `from`'s balance ends where it was. Returns the second transfer (the payment).
   */
  payFrom(from: string, to: string, amount: bigint, options: SimWriteOptions = {}): Promise<SimTransaction> {
    if (typeof amount !== "bigint" || amount <= 0n)
      throw new RangeError("Amount must be positive base units.");
    const sender = normalizeAddress(this.network, from);
    const receiver = normalizeAddress(this.network, to);
    return this.write(options, async (trx, chain) => {
      await this.mineTransfer(trx, chain, this.faucetAddress, sender, amount);
      return this.mineTransfer(trx, chain, sender, receiver, amount);
    });
  }

  /** A token transfer from a tracked balance, in a new block. */
  transfer(
    from: string,
    to: string,
    amount: bigint,
    options: SimTransferOptions = {},
  ): Promise<SimTransaction> {
    return this.execute(normalizeAddress(this.network, from), to, amount, options);
  }

  /**
   * Drops the last `depth` blocks (their transactions vanish, so balances revert) and mines
   * `depth + 1` empty blocks in their place: the new fork is longer and every replaced height gets a
   * new hash. Returns the dropped transactions.
   */
  async reorg(depth: number): Promise<SimTransaction[]> {
    return this.write({}, async (trx, chain) => {
      if (!Number.isInteger(depth) || depth < 1 || depth > chain.head)
        throw new RangeError("Invalid reorg depth.");
      const from = chain.head - depth + 1;
      const dropped = await trx
        .selectFrom("sim_transactions")
        .select("tx_hash")
        .where("network", "=", this.network)
        .where("environment", "=", this.environment)
        .where("block_number", ">=", from)
        .orderBy("block_number")
        .execute();
      const out: SimTransaction[] = [];
      for (const d of dropped) {
        const tx = await this.transaction(d.tx_hash, trx);
        if (tx) out.push(tx);
      }
      await trx
        .deleteFrom("sim_blocks")
        .where("network", "=", this.network)
        .where("environment", "=", this.environment)
        .where("number", ">=", from)
        .execute();
      chain.head = from - 1;
      chain.fork += 1;
      for (let i = 0; i <= depth; i++) await this.seal(trx, chain, null);
      return out;
    });
  }

  private async execute(
    from: string,
    toInput: string,
    amount: bigint,
    options: SimTransferOptions,
  ): Promise<SimTransaction> {
    if (typeof amount !== "bigint" || amount <= 0n)
      throw new RangeError("Amount must be positive base units.");
    const to = normalizeAddress(this.network, toInput);
    return this.write(options, async (trx, chain) => {
      // Read with the chain row locked: every transfer committed before is counted, and none can
      // commit before this one does.
      if (options.fundShortfall && from !== this.faucetAddress) {
        const balance = await this.balanceOf(from, trx);
        if (balance < amount) await this.mineTransfer(trx, chain, this.faucetAddress, from, amount - balance);
      }
      return this.mineTransfer(trx, chain, from, to, amount);
    });
  }

  /** Mines one transfer as its own block; the caller holds the chain row lock (`write`). */
  private async mineTransfer(
    trx: Db,
    chain: SimChainState,
    from: string,
    to: string,
    amount: bigint,
  ): Promise<SimTransaction> {
    chain.nonce += 1;
    const txHash = this.hash(`tx|${chain.nonce}|${from}|${to}|${amount}`);
    let failureReason: string | undefined;
    if (to === this.failureAddress) failureReason = "test failure address";
    else if (from !== this.faucetAddress && to === this.frozenAddress && this.refusesFrozenRecipient) {
      // Circle's FiatToken refuses a frozen recipient (Tether's does not): a return of a held USDC
      // deposit to the frozen test address fails as it does on a real chain (outside review).
      failureReason = "Blacklistable: account is blacklisted";
    } else if (from !== this.faucetAddress && (await this.balanceOf(from, trx)) < amount) {
      failureReason = "insufficient balance";
    }
    const tx = {
      txHash,
      from,
      to,
      amount,
      status: failureReason ? "failed" : "success",
      failureReason,
    } as const;
    const block = await this.seal(trx, chain, tx);
    return {
      txHash,
      blockNumber: block.number,
      blockHash: block.hash,
      from,
      to,
      amount,
      status: tx.status,
      ...(failureReason ? { failureReason } : {}),
    };
  }

  /** Runs `fn` with the chain row locked, in the caller's transaction or a new one. */
  private async write<T>(
    options: SimWriteOptions,
    fn: (trx: Db, chain: SimChainState) => Promise<T>,
  ): Promise<T> {
    // Inside a caller's transaction, create the chain on that connection (PGlite has only one).
    if (options.trx) await this.createChain(options.trx);
    else await this.init();
    return withLockedSimChain(options.trx ?? this.db, this, fn);
  }

  private seal(trx: Db, chain: SimChainState, tx: SimSealedTransaction | null): Promise<SimBlock> {
    return sealSimBlock(trx, this, chain, tx, { hash: (c) => this.hash(c), now: () => this.clock.now() });
  }

  /** Creates the chain (genesis block 0) the first time any process uses it. Idempotent. */
  private init(): Promise<void> {
    this.ready ??= this.createChain(this.db).catch((err: unknown) => {
      this.ready = undefined;
      throw err;
    });
    return this.ready;
  }

  private createChain(db: Db): Promise<void> {
    return createSimChain(db, this, {
      hash: this.hash("block|0|0|genesis|"),
      parentHash: this.hash("genesis"),
    });
  }

  /** 32-byte content hash in the network's spelling: `0x…` on EVM networks, bare hex on TRON. */
  private hash(content: string): string {
    const hex = bytesToHex(sha256(utf8ToBytes(`${this.network}|${this.environment}|${content}`)));
    return HASH_PREFIX[currencyOf(this.network).definition.family] + hex;
  }
}
