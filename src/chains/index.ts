/**
 * The chains feature's public face: what other folders may use. Internal files of `chains/` never
 * import this file (they import each other directly), so it closes no cycle.
 */
export {
  type BlockHeader,
  blockChunks,
  type ChainAdapter,
  compareTransfers,
  safeBlockFromHead,
  type TokenTransfer,
  type TokenTransferQuery,
  usableBlockTime,
} from "./adapter.js";
export { addressFromPublicKey, normalizeAddress, validateAddress } from "./address.js";
export { ChainTimeError, ChainUnavailableError, InvalidAddressError } from "./errors.js";
export { isEvmAddress } from "./evm/address.js";
export {
  type AvailableChain,
  type BuildChainRegistryOptions,
  buildChainRegistry,
  CHAIN_RPC_TIMEOUT_MS,
  type ChainEntry,
  ChainRegistry,
  chainUnavailable,
  DEFAULT_CONFIRMATIONS,
  type ScanSettings,
  SIMULATOR_CONFIRMATIONS,
  type UnavailableChain,
} from "./registry.js";
export type {
  EvmSignRequest,
  EvmTransactionFields,
  SignRequest,
  TronSignRequest,
  TronTransactionFields,
} from "./signing.js";
export { SIM_BLOCK_CHANNEL, SimulatedChain } from "./simulator/simulated-chain.js";
export { tronAddressFromHex, tronAddressToHex } from "./tron/address.js";
export {
  type Asset,
  type BroadcastResult,
  type ChainWriter,
  type DatabaseChainWriter,
  type ExpectedTransfer,
  type FeeParams,
  InsufficientFundsError,
  type PreparedTransfer,
  type PrepareOptions,
  type SignedChainWriter,
  type TransferCheck,
  type TransferSpec,
  TransferWouldFailError,
  withBuffer,
} from "./writer.js";
