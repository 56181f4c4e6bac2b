import type { SignRequest } from "../chains/index.js";
import type { Db } from "../db/database.js";

/**
 * The signer's protocol. What it signs (`SignRequest`: a transaction of one chain, for one
 * derivation index) is built by the chain writers and defined beside them (`chains/signing.ts`).
 */
export type {
  EvmSignRequest,
  EvmTransactionFields,
  SignRequest,
  TronSignRequest,
  TronTransactionFields,
} from "../chains/index.js";

export interface SignedTransaction {
  /** EVM: the serialized signed transaction (`0x…`); TRON: the signed transaction JSON. */
  raw: string;
  /** EVM: keccak256 of `raw`; TRON: the txID. */
  hash: string;
  /** The address of the key that signed (the sending address). */
  from: string;
}

/**
 * `intentId`: the intent (`outgoing_transfers.intent_id`) the transaction pays; the signer checks
 * the transaction against it and against the evidence behind it (`policy.ts`), and refuses a
 * request that names none. `db`: the caller's open transaction, for an in-process signer only: its
 * policy reads the database through it (the sender signs inside a transaction, and PGlite is one
 * connection). The signer over HTTP ignores `db` and reads with its own connection.
 */
export interface SignContext {
  intentId?: string;
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
