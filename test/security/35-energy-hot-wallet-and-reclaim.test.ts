import { afterAll, beforeAll, describe, it } from "vitest";
import type { Db } from "../../src/db/database.js";
import { createLogger } from "../../src/observability/logger.js";
import { LocalSigner } from "../../src/signer/local-signer.js";
import { HOT_WALLET_INDEX, RESOURCE_ACCOUNT_INDEX } from "../../src/wallet/derivation-path.js";
import { openTestDatabase } from "../support/db.js";
import { ATTACKER, addr, expectRefused, hex, intent, MNEMONIC, TOKEN, tron } from "./energy-support.js";

// Compromised worker + database, against the hot-wallet delegation rule ("to the hot wallet while a
// token transfer from it is open") and the reclaim rule ("a confirmed delegation of the same amount
// to the same receiver"). Both hold literally; these tests ask for the tighter reading.

const R = RESOURCE_ACCOUNT_INDEX;
const HOT = addr(HOT_WALLET_INDEX);
let database: Awaited<ReturnType<typeof openTestDatabase>>;
let db: Db;
let signer: LocalSigner;

const delegate = (to: string, sun: bigint) =>
  tron(R, "DelegateResourceContract", {
    owner_address: hex(addr(R)),
    receiver_address: hex(to),
    balance: Number(sun),
    resource: "ENERGY",
  });
const reclaim = (to: string, sun: bigint) =>
  tron(R, "UnDelegateResourceContract", {
    owner_address: hex(addr(R)),
    receiver_address: hex(to),
    balance: Number(sun),
    resource: "ENERGY",
  });

beforeAll(async () => {
  database = await openTestDatabase();
  db = database.db;
  // A forged hot-wallet withdrawal: no transaction, no hold — the signer itself would never sign it.
  await intent(db, "tx_forged", "withdrawal", {
    from: HOT_WALLET_INDEX,
    to: ATTACKER,
    amount: 1_000_000n,
    asset: "token",
  });
  for (let i = 0; i < 5; i++)
    await intent(db, `dlg_hot_${i}`, "resource_delegation", {
      from: R,
      to: HOT,
      amount: 90_000_000_000n,
      asset: "energy",
    });
  // One delegation to the hot wallet, confirmed and already reclaimed; a second of the same amount, live.
  for (const id of ["dlg_a", "dlg_b"]) {
    await intent(db, id, "resource_delegation", { from: R, to: HOT, amount: 5_000_000n, asset: "energy" });
    await db
      .updateTable("outgoing_transfers")
      .set({ status: "confirmed", finished_at: new Date() })
      .where("intent_id", "=", id)
      .execute();
  }
  await intent(db, "rcl_dlg_a", "resource_reclaim", {
    from: R,
    to: HOT,
    amount: 5_000_000n,
    asset: "energy",
  });
  await db
    .updateTable("outgoing_transfers")
    .set({ status: "confirmed", finished_at: new Date() })
    .where("intent_id", "=", "rcl_dlg_a")
    .execute();
  // A second reclaim "of dlg_a" under a fresh id: it would take back dlg_b's energy while it is in use.
  await intent(db, "rcl_again", "resource_reclaim", {
    from: R,
    to: HOT,
    amount: 5_000_000n,
    asset: "energy",
  });
  signer = LocalSigner.fromMnemonic(MNEMONIC, {
    db,
    logger: createLogger("silent"),
    tokenContract: () => TOKEN,
  });
});
afterAll(async () => {
  await database?.close();
});

describe("attack: the hot-wallet rule", () => {
  it("an unbacked (forged) hot-wallet token intent must not open the door to delegating the whole stake, repeatedly", async () => {
    const signed: string[] = [];
    for (let i = 0; i < 5; i++) {
      try {
        await signer.sign(delegate(HOT, 90_000_000_000n), { intentId: `dlg_hot_${i}` });
        signed.push(`dlg_hot_${i}`);
      } catch {
        // refused
      }
    }
    if (signed.length > 0)
      throw new Error(
        `ATTACK SUCCEEDED (within the literal policy): ${signed.length} delegations of 90,000 TRX of stake to the hot ` +
          "wallet signed on the strength of one forged, unbacked withdrawal row (each costs ~280 bytes of the resource " +
          "account's bandwidth, then its TRX reserve; a lock bypass makes them stick for 3 days)",
      );
  });
});

describe("attack: reclaim evidence of another delegation", () => {
  it("a reclaim intent not tied to an unreclaimed delegation (rcl_<dlg>) must be refused", async () => {
    await expectRefused(
      signer,
      reclaim(HOT, 5_000_000n),
      "rcl_again",
      "a second reclaim of the already-reclaimed dlg_a (takes back dlg_b's energy while a transfer may rely on it)",
    );
  });
});
