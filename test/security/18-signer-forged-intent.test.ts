import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { encodeFunctionData, parseAbi } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tronAddressFromHex, tronAddressToHex } from "../../src/chains/tron/address.js";
import { parseConfig } from "../../src/config/config.js";
import type { Db } from "../../src/db/database.js";
import type { CurrencyType } from "../../src/domain/currency.js";
import type { Environment } from "../../src/domain/environment.js";
import { DEFAULT_FEE_SCHEDULE } from "../../src/domain/fees.js";
import { createMerchantWithKeys, updateSettings } from "../../src/merchants/index.js";
import { createLogger } from "../../src/observability/logger.js";
import { requestTransfer } from "../../src/sender/intents.js";
import { HttpSignerClient } from "../../src/signer/http-client.js";
import { LocalSigner } from "../../src/signer/local-signer.js";
import { type Signer, SignerRejectedError, type SignRequest } from "../../src/signer/protocol.js";
import { startSignerRole } from "../../src/signer/role.js";
import type { RunningSignerServer } from "../../src/signer/server.js";
import { AddressDeriver } from "../../src/wallet/address-deriver.js";
import { GAS_TANK_INDEX, HOT_WALLET_INDEX } from "../../src/wallet/derivation-path.js";
import { approveWithdrawal, createWithdrawal, type WithdrawalDeps } from "../../src/withdrawals/index.js";
import { backTransfer, fund } from "../support/backed-transfer.js";
import { tronTransaction } from "../support/chain/tron-transaction.js";
import { openTestDatabase } from "../support/db.js";

// Issue #34, finding 1 (High): a compromised `api` host inserted ONE row into `outgoing_transfers`
// (kind 'withdrawal', from the hot wallet, to the attacker, 999 USDT, 'queued'); the honest worker
// picked it up and the signer signed it: its policy only asked that a matching open intent row
// exists. Afterwards the signer checks an intent against evidence it reads itself: the backing
// withdrawal or payout (state that may be paid, destination, amount = net amount), the ledger hold,
// the approvals (four-eyes: distinct people), one transfer per intent; and it never sends a
// withdrawal or payout to the gateway's own addresses (finding 10) or the zero address (finding 11).
// Every forged intent here is written straight into the database as its owner would; each is
// refused (and logged as an alert) by both signers: in-process (serve) and the signer role over HTTP.

const MNEMONIC = "test test test test test test test test test test test junk";
const SECRET = "f".repeat(48);
const ERC20_TOKEN = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
const TRC20_TOKEN_HEX = "41a614f803b6fd780986a42c78ec9c7f77e6ded13c";
const ERC20 = parseAbi(["function transfer(address to, uint256 value) returns (bool)"]);
const wallet = AddressDeriver.fromMnemonic(MNEMONIC);
const E = "USDT-ERC20" as const;
const T = "USDT-TRC20" as const;
const USDT = (n: number) => BigInt(n) * 1_000_000n;

const DEST = "0x52908400098527886E0F7030069857D2E4169EE7";
const ATTACKER = "0x8617E340B3D01FA5F11F306F4090FD50E238070D";
// Not anvil's account #1 (0x7099…79c8): with the test mnemonic that key is the gateway's own USDT-ERC20
// gas tank, so its TRON spelling is one of our addresses (issue #37) and the policy refuses it.
const TRON_DEST = tronAddressFromHex("4152908400098527886e0f7030069857d2e4169ee7");
const EVM_ZERO = "0x0000000000000000000000000000000000000000";
const TRON_ZERO = "T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb";
const DEPOSIT_INDEX = 200;

let database: Awaited<ReturnType<typeof openTestDatabase>>;
let db: Db;
let dataDir: string;
const logLines: Record<string, unknown>[] = [];
const logger = createLogger(
  "warn",
  new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split("\n").filter(Boolean)) logLines.push(JSON.parse(line));
      done();
    },
  }),
);
let inProcess: LocalSigner;
let server: RunningSignerServer;
let overHttp: HttpSignerClient;
let merchantId: string;
const hot = (network: CurrencyType, environment: Environment = "sandbox") =>
  wallet.address(network, environment, HOT_WALLET_INDEX);

/** Intent ids by case. */
const ids: Record<string, string> = {};

function erc20(to: string, amount: bigint, nonce = 3): SignRequest {
  return {
    chain: "evm",
    network: E,
    environment: "sandbox",
    index: HOT_WALLET_INDEX,
    transaction: {
      chainId: 31337,
      nonce,
      to: ERC20_TOKEN,
      value: "0",
      data: encodeFunctionData({ abi: ERC20, functionName: "transfer", args: [to as `0x${string}`, amount] }),
      gas: "60000",
      maxFeePerGas: "2000000000",
      maxPriorityFeePerGas: "1000000000",
    },
  };
}

function trc20(to: string, amount: bigint): SignRequest {
  const owner = tronAddressToHex(hot(T));
  return {
    chain: "tron",
    network: T,
    environment: "sandbox",
    index: HOT_WALLET_INDEX,
    transaction: tronTransaction("TriggerSmartContract", {
      owner_address: owner,
      contract_address: TRC20_TOKEN_HEX,
      data: `a9059cbb${tronAddressToHex(to).slice(2).padStart(64, "0")}${amount.toString(16).padStart(64, "0")}`,
    }),
  };
}

const deps: WithdrawalDeps = {
  fees: DEFAULT_FEE_SCHEDULE,
  requestTransfer,
  now: () => new Date(),
};
const scope = () => ({ merchantId, environment: "sandbox" as const });

/** A withdrawal through the real flow (hold, policy, intent): its transaction id. */
async function withdraw(network: CurrencyType, to: string, amount: bigint): Promise<string> {
  const r = await db
    .transaction()
    .execute((trx) =>
      createWithdrawal(trx, deps, scope(), { amount, currencyType: network, walletAddress: to }),
    );
  return r.id;
}

/** A forged (or backed-then-forged) intent row, written by the database owner. */
async function forge(id: string, network: CurrencyType, to: string, amount: bigint) {
  await db
    .transaction()
    .execute((trx) =>
      requestTransfer(trx, { intentId: id, kind: "withdrawal", network, environment: "sandbox", to, amount }),
    );
}

beforeAll(async () => {
  database = await openTestDatabase();
  db = database.db;
  dataDir = await mkdtemp(join(tmpdir(), "sg-forged-"));
  const merchant = await createMerchantWithKeys(db, { email: "forged@example.com", companyName: "Forged" });
  merchantId = merchant.id;
  await db.transaction().execute(async (trx) => {
    await fund(trx, merchantId, "sandbox", E, USDT(10_000), "forged-e");
    await fund(trx, merchantId, "sandbox", T, USDT(10_000), "forged-t");
    await trx
      .insertInto("watched_addresses")
      .values({
        network: E,
        environment: "sandbox",
        address: wallet.address(E, "sandbox", DEPOSIT_INDEX),
        derivation_index: DEPOSIT_INDEX,
        merchant_id: merchantId,
        purpose: "wallet",
        reference_id: null,
        watch_until: null,
      })
      .execute();
  });

  // Legitimate: auto withdrawals (at or under the auto-approve threshold) through the real flow.
  // ERC20's withdrawal fee is 5 USDT: 20 USDT requested, 15 USDT to the destination.
  ids.legit = await withdraw(E, DEST, USDT(20));
  ids.legitTron = await withdraw(T, TRON_DEST, USDT(20)); // TRC20 fee 1 USDT: 19 USDT
  ids.otherDest = await withdraw(E, DEST, USDT(21));
  ids.gross = await withdraw(E, DEST, USDT(22));
  // The owner rewrites the intent rows of real withdrawals: another destination, the gross amount.
  await db
    .updateTable("outgoing_transfers")
    .set({ to_address: ATTACKER })
    .where("intent_id", "=", ids.otherDest)
    .execute();
  await db
    .updateTable("outgoing_transfers")
    .set({ amount: USDT(22) })
    .where("intent_id", "=", ids.gross)
    .execute();

  // No backing withdrawal at all: finding 1's one INSERT.
  ids.none = "tx_forged_none";
  await forge(ids.none, E, ATTACKER, USDT(999));

  await db.transaction().execute(async (trx) => {
    // A withdrawal row and its intent, but no ledger hold.
    ids.noHold = "tx_forged_nohold";
    await backTransfer(trx, {
      id: ids.noHold,
      kind: "withdrawal",
      network: E,
      environment: "sandbox",
      to: ATTACKER,
      amount: USDT(30),
      hold: false,
      merchantId,
    });
    // A rejected withdrawal (hold posted) whose intent row was added afterwards.
    ids.rejected = "tx_forged_rejected";
    await backTransfer(trx, {
      id: ids.rejected,
      kind: "withdrawal",
      network: E,
      environment: "sandbox",
      to: ATTACKER,
      amount: USDT(31),
      status: "rejected",
      merchantId,
    });
    // Complete evidence, but to the gateway's own addresses and the zero address (findings 10, 11).
    for (const [key, network, to] of [
      ["toHot", E, hot(E)],
      ["toGasTank", E, wallet.address(E, "sandbox", GAS_TANK_INDEX)],
      ["toDeposit", E, wallet.address(E, "sandbox", DEPOSIT_INDEX)],
      ["toZero", E, EVM_ZERO],
      ["toTronZero", T, TRON_ZERO],
      ["toTronHot", T, hot(T)],
    ] as const) {
      ids[key] = `tx_forged_${key}`;
      await backTransfer(trx, {
        id: ids[key]!,
        kind: "withdrawal",
        network,
        environment: "sandbox",
        to,
        amount: USDT(12),
        merchantId,
      });
    }
    // A payout with complete evidence (legitimate).
    ids.payout = "tx_payout_ok";
    await backTransfer(trx, {
      id: ids.payout,
      kind: "payout",
      network: E,
      environment: "sandbox",
      to: DEST,
      amount: USDT(13),
      merchantId,
    });
  });
  for (const key of ["noHold", "rejected", "toHot", "toGasTank", "toDeposit", "toZero", "payout"] as const)
    await db.transaction().execute((trx) =>
      requestTransfer(trx, {
        intentId: ids[key]!,
        kind: key === "payout" ? "payout" : "withdrawal",
        network: E,
        environment: "sandbox",
        to:
          key === "toHot"
            ? hot(E)
            : key === "toGasTank"
              ? wallet.address(E, "sandbox", GAS_TANK_INDEX)
              : key === "toDeposit"
                ? wallet.address(E, "sandbox", DEPOSIT_INDEX)
                : key === "toZero"
                  ? EVM_ZERO
                  : key === "payout"
                    ? DEST
                    : ATTACKER,
        amount:
          key === "noHold"
            ? USDT(30)
            : key === "rejected"
              ? USDT(31)
              : key === "payout"
                ? USDT(13)
                : USDT(12),
      }),
    );
  for (const [key, to] of [
    ["toTronZero", TRON_ZERO],
    ["toTronHot", hot(T)],
  ] as const)
    await forge(ids[key]!, T, to, USDT(12));

  // Four-eyes: above 10 USDT two distinct people must approve. One approved; the owner then
  // flipped the request to `processing` and queued its transfer itself.
  await updateSettings(
    db,
    merchantId,
    "sandbox",
    { autoWithdraw: false, dualApprovalThreshold: { [E]: 10 } },
    new Date(),
  );
  // The approvers are members who may approve (an approval of someone who is not counts for nothing).
  await db
    .insertInto("dashboard_users")
    .values(
      ["usr_alice", "usr_bob"].map((id) => ({
        id,
        merchant_id: merchantId,
        email: `${id}@example.com`,
        password_hash: "x",
        role: "merchant" as const,
        member_role: "finance" as const,
      })),
    )
    .execute();
  ids.oneApproval = await withdraw(E, DEST, USDT(50));
  await db.transaction().execute((trx) =>
    approveWithdrawal(trx, deps, scope(), ids.oneApproval!, {
      type: "user",
      id: "usr_alice",
      email: "alice@example.com",
    }),
  );
  await db
    .updateTable("transactions")
    .set({ status: "processing" })
    .where("id", "=", ids.oneApproval)
    .execute();
  await forge(ids.oneApproval, E, DEST, USDT(45));
  // The same request shape approved by two different people through the real flow: signed.
  ids.twoApprovals = await withdraw(E, DEST, USDT(51));
  for (const who of ["usr_alice", "usr_bob"])
    await db.transaction().execute((trx) =>
      approveWithdrawal(trx, deps, scope(), ids.twoApprovals!, {
        type: "user",
        id: who,
        email: `${who}@example.com`,
      }),
    );

  const tokens = (network: CurrencyType) =>
    network === E ? ERC20_TOKEN : tronAddressFromHex(TRC20_TOKEN_HEX);
  inProcess = LocalSigner.fromMnemonic(MNEMONIC, { db, logger, tokenContract: tokens });
  const config = parseConfig({
    NODE_ENV: "test",
    LOG_LEVEL: "warn",
    MASTER_MNEMONIC: MNEMONIC,
    INTERNAL_SHARED_SECRET: SECRET,
    SIGNER_PORT: "0",
    SANDBOX_USDT_ERC20_CONTRACT: ERC20_TOKEN,
    SANDBOX_USDT_TRC20_CONTRACT: tronAddressFromHex(TRC20_TOKEN_HEX),
    DATA_DIR: dataDir,
  });
  server = await startSignerRole(config, { database, logger });
  overHttp = new HttpSignerClient({ url: server.url, secret: SECRET });
}, 60_000);

afterAll(async () => {
  await overHttp?.close();
  await server?.close();
  await database?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

const signers: [string, () => Signer][] = [
  ["in-process", () => inProcess],
  ["the signer role over HMAC HTTP", () => overHttp],
];

const refused: [string, string, () => SignRequest, RegExp][] = [
  [
    "no backing withdrawal (finding 1's INSERT)",
    "none",
    () => erc20(ATTACKER, USDT(999)),
    /no withdrawal or payout backs/,
  ],
  [
    "a backing withdrawal with another destination",
    "otherDest",
    () => erc20(ATTACKER, USDT(21) - USDT(5)),
    /destination/,
  ],
  ["an amount other than the net amount (the gross)", "gross", () => erc20(DEST, USDT(22)), /net amount/],
  ["no ledger hold posted", "noHold", () => erc20(ATTACKER, USDT(30)), /hold/],
  ["a rejected withdrawal", "rejected", () => erc20(ATTACKER, USDT(31)), /rejected/],
  ["four-eyes incomplete (one person of two)", "oneApproval", () => erc20(DEST, USDT(45)), /approv/],
  ["destination = the hot wallet (finding 10)", "toHot", () => erc20(hot(E), USDT(12)), /gateway's own/],
  [
    "destination = the gas tank (finding 10)",
    "toGasTank",
    () => erc20(wallet.address(E, "sandbox", GAS_TANK_INDEX), USDT(12)),
    /gateway's own/,
  ],
  [
    "destination = a deposit address (finding 10)",
    "toDeposit",
    () => erc20(wallet.address(E, "sandbox", DEPOSIT_INDEX), USDT(12)),
    /gateway's own/,
  ],
  [
    "destination = the EVM zero address (finding 11)",
    "toZero",
    () => erc20(EVM_ZERO, USDT(12)),
    /zero address/,
  ],
  [
    "destination = TRON's zero address (finding 11)",
    "toTronZero",
    () => trc20(TRON_ZERO, USDT(12)),
    /zero address/,
  ],
  [
    "destination = the TRON hot wallet (finding 10)",
    "toTronHot",
    () => trc20(hot(T), USDT(12)),
    /gateway's own/,
  ],
];

describe.each(signers)(
  "the signer checks the evidence of an intent (issue #34 finding 1): %s",
  (_name, signerOf) => {
    it.each(refused)("refuses and alerts: %s", async (label, key, request, reason) => {
      const before = logLines.length;
      const r = request();
      const err = await signerOf()
        .sign(r, { intentId: ids[key]! })
        .then(
          () => null,
          (e: unknown) => e,
        );
      expect(err, label).toBeInstanceOf(SignerRejectedError);
      expect((err as Error).message).toMatch(reason);
      const logged = logLines.slice(before).filter((l) => l.alert === "signer_policy_refused");
      expect(logged).toHaveLength(1);
      expect(logged[0]).toMatchObject({
        level: 40,
        intentId: ids[key],
        reason: expect.stringMatching(reason),
      });
    });

    it("refuses a request that names no intent", async () => {
      await expect(signerOf().sign(erc20(DEST, USDT(15)))).rejects.toThrow(/names no intent/);
    });

    it("signs the legitimate ones: a withdrawal, a TRON withdrawal, a payout, a four-eyes withdrawal two people approved", async () => {
      const s = signerOf();
      expect((await s.sign(erc20(DEST, USDT(15)), { intentId: ids.legit! })).from).toBe(hot(E));
      expect((await s.sign(trc20(TRON_DEST, USDT(19)), { intentId: ids.legitTron! })).from).toBe(hot(T));
      expect((await s.sign(erc20(DEST, USDT(13)), { intentId: ids.payout! })).from).toBe(hot(E));
      expect((await s.sign(erc20(DEST, USDT(46)), { intentId: ids.twoApprovals! })).from).toBe(hot(E));
    });

    it("one transfer per intent: a replacement at the same nonce is signed, another nonce is refused", async () => {
      const s = signerOf();
      // The first signature of this intent by this signer fixed its nonce (3, in the test above).
      const replacement = erc20(DEST, USDT(15), 3);
      replacement.transaction = { ...replacement.transaction, maxFeePerGas: "3000000000" } as never;
      expect((await s.sign(replacement, { intentId: ids.legit! })).from).toBe(hot(E));
      await expect(s.sign(erc20(DEST, USDT(15), 4), { intentId: ids.legit! })).rejects.toThrow(
        /another nonce/,
      );
      // An intent's facts are another transfer's: the payout's intent id for the legit withdrawal's transfer.
      await expect(s.sign(erc20(DEST, USDT(15), 3), { intentId: ids.payout! })).rejects.toThrow(
        /does not match/,
      );
    });
  },
);
