import { sql } from "kysely";
import type { Db } from "../../src/db/database.js";
import type { CurrencyType } from "../../src/domain/currency.js";
import type { Environment } from "../../src/domain/environment.js";
import { creditDeposit, holdFunds } from "../../src/ledger/index.js";
import { requestTransfer as queueTransfer, type TransferIntent } from "../../src/sender/intents.js";
import { insertTransaction } from "../../src/transactions/index.js";

/**
 * `requestTransfer` with the evidence the signer checks (issue #34 finding 1, `signer/evidence.ts`):
 * a withdrawal or payout intent gets its backing transaction (`processing`, destination = the
 * intent's, fee 0 so the net amount is the intent's amount) and its ledger hold, funded by a deposit
 * of the same amount, all in the caller's transaction `trx`, for one merchant per database created
 * on first use. Other kinds (sweeps, gas top-ups, cold forwards) are queued as they are. For the
 * tests of the sender, whose subject is sending, not the policy: the policy's own tests write the
 * evidence (and its absence) themselves.
 */
export async function requestTransfer(trx: Db, intent: TransferIntent): Promise<void> {
  const backed = await trx
    .selectFrom("transactions")
    .select("id")
    .where("id", "=", intent.intentId)
    .executeTakeFirst();
  // Idempotent like requestTransfer: a second call for the same id adds nothing.
  if ((intent.kind === "withdrawal" || intent.kind === "payout") && !backed) {
    await backTransfer(trx, {
      id: intent.intentId,
      kind: intent.kind,
      network: intent.network,
      environment: intent.environment,
      to: intent.to,
      amount: intent.amount,
    });
  }
  await queueTransfer(trx, intent);
}

const MERCHANT_ID = "mer_signer_evidence";

/** The one merchant of the backed transfers of a database. */
export async function backingMerchant(trx: Db): Promise<string> {
  await trx
    .insertInto("merchants")
    .values({ id: MERCHANT_ID, email: "backing@example.test", company_name: "Backing" })
    .onConflict((oc) => oc.column("id").doNothing())
    .execute();
  return MERCHANT_ID;
}

/** Credits `amount` to the merchant's available balance (a confirmed deposit `dep_<key>`). */
export async function fund(
  trx: Db,
  merchantId: string,
  environment: Environment,
  currencyType: CurrencyType,
  amount: bigint,
  key: string,
): Promise<void> {
  const id = `dep_${key}`;
  await insertTransaction(trx, {
    id,
    merchantId,
    environment,
    type: "deposit",
    status: "confirmed",
    currencyType,
    amount,
    fee: 0n,
  });
  await creditDeposit(trx, { merchantId, environment, currencyType, transactionId: id }, amount, 0n);
  // A deposit's credit reaches the balance at COMMIT (migration 0022, its deferred check): fire the
  // deferred checks now, so that a hold in the same transaction sees it.
  await sql`set constraints all immediate`.execute(trx);
  await sql`set constraints all deferred`.execute(trx);
}

/**
 * A withdrawal/payout transaction `id` in `status` with its hold posted (unless `hold` is false):
 * `amount` gross, `fee` (default 0): the destination is owed `amount - fee`.
 */
export async function backTransfer(
  trx: Db,
  t: {
    id: string;
    kind: "withdrawal" | "payout";
    network: CurrencyType;
    environment: Environment;
    to: string;
    amount: bigint;
    fee?: bigint;
    status?: string;
    hold?: boolean;
    merchantId?: string;
  },
): Promise<void> {
  const merchantId = t.merchantId ?? (await backingMerchant(trx));
  const fee = t.fee ?? 0n;
  const gross = t.amount + fee;
  await insertTransaction(trx, {
    id: t.id,
    merchantId,
    environment: t.environment,
    type: t.kind,
    status: (t.status ?? "processing") as never,
    currencyType: t.network,
    amount: gross,
    fee,
    walletAddress: t.to,
  });
  if (t.hold === false) return;
  await fund(trx, merchantId, t.environment, t.network, gross, t.id);
  const r = await holdFunds(
    trx,
    { merchantId, environment: t.environment, currencyType: t.network, transactionId: t.id },
    gross,
  );
  if (r.status !== "posted") throw new Error(`hold of ${t.id}: ${r.status}`);
}
