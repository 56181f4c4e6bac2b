/**
 * The signer feature's public face: the `Signer` protocol (what it signs, `SignRequest`, is defined
 * by the chain writers in `chains/`), the in-process and HTTP signers, and the signer role.
 */
export { exportAccountXpubs } from "./export-xpubs.js";
export { authHeaders, MAX_SKEW_MS, SIGNATURE_HEADER, TIMESTAMP_HEADER } from "./hmac.js";
export { HttpSignerClient, type HttpSignerClientOptions } from "./http-client.js";
export {
  configuredTokenContracts,
  createLocalSigner,
  LocalSigner,
  type LocalSignerOptions,
} from "./local-signer.js";
export {
  type EvmSignRequest,
  type SignContext,
  type SignedTransaction,
  type Signer,
  SignerRejectedError,
  SignerUnavailableError,
  type SignRequest,
  type TronSignRequest,
} from "./protocol.js";
export { type SignerRoleOptions, SignerStartupError, startSignerRole } from "./role.js";
export { createRoleSigner } from "./role-signer.js";
export { type RunningSignerServer, type SignerServerOptions, startSignerServer } from "./server.js";
