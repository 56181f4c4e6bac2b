/**
 * The life of an outgoing transfer, written once (docs/decisions/sending.md):
 *
 *   queued ──sign──▶ signed ──broadcast──▶ broadcast ──mined at depth──▶ confirmed | failed
 *
 * - queued → signed: signed under the sending address's nonce lock (EVM, TRON).
 * - queued → broadcast: the simulator mines it inside the transaction that records it.
 * - queued → failed: it would revert, or the transfer it waited for failed.
 * - signed → broadcast: its stored bytes were sent to the node.
 * - signed | broadcast → confirmed | failed: an attempt was mined at the required depth (or the
 *   nonce was used by another transaction, or a reorg dropped a simulator transaction).
 *
 * `confirmed` and `failed` are final. The transfer store (transfer-store.ts) checks every state
 * change it writes with `checkTransition`: an illegal one is refused there, before any SQL.
 */
export const TRANSFER_STATES = ["queued", "signed", "broadcast", "confirmed", "failed"] as const;
export type TransferState = (typeof TRANSFER_STATES)[number];

/** Not final: the sender still drives these. */
export const OPEN_STATES = ["queued", "signed", "broadcast"] as const;
export type OpenState = (typeof OPEN_STATES)[number];

/** Final states: a transfer in one never changes again. */
export type FinalState = "confirmed" | "failed";

/** Every allowed transition, by source state. */
export const TRANSITIONS: Readonly<Record<TransferState, readonly TransferState[]>> = {
  queued: ["signed", "broadcast", "failed"],
  signed: ["broadcast", "confirmed", "failed"],
  broadcast: ["confirmed", "failed"],
  confirmed: [],
  failed: [],
};

export class IllegalTransitionError extends Error {
  constructor(
    readonly from: string,
    readonly to: string,
  ) {
    super(`illegal transfer state transition: ${from} → ${to}`);
    this.name = "IllegalTransitionError";
  }
}

export function isTransferState(s: string): s is TransferState {
  return (TRANSFER_STATES as readonly string[]).includes(s);
}

/** Whether `from → to` is an allowed transition. */
export function canTransition(from: string, to: string): boolean {
  return isTransferState(from) && isTransferState(to) && TRANSITIONS[from].includes(to);
}

/** Throws IllegalTransitionError unless `from → to` is allowed: the one place transitions are checked. */
export function checkTransition(from: string, to: TransferState): void {
  if (!canTransition(from, to)) throw new IllegalTransitionError(from, to);
}

export function isOpen(s: string): s is OpenState {
  return (OPEN_STATES as readonly string[]).includes(s);
}
