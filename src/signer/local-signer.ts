import { join } from "node:path";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, hexToBytes } from "@noble/hashes/utils.js";
import { utils as tronUtils } from "tronweb";
import { type Hex, keccak256 } from "viem";
import { privateKeyToAccount, signAuthorization } from "viem/accounts";
import {
  addressFromPublicKey,
  batchGas,
  CREATE2_DEPLOYER,
  DEPLOY_GAS_CAP,
  decodeSweepMany,
  isEvmAddress,
  type ResourceAction,
  tronAddressFromHex,
  tronAddressToHex,
} from "../chains/index.js";
import { coldWalletOf, configuredContract } from "../config/chains.js";
import type { Config } from "../config/config.js";
import { resolveMnemonic } from "../config/mnemonic.js";
import type { Db } from "../db/database.js";
import {
  type CurrencyType,
  chainScale,
  currencyOf,
  fromChainUnits,
  isCurrencyType,
} from "../domain/currency.js";
import { type Environment, isEnvironment } from "../domain/environment.js";
import { type Clock, systemClock } from "../lib/clock.js";
import type { Logger } from "../observability/logger.js";
import type { Registry } from "../observability/metrics.js";
import { assertAddressIndex, PrivateKeyDeriver } from "../wallet/index.js";
import { OUTFLOW_FILE, OutflowGuard, type OutflowLimits } from "./outflow.js";
import { type PolicyDecision, SigningPolicy, type TransferFacts } from "./policy.js";
import {
  type EvmSignRequest,
  type SignContext,
  type SignedTransaction,
  type Signer,
  SignerRejectedError,
  type SignRequest,
  type TronSignRequest,
} from "./protocol.js";

/** ERC20 / TRC20 `transfer(address,uint256)`. */
const TRANSFER_SELECTOR = "a9059cbb";
const DECIMAL = /^\d{1,78}$/;
const HEX = /^[0-9a-f]*$/;

/**
 * The signer itself: the only holder of private keys (`PrivateKeyDeriver`). It signs an EIP-1559
 * transaction or a TRON transaction for a requested (network, environment, index) and nothing
 * else. Policy, checked before any key is derived:
 * - EVM: either a native transfer (`data` empty) or a token `transfer(address,uint256)` with
 *   `value` 0, or the gas tank's calls of batched sweeps (issue #39): the sweeper's `sweepMany`, with
 *   EIP-7702 authorisations signed by the batch's deposit keys, and the sweeper's deployment through
 *   the CREATE2 deployer; every integer field present and decimal;
 * - TRON: `raw_data` must encode (tronweb's protobuf encoder) to exactly `raw_data_hex`, `txID`
 *   must be its sha256, it holds one contract, either `TransferContract` or a
 *   `TriggerSmartContract` calling `transfer(address,uint256)` without TRX value, and its owner
 *   must be the address of the requested key.
 * Then, before anything is signed, the transfer policy (`policy.ts`): which key may send what to
 * whom, for the intent the request names, checked against the evidence in the database; then, for
 * withdrawals and payouts, the outflow cap and the memory of what each intent was signed for
 * (`outflow.ts`), counted before the signature exists. Every refusal is logged (the shape only).
 */
export class LocalSigner implements Signer {
  /** Derived keys by path (BIP32 derivation costs milliseconds); bounded. */
  private readonly cache = new Map<string, Uint8Array>();
  private readonly policy: SigningPolicy;
  private readonly logger: Logger;
  private readonly outflow: OutflowGuard;

  private constructor(
    private readonly keys: PrivateKeyDeriver,
    options: LocalSignerOptions,
  ) {
    this.logger = options.logger;
    this.outflow =
      options.outflow ??
      OutflowGuard.inMemory({
        limits: { perHour: null, perDay: null },
        clock: options.clock ?? systemClock,
        logger: options.logger,
      });
    this.policy = new SigningPolicy({
      db: options.db,
      logger: options.logger,
      tokenContract: options.tokenContract,
      ...(options.coldWallet ? { coldWallet: options.coldWallet } : {}),
      address: (network, environment, index) => this.address(network, environment, index),
    });
  }

  private key(
    network: SignRequest["network"],
    environment: SignRequest["environment"],
    index: number,
  ): Uint8Array {
    const id = `${network}/${environment}/${index}`;
    let key = this.cache.get(id);
    if (!key) {
      key = this.keys.privateKey(network, environment, index);
      if (this.cache.size >= 10_000) this.cache.clear();
      this.cache.set(id, key);
    }
    return key;
  }

  private address(network: CurrencyType, environment: Environment, index: number): string {
    return addressFromPublicKey(network, secp256k1.getPublicKey(this.key(network, environment, index), true));
  }

  static fromMnemonic(mnemonic: string, options: LocalSignerOptions, passphrase = ""): LocalSigner {
    return new LocalSigner(PrivateKeyDeriver.fromMnemonic(mnemonic, passphrase), options);
  }

  async sign(request: SignRequest, context: SignContext = {}): Promise<SignedTransaction> {
    try {
      return await this.signChecked(request, context);
    } catch (err) {
      // Policy refusals are logged by the policy with the transfer's facts; these are the
      // malformed or non-transfer requests.
      if (err instanceof SignerRejectedError && !err.message.startsWith("policy:")) {
        const r = (request && typeof request === "object" ? request : {}) as Partial<SignRequest>;
        this.logger.warn(
          {
            alert: "signer_policy_refused",
            chain: String(r.chain).slice(0, 20),
            network: String(r.network).slice(0, 20),
            environment: String(r.environment).slice(0, 20),
            index: typeof r.index === "number" ? r.index : null,
            reason: err.message,
          },
          "signer refused a request",
        );
      }
      throw err;
    }
  }

  /** Withdrawals and payouts pass the outflow cap (and the memory of their intent) before they are signed. */
  private async count(
    request: SignRequest,
    decision: PolicyDecision,
    nonce: number | null,
    tx: string | null,
  ): Promise<void> {
    if (decision.kind !== "withdrawal" && decision.kind !== "payout") return;
    await this.outflow.admit({
      intentId: decision.intentId,
      network: request.network,
      environment: request.environment,
      to: decision.to,
      amount: decision.amount,
      nonce,
      tx,
    });
  }

  private async signChecked(request: SignRequest, context: SignContext): Promise<SignedTransaction> {
    if (!request || typeof request !== "object") throw new SignerRejectedError("request must be an object");
    if (!isEnvironment(request.environment)) throw new SignerRejectedError("unknown environment");
    try {
      assertAddressIndex(request.index);
    } catch {
      throw new SignerRejectedError("invalid index");
    }
    // The chain of the request must be its currency type's family in the registry.
    if (!isCurrencyType(request.network)) throw new SignerRejectedError("unsupported chain/network");
    const family = currencyOf(request.network).definition.family;
    if (request.chain !== family) throw new SignerRejectedError("unsupported chain/network");
    if (request.chain === "evm") return this.signEvm(request, context);
    return this.signTron(request as TronSignRequest, context);
  }

  private async signEvm(request: EvmSignRequest, context: SignContext): Promise<SignedTransaction> {
    const t = request.transaction;
    if (!t || typeof t !== "object") throw new SignerRejectedError("transaction missing");
    for (const f of ["value", "gas", "maxFeePerGas", "maxPriorityFeePerGas"] as const) {
      if (typeof t[f] !== "string" || !DECIMAL.test(t[f]))
        throw new SignerRejectedError(`${f} must be decimal`);
    }
    if (!Number.isSafeInteger(t.chainId) || t.chainId < 1) throw new SignerRejectedError("invalid chainId");
    // Production keys sign only for the network's own chain (the registry's chain id), whatever the
    // worker or its RPC says: one key is an address on every EVM chain. Sandbox testnets vary.
    const expected = currencyOf(request.network).definition.chainId;
    if (request.environment === "production" && t.chainId !== expected)
      throw new SignerRejectedError(`chainId ${t.chainId} is not ${request.network}'s (${expected})`);
    if (!Number.isSafeInteger(t.nonce) || t.nonce < 0) throw new SignerRejectedError("invalid nonce");
    if (typeof t.to !== "string" || !isEvmAddress(t.to)) throw new SignerRejectedError("invalid to");
    const data = typeof t.data === "string" ? t.data.toLowerCase() : "";
    if (!data.startsWith("0x") || !HEX.test(data.slice(2))) throw new SignerRejectedError("invalid data");
    const body = data.slice(2);
    const transfer = evmTransferFacts(request, data as Hex);
    if (transfer.asset === "token" && t.value !== "0")
      throw new SignerRejectedError("a token transfer carries no value");
    if (BigInt(t.maxPriorityFeePerGas) > BigInt(t.maxFeePerGas))
      throw new SignerRejectedError("priority fee above max fee");
    const authorizations = authorizationsOf(t.authorizations);
    if (authorizations.length > 0 && transfer.call?.kind !== "sweep_batch")
      throw new SignerRejectedError("only a batched sweep carries authorisations");
    if (transfer.call?.kind === "sweep_batch") {
      transfer.call.authorizations = authorizations;
      // The gas tank pays a batch's gas: never more than a batch of its size, all authorised, needs.
      if (BigInt(t.gas) > batchGas(transfer.call.accounts.length, transfer.call.accounts.length))
        throw new SignerRejectedError("gas above a batch's cap");
    }
    if (transfer.call?.kind === "sweeper_deploy" && BigInt(t.gas) > DEPLOY_GAS_CAP)
      throw new SignerRejectedError("gas above the deployment's cap");
    const key = this.key(request.network, request.environment, request.index);
    const account = privateKeyToAccount(`0x${bytesToHex(key)}`);
    const decision = await this.policy.check(
      { ...facts(request), from: account.address, ...transfer },
      context.intentId,
      context.db,
    );
    await this.count(request, decision, t.nonce, null);
    const fields = {
      chainId: t.chainId,
      nonce: t.nonce,
      to: t.to as Hex,
      value: BigInt(t.value),
      data: body.length === 0 ? undefined : (data as Hex),
      gas: BigInt(t.gas),
      maxFeePerGas: BigInt(t.maxFeePerGas),
      maxPriorityFeePerGas: BigInt(t.maxPriorityFeePerGas),
    };
    // EIP-7702 (issue #39): each deposit address's authorisation, signed with its own key, for this
    // chain only (never chain id 0, which any chain accepts) and the contract the policy allowed.
    const raw =
      authorizations.length > 0
        ? await account.signTransaction({
            ...fields,
            type: "eip7702",
            authorizationList: await Promise.all(
              authorizations.map((a) =>
                signAuthorization({
                  address: a.address as Hex,
                  chainId: t.chainId,
                  nonce: a.nonce,
                  privateKey: `0x${bytesToHex(this.key(request.network, request.environment, a.index))}`,
                }),
              ),
            ),
          })
        : await account.signTransaction({ ...fields, type: "eip1559" });
    return { raw, hash: keccak256(raw), from: account.address };
  }

  private async signTron(request: TronSignRequest, context: SignContext): Promise<SignedTransaction> {
    const t = request.transaction;
    if (!t || typeof t !== "object" || !t.raw_data || typeof t.raw_data !== "object")
      throw new SignerRejectedError("transaction missing");
    const rawHex = typeof t.raw_data_hex === "string" ? t.raw_data_hex.toLowerCase() : "";
    if (!rawHex || !HEX.test(rawHex)) throw new SignerRejectedError("invalid raw_data_hex");
    let encoded: string;
    try {
      encoded = tronUtils.transaction
        .txPbToRawDataHex(tronUtils.transaction.txJsonToPb({ raw_data: t.raw_data, visible: false } as never))
        .toLowerCase();
    } catch {
      throw new SignerRejectedError("raw_data is not a TRON transaction");
    }
    if (encoded !== rawHex) throw new SignerRejectedError("raw_data_hex does not encode raw_data");
    const txID = bytesToHex(sha256(hexToBytes(rawHex)));
    if (typeof t.txID !== "string" || t.txID.toLowerCase() !== txID)
      throw new SignerRejectedError("txID mismatch");
    const contracts = t.raw_data.contract as {
      type?: string;
      parameter?: { value?: Record<string, unknown> };
    }[];
    if (!Array.isArray(contracts) || contracts.length !== 1)
      throw new SignerRejectedError("one contract expected");
    const contract = contracts[0]!;
    const value = contract.parameter?.value ?? {};
    let transfer: Pick<TransferFacts, "asset" | "to" | "amount" | "token" | "action" | "lock">;
    if (contract.type === "TriggerSmartContract") {
      const callData = typeof value.data === "string" ? value.data.toLowerCase() : "";
      if (
        !(
          callData.length === 8 + 128 &&
          callData.startsWith(TRANSFER_SELECTOR) &&
          /^0{24}/.test(callData.slice(8)) &&
          HEX.test(callData)
        )
      )
        throw new SignerRejectedError("only token transfers and native transfers");
      if (value.call_value !== undefined && value.call_value !== 0)
        throw new SignerRejectedError("a token transfer carries no value");
      transfer = {
        asset: "token",
        to: tronAddressFromHex(callData.slice(8 + 24, 8 + 64)),
        amount: BigInt(`0x${callData.slice(8 + 64)}`),
        token: tronHex(value.contract_address),
      };
    } else if (contract.type === "TransferContract") {
      if (!Number.isSafeInteger(value.amount) || (value.amount as number) <= 0)
        throw new SignerRejectedError("invalid amount");
      const to = tronHex(value.to_address);
      if (!to) throw new SignerRejectedError("invalid to_address");
      transfer = { asset: "native", to, amount: BigInt(value.amount as number), token: null };
    } else if (typeof contract.type === "string" && Object.hasOwn(STAKE_CONTRACTS, contract.type)) {
      transfer = stakeFacts(STAKE_CONTRACTS[contract.type]!, value);
    } else {
      throw new SignerRejectedError(
        "only token transfers, native transfers and the energy engine's Stake 2.0",
      );
    }
    const key = this.key(request.network, request.environment, request.index);
    const owner = addressFromPublicKey("USDT-TRC20", secp256k1.getPublicKey(key, true));
    const ownerHex = tronAddressToHex(owner);
    if (typeof value.owner_address !== "string" || value.owner_address.toLowerCase() !== ownerHex)
      throw new SignerRejectedError("owner_address is not the address of the requested key");
    const decision = await this.policy.check(
      { ...facts(request), from: owner, ...transfer },
      context.intentId,
      context.db,
    );
    await this.count(request, decision, null, txID);
    const sig = secp256k1.sign(hexToBytes(txID), key, { prehash: false, format: "recovered" });
    // TRON spelling: r ‖ s ‖ (27 + recovery).
    const signature = bytesToHex(sig.slice(1)) + (27 + sig[0]!).toString(16);
    const signed = {
      visible: false,
      txID,
      raw_data: t.raw_data,
      raw_data_hex: rawHex,
      signature: [signature],
    };
    return { raw: JSON.stringify(signed), hash: txID, from: owner };
  }
}

export interface LocalSignerOptions {
  /** The signer's own database connection: the transfer policy reads intents and deposit addresses. */
  db: Db;
  /** The USDT contract of a chain (token transfers must call it). */
  tokenContract: (network: CurrencyType, environment: Environment) => string | undefined;
  /** The cold wallet of a chain (issue #22): the hot wallet may forward its excess there. */
  coldWallet?: (network: CurrencyType, environment: Environment) => string | undefined;
  logger: Logger;
  /** The outflow cap and its record (`createOutflowGuard`); default: uncapped, in memory. */
  outflow?: OutflowGuard;
  clock?: Clock;
}

/**
 * A token amount as the API's units: the on-chain amount of an 18-decimal token is 10^12 × the
 * units a withdrawal recorded; one that is not a whole number of API units was not built by our
 * writer (nothing we send has dust), and is refused.
 */
function apiUnits(network: CurrencyType, onChain: bigint): bigint {
  const { units, dust } = fromChainUnits(onChain, chainScale(network));
  if (dust !== 0n) throw new SignerRejectedError("amount finer than the currency type's 6 decimals");
  return units;
}

/**
 * What an EVM transaction's `data` does: a native transfer (empty), a token `transfer`, or — the gas
 * tank's calls of batched sweeps (issue #39) — the sweeper's `sweepMany` or its deployment through
 * the CREATE2 deployer. Anything else is refused. The policy checks the parts against the intent.
 */
function evmTransferFacts(
  request: EvmSignRequest,
  data: Hex,
): Pick<TransferFacts, "asset" | "to" | "amount" | "token" | "call"> {
  const t = request.transaction;
  const body = data.slice(2);
  if (body.length === 0) return { asset: "native", to: t.to, amount: BigInt(t.value), token: null };
  if (body.length === 8 + 128 && body.startsWith(TRANSFER_SELECTOR) && /^0{24}/.test(body.slice(8)))
    return {
      asset: "token",
      to: `0x${body.slice(8 + 24, 8 + 64)}`,
      amount: apiUnits(request.network, BigInt(`0x${body.slice(8 + 64)}`)),
      token: t.to,
    };
  const batch = decodeSweepMany(data);
  if (batch) {
    if (batch.accounts.length === 0 || batch.accounts.length !== batch.amounts.length)
      throw new SignerRejectedError("a batch lists each address with its amount");
    const amounts = batch.amounts.map((a) => apiUnits(request.network, a));
    return {
      asset: "token",
      to: t.to,
      amount: amounts.reduce((s, a) => s + a, 0n),
      token: batch.token,
      call: { kind: "sweep_batch", contract: t.to, accounts: batch.accounts, amounts, authorizations: [] },
    };
  }
  if (t.to.toLowerCase() === CREATE2_DEPLOYER.toLowerCase() && t.value === "0")
    return {
      asset: "native",
      to: t.to,
      amount: 0n,
      token: null,
      call: { kind: "sweeper_deploy", data: data.toLowerCase() },
    };
  throw new SignerRejectedError("only token transfers and native transfers");
}

/** The requested EIP-7702 authorisations, checked for shape (the policy checks what they allow). */
function authorizationsOf(value: unknown): { index: number; address: string; nonce: number }[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_AUTHORIZATIONS)
    throw new SignerRejectedError(`authorizations must be a list of 1 to ${MAX_AUTHORIZATIONS}`);
  return value.map((a: unknown) => {
    const r = (a && typeof a === "object" ? a : {}) as Record<string, unknown>;
    if (Object.keys(r).some((k) => k !== "index" && k !== "address" && k !== "nonce"))
      throw new SignerRejectedError("an authorisation has only index, address and nonce");
    if (typeof r.index !== "number") throw new SignerRejectedError("invalid authorisation index");
    try {
      assertAddressIndex(r.index);
    } catch {
      throw new SignerRejectedError("invalid authorisation index");
    }
    if (typeof r.address !== "string" || !isEvmAddress(r.address))
      throw new SignerRejectedError("invalid authorisation address");
    if (typeof r.nonce !== "number" || !Number.isSafeInteger(r.nonce) || r.nonce < 0)
      throw new SignerRejectedError("invalid authorisation nonce");
    return { index: r.index, address: r.address, nonce: r.nonce };
  });
}

/** Most authorisations one batch carries (the sweeper's gas budget allows about 115). */
const MAX_AUTHORIZATIONS = 256;

function facts(request: SignRequest): Pick<TransferFacts, "network" | "environment" | "index"> {
  return { network: request.network, environment: request.environment, index: request.index };
}

/** The fields each Stake 2.0 action may carry (java-tron's contract, as tronweb writes it). */
const STAKE_FIELDS: Readonly<Record<ResourceAction, readonly string[]>> = {
  stake: ["owner_address", "frozen_balance", "resource"],
  delegate: ["owner_address", "receiver_address", "balance", "resource", "lock", "lock_period"],
  reclaim: ["owner_address", "receiver_address", "balance", "resource"],
};

/** The Stake 2.0 contracts the energy engine sends (issue #38), by the action each is. */
const STAKE_CONTRACTS: Readonly<Record<string, ResourceAction>> = {
  FreezeBalanceV2Contract: "stake",
  DelegateResourceContract: "delegate",
  UnDelegateResourceContract: "reclaim",
};

/**
 * What a Stake 2.0 transaction does: the resource (absent is BANDWIDTH, as in java-tron), the TRX
 * (sun) behind it, the receiver (a stake's is the owner itself: filled in by the caller's policy
 * from the key), and whether a delegation is locked.
 */
function stakeFacts(
  action: ResourceAction,
  value: Record<string, unknown>,
): Pick<TransferFacts, "asset" | "to" | "amount" | "token" | "action" | "lock"> {
  // Only the fields the engine writes, each of its exact type: tronweb's encoder turns any truthy
  // `lock` (1, "false", {}) into lock=true, so a field is judged as the bytes will say it (outside
  // review of issue #38).
  for (const field of Object.keys(value))
    if (!STAKE_FIELDS[action].includes(field)) throw new SignerRejectedError(`unexpected field ${field}`);
  if (value.lock !== undefined && typeof value.lock !== "boolean")
    throw new SignerRejectedError("invalid lock");
  const resource = value.resource ?? "BANDWIDTH";
  if (resource !== "ENERGY" && resource !== "BANDWIDTH") throw new SignerRejectedError("unknown resource");
  const amount = action === "stake" ? value.frozen_balance : value.balance;
  if (!Number.isSafeInteger(amount) || (amount as number) <= 0)
    throw new SignerRejectedError("invalid amount");
  let to: string | null;
  if (action === "stake") {
    if (value.receiver_address !== undefined) throw new SignerRejectedError("a stake has no receiver");
    to = tronHex(value.owner_address);
  } else to = tronHex(value.receiver_address);
  if (!to) throw new SignerRejectedError("invalid receiver_address");
  return {
    asset: resource === "ENERGY" ? "energy" : "bandwidth",
    action,
    to,
    amount: BigInt(amount as number),
    token: null,
    lock: value.lock === true || (value.lock_period !== undefined && value.lock_period !== 0),
  };
}

/** Base58 of a TRON hex address field, or null when it is not one. */
function tronHex(v: unknown): string | null {
  if (typeof v !== "string") return null;
  try {
    return tronAddressFromHex(v);
  } catch {
    return null;
  }
}

/** The token contracts of the configuration, per currency type and environment. */
export function configuredTokenContracts(
  config: Config,
): (network: CurrencyType, environment: Environment) => string | undefined {
  return (network, environment) => configuredContract(config.chains, network, environment);
}

/**
 * The signer of this process: resolves `MASTER_MNEMONIC` for private keys. Only the `signer` role
 * and `serve` (which runs the signer in-process) call this. Its outflow record is
 * `DATA_DIR/signer-outflow.json` (private to the service's user), its metrics go to `registry`.
 */
export async function createLocalSigner(
  config: Config,
  db: Db,
  logger: Logger,
  options: { registry?: Registry; clock?: Clock } = {},
): Promise<LocalSigner> {
  const clock = options.clock ?? systemClock;
  const outflow = await OutflowGuard.open({
    limits: config.sending.outflowCap,
    file: join(config.dataDir, OUTFLOW_FILE),
    clock,
    logger,
    ...(options.registry ? { registry: options.registry } : {}),
  });
  return LocalSigner.fromMnemonic((await resolveMnemonic(config)).mnemonic, {
    db,
    logger,
    clock,
    outflow,
    tokenContract: configuredTokenContracts(config),
    coldWallet: (network, environment) => coldWalletOf(config.chains, network, environment)?.address,
  });
}

/** Whether `limits` caps both windows of every currency type the signer signs for. */
export function outflowCapped(limits: OutflowLimits): boolean {
  return limits.perHour !== null && limits.perDay !== null;
}
