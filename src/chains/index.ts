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
export {
  addressCodec,
  addressFromPublicKey,
  normalizeAddress,
  ownershipSpellings,
  validateAddress,
} from "./address.js";
export { type ChainEndpoint, createChainAdapter } from "./create-adapter.js";
export { type CurrencyListing, listCurrencies } from "./currencies.js";
export { ChainTimeError, ChainUnavailableError, InvalidAddressError } from "./errors.js";
export {
  batchGas,
  CREATE2_DEPLOYER,
  DEPLOY_GAS_CAP,
  decodeSweepMany,
  delegationCode,
  evmAddress,
  evmChain,
  isEvmAddress,
  sweeperAddress,
  sweeperDeployData,
} from "./evm/index.js";
export type {
  AddressCodec,
  ChainBuildContext,
  ChainModule,
  NetworkChainModule,
  NetworkEndpoint,
  WriterConfig,
} from "./module.js";
export { providerNames } from "./network-entry.js";
export { networkChain, networkChains } from "./networks.js";
export { PooledChainWriter, pooledWriter } from "./pooled-writer.js";
export {
  type Disagreement,
  type DisagreementSubject,
  type PoolAnswer,
  type PoolProvider,
  type ProviderHealth,
  ProviderPool,
  type ProviderPoolOptions,
} from "./provider-pool.js";
export { providerReadinessChecks, recordProviderHealth, registerProviderMetrics } from "./provider-status.js";
export {
  type AvailableChain,
  type BuildChainRegistryOptions,
  buildChainRegistry,
  CHAIN_RPC_TIMEOUT_MS,
  type ChainEntry,
  ChainRegistry,
  chainModules,
  createChainWriter,
  defaultConfirmations,
  type ScanSettings,
  type UnavailableChain,
} from "./registry.js";
export type {
  EvmAuthorizationRequest,
  EvmSignRequest,
  EvmTransactionFields,
  SignRequest,
  TronSignRequest,
  TronTransactionFields,
} from "./signing.js";
export {
  SIM_BLOCK_CHANNEL,
  SIMULATOR_DEFINITION,
  SimulatedChain,
  simulatorChain,
} from "./simulator/index.js";
export {
  tronAddress,
  tronAddressFromHex,
  tronAddressToHex,
  tronChain,
} from "./tron/index.js";
export {
  type Asset,
  type BatchCall,
  type BatchItem,
  type BroadcastResult,
  type ChainWriter,
  type DatabaseChainWriter,
  type ExpectedTransfer,
  type FeeParams,
  InsufficientFundsError,
  isResourceAsset,
  type Paid,
  type PreparedTransfer,
  type PrepareOptions,
  type ResourceAction,
  type ResourceAsset,
  type ResourceReads,
  type SignedChainWriter,
  type TransferCheck,
  type TransferSpec,
  TransferWouldFailError,
  withBuffer,
} from "./writer.js";
