import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";

/**
 * What a chain writer hands the signer: a transaction of one chain, for one derivation index.
 * There is no "sign these bytes" request: the signer builds the bytes it signs from structured
 * fields and refuses anything that is not a token transfer or a plain native-coin transfer.
 * The writers build these (`SignedChainWriter.prepare`); `signer/` signs them.
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
  /**
   * EIP-7702 (issue #39): authorisations the signer signs with the keys of these indexes, each
   * delegating its address to `address` (the sweeper contract) at the address's `nonce`, for
   * `chainId`; then the transaction is type 4 (set code). Absent: EIP-1559.
   */
  authorizations?: EvmAuthorizationRequest[];
}

export interface EvmAuthorizationRequest {
  index: number;
  address: string;
  nonce: number;
}

export interface EvmSignRequest {
  chain: "evm";
  /** A currency type of an EVM network (the signer checks the family from the registry). */
  network: CurrencyType;
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
  network: CurrencyType;
  environment: Environment;
  index: number;
  transaction: TronTransactionFields;
}

export type SignRequest = EvmSignRequest | TronSignRequest;
