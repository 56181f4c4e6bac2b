import { providers, TronWeb } from "tronweb";
import { ChainUnavailableError } from "../errors.js";
import {
  type BroadcastResult,
  type ExpectedTransfer,
  isResourceAsset,
  type PreparedTransfer,
  type PrepareOptions,
  type ResourceAsset,
  type ResourceReads,
  type SignedChainWriter,
  type TransferCheck,
  type TransferSpec,
  TransferWouldFailError,
  withBuffer,
} from "../writer.js";
import { normalizeTronAddress, tronAddressFromHex, tronAddressToHex } from "./address.js";
import { TronChainAdapter } from "./tron-adapter.js";
import type { TronTransactionInfo } from "./tron-api-types.js";

const TRANSFER_TOPIC = "ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";

export interface TronWriterOptions {
  apiUrl: string;
  tokenAddress: string;
  apiKey?: string;
  timeoutMs?: number;
  /** `fee_limit` of token transfers, in sun (the most TRX the transfer may burn). Default 100 TRX. */
  feeLimitSun?: number;
  /**
   * Sun burnt per unit of energy the account does not have, when the node does not report it
   * (`getEnergyFee` of `wallet/getchainparameters`, read every `chainParametersTtlMs`). Default 210.
   */
  energyPriceSun?: number;
  /** How long the chain's fee parameters are kept before they are read again (default 10 min). */
  chainParametersTtlMs?: number;
  /** Energy of a USDT transfer when the node cannot estimate it (to a new holder ≈ 65 000). */
  defaultTransferEnergy?: number;
}

/** Bandwidth of a TRC20 transfer (bytes), of a TRX transfer, and of a Stake 2.0 transaction. */
const TRANSFER_BYTES = 350;
const TRX_TRANSFER_BYTES = 300;
const STAKE_BYTES = 300;
const SUN_PER_TRX = 1_000_000n;

/** The Stake 2.0 contract of each resource action, and its TRON resource name. */
const RESOURCE_CONTRACT = {
  stake: "FreezeBalanceV2Contract",
  delegate: "DelegateResourceContract",
  reclaim: "UnDelegateResourceContract",
} as const;
const TRON_RESOURCE: Record<ResourceAsset, "ENERGY" | "BANDWIDTH"> = {
  energy: "ENERGY",
  bandwidth: "BANDWIDTH",
};
/** Sun burnt per byte without free bandwidth, when the node does not report `getTransactionFee`. */
const BANDWIDTH_PRICE_SUN = 1_000;
/**
 * Creating an account by a TRX transfer, when the node does not report the parameters: the system
 * contract's fee (`getCreateNewAccountFeeInSystemContract`, 1 TRX) and the bandwidth fee paid
 * instead of staked bandwidth (`getCreateAccountFee`, 0.1 TRX).
 */
const CREATE_ACCOUNT_FEE_SUN = 1_000_000n;
const CREATE_ACCOUNT_BANDWIDTH_FEE_SUN = 100_000n;

/** The fee parameters of the chain, in sun (network parameters TRON's governance changes by vote). */
interface FeePrices {
  energy: bigint;
  bandwidth: bigint;
  createAccount: bigint;
  createAccountBandwidth: bigint;
}

interface Built {
  txID: string;
  raw_data: Record<string, unknown> & { expiration?: number };
  raw_data_hex: string;
}

/**
 * USDT-TRC20 write side over the TRON HTTP API (tronweb): the node builds the transaction
 * (`triggersmartcontract` / `createtransaction`), the signer signs its txID, `broadcasttransaction`
 * sends it. Before a transfer is signed, its energy and bandwidth are checked against the
 * account's resources: what the account lacks is burnt in TRX and must fit the fee limit and the
 * TRX balance. A TRON transaction carries an expiration (about a minute): once past it and unmined
 * it can never be mined, which is what lets the sender sign a new one safely.
 */
export class TronChainWriter implements SignedChainWriter {
  readonly kind = "signed" as const;
  readonly network = "USDT-TRC20" as const;
  readonly resources: ResourceReads;
  private readonly tronWeb: TronWeb;
  private readonly token: string;
  private readonly tokenLogAddress: string;
  private readonly reader: TronChainAdapter;
  private readonly feeLimit: number;
  private readonly fallbackPrices: FeePrices;
  private readonly pricesTtlMs: number;
  private prices: { value: Promise<FeePrices>; at: number } | undefined;
  private readonly defaultEnergy: bigint;

  constructor(options: TronWriterOptions) {
    this.token = normalizeTronAddress(options.tokenAddress);
    this.tokenLogAddress = tronAddressToHex(this.token).slice(2);
    this.feeLimit = options.feeLimitSun ?? 100_000_000;
    this.fallbackPrices = {
      energy: BigInt(options.energyPriceSun ?? 210),
      bandwidth: BigInt(BANDWIDTH_PRICE_SUN),
      createAccount: CREATE_ACCOUNT_FEE_SUN,
      createAccountBandwidth: CREATE_ACCOUNT_BANDWIDTH_FEE_SUN,
    };
    this.pricesTtlMs = options.chainParametersTtlMs ?? 10 * 60_000;
    this.defaultEnergy = BigInt(options.defaultTransferEnergy ?? 65_000);
    const headers = options.apiKey ? { "TRON-PRO-API-KEY": options.apiKey } : {};
    const node = () =>
      new providers.HttpProvider(options.apiUrl, options.timeoutMs ?? 10_000, "", "", headers);
    this.tronWeb = new TronWeb({ fullNode: node(), solidityNode: node(), eventServer: node() });
    this.reader = new TronChainAdapter(options);
    this.resources = {
      transferEnergy: async (from, to, amount) => {
        const [needed, r] = await Promise.all([
          this.estimateEnergy(from, to, amount),
          this.resourcesOf(from),
        ]);
        return { needed, available: r.energy };
      },
      bandwidthBurn: async (from) => {
        const [res, prices] = await Promise.all([this.resourcesOf(from), this.feePrices()]);
        return res.bandwidth >= TRANSFER_BYTES
          ? 0n
          : withBuffer(BigInt(TRANSFER_BYTES) * prices.bandwidth, 10);
      },
      accountExists: (address) => this.accountExists(address),
      delegatable: async (owner, asset) => {
        const res = await this.post<{ max_size?: number }>("wallet/getcandelegatedmaxsize", {
          owner_address: tronAddressToHex(owner),
          type: asset === "energy" ? 1 : 0,
        });
        return BigInt(res.max_size ?? 0);
      },
      stakeFor: async (owner, asset, amount) => {
        const r = await this.post<Record<string, number | undefined>>("wallet/getaccountresource", {
          address: tronAddressToHex(owner),
        });
        const limit = BigInt((asset === "energy" ? r.TotalEnergyLimit : r.TotalNetLimit) ?? 0);
        const weight = BigInt((asset === "energy" ? r.TotalEnergyWeight : r.TotalNetWeight) ?? 0);
        if (limit <= 0n || weight <= 0n)
          throw new ChainUnavailableError(this.network, "getaccountresource reported no network weights");
        // A receiver's limit is ⌊whole TRX × limit / weight⌋: the least whole TRX giving `amount`.
        const trx = (amount * weight + limit - 1n) / limit;
        return (trx > 0n ? trx : 1n) * SUN_PER_TRX;
      },
      staked: async (owner) => {
        const a = await this.post<{ frozenV2?: { type?: string; amount?: number }[] }>("wallet/getaccount", {
          address: tronAddressToHex(owner),
        });
        const out: Record<ResourceAsset, bigint> = { energy: 0n, bandwidth: 0n };
        for (const f of a.frozenV2 ?? []) {
          const asset =
            f.type === "ENERGY"
              ? "energy"
              : f.type === undefined || f.type === "BANDWIDTH"
                ? "bandwidth"
                : null;
          if (asset) out[asset] += BigInt(f.amount ?? 0);
        }
        return out;
      },
    };
  }

  async nativeBalance(address: string): Promise<bigint> {
    const account = await this.post<{ balance?: number }>("wallet/getaccount", {
      address: tronAddressToHex(address),
    });
    return BigInt(account.balance ?? 0);
  }

  tokenBalance(address: string): Promise<bigint> {
    return this.reader.tokenBalance(address);
  }

  async minedNonce(): Promise<null> {
    return null;
  }

  async tokenTransferCost(from: string, to: string, amount: bigint): Promise<bigint> {
    const [energy, resources, prices] = await Promise.all([
      this.estimateEnergy(from, to, amount),
      this.resourcesOf(from),
      this.feePrices(),
    ]);
    const energyBurn = bigMax(0n, energy - resources.energy) * prices.energy;
    const bandwidthBurn =
      resources.bandwidth >= TRANSFER_BYTES ? 0n : BigInt(TRANSFER_BYTES) * prices.bandwidth;
    return withBuffer(energyBurn + bandwidthBurn, 10);
  }

  async prepare(spec: TransferSpec, _options: PrepareOptions): Promise<PreparedTransfer> {
    const from = normalizeTronAddress(spec.from);
    const to = normalizeTronAddress(spec.to);
    let built: Built;
    let maxNativeCost: bigint;
    if (isResourceAsset(spec.asset)) {
      ({ built, maxNativeCost } = await this.buildResource(spec.asset, spec.action, from, to, spec.amount));
    } else if (spec.asset === "token") {
      maxNativeCost = await this.tokenTransferCost(from, to, spec.amount);
      if (maxNativeCost > BigInt(this.feeLimit))
        throw new TransferWouldFailError(
          `the transfer would burn ${maxNativeCost} sun, above the fee limit ${this.feeLimit}`,
        );
      const res = await this.call("triggersmartcontract", () =>
        this.tronWeb.transactionBuilder.triggerSmartContract(
          this.token,
          "transfer(address,uint256)",
          { feeLimit: this.feeLimit },
          [
            { type: "address", value: to },
            { type: "uint256", value: spec.amount.toString() },
          ],
          from,
        ),
      );
      if (!res.result?.result || !res.transaction)
        throw new ChainUnavailableError(this.network, "triggersmartcontract built no transaction");
      built = res.transaction as unknown as Built;
    } else {
      const [resources, prices, exists] = await Promise.all([
        this.resourcesOf(from),
        this.feePrices(),
        this.accountExists(to),
      ]);
      // A TRX transfer to an address without an account creates it (a fresh deposit address's
      // first top-up): the system contract's creation fee, and for its bandwidth the creation
      // bandwidth fee unless staked bandwidth covers it (the free allowance does not).
      maxNativeCost = exists
        ? spec.amount +
          (resources.bandwidth >= TRX_TRANSFER_BYTES ? 0n : BigInt(TRX_TRANSFER_BYTES) * prices.bandwidth)
        : spec.amount +
          prices.createAccount +
          (resources.stakedBandwidth >= TRX_TRANSFER_BYTES ? 0n : prices.createAccountBandwidth);
      const tx = await this.call("createtransaction", () =>
        this.tronWeb.transactionBuilder.sendTrx(to, Number(spec.amount), from),
      );
      built = tx as unknown as Built;
    }
    return {
      signRequest: {
        chain: "tron",
        network: "USDT-TRC20",
        environment: spec.environment,
        index: spec.fromIndex,
        transaction: { txID: built.txID, raw_data: built.raw_data, raw_data_hex: built.raw_data_hex },
      },
      nonce: null,
      fee: { feeLimit: String(this.feeLimit) },
      expiresAt: typeof built.raw_data.expiration === "number" ? built.raw_data.expiration : null,
      maxNativeCost,
    };
  }

  async broadcast(raw: string): Promise<BroadcastResult> {
    const res = await this.post<{ result?: boolean; code?: string; message?: string }>(
      "wallet/broadcasttransaction",
      JSON.parse(raw) as Record<string, unknown>,
    );
    if (res.result === true || res.code === "DUP_TRANSACTION_ERROR") return { accepted: true };
    return { accepted: false, error: `${res.code ?? "error"}: ${decodeMessage(res.message)}` };
  }

  async check(hash: string, expected: ExpectedTransfer): Promise<TransferCheck> {
    const info = await this.post<TronTransactionInfo>("wallet/gettransactioninfobyid", {
      value: hash,
    });
    if (!info || typeof info.blockNumber !== "number") {
      const tx = await this.post<{ txID?: string }>("wallet/gettransactionbyid", { value: hash });
      return tx?.txID ? { state: "pending" } : { state: "missing" };
    }
    const blockNumber = info.blockNumber;
    const head = await this.reader.headBlock();
    const confirmations = Math.max(0, head - blockNumber + 1);
    const paid = {
      fee: BigInt(typeof info.fee === "number" ? info.fee : 0),
      used: BigInt(info.receipt?.energy_usage_total ?? 0),
    };
    const failed = (reason: string): TransferCheck => ({
      state: "failed",
      blockNumber,
      confirmations,
      reason,
      paid,
    });
    if (info.result === "FAILED") return failed(`failed on-chain (${info.receipt?.result ?? "FAILED"})`);
    const from = normalizeTronAddress(expected.from);
    const to = normalizeTronAddress(expected.to);
    if (isResourceAsset(expected.asset)) {
      const tx = await this.post<{
        ret?: { contractRet?: string }[];
        raw_data?: { contract?: { type?: string; parameter?: { value?: Record<string, unknown> } }[] };
      }>("wallet/gettransactionbyid", { value: hash });
      const c = tx.raw_data?.contract?.[0];
      const v = c?.parameter?.value ?? {};
      if ((tx.ret?.[0]?.contractRet ?? "SUCCESS") !== "SUCCESS") return failed("failed on-chain");
      const action = expected.action;
      if (!action || c?.type !== RESOURCE_CONTRACT[action])
        return failed("not the expected Stake 2.0 contract");
      if (typeof v.owner_address !== "string" || tronAddressFromHex(v.owner_address) !== from)
        return failed("wrong owner");
      const resource = v.resource === "ENERGY" ? "ENERGY" : "BANDWIDTH";
      if (resource !== TRON_RESOURCE[expected.asset]) return failed("wrong resource");
      const amount = action === "stake" ? v.frozen_balance : v.balance;
      if (BigInt(String(amount ?? "0")) !== expected.amount) return failed("wrong amount");
      if (
        action !== "stake" &&
        (typeof v.receiver_address !== "string" || tronAddressFromHex(v.receiver_address) !== to)
      )
        return failed("wrong receiver");
      return { state: "success", blockNumber, confirmations, paid };
    }
    if (expected.asset === "native") {
      const tx = await this.post<{
        ret?: { contractRet?: string }[];
        raw_data?: { contract?: { type?: string; parameter?: { value?: Record<string, unknown> } }[] };
      }>("wallet/gettransactionbyid", { value: hash });
      const c = tx.raw_data?.contract?.[0];
      const v = c?.parameter?.value ?? {};
      if ((tx.ret?.[0]?.contractRet ?? "SUCCESS") !== "SUCCESS") return failed("failed on-chain");
      if (
        c?.type !== "TransferContract" ||
        typeof v.to_address !== "string" ||
        tronAddressFromHex(v.to_address) !== to
      )
        return failed("wrong recipient");
      if (BigInt(String(v.amount ?? "0")) !== expected.amount) return failed("wrong amount");
      return { state: "success", blockNumber, confirmations, paid };
    }
    if ((info.receipt?.result ?? "") !== "SUCCESS")
      return failed(`failed on-chain (${info.receipt?.result ?? "no receipt"})`);
    for (const log of info.log ?? []) {
      if (log.address.toLowerCase().slice(-40) !== this.tokenLogAddress) continue;
      const [topic, fromTopic, toTopic] = log.topics ?? [];
      if (topic?.toLowerCase() !== TRANSFER_TOPIC || !fromTopic || !toTopic) continue;
      if (
        tronAddressFromHex(fromTopic.slice(-40)) === from &&
        tronAddressFromHex(toTopic.slice(-40)) === to &&
        BigInt(`0x${log.data || "0"}`) === expected.amount
      )
        return { state: "success", blockNumber, confirmations, paid };
    }
    return failed("no Transfer log with the expected recipient and amount");
  }

  private async estimateEnergy(from: string, to: string, amount: bigint): Promise<bigint> {
    const res = await this.call("triggerconstantcontract transfer", async () => {
      try {
        return await this.tronWeb.transactionBuilder.triggerConstantContract(
          this.token,
          "transfer(address,uint256)",
          {},
          [
            { type: "address", value: to },
            { type: "uint256", value: amount.toString() },
          ],
          from,
        );
      } catch (err) {
        // The node executed the call and it reverted: the transfer would fail on-chain.
        const text = err instanceof Error ? err.message : String(err);
        if (/revert|CONTRACT_EXE_ERROR/i.test(text))
          throw new TransferWouldFailError(`the transfer would revert: ${text.slice(0, 200)}`);
        throw err;
      }
    });
    const used = (res as { energy_used?: number }).energy_used;
    return typeof used === "number" && used > 0 ? BigInt(used) : this.defaultEnergy;
  }

  /**
   * The energy and bandwidth prices in sun (`getEnergyFee`, `getTransactionFee` of
   * `wallet/getchainparameters`), read at most once per `chainParametersTtlMs`. A parameter the
   * node does not report keeps its configured value; a failed read is not kept, so the next
   * transfer asks again.
   */
  private feePrices(): Promise<FeePrices> {
    const now = Date.now();
    if (this.prices && now - this.prices.at < this.pricesTtlMs) return this.prices.value;
    const value = this.post<{ chainParameter?: { key?: string; value?: number }[] }>(
      "wallet/getchainparameters",
      {},
    ).then((res) => {
      const param = (key: string) => res.chainParameter?.find((p) => p.key === key)?.value;
      const positive = (v: number | undefined, fallback: bigint) =>
        typeof v === "number" && Number.isSafeInteger(v) && v > 0 ? BigInt(v) : fallback;
      return {
        energy: positive(param("getEnergyFee"), this.fallbackPrices.energy),
        bandwidth: positive(param("getTransactionFee"), this.fallbackPrices.bandwidth),
        createAccount: positive(
          param("getCreateNewAccountFeeInSystemContract"),
          this.fallbackPrices.createAccount,
        ),
        createAccountBandwidth: positive(
          param("getCreateAccountFee"),
          this.fallbackPrices.createAccountBandwidth,
        ),
      };
    });
    this.prices = { value, at: now };
    value.catch(() => {
      if (this.prices?.value === value) this.prices = undefined;
    });
    return value;
  }

  /**
   * A Stake 2.0 transaction of the resource account (issue #38): stake its own TRX, delegate a
   * resource to `to` without a lock (it can be taken back at once), or take it back. Its bandwidth
   * is the only fee (staked, free, or burned); staking also spends the amount.
   */
  private async buildResource(
    asset: ResourceAsset,
    action: TransferSpec["action"],
    from: string,
    to: string,
    amount: bigint,
  ): Promise<{ built: Built; maxNativeCost: bigint }> {
    if (!action) throw new TransferWouldFailError(`a ${asset} transaction needs an action`);
    if (amount > BigInt(Number.MAX_SAFE_INTEGER)) throw new TransferWouldFailError("amount too large");
    const [resources, prices] = await Promise.all([this.resourcesOf(from), this.feePrices()]);
    const bandwidth = resources.bandwidth >= STAKE_BYTES ? 0n : BigInt(STAKE_BYTES) * prices.bandwidth;
    const resource = TRON_RESOURCE[asset];
    const b = this.tronWeb.transactionBuilder;
    const tx =
      action === "stake"
        ? await this.call("freezebalancev2", () => b.freezeBalanceV2(Number(amount), resource, from))
        : action === "delegate"
          ? await this.call("delegateresource", () =>
              b.delegateResource(Number(amount), to, resource, from, false),
            )
          : await this.call("undelegateresource", () =>
              b.undelegateResource(Number(amount), to, resource, from),
            );
    return {
      built: tx as unknown as Built,
      maxNativeCost: action === "stake" ? amount + bandwidth : bandwidth,
    };
  }

  private async resourcesOf(
    address: string,
  ): Promise<{ energy: bigint; bandwidth: bigint; stakedBandwidth: bigint }> {
    const r = await this.post<Record<string, number | undefined>>("wallet/getaccountresource", {
      address: tronAddressToHex(address),
    });
    const n = (k: string) => BigInt(r[k] ?? 0);
    const stakedBandwidth = bigMax(0n, n("NetLimit") - n("NetUsed"));
    return {
      energy: bigMax(0n, n("EnergyLimit") - n("EnergyUsed")),
      bandwidth: bigMax(0n, n("freeNetLimit") - n("freeNetUsed")) + stakedBandwidth,
      stakedBandwidth,
    };
  }

  /** Whether `address` has an account on chain (`wallet/getaccount` answers `{}` for one without). */
  private async accountExists(address: string): Promise<boolean> {
    const account = await this.post<{ address?: string }>("wallet/getaccount", {
      address: tronAddressToHex(address),
    });
    return typeof account.address === "string";
  }

  private post<T>(path: string, body: Record<string, unknown>): Promise<T> {
    return this.call(path, () => this.tronWeb.fullNode.request<T>(path, body, "post"));
  }

  private async call<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (cause) {
      if (cause instanceof TransferWouldFailError) throw cause;
      throw new ChainUnavailableError(this.network, `${what} failed`, { cause });
    }
  }
}

function bigMax(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}

function decodeMessage(m: string | undefined): string {
  if (!m) return "";
  return /^[0-9a-fA-F]+$/.test(m) ? Buffer.from(m, "hex").toString("utf8") : m;
}
