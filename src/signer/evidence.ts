import { sql } from "kysely";
import { findMerchantOwnerId } from "../auth/index.js";
import { normalizeAddress } from "../chains/index.js";
import type { Db } from "../db/database.js";
import { returnBacking, returnDestination } from "../deposits/index.js";
import type { CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { approvalsRequired } from "../domain/withdrawal.js";
import { holdState } from "../ledger/index.js";
import { findApprovalThresholds, merchantKeyPairs } from "../merchants/index.js";
import { findAnyTransaction, findPaymentBacking } from "../transactions/index.js";
import { HOT_WALLET_INDEX } from "../wallet/index.js";
import { hasHandedOffDeposit, recordedAddressAt } from "../watcher/index.js";

/**
 * The evidence behind an intent (issue #34 finding 1), read by the signer itself: an intent row
 * alone proves nothing (any role that can write `outgoing_transfers` could have written it). A
 * withdrawal or payout is paid only when the rows its flow writes in one transaction with the intent
 * all agree — the transaction (its kind, chain, a state that may be paid, destination, net amount),
 * the ledger hold of its gross amount on the merchant's `held` account, not closed yet, and for a
 * withdrawal request the approvals it needed (four-eyes: distinct people). A sweep comes from a
 * deposit address with a recorded confirmed deposit. Each check returns the reason for a
 * refusal, or null. Plain reads of the owning features' tables, which each owner exports (a read or
 * a fragment joined here) and the signer runs on its own connection: it trusts no other code's
 * answer, and writes nothing.
 */

/** What the intent row says (already matched against the signed transaction). */
export interface PaymentIntent {
  id: string;
  kind: "withdrawal" | "payout";
  network: CurrencyType;
  environment: Environment;
  /** Normalised destination. */
  to: string;
  amount: bigint;
}

/** The merchants' default auto-approve threshold (merchants/settings.ts: a missing currency means it). */
const DEFAULT_AUTO_APPROVE_THRESHOLD = 1_000_000_000n;

export async function paymentEvidence(db: Db, intent: PaymentIntent): Promise<string | null> {
  const { kind } = intent;
  const tx = await findPaymentBacking(db, intent.id);
  if (!tx) return "no withdrawal or payout backs this intent";
  if (tx.type !== kind) return `the backing transaction is a ${tx.type}, not a ${kind}`;
  if (tx.environment !== intent.environment || tx.currency_type !== intent.network)
    return `the backing ${kind} is of another chain`;
  // `processing`: approved (or auto) and being sent. pending = not approved yet; rejected, failed,
  // completed = never (again).
  if (tx.status !== "processing") return `the backing ${kind} is ${tx.status}, not processing`;
  if (!tx.wallet_address || !sameAddress(intent.network, tx.wallet_address, intent.to))
    return `the destination differs from the backing ${kind}'s`;
  const gross = BigInt(tx.amount);
  const net = gross - BigInt(tx.fee);
  if (net !== intent.amount || BigInt(tx.net_amount) !== net)
    return `the amount is not the backing ${kind}'s net amount`;
  const hold = await holdState(db, tx.id, tx.merchant_id, intent.environment, intent.network);
  if (hold.closed) return `the ledger hold of the backing ${kind} is already closed`;
  if (hold.held !== gross) return `no ledger hold of the backing ${kind}'s amount is posted`;
  if (kind === "withdrawal") return approvalEvidence(db, tx.id, tx.merchant_id, intent, gross);
  return null;
}

/**
 * A withdrawal request's approvals (docs/decisions/team-accounts.md#four-eyes): none when it was executed at once (at or under
 * the auto-approve threshold), else those of the distinct people four-eyes asks for — a member's
 * own, or through the API-key channel its key pair's member (its creator, or the merchant's owner
 * for a pair issued without one). Thresholds as they are now: the rule in force when money moves.
 */
async function approvalEvidence(
  db: Db,
  transactionId: string,
  merchantId: string,
  intent: PaymentIntent,
  gross: bigint,
): Promise<string | null> {
  const settings = await findApprovalThresholds(db, merchantId, intent.environment);
  const units = (v: string | undefined) => (v !== undefined && /^\d+$/.test(v) ? BigInt(v) : undefined);
  const auto = units(settings?.auto_approve_threshold?.[intent.network]) ?? DEFAULT_AUTO_APPROVE_THRESHOLD;
  const dual = units(settings?.dual_approval_threshold?.[intent.network]) ?? null;
  const rows = await db
    .selectFrom("withdrawal_approvals as w")
    .leftJoin(merchantKeyPairs(db, merchantId).as("k"), (j) =>
      j.onRef("k.id", "=", "w.actor_id").on("w.actor_type", "=", "api_key"),
    )
    .select(["w.approver", "w.actor_type", "w.actor_id", "k.created_by"])
    .where("w.transaction_id", "=", transactionId)
    .execute();
  if (rows.length === 0) {
    if (gross <= auto) return null;
    return "the withdrawal is above the auto-approve threshold and has no approval";
  }
  let owner: string | null | undefined;
  const people = new Set<string>();
  for (const r of rows) {
    // `user:<id>`: a member's own approval, or a key pair's recorded as its member's.
    if (r.approver.startsWith("user:")) people.add(r.approver.slice("user:".length));
    else if (r.actor_type === "user") people.add(r.actor_id);
    else if (r.created_by) people.add(r.created_by);
    else {
      // The API-key channel of a pair acting for no member: the merchant's owner, whoever it is.
      owner ??= await findMerchantOwnerId(db, merchantId);
      people.add(owner ?? "api_key");
    }
  }
  const required = approvalsRequired(dual, gross);
  if (people.size < required)
    return `four-eyes: approved by ${people.size} of the ${required} distinct people required`;
  return null;
}

/**
 * A sweep comes from a deposit address with a recorded confirmed deposit (a transfer the watcher
 * stored and handed off). Its amount is the address's token balance, which is not bounded by
 * what was recorded (a transfer after the address stopped being watched is on-chain too): it goes
 * only to our own hot wallet, so no amount check is needed for money to stay ours.
 */
export async function sweepEvidence(
  db: Db,
  intent: { network: CurrencyType; environment: Environment; from: string },
): Promise<string | null> {
  const credit = await hasHandedOffDeposit(db, intent.network, intent.environment, intent.from);
  return credit ? null : "no confirmed deposit to this address is recorded";
}

/**
 * A held deposit's return (issue #40): the intent is the one its decision recorded, the deposit is
 * `returned`, at this very address and chain, and the transfer sends exactly what arrived to the
 * sender of the transfer the deposit was made of. Null when all agree, else what is missing.
 */
export async function returnEvidence(
  db: Db,
  intent: {
    intentId: string;
    network: CurrencyType;
    environment: Environment;
    from: string;
    to: string;
    amount: bigint;
  },
): Promise<string | null> {
  const backing = await returnBacking(db, intent.intentId);
  if (backing?.action !== "return") return "no decision to return a held deposit names this transfer";
  const t = await findAnyTransaction(db, backing.transactionId);
  if (t?.type !== "deposit" || t.status !== "returned") return "the deposit is not being returned";
  if (t.currencyType !== intent.network || t.environment !== intent.environment)
    return "the deposit is of another chain";
  if (!t.walletAddress || !sameAddress(intent.network, t.walletAddress, intent.from))
    return "the deposit was not paid to this address";
  if (t.amount !== intent.amount) return "the amount is not what arrived";
  const sender = await returnDestination(db, t).catch(() => null);
  if (!sender || !sameAddress(intent.network, sender, intent.to))
    return "the recipient is not the deposit's sender";
  return null;
}

function sameAddress(network: CurrencyType, a: string, b: string): boolean {
  try {
    return normalizeAddress(network, a) === normalizeAddress(network, b);
  } catch {
    return false;
  }
}

/** A resource intent of the energy engine (issue #38), as the signer decoded it. */
export interface ResourceIntent {
  network: CurrencyType;
  environment: Environment;
  /** Normalised receiver. */
  to: string;
  amount: bigint;
  asset: "energy" | "bandwidth";
}

/**
 * A delegation (issue #38) to a deposit address goes only where a sweep of ours is about to spend
 * it: the open sweep that waits for exactly this delegation (its `after_intent_id`), from a
 * recorded deposit address of this chain that is the signer's own key at that index (`addressAt`:
 * derived by the signer, never the database's word alone: outside review), and the receiver is that
 * address. Energy only: bandwidth is not delegated. Null when that holds, else what is missing.
 */
export async function delegationEvidence(
  db: Db,
  intent: ResourceIntent & { intentId: string },
  addressAt: (index: number) => string,
): Promise<string | null> {
  if (intent.asset !== "energy") return "only energy is delegated";
  const sweep = await db
    .selectFrom("outgoing_transfers")
    .select(["from_index"])
    .where("after_intent_id", "=", intent.intentId)
    .where("kind", "=", "sweep")
    .where("network", "=", intent.network)
    .where("environment", "=", intent.environment)
    .where("status", "in", OPEN)
    .executeTakeFirst();
  if (!sweep) return "no open sweep waits for this delegation";
  const index = Number(sweep.from_index);
  const recorded = await recordedAddressAt(db, intent.network, intent.environment, index);
  if (!recorded || !sameAddress(intent.network, recorded, intent.to))
    return "the delegation does not go to the address of the sweep that waits for it";
  if (!sameAddress(intent.network, addressAt(index), intent.to))
    return "the sweep's address is not the signer's own key at its index";
  return null;
}

/** The token transfers from the hot wallet still open (the energy engine delegates for them). */
export async function openHotWalletPayments(
  db: Db,
  scope: { network: CurrencyType; environment: Environment },
  limit = 20,
) {
  const rows = await db
    .selectFrom("outgoing_transfers")
    .select(["intent_id", "kind", "to_address", "amount"])
    .where("network", "=", scope.network)
    .where("environment", "=", scope.environment)
    .where("from_index", "=", HOT_WALLET_INDEX)
    .where("asset", "=", "token")
    .where("status", "in", OPEN)
    .orderBy("created_at")
    .limit(limit)
    .execute();
  return rows.map((r) => ({ ...r, amount: BigInt(r.amount) }));
}

/** Delegations to `to` other than `intentId` still open (the engine asks for one at a time). */
export async function otherOpenDelegations(db: Db, intent: ResourceIntent & { intentId: string }) {
  const row = await db
    .selectFrom("outgoing_transfers")
    .select("intent_id")
    .where("network", "=", intent.network)
    .where("environment", "=", intent.environment)
    .where("kind", "=", "resource_delegation")
    .where("to_address", "=", intent.to)
    .where("intent_id", "<>", intent.intentId)
    .where("status", "in", OPEN)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/** The delegation a reclaim intent names: `rcl_<delegation>` or a retry `rcl_<delegation>_<n>`. */
const RECLAIM_ID = /^rcl_(dlg_[0-9A-Za-z]{1,40})(?:_[1-9][0-9]?)?$/;

/**
 * Taking a delegation back (issue #38): the reclaim's intent id names its delegation, which is a
 * confirmed delegation of this resource and amount to this receiver, and which no other reclaim has
 * taken back yet (TRON takes back from the sum delegated to a receiver: a second reclaim would
 * take another live delegation: outside review).
 */
export async function reclaimEvidence(
  db: Db,
  intent: ResourceIntent & { intentId: string },
): Promise<string | null> {
  const delegationId = RECLAIM_ID.exec(intent.intentId)?.[1];
  if (!delegationId) return "a reclaim's intent does not name its delegation";
  const d = await db
    .selectFrom("outgoing_transfers")
    .select(["kind", "status", "network", "environment", "asset", "to_address", "amount"])
    .where("intent_id", "=", delegationId)
    .executeTakeFirst();
  if (
    d?.kind !== "resource_delegation" ||
    d.status !== "confirmed" ||
    d.network !== intent.network ||
    d.environment !== intent.environment ||
    d.asset !== intent.asset ||
    BigInt(d.amount) !== intent.amount ||
    !sameAddress(intent.network, d.to_address, intent.to)
  )
    return "no confirmed delegation of this amount to this receiver is named";
  const taken = await db
    .selectFrom("outgoing_transfers")
    .select("intent_id")
    .where("kind", "=", "resource_reclaim")
    .where(sql<boolean>`starts_with(intent_id, ${`rcl_${delegationId}`})`)
    .where("intent_id", "<>", intent.intentId)
    .where("status", "in", [...OPEN, "confirmed"])
    .limit(1)
    .executeTakeFirst();
  return taken ? "the delegation is already taken back (or being taken back)" : null;
}

const OPEN = ["queued", "signed", "broadcast"] as const;

/** The sweeps a batch's carrier carries (issue #39), in its order (`sender/batches.ts` writes them). */
export async function batchItems(
  db: Db,
  carrierId: string,
): Promise<
  {
    kind: string;
    carried: boolean;
    status: string;
    network: string;
    environment: string;
    from_index: number;
    amount: string;
  }[]
> {
  return db
    .selectFrom("outgoing_transfers")
    .select(["kind", "carried", "status", "network", "environment", "from_index", "amount"])
    .where("carrier_intent_id", "=", carrierId)
    .orderBy("created_at")
    .orderBy("intent_id")
    .execute();
}

/** Whether another deployment of the sweeper (issue #39) of this chain is signed and not final. */
export async function otherOpenDeploys(
  db: Db,
  d: { network: CurrencyType; environment: Environment; intentId: string },
): Promise<boolean> {
  const row = await db
    .selectFrom("outgoing_transfers")
    .select("intent_id")
    .where("network", "=", d.network)
    .where("environment", "=", d.environment)
    .where("kind", "=", "sweeper_deploy")
    .where("status", "in", ["signed", "broadcast"])
    .where("intent_id", "!=", d.intentId)
    .executeTakeFirst();
  return row !== undefined;
}
