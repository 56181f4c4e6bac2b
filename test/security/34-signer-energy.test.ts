import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Db } from "../../src/db/database.js";
import { createMerchantWithKeys } from "../../src/merchants/index.js";
import { createLogger } from "../../src/observability/logger.js";
import { requestTransfer } from "../../src/sender/intents.js";
import { LocalSigner } from "../../src/signer/local-signer.js";
import { SignerRejectedError, type SignRequest } from "../../src/signer/protocol.js";
import {
  GAS_TANK_INDEX,
  HOT_WALLET_INDEX,
  RESOURCE_ACCOUNT_INDEX,
} from "../../src/wallet/derivation-path.js";
import { openTestDatabase } from "../support/db.js";
import { addr, hex, MNEMONIC, TOKEN, TRC, tron } from "./energy-support.js";

// Issue #38: the energy engine's resource account stakes, delegates and takes back (TRON Stake 2.0),
// so the signer gained exactly those shapes — and nothing wider. Only the resource account's key
// signs them, and that key signs nothing else; a stake is for itself; a delegation is of energy,
// never locked, and goes only to the deposit address whose open sweep waits for exactly it, or to
// the hot wallet while a token transfer from it is open; a reclaim only of a confirmed delegation.

const DEPOSIT = 300;
const IDLE_DEPOSIT = 301;
const OUTSIDE = "TJRabPrwbZy45sbavfcjinPJC18kjpRTv8";
const SUN = 7_000_000n;

let database: Awaited<ReturnType<typeof openTestDatabase>>;
let db: Db;
let signer: LocalSigner;

const delegate = (from: number, to: string, o: { sun?: bigint; resource?: string; lock?: boolean } = {}) =>
  tron(from, "DelegateResourceContract", {
    owner_address: hex(addr(from)),
    receiver_address: hex(to),
    balance: Number(o.sun ?? SUN),
    ...(o.resource === "BANDWIDTH" ? {} : { resource: o.resource ?? "ENERGY" }),
    ...(o.lock ? { lock: true, lock_period: 86_400 } : {}),
  });
const reclaim = (from: number, to: string, sun = SUN) =>
  tron(from, "UnDelegateResourceContract", {
    owner_address: hex(addr(from)),
    receiver_address: hex(to),
    balance: Number(sun),
    resource: "ENERGY",
  });
const stake = (from: number, sun = SUN) =>
  tron(from, "FreezeBalanceV2Contract", {
    owner_address: hex(addr(from)),
    frozen_balance: Number(sun),
    resource: "ENERGY",
  });

async function intent(
  intentId: string,
  kind: "resource_delegation" | "resource_reclaim" | "resource_stake" | "sweep" | "gas_topup",
  o: {
    from: number;
    to: string;
    amount?: bigint;
    asset?: "energy" | "bandwidth" | "token" | "native";
    after?: string;
  },
) {
  await db.transaction().execute((trx) =>
    requestTransfer(trx, {
      intentId,
      kind,
      network: TRC,
      environment: "sandbox",
      asset: o.asset ?? "energy",
      fromIndex: o.from,
      to: o.to,
      amount: o.amount ?? SUN,
      ...(o.after ? { afterIntentId: o.after } : {}),
    }),
  );
}

beforeAll(async () => {
  database = await openTestDatabase();
  db = database.db;
  const merchant = await createMerchantWithKeys(db, { email: "energy-signer@example.com", companyName: "E" });
  for (const index of [DEPOSIT, IDLE_DEPOSIT])
    await db
      .insertInto("watched_addresses")
      .values({
        network: TRC,
        environment: "sandbox",
        address: addr(index),
        derivation_index: index,
        merchant_id: merchant.id,
        purpose: "wallet",
        reference_id: null,
        watch_until: null,
      })
      .execute();
  const R = RESOURCE_ACCOUNT_INDEX;
  // The delegation a sweep from DEPOSIT waits for.
  await intent("dlg_ok", "resource_delegation", { from: R, to: addr(DEPOSIT) });
  await intent("swp_ok", "sweep", {
    from: DEPOSIT,
    to: addr(HOT_WALLET_INDEX),
    asset: "token",
    amount: 20_000_000n,
    after: "dlg_ok",
  });
  // Delegations no sweep waits for: to an idle deposit address, to an outside address, to the hot
  // wallet with no token transfer of it open.
  await intent("dlg_idle", "resource_delegation", { from: R, to: addr(IDLE_DEPOSIT) });
  await intent("dlg_out", "resource_delegation", { from: R, to: OUTSIDE });
  await intent("dlg_hot", "resource_delegation", { from: R, to: addr(HOT_WALLET_INDEX) });
  // The same shapes asked of other keys than the resource account's.
  await intent("dlg_from_hot", "resource_delegation", { from: HOT_WALLET_INDEX, to: addr(DEPOSIT) });
  await intent("dlg_from_tank", "resource_delegation", { from: GAS_TANK_INDEX, to: addr(DEPOSIT) });
  // Bandwidth is not delegated.
  await intent("dlg_bw", "resource_delegation", { from: R, to: addr(DEPOSIT), asset: "bandwidth" });
  await intent("swp_bw", "sweep", {
    from: DEPOSIT,
    to: addr(HOT_WALLET_INDEX),
    asset: "token",
    amount: 1n,
    after: "dlg_bw",
  });
  // A reclaim of a confirmed delegation, and one of a delegation never confirmed.
  await intent("dlg_done", "resource_delegation", { from: R, to: addr(IDLE_DEPOSIT), amount: 9_000_000n });
  await db
    .updateTable("outgoing_transfers")
    .set({ status: "confirmed", finished_at: new Date() })
    .where("intent_id", "=", "dlg_done")
    .execute();
  await intent("rcl_dlg_done", "resource_reclaim", { from: R, to: addr(IDLE_DEPOSIT), amount: 9_000_000n });
  await intent("rcl_none", "resource_reclaim", { from: R, to: addr(DEPOSIT), amount: 8_000_000n });
  // A reclaim naming a delegation that was never confirmed.
  await intent("dlg_open", "resource_delegation", { from: R, to: addr(IDLE_DEPOSIT), amount: 8_000_000n });
  await intent("rcl_dlg_open", "resource_reclaim", { from: R, to: addr(IDLE_DEPOSIT), amount: 8_000_000n });
  // Stakes: for itself; and the resource account's TRX to elsewhere as a coin transfer.
  await intent("stk_ok", "resource_stake", { from: R, to: addr(R) });
  await intent("stk_other", "resource_stake", { from: R, to: OUTSIDE });
  await intent("gas_from_resource", "gas_topup", {
    from: R,
    to: addr(DEPOSIT),
    asset: "native",
    amount: 5_000_000n,
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

async function refusal(request: SignRequest, intentId: string): Promise<string> {
  const err = await signer.sign(request, { intentId }).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SignerRejectedError);
  return (err as Error).message;
}

describe("the signer's policy for the energy engine (issue #38)", () => {
  it("signs what the engine needs: a delegation a sweep waits for, a reclaim of a confirmed one, a stake for itself", async () => {
    for (const [request, id] of [
      [delegate(RESOURCE_ACCOUNT_INDEX, addr(DEPOSIT)), "dlg_ok"],
      [reclaim(RESOURCE_ACCOUNT_INDEX, addr(IDLE_DEPOSIT), 9_000_000n), "rcl_dlg_done"],
      [stake(RESOURCE_ACCOUNT_INDEX), "stk_ok"],
    ] as const) {
      const signed = await signer.sign(request, { intentId: id });
      expect(signed.hash).toBe(request.chain === "tron" ? request.transaction.txID : "");
    }
  });

  const R = RESOURCE_ACCOUNT_INDEX;
  const refused: [string, () => SignRequest, string, RegExp][] = [
    [
      "a delegation no sweep waits for (an idle deposit address)",
      () => delegate(R, addr(IDLE_DEPOSIT)),
      "dlg_idle",
      /no open sweep waits/,
    ],
    ["a delegation to an outside address", () => delegate(R, OUTSIDE), "dlg_out", /no open sweep waits/],
    [
      "a delegation to the hot wallet with none of its transfers open",
      () => delegate(R, addr(HOT_WALLET_INDEX)),
      "dlg_hot",
      /no payment from the hot wallet with its evidence/,
    ],
    ["a locked delegation", () => delegate(R, addr(DEPOSIT), { lock: true }), "dlg_ok", /never locked/],
    [
      "a delegation of bandwidth",
      () => delegate(R, addr(DEPOSIT), { resource: "BANDWIDTH" }),
      "dlg_bw",
      /only energy is delegated/,
    ],
    [
      "a delegation of more than its intent",
      () => delegate(R, addr(DEPOSIT), { sun: SUN + 1n }),
      "dlg_ok",
      /does not match its intent/,
    ],
    [
      "a delegation to another address than its intent's",
      () => delegate(R, addr(IDLE_DEPOSIT)),
      "dlg_ok",
      /does not match its intent/,
    ],
    [
      "a delegation from the hot wallet's key",
      () => delegate(HOT_WALLET_INDEX, addr(DEPOSIT)),
      "dlg_from_hot",
      /only the resource account/,
    ],
    [
      "a delegation from the gas tank's key",
      () => delegate(GAS_TANK_INDEX, addr(DEPOSIT)),
      "dlg_from_tank",
      /only the resource account/,
    ],
    [
      "a delegation from a deposit address's key",
      () => delegate(DEPOSIT, addr(IDLE_DEPOSIT)),
      "dlg_ok",
      /only the resource account/,
    ],
    [
      "a reclaim whose intent names no delegation",
      () => reclaim(R, addr(DEPOSIT), 8_000_000n),
      "rcl_none",
      /does not name its delegation/,
    ],
    [
      "a reclaim naming a delegation never confirmed",
      () => reclaim(R, addr(IDLE_DEPOSIT), 8_000_000n),
      "rcl_dlg_open",
      /no confirmed delegation/,
    ],
    [
      "a delegation carried by a reclaim intent",
      () => delegate(R, addr(IDLE_DEPOSIT), { sun: 9_000_000n }),
      "rcl_dlg_done",
      /does not carry a resource_reclaim/,
    ],
    [
      "a stake carried by a delegation intent",
      () => stake(R),
      "dlg_ok",
      /does not match its intent|does not carry/,
    ],
    [
      "a stake for another address",
      () => stake(R),
      "stk_other",
      /does not match its intent|stakes only for itself/,
    ],
    [
      "the resource account's TRX as a coin transfer",
      () =>
        tron(R, "TransferContract", {
          owner_address: hex(addr(R)),
          to_address: hex(addr(DEPOSIT)),
          amount: 5_000_000,
        }),
      "gas_from_resource",
      /only the resource account stakes or delegates, and it sends nothing else/,
    ],
    [
      "a Stake 2.0 contract the engine never sends (unfreeze)",
      () =>
        tron(R, "UnfreezeBalanceV2Contract", {
          owner_address: hex(addr(R)),
          unfreeze_balance: 5_000_000,
          resource: "ENERGY",
        }),
      "stk_ok",
      /only token transfers, native transfers and the energy engine's Stake 2.0/,
    ],
  ];
  for (const [what, request, intentId, reason] of refused) {
    it(`refuses: ${what}`, async () => {
      expect(await refusal(request(), intentId)).toMatch(reason);
    });
  }
});
