import type { Db } from "../db/database.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import type { SignRequest } from "./signing.js";

/**
 * Write side of a chain (chains part 2): build a transfer for the signer, broadcast the signed
 * bytes, and verify the on-chain result. The read side stays `ChainAdapter`.
 *
 * Two shapes:
 * - `SignedChainWriter` (Ethereum, TRON): `prepare` builds an unsigned transaction as a
 *   `SignRequest` for the signer; the sender stores the signed bytes before `broadcast`, which may
 *   be repeated with the same bytes at no risk (idempotent);
 * - `DatabaseChainWriter` (the sandbox simulator): the chain IS the database, so the transfer is
 *   executed inside the transaction that records it: either both exist or neither.
 */
export type Asset = "token" | "native" | ResourceAsset;

/**
 * TRON's Stake 2.0 resources (issue #38): staked, delegated and taken back in the sun of TRX behind
 * them. A transfer of such an asset moves no coins: its `action` says what it does.
 */
export type ResourceAsset = "energy" | "bandwidth";
export type ResourceAction = "stake" | "delegate" | "reclaim";

export function isResourceAsset(asset: string): asset is ResourceAsset {
  return asset === "energy" || asset === "bandwidth";
}

export interface TransferSpec {
  asset: Asset;
  environment: Environment;
  /** Sending address and its HD index (the signer derives the key). */
  from: string;
  fromIndex: number;
  to: string;
  /** Base units: token (6 decimals) or native (wei / sun); a resource's staked TRX (sun). */
  amount: bigint;
  /** A resource asset's action (stake: `to` is `from` itself); none for coins. */
  action?: ResourceAction;
  /**
   * EVM batched sweeps (issue #39): the gas tank's transaction that is not a transfer of its own —
   * `sweep_batch` moves each item's amount from its deposit address to `to` (the hot wallet) through
   * the sweeper contract, authorising the addresses not yet delegated to it; `sweeper_deploy`
   * deploys the sweeper contract of `hotWallet` (`amount` 0).
   */
  call?: BatchCall;
}

/** One deposit address of a batched sweep and the amount (token base units) it moves. */
export interface BatchItem {
  from: string;
  fromIndex: number;
  amount: bigint;
}

export type BatchCall =
  | { kind: "sweep_batch"; items: readonly BatchItem[] }
  | { kind: "sweeper_deploy"; hotWallet: string };

/** What the recipient and amount of a mined transaction must be for it to count. */
export interface ExpectedTransfer {
  asset: Asset;
  from: string;
  to: string;
  amount: bigint;
  action?: ResourceAction;
  /** A batched sweep's items: each one's Transfer log is looked for (`delivered`). */
  batch?: readonly Pick<BatchItem, "from" | "amount">[];
  /** A sweeper deployment for this hot wallet: the contract's code must be on the chain once mined. */
  deploys?: string;
}

/**
 * On-chain state of one transaction hash (docs/decisions/sending.md#chains-part-2-sending-money-issue-6: results are checked on-chain):
 * - `success`: mined, receipt status success AND (token) a Transfer log of the token with the
 *   expected from, to and amount / (native) the expected recipient and value;
 * - `failed`: mined but reverted, or without the expected transfer (wrong amount, recipient…);
 *   a batched sweep (issue #39) succeeds when mined, and `delivered` says, per item, whether its
 *   Transfer log (from its address to the hot wallet, its amount) is in the receipt;
 * - `pending`: known to the node, not mined; `missing`: unknown to the node (no receipt);
 * - `disputed` (several providers, issue #34): the providers do not agree on it (one reports it
 *   mined and another not, or mined with another result or in another block). Nothing is decided
 *   on it: the transfer stays open, and `alert` says the disagreement cannot be mere propagation
 *   (two different mined answers, or a deep receipt another provider denies).
 */
export type TransferCheck =
  | { state: "missing" }
  | { state: "pending" }
  | { state: "disputed"; reason: string; alert: boolean }
  | { state: "success"; blockNumber: number; confirmations: number; paid?: Paid; delivered?: boolean[] }
  | { state: "failed"; blockNumber: number; confirmations: number; reason: string; paid?: Paid };

/**
 * What a mined transaction cost (issue #38, costs in the books): `fee` the native coin it burned or
 * paid (TRON: sun burned for energy, bandwidth and account creation; EVM: gas used × effective gas
 * price, in wei), `used` the resource it consumed (TRON energy, delegated or staked included; EVM
 * gas).
 */
export interface Paid {
  fee: bigint;
  used: bigint;
}

/** Fee parameters of an attempt, kept as decimal strings (replacement bumps start from them). */
export type FeeParams = Record<string, string>;

export interface PreparedTransfer {
  signRequest: SignRequest;
  nonce: number | null;
  fee: FeeParams;
  /** TRON: the transaction's expiration (ms); after it (and unmined) it can never be mined. */
  expiresAt: number | null;
  /** Most native coin the transaction can cost (EVM gas × max fee; TRON estimated burn). */
  maxNativeCost: bigint;
}

export interface PrepareOptions {
  /** EVM: the nonce (from the database's per-address counter). Ignored by TRON. */
  nonce: number | null;
  /** Fees of the attempt being replaced (EVM): the new ones are at least 12.5 % higher. */
  replacing?: FeeParams;
  /**
   * Native coin the sender may spend (EVM). When the buffered fees would exceed it, the max fee is
   * lowered to fit as long as it still covers the current base fee and tip (a sweep spends exactly
   * the top-up it got); below that, `InsufficientFundsError`.
   */
  nativeBudget?: bigint;
}

export interface BroadcastResult {
  /** The node accepted it now or already knew it. */
  accepted: boolean;
  error?: string;
}

/**
 * TRON's Stake 2.0 reads, for the energy engine (issue #38; docs/decisions/tron-resources.md). A
 * writer without them (EVM) has no resources to delegate: its transfers burn, as before.
 */
export interface ResourceReads {
  /** Energy a token transfer from `from` needs, and the energy `from` has free now. */
  transferEnergy(from: string, to: string, amount: bigint): Promise<{ needed: bigint; available: bigint }>;
  /** Sun a token transfer from `from` burns for bandwidth its free and staked bandwidth lack. */
  bandwidthBurn(from: string): Promise<bigint>;
  /** Whether the address has an account (a TRON address must exist to receive resources). */
  accountExists(address: string): Promise<boolean>;
  /** Stake (sun) `owner` can delegate now: staked, not delegated, not standing for its own usage. */
  delegatable(owner: string, asset: ResourceAsset): Promise<bigint>;
  /** Stake (sun, whole TRX) whose delegation gives `amount` of the resource at today's weights. */
  stakeFor(owner: string, asset: ResourceAsset, amount: bigint): Promise<bigint>;
  /** The account's own stake (sun), per resource. */
  staked(owner: string): Promise<Record<ResourceAsset, bigint>>;
}

export interface SignedChainWriter {
  readonly kind: "signed";
  readonly network: CurrencyType;
  /** TRON: its Stake 2.0 reads (the energy engine); none on EVM. */
  readonly resources?: ResourceReads;
  /** EVM (issue #39): whether the sweeper contract of `hotWallet` is deployed. */
  sweeperDeployed?(hotWallet: string): Promise<boolean>;
  nativeBalance(address: string): Promise<bigint>;
  tokenBalance(address: string): Promise<bigint>;
  /** EVM: transactions of the address already mined (`eth_getTransactionCount latest`); TRON: null. */
  minedNonce(address: string): Promise<number | null>;
  /**
   * Native cost (with the fee buffer) of one token transfer from `from`, for gas-tank top-ups:
   * EVM gas estimate × max fee; TRON energy + bandwidth burn not covered by the account's resources.
   */
  tokenTransferCost(from: string, to: string, amount: bigint): Promise<bigint>;
  prepare(spec: TransferSpec, options: PrepareOptions): Promise<PreparedTransfer>;
  broadcast(raw: string): Promise<BroadcastResult>;
  check(hash: string, expected: ExpectedTransfer): Promise<TransferCheck>;
}

export interface DatabaseChainWriter {
  readonly kind: "database";
  readonly network: CurrencyType;
  /** `trx`: read inside the caller's transaction (after the locks it holds; PGlite has one connection). */
  tokenBalance(address: string, trx?: Db): Promise<bigint>;
  /** Executes (mines) the transfer inside `trx`; a failed transfer is mined too. Returns its hash. */
  execute(trx: Db, spec: TransferSpec): Promise<{ hash: string }>;
  check(hash: string, expected: ExpectedTransfer): Promise<TransferCheck>;
}

export type ChainWriter = SignedChainWriter | DatabaseChainWriter;

/** The sending account cannot pay the fee (or the amount, for native transfers). */
export class InsufficientFundsError extends Error {
  constructor(
    readonly what: "token" | "native",
    readonly needed: bigint,
    readonly available: bigint,
  ) {
    super(`insufficient ${what} balance: need ${needed}, have ${available}`);
    this.name = "InsufficientFundsError";
  }
}

/** The transfer would revert (gas estimation failed with an execution error): nothing was signed. */
export class TransferWouldFailError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = "TransferWouldFailError";
  }
}

/** `a × (100 + percent) / 100`, rounded up. */
export function withBuffer(a: bigint, percent: number): bigint {
  const p = BigInt(100 + percent);
  return (a * p + 99n) / 100n;
}
