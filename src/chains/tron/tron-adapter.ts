import { providers, TronWeb } from "tronweb";
import { currencyOf } from "../../domain/currency.js";
import {
  type BlockHeader,
  blockChunks,
  type ChainAdapter,
  compareTransfers,
  type NamedFreezeEvent,
  safeBlockFromHead,
  type TokenTransfer,
  type TokenTransferQuery,
  usableBlockTime,
} from "../adapter.js";
import { ChainUnavailableError } from "../errors.js";
import { decodeFreezeLog, freezeTopics } from "../freeze-events.js";
import { isTronAddress, normalizeTronAddress, tronAddressFromHex, tronAddressToHex } from "./address.js";
import type { TronBlock, TronTransactionInfo } from "./tron-api-types.js";

/** keccak256("Transfer(address,address,uint256)"), as TRON logs spell topics (no 0x). */
const TRANSFER_TOPIC = "ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";

export interface TronAdapterOptions {
  /** TRON HTTP API base URL (a java-tron full node or TronGrid, e.g. https://api.trongrid.io). */
  apiUrl: string;
  /** The USDT (TRC20) contract, base58. */
  tokenAddress: string;
  /** TronGrid key, sent as `TRON-PRO-API-KEY`. */
  apiKey?: string;
  /** Per-request timeout; the spec asks for 10 to 15 s on external calls. Default 10 000. */
  timeoutMs?: number;
  /** Blocks fetched in parallel while scanning. Default 4. */
  concurrency?: number;
}

/**
 * USDT-TRC20 read side over the TRON HTTP API, with tronweb.
 *
 * Endpoints (all served by a plain java-tron full node, not only TronGrid):
 * `wallet/getnowblock` (head), `wallet/getblockbynum` (hashes), `wallet/gettransactioninfobyblocknum`
 * (the scan: every receipt and log of one block in one call, whatever the number of watched
 * addresses) and `wallet/triggerconstantcontract` (`balanceOf`).
 */
export class TronChainAdapter implements ChainAdapter {
  readonly network = "USDT-TRC20" as const;
  private readonly tronWeb: TronWeb;
  private readonly token: string;
  /** The token's 20 account bytes in hex, as logs carry it. */
  private readonly tokenLogAddress: string;
  private readonly concurrency: number;

  constructor(options: TronAdapterOptions) {
    this.token = normalizeTronAddress(options.tokenAddress);
    this.tokenLogAddress = tronAddressToHex(this.token).slice(2);
    this.concurrency = options.concurrency ?? 4;
    const headers = options.apiKey ? { "TRON-PRO-API-KEY": options.apiKey } : {};
    const node = () =>
      new providers.HttpProvider(options.apiUrl, options.timeoutMs ?? 10_000, "", "", headers);
    this.tronWeb = new TronWeb({ fullNode: node(), solidityNode: node(), eventServer: node() });
  }

  validateAddress(s: string): boolean {
    return isTronAddress(s);
  }

  normalizeAddress(s: string): string {
    return normalizeTronAddress(s);
  }

  async headBlock(): Promise<number> {
    const block = (await this.call("getnowblock", () => this.tronWeb.trx.getCurrentBlock())) as TronBlock;
    const n = block.block_header?.raw_data?.number;
    if (typeof n !== "number") throw new ChainUnavailableError(this.network, "getnowblock returned no block");
    return n;
  }

  async safeBlock(confirmations: number): Promise<number> {
    return safeBlockFromHead(await this.headBlock(), confirmations);
  }

  async blockHash(n: number): Promise<string | null> {
    return (await this.block(n))?.blockID ?? null;
  }

  async blockHeader(n: number): Promise<BlockHeader | null> {
    const block = await this.block(n);
    if (!block?.blockID) return null;
    // TRON block timestamps are milliseconds already.
    const timestamp = usableBlockTime(this.network, n, block.block_header?.raw_data?.timestamp);
    return { number: n, hash: block.blockID, timestamp };
  }

  async tokenBalance(address: string): Promise<bigint> {
    const owner = normalizeTronAddress(address);
    const res = await this.call("triggerconstantcontract balanceOf", () =>
      this.tronWeb.transactionBuilder.triggerConstantContract(
        this.token,
        "balanceOf(address)",
        {},
        [{ type: "address", value: owner }],
        owner,
      ),
    );
    const word = res.constant_result?.[0];
    if (!res.result?.result || typeof word !== "string" || !/^[0-9a-fA-F]{1,64}$/.test(word)) {
      throw new ChainUnavailableError(this.network, "balanceOf returned no result");
    }
    return BigInt(`0x${word}`);
  }

  async isFrozen(address: string): Promise<boolean> {
    const owner = normalizeTronAddress(address);
    const kind = currencyOf(this.network).freeze;
    if (kind === "none") return false;
    const view =
      kind === "tether" ? "isBlackListed" : kind === "tether-blocked" ? "isBlocked" : "isBlacklisted";
    const res = await this.call(`triggerconstantcontract ${view}`, () =>
      this.tronWeb.transactionBuilder.triggerConstantContract(
        this.token,
        `${view}(address)`,
        {},
        [{ type: "address", value: owner }],
        owner,
      ),
    );
    // A bool is one 32-byte word, 0 or 1; anything else (a revert, no view of that name) is a
    // fault to report, never "not frozen". java-tron answers a revert with `result.result` true,
    // a message (tronweb throws on it) and the transaction's `ret` FAILED, its revert data as the
    // constant result: that data is never read as an answer, whatever it looks like.
    const word = res.constant_result?.[0];
    const ret = (res as { transaction?: { ret?: { ret?: string }[] } }).transaction?.ret?.[0]?.ret;
    if (!res.result?.result || ret === "FAILED" || typeof word !== "string" || !/^0{63}[01]$/.test(word)) {
      throw new ChainUnavailableError(this.network, `${view} returned no boolean`);
    }
    return word.endsWith("1");
  }

  async tokenTransfers(query: TokenTransferQuery): Promise<TokenTransfer[]> {
    const watched = query.addresses
      ? new Set([...query.addresses].map((a) => normalizeTronAddress(a)))
      : null;
    if (watched && watched.size === 0) return [];
    const out: TokenTransfer[] = [];
    for (const [from, to] of blockChunks(query.fromBlock, query.toBlock, this.concurrency)) {
      const numbers = Array.from({ length: to - from + 1 }, (_, i) => from + i);
      const perBlock = await Promise.all(numbers.map((n) => this.blockTransfers(n, watched)));
      for (const transfers of perBlock) out.push(...transfers);
    }
    return out.sort(compareTransfers);
  }

  async freezeEvents(range: { fromBlock: number; toBlock: number }): Promise<NamedFreezeEvent[]> {
    const topics = freezeTopics(currencyOf(this.network).freeze);
    if (topics.size === 0) return [];
    const out: NamedFreezeEvent[] = [];
    for (const [from, to] of blockChunks(range.fromBlock, range.toBlock, this.concurrency)) {
      const numbers = Array.from({ length: to - from + 1 }, (_, i) => from + i);
      const perBlock = await Promise.all(
        numbers.map(async (n) => {
          const found: NamedFreezeEvent[] = [];
          for (const info of await this.blockInfos(n)) {
            if (info.result === "FAILED" || (info.receipt?.result ?? "SUCCESS") !== "SUCCESS") continue;
            for (const log of info.log ?? []) {
              if (log.address.toLowerCase().slice(-40) !== this.tokenLogAddress) continue;
              const event = decodeFreezeLog(topics, {
                topics: log.topics ?? [],
                data: log.data ?? "",
                blockNumber: n,
              });
              if (event) {
                const { account, ...rest } = event;
                found.push({ ...rest, address: tronAddressFromHex(account) });
              }
            }
          }
          return found;
        }),
      );
      for (const events of perBlock) out.push(...events);
    }
    return out;
  }

  /** Every receipt of block `n`, with its logs (one call). */
  private async blockInfos(n: number): Promise<TronTransactionInfo[]> {
    const infos = await this.call("gettransactioninfobyblocknum", () =>
      this.tronWeb.fullNode.request<TronTransactionInfo[] | Record<string, never>>(
        "wallet/gettransactioninfobyblocknum",
        { num: n },
        "post",
      ),
    );
    return Array.isArray(infos) ? infos : [];
  }

  /** The token transfers of block `n` to watched addresses (all when `watched` is null). */
  private async blockTransfers(n: number, watched: Set<string> | null): Promise<TokenTransfer[]> {
    const infos = await this.blockInfos(n);
    const found: Omit<TokenTransfer, "blockHash">[] = [];
    let logIndex = 0;
    for (const info of infos) {
      const failed = info.result === "FAILED" || (info.receipt?.result ?? "SUCCESS") !== "SUCCESS";
      for (const log of info.log ?? []) {
        const index = logIndex++;
        if (failed || log.address.toLowerCase().slice(-40) !== this.tokenLogAddress) continue;
        const [topic, fromTopic, toTopic] = log.topics ?? [];
        if (
          topic?.toLowerCase() !== TRANSFER_TOPIC ||
          !fromTopic ||
          !toTopic ||
          (log.topics?.length ?? 0) !== 3
        ) {
          continue;
        }
        const toAddress = tronAddressFromHex(toTopic.slice(-40));
        if (watched && !watched.has(toAddress)) continue;
        found.push({
          txHash: info.id,
          logIndex: index,
          blockNumber: n,
          from: tronAddressFromHex(fromTopic.slice(-40)),
          to: toAddress,
          amount: BigInt(`0x${log.data || "0"}`),
        });
      }
    }
    if (found.length === 0) return [];
    // The block hash comes from a second call; check that it is the block the receipts came from.
    const block = await this.block(n);
    const txIds = new Set((block?.transactions ?? []).map((t) => t.txID));
    if (!block?.blockID || found.some((t) => !txIds.has(t.txHash))) {
      throw new ChainUnavailableError(this.network, `block ${n} changed while it was read`);
    }
    return found.map((t) => ({ ...t, blockHash: block.blockID! }));
  }

  private async block(n: number): Promise<TronBlock | null> {
    if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`Invalid block number ${n}.`);
    const block = await this.call("getblockbynum", () =>
      this.tronWeb.fullNode.request<TronBlock>("wallet/getblockbynum", { num: n }, "post"),
    );
    return block?.blockID ? block : null;
  }

  private async call<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (cause) {
      throw new ChainUnavailableError(this.network, `${what} failed`, { cause });
    }
  }
}
