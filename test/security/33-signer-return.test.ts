import { encodeFunctionData, parseAbi } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Db } from "../../src/db/database.js";
import { createMerchantWithKeys } from "../../src/merchants/index.js";
import { createLogger } from "../../src/observability/logger.js";
import { requestTransfer } from "../../src/sender/intents.js";
import { LocalSigner } from "../../src/signer/local-signer.js";
import { SignerRejectedError, type SignRequest } from "../../src/signer/protocol.js";
import { insertTransaction } from "../../src/transactions/index.js";
import { AddressDeriver } from "../../src/wallet/address-deriver.js";
import { HOT_WALLET_INDEX } from "../../src/wallet/derivation-path.js";
import { openTestDatabase } from "../support/db.js";

// Issue #40: a deposit address may send a RETURN (a held deposit back to its sender), so the
// signer's policy gained exactly that shape — and nothing wider. It signs a return only with its
// evidence, read by the signer itself: the owner's decision naming this intent, the deposit
// `returned`, paid to this very address on this chain, the amount what arrived, the recipient the
// sender of the transfer the deposit was made of. Each refusal below breaks one of these.

const MNEMONIC = "test test test test test test test test test test test junk";
const TOKEN = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
const ERC20 = parseAbi(["function transfer(address to, uint256 value) returns (bool)"]);
const ERC = "USDT-ERC20" as const;
const wallet = AddressDeriver.fromMnemonic(MNEMONIC);
const addr = (index: number) => wallet.address(ERC, "sandbox", index);
const DEPOSIT = 210;
const OTHER_DEPOSIT = 211;
// Outside addresses (no key of ours).
const SENDER = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";
const ELSEWHERE = "0x52908400098527886E0F7030069857D2E4169EE7";

let database: Awaited<ReturnType<typeof openTestDatabase>>;
let db: Db;
let signer: LocalSigner;

function transfer(index: number, to: string, amount: bigint): SignRequest {
  return {
    chain: "evm",
    network: ERC,
    environment: "sandbox",
    index,
    transaction: {
      chainId: 31337,
      nonce: 1,
      to: TOKEN,
      value: "0",
      data: encodeFunctionData({ abi: ERC20, functionName: "transfer", args: [to as `0x${string}`, amount] }),
      gas: "60000",
      maxFeePerGas: "2000000000",
      maxPriorityFeePerGas: "1000000000",
    },
  };
}

/** A held deposit of `amount` at the deposit address `index`, from SENDER, in `status`, with its decision. */
async function heldDeposit(
  id: string,
  o: {
    index: number;
    amount: bigint;
    status: "returned" | "held";
    action?: "return" | "release";
    intent: string;
  },
) {
  const merchant = await db.selectFrom("merchants").select("id").executeTakeFirstOrThrow();
  await db
    .insertInto("chain_observations")
    .values({
      id: `obs_${id}`,
      network: ERC,
      environment: "sandbox",
      address: addr(o.index),
      from_address: SENDER,
      tx_hash: `0x${id
        .padEnd(64, "0")
        .slice(0, 64)
        .replace(/[^0-9a-f]/g, "a")}`,
      log_index: 0,
      block_number: 1,
      block_hash: `0x${"cd".repeat(32)}`,
      amount: o.amount,
      status: "handed_off",
      handed_off_at: new Date(),
    })
    .execute();
  await insertTransaction(db, {
    id,
    merchantId: merchant.id,
    environment: "sandbox",
    type: "deposit",
    status: o.status,
    currencyType: ERC,
    amount: o.amount,
    fee: 0n,
    actualBalance: o.amount,
    walletAddress: addr(o.index),
    chainObservationId: `obs_${id}`,
    holdReason: "token_blacklist",
  });
  await db
    .insertInto("held_deposit_decisions")
    .values({
      transaction_id: id,
      network: ERC,
      environment: "sandbox",
      action: o.action ?? "return",
      decided_by: "usr_owner",
      intent_id: o.intent,
      applied_at: new Date(),
    })
    .execute();
}

async function returnIntent(intentId: string, index: number, to: string, amount: bigint) {
  await db.transaction().execute((trx) =>
    requestTransfer(trx, {
      intentId,
      kind: "return",
      network: ERC,
      environment: "sandbox",
      fromIndex: index,
      to,
      amount,
    }),
  );
}

beforeAll(async () => {
  database = await openTestDatabase();
  db = database.db;
  const merchant = await createMerchantWithKeys(db, { email: "returns@example.com", companyName: "Returns" });
  for (const index of [DEPOSIT, OTHER_DEPOSIT])
    await db
      .insertInto("watched_addresses")
      .values({
        network: ERC,
        environment: "sandbox",
        address: addr(index),
        derivation_index: index,
        merchant_id: merchant.id,
        purpose: "wallet",
        reference_id: null,
        watch_until: null,
      })
      .execute();
  await heldDeposit("tx_ret_ok", {
    index: DEPOSIT,
    amount: 5_000_000n,
    status: "returned",
    intent: "ret_ok",
  });
  await returnIntent("ret_ok", DEPOSIT, SENDER, 5_000_000n);
  // The decision names another intent than the one asked for.
  await returnIntent("ret_undecided", DEPOSIT, SENDER, 5_000_000n);
  // A decision to release, not to return.
  await heldDeposit("tx_ret_release", {
    index: DEPOSIT,
    amount: 4_000_000n,
    status: "returned",
    action: "release",
    intent: "ret_release",
  });
  await returnIntent("ret_release", DEPOSIT, SENDER, 4_000_000n);
  // Still held: not being returned.
  await heldDeposit("tx_ret_held", {
    index: DEPOSIT,
    amount: 3_000_000n,
    status: "held",
    intent: "ret_held",
  });
  await returnIntent("ret_held", DEPOSIT, SENDER, 3_000_000n);
  // Elsewhere than the sender.
  await heldDeposit("tx_ret_else", {
    index: DEPOSIT,
    amount: 2_000_000n,
    status: "returned",
    intent: "ret_else",
  });
  await returnIntent("ret_else", DEPOSIT, ELSEWHERE, 2_000_000n);
  // More than arrived.
  await heldDeposit("tx_ret_more", {
    index: DEPOSIT,
    amount: 1_000_000n,
    status: "returned",
    intent: "ret_more",
  });
  await returnIntent("ret_more", DEPOSIT, SENDER, 1_500_000n);
  // From another deposit address than the one paid.
  await heldDeposit("tx_ret_addr", {
    index: DEPOSIT,
    amount: 6_000_000n,
    status: "returned",
    intent: "ret_addr",
  });
  await returnIntent("ret_addr", OTHER_DEPOSIT, SENDER, 6_000_000n);
  // A return intent from the hot wallet.
  await heldDeposit("tx_ret_hot", {
    index: DEPOSIT,
    amount: 7_000_000n,
    status: "returned",
    intent: "ret_hot",
  });
  await returnIntent("ret_hot", HOT_WALLET_INDEX, SENDER, 7_000_000n);
  signer = LocalSigner.fromMnemonic(MNEMONIC, {
    db,
    logger: createLogger("silent"),
    tokenContract: () => TOKEN,
  });
});
afterAll(async () => {
  await database?.close();
});

describe("the signer's policy for held-deposit returns (issue #40)", () => {
  it("signs the return its evidence backs", async () => {
    const signed = await signer.sign(transfer(DEPOSIT, SENDER, 5_000_000n), { intentId: "ret_ok" });
    expect(signed.hash).toMatch(/^0x[0-9a-f]{64}$/);
  });

  const refused: [string, string, SignRequest, RegExp][] = [
    [
      "no decision names this intent",
      "ret_undecided",
      transfer(DEPOSIT, SENDER, 5_000_000n),
      /no decision to return/,
    ],
    [
      "the decision was to release",
      "ret_release",
      transfer(DEPOSIT, SENDER, 4_000_000n),
      /no decision to return/,
    ],
    ["the deposit is still held", "ret_held", transfer(DEPOSIT, SENDER, 3_000_000n), /not being returned/],
    [
      "the recipient is not the sender",
      "ret_else",
      transfer(DEPOSIT, ELSEWHERE, 2_000_000n),
      /not the deposit's sender/,
    ],
    ["more than arrived", "ret_more", transfer(DEPOSIT, SENDER, 1_500_000n), /not what arrived/],
    [
      "from another deposit address",
      "ret_addr",
      transfer(OTHER_DEPOSIT, SENDER, 6_000_000n),
      /not paid to this address/,
    ],
    [
      "from the hot wallet",
      "ret_hot",
      transfer(HOT_WALLET_INDEX, SENDER, 7_000_000n),
      /hot wallet does not send a return/,
    ],
    // The transaction must match its intent before any evidence is read.
    [
      "a return intent signed to elsewhere",
      "ret_ok",
      transfer(DEPOSIT, ELSEWHERE, 5_000_000n),
      /does not match its intent/,
    ],
  ];
  for (const [what, intentId, request, reason] of refused) {
    it(`refuses: ${what}`, async () => {
      const err = await signer.sign(request, { intentId }).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(SignerRejectedError);
      expect(String((err as Error).message)).toMatch(reason);
    });
  }
});
