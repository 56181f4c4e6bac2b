import type { Db } from "../db/database.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";

/**
 * What the signer signs: a transaction of one chain, for one derivation index. There is no
 * "sign these bytes" request: the signer builds the bytes it signs from structured fields and
 * refuses anything that is not a token transfer or a plain native-coin transfer.
 */

/** An EIP-1559 transaction; integers as decimal strings (JSON has no bigint). */
export interface EvmTransactionFields {
  chainId: number;
  nonce: number;
  to: string;
  /** Wei; non-zero only for native top-ups (then `data` is empty). */
  value: string;
  /** `0x` (native transfer) or ERC20 `transfer(address,uint256)` call data. */
  data: string;
  gas: string;
  maxFeePerGas: string;
  maxPriorityFeePerGas: string;
}

export interface EvmSignRequest {
  chain: "evm";
  network: "USDT-ERC20";
  environment: Environment;
  index: number;
  transaction: EvmTransactionFields;
}

/** A TRON transaction as the node builds it (`raw_data` JSON, its protobuf hex and `txID`). */
export interface TronTransactionFields {
  txID: string;
  raw_data: Record<string, unknown>;
  raw_data_hex: string;
}

export interface TronSignRequest {
  chain: "tron";
  network: "USDT-TRC20";
  environment: Environment;
  index: number;
  transaction: TronTransactionFields;
}

export type SignRequest = EvmSignRequest | TronSignRequest;

export interface SignedTransaction {
  /** EVM: the serialized signed transaction (`0x…`); TRON: the signed transaction JSON. */
  raw: string;
  /** EVM: keccak256 of `raw`; TRON: the txID. */
  hash: string;
  /** The address of the key that signed (the sending address). */
  from: string;
}

/**
 * `db`: the caller's open transaction, for an in-process signer only: its policy reads the
 * database through it (the sender signs inside a transaction, and PGlite is one connection).
 * The signer over HTTP ignores it and reads with its own connection.
 */
export interface SignContext {
  db?: Db;
}

/** The signer role's one operation. Implemented in-process (`LocalSigner`) and over HTTP (`HttpSignerClient`). */
export interface Signer {
  sign(request: SignRequest, context?: SignContext): Promise<SignedTransaction>;
}

/** A request the signer refuses (policy or malformed); never retryable. */
export class SignerRejectedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SignerRejectedError";
  }
}

/** The signer could not be reached or answered unexpectedly; retryable. */
export class SignerUnavailableError extends Error {
  readonly retryable = true;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "SignerUnavailableError";
  }
}

export function isSignRequestNetwork(n: unknown): n is CurrencyType {
  return n === "USDT-ERC20" || n === "USDT-TRC20";
}
