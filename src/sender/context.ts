import type { ChainWriter } from "../chains/index.js";
import type { Db } from "../db/database.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import type { Clock } from "../lib/clock.js";
import type { Logger } from "../observability/logger.js";
import type { Signer } from "../signer/index.js";
import { Funding } from "./funding.js";
import type { TransferOutcomes } from "./outcomes.js";

/** Where the fault-injection test kills the sending process. */
export type FaultPoint = "before-commit" | "after-commit" | "after-broadcast" | "after-receipt";

export interface SenderOptions {
  db: Db;
  network: CurrencyType;
  environment: Environment;
  writer: ChainWriter;
  /** Required for chains whose writer is "signed" (EVM, TRON). */
  signer: Signer | null;
  /** Address of an HD index of this (network, environment) (watch-only derivation). */
  address: (index: number) => string;
  outcomes: TransferOutcomes;
  /** A mined transfer is final (confirmed or failed) at this depth. */
  confirmations: number;
  logger: Logger;
  clock: Clock;
  /** An EVM transaction unmined for this long is replaced with higher fees at the same nonce. Default 3 min. */
  stuckAfterMs?: number;
  /** A TRON transaction unmined this long after its expiration is provably dropped and re-signed. Default 60 s. */
  expiryGraceMs?: number;
  /** Intents signed per sending address and round. Default 25. */
  batchSize?: number;
  /** How soon an open transfer is looked at again. Default 1 s. */
  recheckMs?: number;
  /**
   * Asked of every withdrawal and payout just before it is signed (issue #40): why its destination
   * may not be paid now (frozen by the token's issuer, refused by screening), or null. A blocked one
   * fails without being signed (`destination_blocked: …`), which releases its hold.
   */
  destinationCheck?: (to: string, intentId: string) => Promise<string | null>;
  /**
   * TRON's energy engine (issue #38): of a batch about to be signed from `from`, the transfers that
   * may be signed now; the others wait (delegated energy is on its way, or will be asked for).
   */
  energy?: EnergyGate;
  /** Tests: called at each crash-relevant step. */
  fault?: (point: FaultPoint, intentIds: string[]) => void | Promise<void>;
}

/** What the energy gate sees of a queued transfer. */
export interface GateRow {
  intent_id: string;
  kind: string;
  asset: string;
  to_address: string;
  amount: string;
  created_at?: Date;
}

export interface EnergyGate {
  ready<R extends GateRow>(index: number, from: string, rows: R[]): Promise<R[]>;
  /**
   * Of a batch from `from`, the transfers that can no longer be paid for by the energy they waited
   * for (a rental refused or never delivered), with the reason: failed unsigned, planned again.
   */
  failing?(index: number, from: string, rows: GateRow[]): Promise<Map<string, string>>;
}

/** A sender's options with their defaults, and its funds checks: what its steps share. */
export interface SenderContext extends SenderOptions {
  stuckAfterMs: number;
  expiryGraceMs: number;
  batchSize: number;
  recheckMs: number;
  funding: Funding;
}

export function senderContext(o: SenderOptions): SenderContext {
  return {
    ...o,
    stuckAfterMs: o.stuckAfterMs ?? 180_000,
    expiryGraceMs: o.expiryGraceMs ?? 60_000,
    batchSize: o.batchSize ?? 25,
    recheckMs: o.recheckMs ?? 1_000,
    funding: new Funding({
      db: o.db,
      network: o.network,
      environment: o.environment,
      clock: o.clock,
      logger: o.logger,
    }),
  };
}
