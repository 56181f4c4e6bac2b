import type { Db } from "../db/database.js";
import type { AddressPurpose } from "../db/tables/chains.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";

/** A transfer to a watched address with the required confirmations, as the deposit logic receives it. */
export interface ConfirmedTransfer {
  /** `obs_…`: the stored observation (unique per network, tx hash and log index). */
  observationId: string;
  network: CurrencyType;
  environment: Environment;
  /** The watched (receiving) address, canonical spelling. */
  address: string;
  from: string;
  txHash: string;
  logIndex: number;
  blockNumber: number;
  blockHash: string;
  /** The block's timestamp, from the chain: whether the transfer was on time for a session. */
  blockTime: Date;
  /** Base units. */
  amount: bigint;
  /** From the watched address (`allocateDepositAddress`). */
  merchantId: string;
  purpose: AddressPurpose;
  referenceId: string | null;
  /**
   * The address was made for another currency type (wrong network, issue #37): this transfer is its
   * own deposit in `network`, whatever the record it belongs to.
   */
  wrongNetwork?: boolean;
  /**
   * Why the sender may not be credited (README.md#frozen-funds), as the registered sender check
   * answered just before the hand-off's transaction — outside it, so a slow chain or screening
   * provider holds no database connection or lock; null: credit as usual.
   */
  holdReason?: string | null;
}

/**
 * Asked of every transfer before its hand-off's transaction opens (the deposit module registers
 * it): why its sender may not be credited, or null. Throws when it cannot tell: the transfer is
 * offered again later, like a failed hand-off.
 */
export type SenderCheck = (transfer: ConfirmedTransfer) => Promise<string | null>;

/**
 * The deposit logic's entry point. Called exactly once per observed transfer (per successful call),
 * inside the database transaction `trx` that also marks the observation as handed off: if it
 * throws, nothing it wrote is kept and the transfer is offered again later (with back-off).
 */
export type DepositHandler = (trx: Db, transfer: ConfirmedTransfer) => Promise<void>;

/**
 * The one registration point through which confirmed transfers reach the deposit logic. The
 * runtime owns one; the deposit module calls `register` once at start-up. Until a handler is
 * registered, observations are kept (`observed`) and handed off as soon as one is.
 */
export class DepositHandoff {
  #handler: DepositHandler | null = null;
  #senderCheck: SenderCheck | null = null;

  registerSenderCheck(check: SenderCheck): void {
    if (this.#senderCheck && this.#senderCheck !== check)
      throw new Error("A sender check is already registered.");
    this.#senderCheck = check;
  }

  get senderCheck(): SenderCheck | null {
    return this.#senderCheck;
  }

  register(handler: DepositHandler): void {
    if (this.#handler && this.#handler !== handler)
      throw new Error("A deposit handler is already registered.");
    this.#handler = handler;
  }

  get handler(): DepositHandler | null {
    return this.#handler;
  }
}
