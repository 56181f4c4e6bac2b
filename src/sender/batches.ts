import { sql } from "kysely";
import type { Db } from "../db/database.js";
import { GAS_TANK_INDEX } from "../wallet/index.js";
import { requestTransfer, type TransferIntent } from "./intents.js";
import { checkTransition, OPEN_STATES } from "./transfer-states.js";
import type { SenderScope } from "./transfer-store.js";

/**
 * The SQL of batched sweeps (issue #39, migration 0036; docs/decisions/evm-sweeps.md). Each deposit
 * address of a batch keeps its own `sweep` intent, `carried`: the sender never signs it on its own.
 * The sweeper assembles the carried sweeps without a carrier into a `sweep_batch` intent of the gas
 * tank (`assembleCarrier`); the sender signs the carrier and marks its sweeps signed in the same
 * transaction, and finishes them with it, each confirmed only when the carrier's receipt holds its
 * own Transfer log.
 */

/** A sweep of a batch, in the carrier's order. */
export interface CarriedSweep {
  intent_id: string;
  from_index: number;
  amount: string;
  status: string;
}

/** Queues a sweep carried by a batch (in the caller's transaction, like `requestTransfer`). */
export async function requestCarriedSweep(
  trx: Db,
  intent: Omit<TransferIntent, "kind" | "asset" | "afterIntentId">,
): Promise<void> {
  await requestTransfer(trx, { ...intent, kind: "sweep" });
  await trx
    .updateTable("outgoing_transfers")
    .set({ carried: true })
    .where("intent_id", "=", intent.intentId)
    .where("status", "=", "queued")
    .execute();
}

/** The carried sweeps of the chain that wait for a carrier (queued, in no batch yet). */
function waitingForCarrier(db: Db, scope: SenderScope) {
  return db
    .selectFrom("outgoing_transfers")
    .where("network", "=", scope.network)
    .where("environment", "=", scope.environment)
    .where("carried", "=", true)
    .where("carrier_intent_id", "is", null)
    .where("status", "=", "queued");
}

/** Carried sweeps not in a batch yet, oldest first (their ids and amounts). */
export async function uncarriedSweeps(
  db: Db,
  scope: SenderScope,
  limit: number,
): Promise<{ intent_id: string; amount: string }[]> {
  return waitingForCarrier(db, scope)
    .select(["intent_id", "amount"])
    .orderBy("created_at")
    .orderBy("intent_id")
    .limit(limit)
    .execute();
}

/**
 * In `trx`: locks those of `itemIds` still waiting for a carrier (another worker's are skipped),
 * queues the carrier (from the gas tank to the hot wallet, the sum of their amounts, after
 * `afterIntentId` — the sweeper's deployment — when given) and links them to it. Returns how many it
 * carries (0: nothing queued).
 */
export async function assembleCarrier(
  trx: Db,
  scope: SenderScope,
  carrier: { intentId: string; hotWallet: string; itemIds: readonly string[]; afterIntentId?: string },
): Promise<number> {
  if (carrier.itemIds.length === 0) return 0;
  const locked = await waitingForCarrier(trx, scope)
    .select(["intent_id", "amount"])
    .where("intent_id", "in", [...carrier.itemIds])
    .forUpdate()
    .skipLocked()
    .execute();
  if (locked.length === 0) return 0;
  const total = locked.reduce((sum, r) => sum + BigInt(r.amount), 0n);
  await requestTransfer(trx, {
    intentId: carrier.intentId,
    kind: "sweep_batch",
    network: scope.network,
    environment: scope.environment,
    asset: "token",
    fromIndex: GAS_TANK_INDEX,
    to: carrier.hotWallet,
    amount: total,
    ...(carrier.afterIntentId ? { afterIntentId: carrier.afterIntentId } : {}),
  });
  await trx
    .updateTable("outgoing_transfers")
    .set({ carrier_intent_id: carrier.intentId })
    .where(
      "intent_id",
      "in",
      locked.map((r) => r.intent_id),
    )
    .execute();
  return locked.length;
}

/** The sweeps a carrier carries, in its order (the order of its `sweepMany` call). */
export async function carriedSweeps(db: Db, carrierId: string): Promise<CarriedSweep[]> {
  return db
    .selectFrom("outgoing_transfers")
    .select(["intent_id", "from_index", "amount", "status"])
    .where("carrier_intent_id", "=", carrierId)
    .orderBy("created_at")
    .orderBy("intent_id")
    .execute();
}

/** queued → signed for a carrier's sweeps, in the transaction that signs the carrier. */
export async function markCarriedSigned(
  trx: Db,
  items: readonly CarriedSweep[],
  from: (index: number) => string,
  now: Date,
): Promise<void> {
  for (const item of items) {
    checkTransition(item.status, "signed");
    await trx
      .updateTable("outgoing_transfers")
      .set({ status: "signed", from_address: from(item.from_index), updated_at: now })
      .where("intent_id", "=", item.intent_id)
      .where("status", "=", "queued")
      .execute();
  }
}

/** Whether a deployment of the sweeper is open on this chain (one at a time). */
export async function openSweeperDeploy(db: Db, scope: SenderScope): Promise<string | null> {
  const row = await db
    .selectFrom("outgoing_transfers")
    .select("intent_id")
    .where("network", "=", scope.network)
    .where("environment", "=", scope.environment)
    .where("kind", "=", "sweeper_deploy")
    .where("status", "in", OPEN_STATES)
    .executeTakeFirst();
  return row?.intent_id ?? null;
}

/**
 * The deployment of the sweeper this chain's batches wait for: the open one, or `deploy` queued now
 * when none is open and `stillMissing()` — the contract's code, read again under the lock — says
 * the contract is not on the chain. Under a transaction-scoped lock per chain: two workers
 * assembling batches at once queue one deployment, not two. A second deployment through CREATE2
 * reverts (its address is taken), and the batches waiting for it fail with it: the lying-provider
 * cluster test saw it. Returns the deployment's intent id, or null when the contract is there.
 */
export async function sweeperDeployToWaitFor(
  db: Db,
  scope: SenderScope,
  deploy: { intentId: string; deployer: string },
  stillMissing: () => Promise<boolean>,
): Promise<{ intentId: string; queued: boolean } | null> {
  return db.transaction().execute(async (trx) => {
    const key = `sweeper-deploy:${scope.network}:${scope.environment}`;
    await sql`select pg_advisory_xact_lock(hashtext(${key}))`.execute(trx);
    const open = await openSweeperDeploy(trx, scope);
    if (open) return { intentId: open, queued: false };
    // A deployment that finished between the caller's first look and this lock shows here.
    if (!(await stillMissing())) return null;
    await requestSweeperDeploy(trx, scope, deploy);
    return { intentId: deploy.intentId, queued: true };
  });
}

/** Queues the deployment of the sweeper of `hotWallet` (through the CREATE2 deployer `deployer`). */
export async function requestSweeperDeploy(
  trx: Db,
  scope: SenderScope,
  deploy: { intentId: string; deployer: string },
): Promise<void> {
  await requestTransfer(trx, {
    intentId: deploy.intentId,
    kind: "sweeper_deploy",
    network: scope.network,
    environment: scope.environment,
    asset: "native",
    fromIndex: GAS_TANK_INDEX,
    to: deploy.deployer,
    amount: 0n,
  });
}

/**
 * Carried sweeps that wait for a carrier while batched sweeps are off (`SWEEP_EIP7702_<NETWORK>`
 * turned to false after a crash left them): failed unsigned (queued → failed), so that their
 * addresses are looked at again and swept the other way. Returns their deposit indexes.
 */
export async function failUncarriedSweeps(trx: Db, scope: SenderScope, now: Date): Promise<number[]> {
  const rows = await waitingForCarrier(trx, scope)
    .select(["intent_id", "from_index", "status"])
    .forUpdate()
    .skipLocked()
    .execute();
  for (const r of rows) {
    checkTransition(r.status, "failed");
    await trx
      .updateTable("outgoing_transfers")
      .set({
        status: "failed",
        reason: "batched sweeps are off (SWEEP_EIP7702); planned again",
        finished_at: now,
        updated_at: now,
      })
      .where("intent_id", "=", r.intent_id)
      .execute();
  }
  return rows.map((r) => Number(r.from_index));
}
