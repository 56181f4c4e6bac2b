import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ResourceReads, SignedChainWriter } from "../../src/chains/index.js";
import type { Db } from "../../src/db/database.js";
import { EnergyEngine, type EnergyPolicy } from "../../src/energy/index.js";
import { createMerchantWithKeys } from "../../src/merchants/index.js";
import { createLogger } from "../../src/observability/logger.js";
import { dueReclaims } from "../../src/sender/resource-reads.js";
import { LocalSigner } from "../../src/signer/local-signer.js";
import type { SignRequest } from "../../src/signer/protocol.js";
import { Sweeper } from "../../src/sweep/sweeper.js";
import { HOT_WALLET_INDEX } from "../../src/wallet/derivation-path.js";
import { openTestDatabase } from "../support/db.js";
import { ATTACKER, addr, hex, MNEMONIC, TOKEN, TRC, tron } from "./energy-support.js";

// The whole honest pipeline (sweeper + energy engine + signer; the chain faked, no anvil) against an
// attacker who holds only the api's database role: it may insert watched_addresses rows (see
// api-role.test.ts). It records its OWN address at an unused index, then sends USDT there; the
// honest watcher records and hands off that transfer (simulated here by its chain_observations row).
// The honest sweeper then plans that address's sweep with the energy engine.

const logger = createLogger("silent");
const FORGED_INDEX = 7_777;
const TRX = (n: number) => BigInt(n) * 1_000_000n;

let database: Awaited<ReturnType<typeof openTestDatabase>>;
let db: Db;
let signer: LocalSigner;
let engine: EnergyEngine;

const resources: ResourceReads = {
  transferEnergy: async () => ({ needed: 130_285n, available: 0n }),
  bandwidthBurn: async () => 0n,
  accountExists: async () => false,
  delegatable: async () => TRX(100_000),
  stakeFor: async () => TRX(2_000),
  staked: async () => ({ energy: TRX(94_000), bandwidth: TRX(6_000) }),
};
const writer = {
  kind: "signed",
  network: TRC,
  resources,
  nativeBalance: async () => 0n,
  tokenBalance: async () => 100_000_000n,
  minedNonce: async () => null,
  tokenTransferCost: async () => TRX(30),
  prepare: async () => {
    throw new Error("not used");
  },
  broadcast: async () => {
    throw new Error("not used");
  },
  check: async () => {
    throw new Error("not used");
  },
} as unknown as SignedChainWriter & { resources: ResourceReads };

const policy: EnergyPolicy = {
  maxWaitMs: 3_600_000,
  burnCeilingSun: 1n,
  reserveSun: TRX(10),
  bandwidthStakePercent: 6,
};

/** The transaction the sender would build for an intent row. */
function txOf(row: {
  kind: string;
  from_index: number | string;
  to_address: string;
  amount: string;
}): SignRequest {
  const from = Number(row.from_index);
  const owner = hex(addr(from));
  if (row.kind === "gas_topup")
    return tron(from, "TransferContract", {
      owner_address: owner,
      to_address: hex(row.to_address),
      amount: Number(row.amount),
    });
  if (row.kind === "resource_delegation")
    return tron(from, "DelegateResourceContract", {
      owner_address: owner,
      receiver_address: hex(row.to_address),
      balance: Number(row.amount),
      resource: "ENERGY",
    });
  const data = `a9059cbb${"0".repeat(24)}${hex(row.to_address).slice(2)}${BigInt(row.amount).toString(16).padStart(64, "0")}`;
  return tron(from, "TriggerSmartContract", { owner_address: owner, contract_address: hex(TOKEN), data });
}

beforeAll(async () => {
  database = await openTestDatabase();
  db = database.db;
  const merchantId = (
    await createMerchantWithKeys(db, { email: "attack-chain@example.com", companyName: "A" })
  ).id;
  // What the api role can write: a deposit address row whose address is the attacker's own.
  await db
    .insertInto("watched_addresses")
    .values({
      network: TRC,
      environment: "sandbox",
      address: ATTACKER,
      derivation_index: FORGED_INDEX,
      merchant_id: merchantId,
      purpose: "wallet",
      reference_id: null,
      watch_until: null,
    })
    .execute();
  // What the honest watcher writes once the attacker's 100 USDT to its own address confirms.
  await db
    .insertInto("chain_observations")
    .values({
      id: "obs_attacker",
      network: TRC,
      environment: "sandbox",
      address: ATTACKER,
      from_address: ATTACKER,
      tx_hash: "aa".repeat(32),
      log_index: 0,
      block_number: 1,
      block_hash: "0x00",
      amount: 100_000_000n,
      status: "handed_off",
      handed_off_at: new Date(Date.now() - 1_000),
    } as never)
    .execute();
  signer = LocalSigner.fromMnemonic(MNEMONIC, { db, logger, tokenContract: () => TOKEN });
  const clock = { now: () => Date.now() };
  engine = new EnergyEngine({
    db,
    network: TRC,
    environment: "sandbox",
    writer,
    address: addr,
    policy,
    logger,
    clock,
  });
  const sweeper = new Sweeper({
    db,
    network: TRC,
    environment: "sandbox",
    writer,
    address: addr,
    threshold: 10_000_000n,
    logger,
    clock,
    energy: engine,
  });
  expect(await sweeper.tick()).toBe(1);
});
afterAll(async () => {
  await database?.close();
});

async function rows() {
  return db
    .selectFrom("outgoing_transfers")
    .select(["intent_id", "kind", "status", "from_index", "to_address", "amount", "after_intent_id"])
    .orderBy("created_at")
    .execute();
}

describe("attack (api role only): the honest sweeper delegates the resource account's energy to the attacker", () => {
  it("the honest signer must not sign the gas top-up or the delegation to an address not derived from our keys", async () => {
    const queued = await rows();
    expect(queued.map((r) => r.kind).sort()).toEqual(["gas_topup", "resource_delegation", "sweep"]);
    const signedFor: string[] = [];
    for (const r of queued) {
      if (r.kind === "sweep") continue;
      try {
        await signer.sign(txOf(r), { intentId: r.intent_id });
        signedFor.push(`${r.kind} of ${r.amount} sun to ${r.to_address}`);
      } catch {
        // refused: the defence held for this step
      }
    }
    if (signedFor.length > 0)
      throw new Error(`ATTACK SUCCEEDED: the honest pipeline got signed: ${signedFor.join("; ")}`);
  });

  it("the sweep from the forged index is refused by the signer (so it stays open)", async () => {
    const sweep = (await rows()).find((r) => r.kind === "sweep")!;
    await expect(signer.sign(txOf(sweep), { intentId: sweep.intent_id })).rejects.toThrow(
      /policy|owner_address/,
    );
  });

  it("a confirmed delegation whose sweep the signer refuses must still come back (reclaim queued)", async () => {
    // The sender confirms the top-up and the delegation on chain; the sweep stays queued
    // (signer_rejected) for longer than a transfer may wait for energy (the policy's hour).
    await db
      .updateTable("outgoing_transfers")
      .set({ status: "confirmed", finished_at: new Date(Date.now() - 2 * policy.maxWaitMs) })
      .where("kind", "in", ["gas_topup", "resource_delegation"])
      .execute();
    for (let i = 0; i < 3; i++) await engine.tick();
    const due = await dueReclaims(
      db,
      { network: TRC, environment: "sandbox" },
      { index: HOT_WALLET_INDEX, address: addr(HOT_WALLET_INDEX) },
      { now: new Date(), staleMs: policy.maxWaitMs },
    );
    const reclaims = (await rows()).filter((r) => r.kind === "resource_reclaim");
    const delegation = (await rows()).find((r) => r.kind === "resource_delegation")!;
    if (reclaims.length === 0 && due.length === 0)
      throw new Error(
        `ATTACK SUCCEEDED: delegation ${delegation.intent_id} (${delegation.amount} sun of stake to ${delegation.to_address}) ` +
          "is never reclaimed: its sweep is open forever (signer refused), dueReclaims() returns nothing",
      );
  });
});
