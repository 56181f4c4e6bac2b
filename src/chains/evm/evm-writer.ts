import {
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  decodeEventLog,
  encodeFunctionData,
  type Hex,
  http,
  type PublicClient,
  parseAbi,
} from "viem";
import type { CurrencyType } from "../../domain/currency.js";
import { ChainUnavailableError } from "../errors.js";
import type { EvmAuthorizationRequest } from "../signing.js";
import {
  type BatchCall,
  type BroadcastResult,
  type ExpectedTransfer,
  InsufficientFundsError,
  type PreparedTransfer,
  type PrepareOptions,
  type SignedChainWriter,
  type TransferCheck,
  type TransferSpec,
  TransferWouldFailError,
  withBuffer,
} from "../writer.js";
import { type EvmAddress, normalizeEvmAddress } from "./address.js";
import { ERC20_READ_ABI } from "./erc20-abi.js";
import {
  batchGas,
  CREATE2_DEPLOYER,
  DEPLOY_GAS_CAP,
  delegationCode,
  sweeperAddress,
  sweeperDeployData,
  sweepManyData,
} from "./sweeper.js";

/** The part of the ERC20 ABI the write side calls. */
const ERC20_WRITE_ABI = parseAbi(["function transfer(address to, uint256 value) returns (bool)"]);

export interface EvmWriterOptions {
  /** The currency type sent (default USDT-ERC20). */
  network?: CurrencyType;
  rpcUrl: string;
  tokenAddress: string;
  /** On-chain base units per API base unit (`chainScale`); default 1. Token amounts are API units. */
  scale?: bigint;
  timeoutMs?: number;
  /** Buffer on the network's fees (docs/decisions/sending.md#chains-part-2-sending-money-issue-6: 10 %). */
  feeBufferPercent?: number;
  /** Margin on the gas estimate. Default 25 %. */
  gasMarginPercent?: number;
  /**
   * The chain id the endpoint must answer (production: the network's own, from the registry); a
   * node of another chain is refused before anything is signed. Unset: any (sandbox testnets).
   */
  expectedChainId?: number | null;
}

/** Gas of a plain ETH transfer to an externally owned account (deposit addresses are EOAs). */
const NATIVE_TRANSFER_GAS = 21_000n;
/** A replacement must raise both fees by at least 10 % (geth); 12.5 % leaves room for rounding. */
const REPLACEMENT_BUMP_PERCENT = 13;

/**
 * The write side of one token on an EVM network over JSON-RPC (viem): EIP-1559 transactions whose fees come from
 * the network (latest base fee + `eth_maxPriorityFeePerGas`) with a 10 % buffer on the max fee, a gas estimate
 * with a margin, the nonce given by the caller (kept per address in the database).
 */
export class EvmChainWriter implements SignedChainWriter {
  readonly kind = "signed" as const;
  readonly network: CurrencyType;
  private readonly scale: bigint;
  private readonly client: PublicClient;
  private readonly token: EvmAddress;
  private readonly feeBuffer: number;
  private readonly gasMargin: number;
  private chainId: number | undefined;
  private readonly expectedChainId: number | null;

  constructor(options: EvmWriterOptions) {
    this.expectedChainId = options.expectedChainId ?? null;
    this.network = options.network ?? "USDT-ERC20";
    this.scale = options.scale ?? 1n;
    this.token = normalizeEvmAddress(options.tokenAddress);
    this.feeBuffer = options.feeBufferPercent ?? 10;
    this.gasMargin = options.gasMarginPercent ?? 25;
    this.client = createPublicClient({
      cacheTime: 0,
      transport: http(options.rpcUrl, { timeout: options.timeoutMs ?? 10_000, retryCount: 1 }),
    });
  }

  nativeBalance(address: string): Promise<bigint> {
    return this.call("eth_getBalance", () =>
      this.client.getBalance({ address: normalizeEvmAddress(address) }),
    );
  }

  async tokenBalance(address: string): Promise<bigint> {
    const raw = await this.call("balanceOf", () =>
      this.client.readContract({
        address: this.token,
        abi: ERC20_READ_ABI,
        functionName: "balanceOf",
        args: [normalizeEvmAddress(address)],
      }),
    );
    // API units, truncated: the dust stays where it is.
    return raw / this.scale;
  }

  minedNonce(address: string): Promise<number> {
    return this.call("eth_getTransactionCount", () =>
      this.client.getTransactionCount({ address: normalizeEvmAddress(address), blockTag: "latest" }),
    );
  }

  async tokenTransferCost(from: string, to: string, amount: bigint): Promise<bigint> {
    const gas = await this.estimateTokenGas(
      normalizeEvmAddress(from),
      normalizeEvmAddress(to),
      amount * this.scale,
    );
    const fees = await this.networkFees();
    // Room for the base fee to double before the transfer is signed (the usual EIP-1559 cap);
    // the sweep then spends at most what it has (`nativeBudget`), the rest serves its next sweep.
    return gas * withBuffer(2n * fees.baseFee + fees.maxPriorityFeePerGas, this.feeBuffer);
  }

  async prepare(spec: TransferSpec, options: PrepareOptions): Promise<PreparedTransfer> {
    if (options.nonce === null || !Number.isSafeInteger(options.nonce))
      throw new Error("an EVM transfer needs a nonce");
    const from = normalizeEvmAddress(spec.from);
    const to = normalizeEvmAddress(spec.to);
    let fees = await this.networkFees();
    if (options.replacing) {
      const prevMax = BigInt(options.replacing.maxFeePerGas ?? "0");
      const prevTip = BigInt(options.replacing.maxPriorityFeePerGas ?? "0");
      fees = {
        floor: fees.floor,
        baseFee: fees.baseFee,
        maxFeePerGas: bigMax(fees.maxFeePerGas, withBuffer(prevMax, REPLACEMENT_BUMP_PERCENT)),
        maxPriorityFeePerGas: bigMax(
          fees.maxPriorityFeePerGas,
          withBuffer(prevTip, REPLACEMENT_BUMP_PERCENT),
        ),
      };
    }
    let txTo: EvmAddress;
    let data: Hex;
    let value: bigint;
    let gas: bigint;
    let authorizations: EvmAuthorizationRequest[] = [];
    if (spec.call) {
      ({ txTo, data, gas, authorizations } = await this.prepareCall(spec.call, from, to, options));
      value = 0n;
    } else if (spec.asset === "token") {
      txTo = this.token;
      const onChain = spec.amount * this.scale;
      data = encodeFunctionData({ abi: ERC20_WRITE_ABI, functionName: "transfer", args: [to, onChain] });
      value = 0n;
      gas = options.replacing?.gas
        ? BigInt(options.replacing.gas)
        : await this.estimateTokenGas(from, to, onChain);
    } else {
      txTo = to;
      data = "0x";
      value = spec.amount;
      gas = options.replacing?.gas
        ? BigInt(options.replacing.gas)
        : await this.nativeTransferGas(from, to, value);
    }
    if (
      options.nativeBudget !== undefined &&
      !options.replacing &&
      gas * fees.maxFeePerGas + value > options.nativeBudget
    ) {
      const affordable = options.nativeBudget > value ? (options.nativeBudget - value) / gas : 0n;
      if (affordable < fees.floor)
        throw new InsufficientFundsError("native", gas * fees.maxFeePerGas + value, options.nativeBudget);
      fees = {
        ...fees,
        maxFeePerGas: affordable,
        maxPriorityFeePerGas: fees.maxPriorityFeePerGas < affordable ? fees.maxPriorityFeePerGas : affordable,
      };
    }
    const chainId = await this.getChainId();
    return {
      signRequest: {
        chain: "evm",
        network: this.network,
        environment: spec.environment,
        index: spec.fromIndex,
        transaction: {
          chainId,
          nonce: options.nonce,
          to: txTo,
          value: value.toString(),
          data,
          gas: gas.toString(),
          maxFeePerGas: fees.maxFeePerGas.toString(),
          maxPriorityFeePerGas: fees.maxPriorityFeePerGas.toString(),
          ...(authorizations.length > 0 ? { authorizations } : {}),
        },
      },
      nonce: options.nonce,
      fee: {
        gas: gas.toString(),
        maxFeePerGas: fees.maxFeePerGas.toString(),
        maxPriorityFeePerGas: fees.maxPriorityFeePerGas.toString(),
      },
      expiresAt: null,
      maxNativeCost: gas * fees.maxFeePerGas + value,
    };
  }

  /**
   * The gas tank's call of a batched sweep or of the sweeper's deployment (issue #39). A batch
   * authorises every address whose code is not the delegation to this hot wallet's sweeper (never
   * delegated, or delegated to the sweeper of a former hot wallet), at the address's current nonce.
   * Which addresses need it is read from one provider: a wrong answer costs an authorisation too
   * many (gas) or an address not swept this time (its item fails and is planned again), never funds.
   */
  private async prepareCall(
    call: BatchCall,
    from: EvmAddress,
    to: EvmAddress,
    options: PrepareOptions,
  ): Promise<{ txTo: EvmAddress; data: Hex; gas: bigint; authorizations: EvmAuthorizationRequest[] }> {
    if (call.kind === "sweeper_deploy") {
      const data = sweeperDeployData(call.hotWallet, this.token);
      if (to !== CREATE2_DEPLOYER)
        throw new TransferWouldFailError("a sweeper is deployed through CREATE2_DEPLOYER");
      if (options.replacing?.gas)
        return { txTo: to, data, gas: BigInt(options.replacing.gas), authorizations: [] };
      try {
        // The deployment's gas is known (429,624 measured): one provider's low estimate must not
        // make it run out of gas; never below 600,000, never above the signer's cap. (The
        // deployment that reverted in the lying-provider cluster test was a second one, queued by
        // another worker at the same time: `sweeperDeployToWaitFor` now queues one.)
        const estimate = await this.client.estimateGas({ account: from, to, data });
        const wanted = withBuffer(estimate < 600_000n ? 600_000n : estimate, this.gasMargin);
        // biome-ignore lint/complexity/useMathMinMax: bigints (Math.min takes numbers)
        const gas = wanted > DEPLOY_GAS_CAP ? DEPLOY_GAS_CAP : wanted;
        return { txTo: to, data, gas, authorizations: [] };
      } catch (err) {
        if (err instanceof BaseError && /revert/i.test(err.message))
          throw new TransferWouldFailError(`the sweeper's deployment would revert: ${err.shortMessage}`);
        throw new ChainUnavailableError(this.network, "eth_estimateGas failed", { cause: err });
      }
    }
    const sweeper = sweeperAddress(to, this.token);
    const designator = delegationCode(sweeper);
    const authorizations: EvmAuthorizationRequest[] = [];
    for (const item of call.items) {
      const address = normalizeEvmAddress(item.from);
      const code = await this.call("eth_getCode", () => this.client.getCode({ address }));
      if ((code ?? "0x").toLowerCase() === designator) continue;
      const nonce = await this.minedNonce(address);
      authorizations.push({ index: item.fromIndex, address: sweeper, nonce });
    }
    const data = sweepManyData(
      this.token,
      call.items.map((i) => i.from),
      call.items.map((i) => i.amount * this.scale),
    );
    const gas = options.replacing?.gas
      ? BigInt(options.replacing.gas)
      : batchGas(call.items.length, authorizations.length);
    return { txTo: sweeper, data, gas, authorizations };
  }

  /**
   * Gas of a plain native transfer: 21,000 to an account without code; an account with code (a
   * deposit address that delegated to the sweeper, issue #39: a gas top-up for a held deposit's
   * return) runs it, so its gas is estimated, with the margin.
   */
  private async nativeTransferGas(from: EvmAddress, to: EvmAddress, value: bigint): Promise<bigint> {
    const code = await this.call("eth_getCode", () => this.client.getCode({ address: to }));
    if (!code || code === "0x") return NATIVE_TRANSFER_GAS;
    const gas = await this.call("eth_estimateGas", () =>
      this.client.estimateGas({ account: from, to, value }),
    );
    return withBuffer(gas, this.gasMargin);
  }

  /** Whether the sweeper contract of `hotWallet` is deployed on this chain. */
  async sweeperDeployed(hotWallet: string): Promise<boolean> {
    const address = sweeperAddress(hotWallet, this.token);
    const code = await this.call("eth_getCode", () => this.client.getCode({ address }));
    return code !== undefined && code !== "0x";
  }

  async broadcast(raw: string): Promise<BroadcastResult> {
    try {
      await this.client.request({ method: "eth_sendRawTransaction", params: [raw as Hex] });
      return { accepted: true };
    } catch (err) {
      const message = errorMessage(err);
      // The same bytes again: the node already has them (pending or mined).
      if (/already known|known transaction|already imported|transaction already exists/i.test(message))
        return { accepted: true };
      if (isTransportError(err))
        throw new ChainUnavailableError(this.network, "eth_sendRawTransaction failed", { cause: err });
      return { accepted: false, error: message.slice(0, 300) };
    }
  }

  async check(hash: string, expected: ExpectedTransfer): Promise<TransferCheck> {
    const h = hash as Hex;
    const receipt = await this.call("eth_getTransactionReceipt", () =>
      this.client.getTransactionReceipt({ hash: h }).catch((err: unknown) => {
        if (err instanceof BaseError && err.name === "TransactionReceiptNotFoundError") return null;
        throw err;
      }),
    );
    if (!receipt) {
      const tx = await this.call("eth_getTransactionByHash", () =>
        this.client.getTransaction({ hash: h }).catch((err: unknown) => {
          if (err instanceof BaseError && err.name === "TransactionNotFoundError") return null;
          throw err;
        }),
      );
      return tx ? { state: "pending" } : { state: "missing" };
    }
    const blockNumber = Number(receipt.blockNumber);
    const head = Number(
      await this.call("eth_blockNumber", () => this.client.getBlockNumber({ cacheTime: 0 })),
    );
    const confirmations = Math.max(0, head - blockNumber + 1);
    const paid = { fee: receipt.gasUsed * receipt.effectiveGasPrice, used: receipt.gasUsed };
    const failed = (reason: string): TransferCheck => ({
      state: "failed",
      blockNumber,
      confirmations,
      reason,
      paid,
    });
    if (receipt.status !== "success") return failed("reverted");
    const from = normalizeEvmAddress(expected.from);
    const to = normalizeEvmAddress(expected.to);
    if (normalizeEvmAddress(receipt.from) !== from) return failed("sent by another address");
    if (expected.deploys) {
      const address = sweeperAddress(expected.deploys, this.token);
      const code = await this.call("eth_getCode", () => this.client.getCode({ address }));
      if (!code || code === "0x") return failed("no contract at the sweeper's address");
      return { state: "success", blockNumber, confirmations, paid };
    }
    if (expected.batch) {
      // Each item counts only with its own Transfer log: from its address, to the hot wallet, its amount.
      // A log counts for one item only: two items of one address need two Transfers.
      const transfers = this.tokenTransfers(receipt.logs);
      const used = new Set<number>();
      const delivered = expected.batch.map((item) => {
        const f = normalizeEvmAddress(item.from);
        const k = transfers.findIndex(
          (t, j) => !used.has(j) && t.from === f && t.to === to && t.value === item.amount * this.scale,
        );
        if (k >= 0) used.add(k);
        return k >= 0;
      });
      return { state: "success", blockNumber, confirmations, paid, delivered };
    }
    if (expected.asset === "native") {
      const tx = await this.call("eth_getTransactionByHash", () => this.client.getTransaction({ hash: h }));
      if (!tx.to || normalizeEvmAddress(tx.to) !== to) return failed("wrong recipient");
      if (tx.value !== expected.amount) return failed("wrong amount");
      return { state: "success", blockNumber, confirmations, paid };
    }
    const value = expected.amount * this.scale;
    if (this.tokenTransfers(receipt.logs).some((t) => t.from === from && t.to === to && t.value === value))
      return { state: "success", blockNumber, confirmations, paid };
    return failed("no Transfer log with the expected recipient and amount");
  }

  /** The token's Transfer logs of a receipt (other contracts' logs and other events skipped). */
  private tokenTransfers(
    logs: readonly { address: string; data: Hex; topics: readonly Hex[] }[],
  ): { from: EvmAddress; to: EvmAddress; value: bigint }[] {
    const out: { from: EvmAddress; to: EvmAddress; value: bigint }[] = [];
    for (const log of logs) {
      if (normalizeEvmAddress(log.address) !== this.token) continue;
      try {
        const ev = decodeEventLog({
          abi: ERC20_READ_ABI,
          data: log.data,
          topics: log.topics as [Hex, ...Hex[]],
          strict: true,
        });
        if (ev.eventName !== "Transfer") continue;
        out.push({
          from: normalizeEvmAddress(ev.args.from),
          to: normalizeEvmAddress(ev.args.to),
          value: ev.args.value,
        });
      } catch {}
    }
    return out;
  }

  /**
   * Network fees with the buffer (docs/decisions/sending.md#chains-part-2-sending-money-issue-6): tip = eth_maxPriorityFeePerGas; max = (base fee + tip) × 1.1.
   * `floor` (base fee + unbuffered tip) is the least max fee that is still included now.
   */
  private async networkFees(): Promise<{
    maxFeePerGas: bigint;
    maxPriorityFeePerGas: bigint;
    floor: bigint;
    baseFee: bigint;
  }> {
    const [block, tip] = await Promise.all([
      this.call("eth_getBlockByNumber", () => this.client.getBlock({ blockTag: "latest" })),
      this.call("eth_maxPriorityFeePerGas", () =>
        this.client.request({ method: "eth_maxPriorityFeePerGas" }).then((v) => BigInt(v)),
      ),
    ]);
    const baseFee = block.baseFeePerGas ?? 0n;
    // The tip itself is not buffered: nodes suggest it from recent blocks, so paying 10 % above the
    // suggestion would raise the next suggestion by 10 %, and so on, on a quiet chain.
    const maxPriorityFeePerGas = tip;
    return {
      maxPriorityFeePerGas,
      maxFeePerGas: withBuffer(baseFee + maxPriorityFeePerGas, this.feeBuffer),
      floor: baseFee + tip,
      baseFee,
    };
  }

  private async estimateTokenGas(from: EvmAddress, to: EvmAddress, amount: bigint): Promise<bigint> {
    try {
      const gas = await this.client.estimateContractGas({
        address: this.token,
        abi: ERC20_WRITE_ABI,
        functionName: "transfer",
        args: [to, amount],
        account: from,
      });
      return withBuffer(gas, this.gasMargin);
    } catch (err) {
      if (
        err instanceof BaseError &&
        (err.walk((e) => e instanceof ContractFunctionRevertedError) || /revert/i.test(err.message))
      )
        throw new TransferWouldFailError(`the transfer would revert: ${err.shortMessage}`);
      throw new ChainUnavailableError(this.network, "eth_estimateGas failed", { cause: err });
    }
  }

  private async getChainId(): Promise<number> {
    if (this.chainId === undefined) {
      const answered = await this.call("eth_chainId", () => this.client.getChainId());
      // One misconfigured endpoint must not decide which chain our keys sign for (a BASE_RPC_URL
      // pointing at a Polygon node): nothing is built, the transfer waits and /readyz says why.
      if (this.expectedChainId !== null && answered !== this.expectedChainId)
        throw new ChainUnavailableError(
          this.network,
          `the endpoint answers chain id ${answered}, not ${this.expectedChainId}`,
        );
      this.chainId = answered;
    }
    return this.chainId;
  }

  private async call<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (cause) {
      throw new ChainUnavailableError(this.network, `${what} failed`, { cause });
    }
  }
}

function bigMax(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}

function errorMessage(err: unknown): string {
  if (err instanceof BaseError) return `${err.shortMessage} ${err.details ?? ""}`;
  return err instanceof Error ? err.message : String(err);
}

function isTransportError(err: unknown): boolean {
  return (
    err instanceof BaseError &&
    Boolean(err.walk((e) => (e as Error).name === "HttpRequestError" || (e as Error).name === "TimeoutError"))
  );
}
