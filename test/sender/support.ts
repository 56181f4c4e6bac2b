import type { ChainWriter } from "../../src/chains/writer.js";
import type { Db } from "../../src/db/database.js";
import type { CurrencyType } from "../../src/domain/currency.js";
import type { Environment } from "../../src/domain/environment.js";
import { systemClock } from "../../src/lib/clock.js";
import { createLogger } from "../../src/observability/logger.js";
import type { EnergyGate } from "../../src/sender/context.js";
import { type TransferOutcome, TransferOutcomes } from "../../src/sender/outcomes.js";
import { type FaultPoint, Sender } from "../../src/sender/sender.js";
import { LocalSigner } from "../../src/signer/local-signer.js";
import type { Signer } from "../../src/signer/protocol.js";
import { AddressDeriver } from "../../src/wallet/address-deriver.js";

export const MNEMONIC = "test test test test test test test test test test test junk";
export const wallet = AddressDeriver.fromMnemonic(MNEMONIC);
export const logger = createLogger("silent");

/**
 * The real signer (policy included: it reads intents and deposit addresses from `db`) for the
 * token contract `token` (or the one `writer` calls).
 */
export function localSigner(db: Db, token: string | { token?: unknown } | undefined): LocalSigner {
  const contract = typeof token === "string" ? token : (token?.token as string | undefined);
  return LocalSigner.fromMnemonic(MNEMONIC, { db, logger, tokenContract: () => contract });
}
export const USDT = (n: number) => BigInt(Math.round(n * 1_000_000));

/** Outcome hooks that record every call (with a row written in the outcome's own transaction). */
export function recordingOutcomes(): { outcomes: TransferOutcomes; calls: TransferOutcome[] } {
  const outcomes = new TransferOutcomes();
  const calls: TransferOutcome[] = [];
  for (const kind of ["withdrawal", "payout", "sweep", "gas_topup"] as const) {
    outcomes.register(kind, async (trx, outcome) => {
      // Proves the hook runs inside the transaction that records the final state.
      const row = await trx
        .selectFrom("outgoing_transfers")
        .select("status")
        .where("intent_id", "=", outcome.intentId)
        .executeTakeFirstOrThrow();
      if (row.status !== outcome.status) throw new Error("outcome outside its transaction");
      calls.push(outcome);
    });
  }
  return { outcomes, calls };
}

export function makeSender(options: {
  db: Db;
  network: CurrencyType;
  environment?: Environment;
  writer: ChainWriter;
  outcomes: TransferOutcomes;
  signer?: Signer;
  confirmations?: number;
  stuckAfterMs?: number;
  expiryGraceMs?: number;
  fault?: (point: FaultPoint, ids: string[]) => void | Promise<void>;
  /** TRON's energy engine (issue #38) as the sender's gate. */
  energy?: EnergyGate;
}): Sender {
  const environment = options.environment ?? "sandbox";
  return new Sender({
    db: options.db,
    network: options.network,
    environment,
    writer: options.writer,
    // The writer's token contract (a private field of the EVM/TRON writers, read for the test signer).
    signer: options.signer ?? localSigner(options.db, options.writer as unknown as { token?: unknown }),
    address: (i) => wallet.address(options.network, environment, i),
    outcomes: options.outcomes,
    confirmations: options.confirmations ?? 1,
    logger,
    clock: systemClock,
    recheckMs: 0,
    ...(options.stuckAfterMs !== undefined ? { stuckAfterMs: options.stuckAfterMs } : {}),
    ...(options.expiryGraceMs !== undefined ? { expiryGraceMs: options.expiryGraceMs } : {}),
    ...(options.fault ? { fault: options.fault } : {}),
    ...(options.energy ? { energy: options.energy } : {}),
  });
}
