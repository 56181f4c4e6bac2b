import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Db } from "../../src/db/database.js";
import { createMerchantWithKeys } from "../../src/merchants/index.js";
import { createLogger } from "../../src/observability/logger.js";
import { LocalSigner } from "../../src/signer/local-signer.js";
import {
  GAS_TANK_INDEX,
  HOT_WALLET_INDEX,
  RESOURCE_ACCOUNT_INDEX,
} from "../../src/wallet/derivation-path.js";
import { openTestDatabase } from "../support/db.js";
import {
  ATTACKER,
  addr,
  decodeDelegation,
  expectRefused,
  hex,
  intent,
  MNEMONIC,
  TOKEN,
  TRC,
  tron,
} from "./energy-support.js";

// Attacks on the signer's Stake 2.0 shapes (issue #38) by a compromised worker + database: it can
// write any outgoing_transfers row and send any HMAC-signed request to the signer. Each test PASSES
// when the signer refuses, FAILS ("ATTACK SUCCEEDED") when it signs.

const R = RESOURCE_ACCOUNT_INDEX;
const DEPOSIT = 300;
const FORGED_INDEX = 5_000;
const SUN = 7_000_000n;

let database: Awaited<ReturnType<typeof openTestDatabase>>;
let db: Db;
let signer: LocalSigner;

const delegateValue = (to: string, extra: Record<string, unknown> = {}, sun = SUN) => ({
  owner_address: hex(addr(R)),
  receiver_address: hex(to),
  balance: Number(sun),
  resource: "ENERGY",
  ...extra,
});

beforeAll(async () => {
  database = await openTestDatabase();
  db = database.db;
  const merchant = await createMerchantWithKeys(db, { email: "attack-energy@example.com", companyName: "A" });
  const watch = (address: string, index: number) =>
    db
      .insertInto("watched_addresses")
      .values({
        network: TRC,
        environment: "sandbox",
        address,
        derivation_index: index,
        merchant_id: merchant.id,
        purpose: "wallet",
        reference_id: null,
        watch_until: null,
      })
      .execute();
  await watch(addr(DEPOSIT), DEPOSIT);
  // The forged deposit address: a watched_addresses row (writable by the worker AND the api role)
  // whose address is the attacker's, not the signer's derivation at that index.
  await watch(ATTACKER, FORGED_INDEX);

  // A legit-looking chain: delegation to DEPOSIT that a sweep waits for.
  await intent(db, "dlg_ok", "resource_delegation", {
    from: R,
    to: addr(DEPOSIT),
    amount: SUN,
    asset: "energy",
  });
  await intent(db, "swp_ok", "sweep", {
    from: DEPOSIT,
    to: addr(HOT_WALLET_INDEX),
    amount: 20_000_000n,
    asset: "token",
    after: "dlg_ok",
  });
  // The forged chain: delegation to the attacker, "waited for" by a sweep from the forged index.
  await intent(db, "dlg_evil", "resource_delegation", {
    from: R,
    to: ATTACKER,
    amount: 50_000_000_000n,
    asset: "energy",
  });
  await intent(db, "swp_evil", "sweep", {
    from: FORGED_INDEX,
    to: addr(HOT_WALLET_INDEX),
    amount: 1n,
    asset: "token",
    after: "dlg_evil",
  });
  await intent(db, "gas_evil", "gas_topup", {
    from: GAS_TANK_INDEX,
    to: ATTACKER,
    amount: 5_000_000n,
    asset: "native",
  });
  // Overflow: an intent above 2^53 sun.
  await intent(db, "dlg_big", "resource_delegation", {
    from: R,
    to: addr(DEPOSIT),
    amount: 9_007_199_254_740_993n,
    asset: "energy",
  });
  await intent(db, "swp_big", "sweep", {
    from: DEPOSIT,
    to: addr(HOT_WALLET_INDEX),
    amount: 1n,
    asset: "token",
    after: "dlg_big",
  });
  await intent(db, "stk_ok", "resource_stake", { from: R, to: addr(R), amount: SUN, asset: "energy" });
  // A confirmed delegation to DEPOSIT and a reclaim intent of it.
  await intent(db, "dlg_done", "resource_delegation", {
    from: R,
    to: addr(DEPOSIT),
    amount: 9_000_000n,
    asset: "energy",
  });
  await db
    .updateTable("outgoing_transfers")
    .set({ status: "confirmed", finished_at: new Date() })
    .where("intent_id", "=", "dlg_done")
    .execute();
  await intent(db, "rcl_dlg_done", "resource_reclaim", {
    from: R,
    to: addr(DEPOSIT),
    amount: 9_000_000n,
    asset: "energy",
  });
  // An unbacked hot-wallet withdrawal to the resource account.
  await intent(db, "tx_to_resource", "withdrawal", {
    from: HOT_WALLET_INDEX,
    to: addr(R),
    amount: 5_000_000n,
    asset: "token",
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

describe("attack: a delegation that is locked on chain though the signer's decoder says it is not", () => {
  for (const [label, lock] of [
    ["lock: 1", 1],
    ['lock: "false"', "false"],
    ["lock: {}", {}],
  ] as const) {
    it(`${label} (lock_period 0) must be refused: it encodes lock=true, a 3-day default lock on java-tron`, async () => {
      const request = tron(
        R,
        "DelegateResourceContract",
        delegateValue(addr(DEPOSIT), { lock, lock_period: 0 }),
      );
      // What the bytes really say:
      const t = request.chain === "tron" ? request.transaction : null;
      expect(decodeDelegation(t!.raw_data_hex as string).lock).toBe(true);
      await expectRefused(signer, request, "dlg_ok", `a LOCKED delegation (${label}, encoded lock=true)`);
    });
  }
  it("lock_period without lock is refused", async () => {
    await expectRefused(
      signer,
      tron(R, "DelegateResourceContract", delegateValue(addr(DEPOSIT), { lock_period: 86_400 })),
      "dlg_ok",
      "a delegation with a lock period",
      /never locked/,
    );
  });
});

describe("attack: a delegation to an address that is not ours", () => {
  it("a forged watched_addresses row + forged sweep waiting for it must not make the signer delegate to the attacker", async () => {
    await expectRefused(
      signer,
      tron(R, "DelegateResourceContract", delegateValue(ATTACKER, {}, 50_000_000_000n)),
      "dlg_evil",
      "a delegation of 50,000 TRX of stake's energy to the ATTACKER's address (a forged watched_addresses row at index 5000)",
    );
  });
  it("(the 1-sun top-up step of the same chain) the gas tank must not pay TRX to a forged watched address", async () => {
    await expectRefused(
      signer,
      tron(GAS_TANK_INDEX, "TransferContract", {
        owner_address: hex(addr(GAS_TANK_INDEX)),
        to_address: hex(ATTACKER),
        amount: 5_000_000,
      }),
      "gas_evil",
      "a gas-tank top-up of 5 TRX to the ATTACKER's address (forged watched_addresses row; pre-existing policy)",
    );
  });
  it("a plain outside address without any forged row is refused", async () => {
    await expectRefused(
      signer,
      tron(R, "DelegateResourceContract", delegateValue(ATTACKER)),
      "dlg_ok",
      "a delegation to an outside address under a legit intent",
      /does not match its intent/,
    );
  });
});

describe("attack: Stake 2.0 shapes the decoder might misread", () => {
  it("resource spelled as a number (1 = ENERGY in protobuf) is refused", async () => {
    await expectRefused(
      signer,
      tron(R, "DelegateResourceContract", delegateValue(addr(DEPOSIT), { resource: 1 })),
      "dlg_ok",
      "a delegation whose resource is a number",
      /unknown resource/,
    );
  });
  it("a second contract after the delegation is refused", async () => {
    const transfer = {
      parameter: {
        value: { owner_address: hex(addr(R)), to_address: hex(ATTACKER), amount: 1_000_000 },
        type_url: "type.googleapis.com/protocol.TransferContract",
      },
      type: "TransferContract",
    };
    await expectRefused(
      signer,
      tron(R, "DelegateResourceContract", delegateValue(addr(DEPOSIT)), { contracts: [transfer] }),
      "dlg_ok",
      "a delegation with a TRX transfer as a second contract",
      /one contract expected|does not encode/,
    );
  });
  it("a prototype key as contract type (toString) is refused", async () => {
    const request = tron(R, "DelegateResourceContract", delegateValue(addr(DEPOSIT)));
    const t = (request as unknown as { transaction: { raw_data: { contract: { type: string }[] } } })
      .transaction;
    t.raw_data.contract[0]!.type = "toString";
    await expectRefused(signer, request, "dlg_ok", "a contract typed toString");
  });
  it("FreezeBalanceV2 with a receiver (a stake for someone else) is refused", async () => {
    await expectRefused(
      signer,
      tron(R, "FreezeBalanceV2Contract", {
        owner_address: hex(addr(R)),
        frozen_balance: Number(SUN),
        resource: "ENERGY",
        receiver_address: hex(ATTACKER),
      }),
      "stk_ok",
      "a stake with a receiver",
      /a stake has no receiver|unexpected field receiver_address/,
    );
  });
  it("V1 FreezeBalanceContract for another receiver is refused", async () => {
    await expectRefused(
      signer,
      tron(R, "FreezeBalanceContract", {
        owner_address: hex(addr(R)),
        frozen_balance: Number(SUN),
        frozen_duration: 3,
        resource: "ENERGY",
        receiver_address: hex(ATTACKER),
      }),
      "stk_ok",
      "a V1 stake delegated to the attacker",
    );
  });
  it("an UnDelegate from another receiver than its intent's is refused", async () => {
    await expectRefused(
      signer,
      tron(R, "UnDelegateResourceContract", {
        owner_address: hex(addr(R)),
        receiver_address: hex(ATTACKER),
        balance: 9_000_000,
        resource: "ENERGY",
      }),
      "rcl_dlg_done",
      "a reclaim from another receiver",
      /does not match its intent/,
    );
  });
  it("an amount above 2^53 sun cannot be signed as a rounded delegation", async () => {
    await expectRefused(
      signer,
      tron(R, "DelegateResourceContract", delegateValue(addr(DEPOSIT), {}, 9_007_199_254_740_993n)),
      "dlg_big",
      "a delegation whose Number(amount) was rounded",
    );
  });
  it("the resource account never sends TRX, nor a token transfer", async () => {
    await expectRefused(
      signer,
      tron(R, "TransferContract", {
        owner_address: hex(addr(R)),
        to_address: hex(addr(DEPOSIT)),
        amount: 7_000_000,
      }),
      "dlg_ok",
      "TRX from the resource account",
      /only the resource account stakes or delegates/,
    );
    const data = `a9059cbb${"0".repeat(24)}${hex(ATTACKER).slice(2)}${(7_000_000).toString(16).padStart(64, "0")}`;
    await expectRefused(
      signer,
      tron(R, "TriggerSmartContract", { owner_address: hex(addr(R)), contract_address: hex(TOKEN), data }),
      "dlg_ok",
      "USDT from the resource account",
      /only the resource account stakes or delegates/,
    );
  });
  it("no withdrawal may pay the resource account", async () => {
    const data = `a9059cbb${"0".repeat(24)}${hex(addr(R)).slice(2)}${(5_000_000).toString(16).padStart(64, "0")}`;
    await expectRefused(
      signer,
      tron(HOT_WALLET_INDEX, "TriggerSmartContract", {
        owner_address: hex(addr(HOT_WALLET_INDEX)),
        contract_address: hex(TOKEN),
        data,
      }),
      "tx_to_resource",
      "a withdrawal to the resource account",
      /gateway's own addresses/,
    );
  });
});
