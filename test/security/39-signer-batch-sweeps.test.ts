import { type Hex, keccak256, parseTransaction, toHex } from "viem";
import { recoverAuthorizationAddress } from "viem/utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CREATE2_DEPLOYER,
  sweeperAddress,
  sweeperDeployData,
  sweepManyData,
} from "../../src/chains/evm/sweeper.js";
import type { EvmAuthorizationRequest } from "../../src/chains/signing.js";
import type { Db } from "../../src/db/database.js";
import { systemClock } from "../../src/lib/clock.js";
import { createMerchantWithKeys } from "../../src/merchants/index.js";
import { createLogger } from "../../src/observability/logger.js";
import { assembleCarrier, requestCarriedSweep } from "../../src/sender/batches.js";
import { requestTransfer } from "../../src/sender/intents.js";
import { HttpSignerClient } from "../../src/signer/http-client.js";
import { LocalSigner } from "../../src/signer/local-signer.js";
import { type EvmSignRequest, SignerRejectedError } from "../../src/signer/protocol.js";
import { startSignerServer } from "../../src/signer/server.js";
import { batchCapacity, DEFAULT_BATCH_GAS_BUDGET } from "../../src/sweep/sweeper.js";
import { AddressDeriver } from "../../src/wallet/address-deriver.js";
import {
  GAS_TANK_INDEX,
  HOT_WALLET_INDEX,
  RESOURCE_ACCOUNT_INDEX,
} from "../../src/wallet/derivation-path.js";
import { openTestDatabase } from "../support/db.js";

// Issue #39: batched EIP-7702 sweeps gave the signer two new shapes, both from the gas tank — a
// `sweepMany` call on the sweeper contract with authorisations signed by deposit keys, and the
// sweeper's deployment through the CREATE2 deployer — and nothing wider. The sweeper's address is
// computed from the signer's own hot wallet key; an authorisation delegates only a deposit address
// of the batch, only to it; the batch lists exactly its carrier's open sweeps, with their amounts.

const MNEMONIC = "test test test test test test test test test test test junk";
const NET = "USDT-ERC20" as const;
const wallet = AddressDeriver.fromMnemonic(MNEMONIC);
const addr = (i: number) => wallet.address(NET, "sandbox", i) as Hex;
const TOKEN = "0x5fbdb2315678afecb367f642a3e3c6ae8b2e3ff4" as Hex;
const OTHER_CONTRACT = "0x000000000000000000000000000000000000dEaD" as Hex;
const ATTACKER = "0x1111111111111111111111111111111111111111" as Hex;
const HOT = addr(HOT_WALLET_INDEX);
const SWEEPER = sweeperAddress(HOT, TOKEN);
const A = 300;
/** The largest batch the default gas budget allows, every address authorised in it. */
const FULL = batchCapacity(DEFAULT_BATCH_GAS_BUDGET);
const FULL_FROM = 400;
const B = 301;
const NO_DEPOSIT = 302;
const AMOUNT_A = 20_000_000n;
const AMOUNT_B = 30_000_000n;
const CHAIN_ID = 31337;

let database: Awaited<ReturnType<typeof openTestDatabase>>;
let db: Db;
let signer: LocalSigner;

function request(
  o: {
    index?: number;
    to?: Hex;
    data?: Hex;
    value?: string;
    authorizations?: EvmAuthorizationRequest[] | unknown;
  } = {},
): EvmSignRequest {
  return {
    chain: "evm",
    network: NET,
    environment: "sandbox",
    index: o.index ?? GAS_TANK_INDEX,
    transaction: {
      chainId: CHAIN_ID,
      nonce: 7,
      to: o.to ?? SWEEPER,
      value: o.value ?? "0",
      data: o.data ?? sweepManyData(TOKEN, [addr(A), addr(B)], [AMOUNT_A, AMOUNT_B]),
      gas: "140000",
      maxFeePerGas: "2000000000",
      maxPriorityFeePerGas: "1000000000",
      ...(o.authorizations !== undefined
        ? { authorizations: o.authorizations as EvmAuthorizationRequest[] }
        : {}),
    },
  };
}

const auth = (index: number, address: string = SWEEPER, nonce = 0): EvmAuthorizationRequest => ({
  index,
  address,
  nonce,
});

async function refused(r: EvmSignRequest, intentId: string, reason: RegExp) {
  const err = await signer.sign(r, { intentId }).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err, `signed ${intentId}`).toBeInstanceOf(SignerRejectedError);
  expect((err as Error).message).toMatch(reason);
}

beforeAll(async () => {
  database = await openTestDatabase();
  db = database.db;
  const merchant = await createMerchantWithKeys(db, { email: "batch-signer@example.com", companyName: "B" });
  for (const index of [A, B, NO_DEPOSIT, ...Array.from({ length: FULL }, (_, k) => FULL_FROM + k)]) {
    await db
      .insertInto("watched_addresses")
      .values({
        network: NET,
        environment: "sandbox",
        address: addr(index),
        derivation_index: index,
        merchant_id: merchant.id,
        purpose: "wallet",
        reference_id: null,
        watch_until: null,
      })
      .execute();
    if (index === NO_DEPOSIT) continue;
    await db
      .insertInto("chain_observations")
      .values({
        id: `obs_${index}`,
        network: NET,
        environment: "sandbox",
        address: addr(index),
        from_address: ATTACKER,
        tx_hash: keccak256(toHex(`deposit ${index}`)),
        log_index: 0,
        block_number: 1,
        block_hash: "0x00",
        amount: 1n,
        status: "handed_off",
        handed_off_at: new Date(),
      })
      .execute();
  }
  await db.transaction().execute(async (trx) => {
    const scope = { network: NET, environment: "sandbox" as const };
    const carried = (id: string, index: number, amount: bigint) =>
      requestCarriedSweep(trx, {
        intentId: id,
        network: NET,
        environment: "sandbox",
        fromIndex: index,
        to: HOT,
        amount,
      });
    await carried("swp_a", A, AMOUNT_A);
    await carried("swp_b", B, AMOUNT_B);
    expect(
      await assembleCarrier(trx, scope, { intentId: "bat_ok", hotWallet: HOT, itemIds: ["swp_a", "swp_b"] }),
    ).toBe(2);
    for (let k = 0; k < FULL; k++) await carried(`swp_full_${k}`, FULL_FROM + k, AMOUNT_A + BigInt(k));
    expect(
      await assembleCarrier(trx, scope, {
        intentId: "bat_full",
        hotWallet: HOT,
        itemIds: Array.from({ length: FULL }, (_, k) => `swp_full_${k}`),
      }),
    ).toBe(FULL);
    // The same address twice in one batch (forged rows: the sweeper never queues two).
    await carried("swp_dup1", B, AMOUNT_A);
    await carried("swp_dup2", B, AMOUNT_B);
    expect(
      await assembleCarrier(trx, scope, {
        intentId: "bat_dup",
        hotWallet: HOT,
        itemIds: ["swp_dup1", "swp_dup2"],
      }),
    ).toBe(2);
    // A carried sweep still waiting for its batch.
    await carried("swp_wait", A, AMOUNT_A);
    // A batch whose address has no confirmed deposit.
    await carried("swp_none", NO_DEPOSIT, AMOUNT_A);
    expect(
      await assembleCarrier(trx, scope, { intentId: "bat_none", hotWallet: HOT, itemIds: ["swp_none"] }),
    ).toBe(1);
    // The deployment, and a top-up intent of the gas tank.
    await requestTransfer(trx, {
      intentId: "dpl_ok",
      kind: "sweeper_deploy",
      network: NET,
      environment: "sandbox",
      asset: "native",
      fromIndex: GAS_TANK_INDEX,
      to: CREATE2_DEPLOYER,
      amount: 0n,
    });
    await requestTransfer(trx, {
      intentId: "dpl_two",
      kind: "sweeper_deploy",
      network: NET,
      environment: "sandbox",
      asset: "native",
      fromIndex: GAS_TANK_INDEX,
      to: CREATE2_DEPLOYER,
      amount: 0n,
    });
    await requestTransfer(trx, {
      intentId: "gas_a",
      kind: "gas_topup",
      network: NET,
      environment: "sandbox",
      asset: "native",
      fromIndex: GAS_TANK_INDEX,
      to: addr(A),
      amount: 1_000n,
    });
  });
  signer = LocalSigner.fromMnemonic(MNEMONIC, {
    db,
    logger: createLogger("silent"),
    tokenContract: () => TOKEN,
  });
}, 60_000);

afterAll(async () => {
  await database?.close();
});

describe("the signer and batched sweeps (issue #39)", () => {
  it("signs the batch: a type-4 transaction of the gas tank to the sweeper, each authorisation by its deposit key, for this chain, to the sweeper", async () => {
    const signed = await signer.sign(request({ authorizations: [auth(A), auth(B, SWEEPER, 3)] }), {
      intentId: "bat_ok",
    });
    const tx = parseTransaction(signed.raw as Hex);
    expect(tx.type).toBe("eip7702");
    expect(tx.to?.toLowerCase()).toBe(SWEEPER.toLowerCase());
    expect(signed.from.toLowerCase()).toBe(addr(GAS_TANK_INDEX).toLowerCase());
    const list = tx.authorizationList ?? [];
    expect(list).toHaveLength(2);
    for (const [i, a] of list.entries()) {
      expect(a.address.toLowerCase()).toBe(SWEEPER.toLowerCase());
      expect(a.chainId).toBe(CHAIN_ID);
      const authority = await recoverAuthorizationAddress({ authorization: a });
      expect(authority.toLowerCase()).toBe(addr(i === 0 ? A : B).toLowerCase());
    }
    expect(list[1]!.nonce).toBe(3);
    // Without authorisations (addresses delegated already): an ordinary EIP-1559 transaction.
    const plain = await signer.sign(request(), { intentId: "bat_ok" });
    expect(parseTransaction(plain.raw as Hex).type).toBe("eip1559");
  });

  it("refuses an authorisation for any other contract", async () => {
    await refused(
      request({ authorizations: [auth(A, OTHER_CONTRACT)] }),
      "bat_ok",
      /only to the sweeper contract/,
    );
    await refused(
      request({ authorizations: [auth(A), auth(B, ATTACKER)] }),
      "bat_ok",
      /only to the sweeper contract/,
    );
  });

  it("refuses to authorise a key outside the batch: the hot wallet, the gas tank, the resource account, another deposit address", async () => {
    for (const index of [HOT_WALLET_INDEX, GAS_TANK_INDEX, RESOURCE_ACCOUNT_INDEX, NO_DEPOSIT])
      await refused(request({ authorizations: [auth(index)] }), "bat_ok", /outside the batch/);
    await refused(request({ authorizations: [auth(A), auth(A)] }), "bat_ok", /authorised twice/);
  });

  it("refuses malformed authorisations (a chain id of its own, too many, a negative nonce)", async () => {
    await refused(
      request({ authorizations: [{ ...auth(A), chainId: 0 }] }),
      "bat_ok",
      /only index, address and nonce/,
    );
    await refused(request({ authorizations: [] }), "bat_ok", /authorizations must be a list/);
    await refused(request({ authorizations: [auth(A, SWEEPER, -1)] }), "bat_ok", /nonce/);
    await refused(
      request({ authorizations: Array.from({ length: 257 }, () => auth(A)) }),
      "bat_ok",
      /list of 1 to 256/,
    );
  });

  it("refuses a batch sent to another contract than the hot wallet's sweeper (the destination is in its code)", async () => {
    await refused(request({ to: OTHER_CONTRACT }), "bat_ok", /only the sweeper contract of the hot wallet/);
    // The sweeper of another hot wallet (an attacker's), which would send the tokens there.
    await refused(
      request({ to: sweeperAddress(ATTACKER, TOKEN) }),
      "bat_ok",
      /only the sweeper contract of the hot wallet/,
    );
  });

  it("refuses a batch that is not exactly its carrier's sweeps", async () => {
    // Another order, another amount, an address left out, an address added, another token.
    await refused(
      request({ data: sweepManyData(TOKEN, [addr(B), addr(A)], [AMOUNT_B, AMOUNT_A]) }),
      "bat_ok",
      /not the signer's own key of its sweep/,
    );
    await refused(
      request({ data: sweepManyData(TOKEN, [addr(A), addr(B)], [AMOUNT_A + 1n, AMOUNT_B - 1n]) }),
      "bat_ok",
      /amount of the batch/,
    );
    await refused(
      request({ data: sweepManyData(TOKEN, [addr(A)], [AMOUNT_A + AMOUNT_B]) }),
      "bat_ok",
      /exactly its carrier's sweeps/,
    );
    await refused(
      request({ data: sweepManyData(TOKEN, [addr(A), addr(B), addr(NO_DEPOSIT)], [AMOUNT_A, AMOUNT_B, 1n]) }),
      "bat_ok",
      /does not match its intent|exactly its carrier's sweeps/,
    );
    await refused(
      request({ data: sweepManyData(ATTACKER, [addr(A), addr(B)], [AMOUNT_A, AMOUNT_B]) }),
      "bat_ok",
      /configured token contract/,
    );
    // Bytes appended after the call: not what the signer decoded.
    await refused(
      request({ data: `${sweepManyData(TOKEN, [addr(A), addr(B)], [AMOUNT_A, AMOUNT_B])}00` as Hex }),
      "bat_ok",
      /only token transfers and native transfers/,
    );
  });

  it("refuses a batch whose address has no confirmed deposit, and a batch named by another intent", async () => {
    await refused(
      request({ data: sweepManyData(TOKEN, [addr(NO_DEPOSIT)], [AMOUNT_A]) }),
      "bat_none",
      /no confirmed deposit/,
    );
    await refused(request(), "gas_a", /does not match its intent|does not carry/);
    await refused(request(), "swp_a", /does not match its intent/);
  });

  it("refuses a batch from any key but the gas tank, and authorisations on anything but a batch", async () => {
    await refused(request({ index: HOT_WALLET_INDEX }), "bat_ok", /only the gas tank/);
    await refused(request({ index: A }), "bat_ok", /only the gas tank/);
    // A sweep of a deposit address with an authorisation riding along.
    await refused(
      {
        ...request({ index: A, to: TOKEN, data: "0x" }),
        transaction: {
          ...request({ index: A, to: TOKEN }).transaction,
          data: `0xa9059cbb${HOT.slice(2).toLowerCase().padStart(64, "0")}${AMOUNT_A.toString(16).padStart(64, "0")}`,
          authorizations: [auth(A)],
        },
      },
      "swp_a",
      /only a batched sweep carries authorisations/,
    );
  });

  it("signs the deployment of the hot wallet's sweeper only, from the gas tank only, through the CREATE2 deployer only", async () => {
    const ok = await signer.sign(request({ to: CREATE2_DEPLOYER, data: sweeperDeployData(HOT, TOKEN) }), {
      intentId: "dpl_ok",
    });
    expect(parseTransaction(ok.raw as Hex).to?.toLowerCase()).toBe(CREATE2_DEPLOYER.toLowerCase());
    // The sweeper of another hot wallet.
    await refused(
      request({ to: CREATE2_DEPLOYER, data: sweeperDeployData(ATTACKER, TOKEN) }),
      "dpl_ok",
      /deploys only the sweeper contract of the hot wallet/,
    );
    // Any other contract through the deployer.
    await refused(
      request({ to: CREATE2_DEPLOYER, data: `0x${"00".repeat(32)}6080604052` }),
      "dpl_ok",
      /deploys only the sweeper contract of the hot wallet/,
    );
    // With value, from another key, for another intent.
    await refused(
      request({ to: CREATE2_DEPLOYER, data: sweeperDeployData(HOT, TOKEN), value: "1" }),
      "dpl_ok",
      /only token transfers and native transfers/,
    );
    await refused(
      request({ index: HOT_WALLET_INDEX, to: CREATE2_DEPLOYER, data: sweeperDeployData(HOT, TOKEN) }),
      "dpl_ok",
      /only the gas tank|the hot wallet sends only the token/,
    );
    await refused(
      request({ to: CREATE2_DEPLOYER, data: sweeperDeployData(HOT, TOKEN) }),
      "gas_a",
      /does not match its intent|does not carry/,
    );
  });

  it(`signs the largest batch (${FULL} addresses, each authorised) through the signer role's HTTP endpoint`, async () => {
    expect(FULL).toBeGreaterThanOrEqual(100);
    const server = await startSignerServer({
      signer,
      secret: "s".repeat(32),
      host: "127.0.0.1",
      port: 0,
      clock: systemClock,
    });
    try {
      const client = new HttpSignerClient({ url: server.url, secret: "s".repeat(32) });
      // The carrier's order: its sweeps by creation, then intent id (one transaction here: by id).
      const ks = Array.from({ length: FULL }, (_, k) => k).sort((x, y) =>
        `swp_full_${x}` < `swp_full_${y}` ? -1 : 1,
      );
      const indexes = ks.map((k) => FULL_FROM + k);
      const r = request({
        data: sweepManyData(
          TOKEN,
          indexes.map(addr),
          ks.map((k) => AMOUNT_A + BigInt(k)),
        ),
        authorizations: indexes.map((i) => auth(i)),
      });
      expect(JSON.stringify(r).length).toBeGreaterThan(16_384);
      const signed = await client.sign(r, { intentId: "bat_full" });
      expect(parseTransaction(signed.raw as Hex).authorizationList).toHaveLength(FULL);
    } finally {
      await server.close();
    }
  });

  it("refuses the sweeper of another token (another currency type of the chain shares the deposit keys)", async () => {
    const USDC = "0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48" as Hex;
    await refused(
      request({ to: sweeperAddress(HOT, USDC) }),
      "bat_ok",
      /only the sweeper contract of the hot wallet/,
    );
    await refused(
      request({ authorizations: [auth(A, sweeperAddress(HOT, USDC))] }),
      "bat_ok",
      /only to the sweeper contract/,
    );
    await refused(
      request({ to: CREATE2_DEPLOYER, data: sweeperDeployData(HOT, USDC) }),
      "dpl_ok",
      /deploys only the sweeper contract of the hot wallet/,
    );
  });

  it("refuses an address listed twice in a batch (one Transfer would confirm two sweeps), and a carried sweep signed on its own", async () => {
    await refused(
      request({ data: sweepManyData(TOKEN, [addr(B), addr(B)], [AMOUNT_A, AMOUNT_B]) }),
      "bat_dup",
      /listed twice/,
    );
    const alone = (intentId: string) =>
      refused(
        {
          ...request({ index: A }),
          transaction: {
            ...request({ index: A }).transaction,
            to: TOKEN,
            data: `0xa9059cbb${HOT.slice(2).toLowerCase().padStart(64, "0")}${AMOUNT_A.toString(16).padStart(64, "0")}`,
          },
        },
        intentId,
        /carried by a batch is never signed on its own/,
      );
    await alone("swp_a");
    await alone("swp_wait");
  });

  it("caps the gas tank's gas: a batch above its size's cap, a deployment above 1,000,000; one deployment in flight at a time", async () => {
    await refused(
      { ...request(), transaction: { ...request().transaction, gas: "30000000" } },
      "bat_ok",
      /gas above a batch's cap/,
    );
    const deploy = request({ to: CREATE2_DEPLOYER, data: sweeperDeployData(HOT, TOKEN) });
    await refused(
      { ...deploy, transaction: { ...deploy.transaction, gas: "1000001" } },
      "dpl_ok",
      /deployment's cap/,
    );
    await db
      .updateTable("outgoing_transfers")
      .set({ status: "signed" })
      .where("intent_id", "=", "dpl_ok")
      .execute();
    try {
      await refused(deploy, "dpl_two", /another deployment of the sweeper is on its way/);
    } finally {
      await db
        .updateTable("outgoing_transfers")
        .set({ status: "queued" })
        .where("intent_id", "=", "dpl_ok")
        .execute();
    }
    expect(
      parseTransaction((await signer.sign(deploy, { intentId: "dpl_two" })).raw as Hex).to?.toLowerCase(),
    ).toBe(CREATE2_DEPLOYER.toLowerCase());
  });
});
