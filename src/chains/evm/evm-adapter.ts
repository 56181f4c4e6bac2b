import { createPublicClient, type Hex, hexToNumber, http, numberToHex, type PublicClient } from "viem";
import { type CurrencyType, currencyOf, type FreezeKind, fromChainUnits } from "../../domain/currency.js";
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
import { type EvmAddress, isEvmAddress, normalizeEvmAddress } from "./address.js";
import { ERC20_READ_ABI, FREEZE_ABI, FREEZE_VIEW, TRANSFER_EVENT } from "./erc20-abi.js";

export interface EvmAdapterOptions {
  /** The currency type read (default USDT-ERC20). */
  network?: CurrencyType;
  /** JSON-RPC endpoint. */
  rpcUrl: string;
  /** The token contract. */
  tokenAddress: string;
  /**
   * On-chain base units per API base unit (`chainScale`: 10^12 for an 18-decimal token). Amounts are
   * returned in API units, truncated; a transfer's remainder is its `dust`. Default 1.
   */
  scale?: bigint;
  /** Per-request timeout; the spec asks for 10 to 15 s on external calls. Default 10 000. */
  timeoutMs?: number;
  /** Largest block range of one `eth_getLogs` (providers cap it; 1 000 is accepted by most). */
  maxBlocksPerQuery?: number;
  /**
   * Up to this many watched addresses are sent as a `to` topic filter (an OR of topics); above it
   * all Transfer logs of the range are fetched and filtered in memory. Default 50.
   */
  maxTopicAddresses?: number;
  /** How the token's issuer freezes addresses; default the registry's for `network`. */
  freeze?: FreezeKind;
}

/** The read side of one token on an EVM network over JSON-RPC, with viem. */
export class EvmChainAdapter implements ChainAdapter {
  readonly network: CurrencyType;
  private readonly scale: bigint;
  private readonly client: PublicClient;
  private readonly token: EvmAddress;
  private readonly maxBlocksPerQuery: number;
  private readonly maxTopicAddresses: number;
  private readonly freeze: FreezeKind;

  constructor(options: EvmAdapterOptions) {
    this.network = options.network ?? "USDT-ERC20";
    this.freeze = options.freeze ?? currencyOf(this.network).freeze;
    this.scale = options.scale ?? 1n;
    this.token = normalizeEvmAddress(options.tokenAddress);
    this.maxBlocksPerQuery = options.maxBlocksPerQuery ?? 1000;
    this.maxTopicAddresses = options.maxTopicAddresses ?? 50;
    this.client = createPublicClient({
      // cacheTime 0: the watcher wants the head now, not viem's 4-second cached block number.
      cacheTime: 0,
      transport: http(options.rpcUrl, { timeout: options.timeoutMs ?? 10_000, retryCount: 1 }),
    });
  }

  validateAddress(s: string): boolean {
    return isEvmAddress(s);
  }

  normalizeAddress(s: string): string {
    return normalizeEvmAddress(s);
  }

  async headBlock(): Promise<number> {
    const n = await this.call("eth_blockNumber", () => this.client.getBlockNumber({ cacheTime: 0 }));
    return Number(n);
  }

  async safeBlock(confirmations: number): Promise<number> {
    return safeBlockFromHead(await this.headBlock(), confirmations);
  }

  async blockHash(n: number): Promise<string | null> {
    return (await this.rawBlock(n))?.hash ?? null;
  }

  async blockHeader(n: number): Promise<BlockHeader | null> {
    const block = await this.rawBlock(n);
    if (!block?.hash) return null;
    const seconds = typeof block.timestamp === "string" ? Number.parseInt(block.timestamp, 16) : Number.NaN;
    return { number: n, hash: block.hash, timestamp: usableBlockTime(this.network, n, seconds * 1000) };
  }

  private rawBlock(n: number) {
    return this.call("eth_getBlockByNumber", () =>
      this.client
        .request({ method: "eth_getBlockByNumber", params: [`0x${n.toString(16)}`, false] })
        .then((b) => b ?? null),
    );
  }

  async tokenBalance(address: string): Promise<bigint> {
    const owner = normalizeEvmAddress(address);
    const raw = await this.call("balanceOf", () =>
      this.client.readContract({
        address: this.token,
        abi: ERC20_READ_ABI,
        functionName: "balanceOf",
        args: [owner],
      }),
    );
    return fromChainUnits(raw, this.scale).units;
  }

  async isFrozen(address: string): Promise<boolean> {
    const owner = normalizeEvmAddress(address);
    if (this.freeze === "none") return false;
    // The kind's one view, read at the head. A revert (the contract has no such view: a wrong
    // registry entry or contract setting) is a fault to report, never "not frozen".
    const functionName = FREEZE_VIEW[this.freeze];
    return this.call(functionName, () =>
      this.client.readContract({ address: this.token, abi: FREEZE_ABI, functionName, args: [owner] }),
    );
  }

  async tokenTransfers(query: TokenTransferQuery): Promise<TokenTransfer[]> {
    const watched = query.addresses
      ? new Set<EvmAddress>([...query.addresses].map((a) => normalizeEvmAddress(a)))
      : null;
    if (watched && watched.size === 0) return [];
    const topicTo = watched && watched.size <= this.maxTopicAddresses ? [...watched] : undefined;
    const out: TokenTransfer[] = [];
    for (const [from, to] of blockChunks(query.fromBlock, query.toBlock, this.maxBlocksPerQuery)) {
      const logs = await this.call("eth_getLogs", () =>
        this.client.getLogs({
          address: this.token,
          event: TRANSFER_EVENT,
          args: topicTo ? { to: topicTo } : undefined,
          fromBlock: BigInt(from),
          toBlock: BigInt(to),
          strict: true,
        }),
      );
      for (const log of logs) {
        if (log.removed || log.blockNumber === null || log.blockHash === null) continue;
        // The filter asked for the token's logs only; a provider that ignores it (misconfigured,
        // buggy or hostile) must not turn a look-alike contract's Transfer into a deposit.
        if (normalizeEvmAddress(log.address) !== this.token) continue;
        const transfer: TokenTransfer = {
          txHash: log.transactionHash,
          logIndex: log.logIndex,
          blockNumber: Number(log.blockNumber),
          blockHash: log.blockHash,
          from: normalizeEvmAddress(log.args.from),
          to: normalizeEvmAddress(log.args.to),
          ...amountOf(log.args.value, this.scale),
        };
        if (!watched || watched.has(transfer.to as EvmAddress)) out.push(transfer);
      }
    }
    return out.sort(compareTransfers);
  }

  async freezeEvents(range: { fromBlock: number; toBlock: number }): Promise<NamedFreezeEvent[]> {
    const topics = freezeTopics(this.freeze);
    if (topics.size === 0) return [];
    const out: NamedFreezeEvent[] = [];
    for (const [from, to] of blockChunks(range.fromBlock, range.toBlock, this.maxBlocksPerQuery)) {
      // Raw logs: Tether's original events do not index the address, the others' do; one ABI
      // could not decode both, `decodeFreezeLog` reads either.
      const logs = await this.call("eth_getLogs", () =>
        this.client.request({
          method: "eth_getLogs",
          params: [
            {
              address: this.token,
              topics: [[...topics.keys()] as Hex[]],
              fromBlock: numberToHex(from),
              toBlock: numberToHex(to),
            },
          ],
        }),
      );
      for (const log of logs) {
        if (log.removed || log.blockNumber === null) continue;
        // As for transfers: a provider ignoring the filter must not speak for another contract.
        if (!isEvmAddress(log.address) || normalizeEvmAddress(log.address) !== this.token) continue;
        const event = decodeFreezeLog(topics, {
          topics: log.topics,
          data: log.data,
          blockNumber: hexToNumber(log.blockNumber),
        });
        if (event) {
          const { account, ...rest } = event;
          out.push({ ...rest, address: normalizeEvmAddress(`0x${account}`) });
        }
      }
    }
    return out;
  }

  private async call<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (cause) {
      throw new ChainUnavailableError(this.network, `${what} failed`, { cause });
    }
  }
}

/** A transfer's amount in API units, and its dust when the token is finer than the API. */
function amountOf(raw: bigint, scale: bigint): { amount: bigint; dust?: bigint } {
  const { units, dust } = fromChainUnits(raw, scale);
  return dust > 0n ? { amount: units, dust } : { amount: units };
}
