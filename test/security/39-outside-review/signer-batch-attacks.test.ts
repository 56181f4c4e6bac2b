import { concatHex, encodeAbiParameters, type Hex, keccak256, toHex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CREATE2_DEPLOYER,
  sweeperAddress,
  sweeperDeployData,
  sweepManyData,
} from "../../../src/chains/evm/sweeper.js";
import type { EvmAuthorizationRequest } from "../../../src/chains/signing.js";
import type { Db } from "../../../src/db/database.js";
import type { CurrencyType } from "../../../src/domain/currency.js";
import { createMerchantWithKeys } from "../../../src/merchants/index.js";
import { createLogger } from "../../../src/observability/logger.js";
import { assembleCarrier, requestCarriedSweep } from "../../../src/sender/batches.js";
import { requestTransfer } from "../../../src/sender/intents.js";
import { LocalSigner } from "../../../src/signer/local-signer.js";
import { type EvmSignRequest, SignerRejectedError } from "../../../src/signer/protocol.js";
import { AddressDeriver } from "../../../src/wallet/address-deriver.js";
import { GAS_TANK_INDEX, HOT_WALLET_INDEX } from "../../../src/wallet/derivation-path.js";
import { openTestDatabase } from "../../support/db.js";

/**
 * Outside review of issue #39 (batched EIP-7702 sweeps), the signer's half. The attacker writes rows
 * of `outgoing_transfers` with the worker's role (forged carried sweeps, forged carriers) and sends
 * whatever sign requests it likes. Every test asserts the SAFE behaviour: a failing test is a finding.
 */

const MNEMONIC = "test test test test test test test test test test test junk";
const NET = "USDT-ERC20" as const;
const wallet = AddressDeriver.fromMnemonic(MNEMONIC);
const addr = (i: number, net: CurrencyType = NET) => wallet.address(net, "sandbox", i) as Hex;
const TOKEN = "0x5fbdb2315678afecb367f642a3e3c6ae8b2e3ff4" as Hex;
const HOT = addr(HOT_WALLET_INDEX);
const SWEEPER = sweeperAddress(HOT, TOKEN);
const USDC_HOT = addr(HOT_WALLET_INDEX, "USDC-ERC20");
const USDC_TOKEN = "0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48" as Hex;
const CHAIN_ID = 31337;
const A = 400;
const B = 401;
const C = 402;
const D = 403;
const X = 10_000_000n;

let database: Awaited<ReturnType<typeof openTestDatabase>>;
let db: Db;
let signer: LocalSigner;

function request(
  o: {
    index?: number;
    to?: Hex;
    data?: Hex;
    value?: string;
    network?: CurrencyType;
    chainId?: number;
    authorizations?: unknown;
  } = {},
): EvmSignRequest {
  return {
    chain: "evm",
    network: o.network ?? NET,
    environment: "sandbox",
    index: o.index ?? GAS_TANK_INDEX,
    transaction: {
      chainId: o.chainId ?? CHAIN_ID,
      nonce: 3,
      to: o.to ?? SWEEPER,
      value: o.value ?? "0",
      data: o.data ?? sweepManyData(TOKEN, [addr(A)], [X]),
      gas: "140000",
      maxFeePerGas: "2000000000",
      maxPriorityFeePerGas: "1000000000",
      ...(o.authorizations !== undefined
        ? { authorizations: o.authorizations as EvmAuthorizationRequest[] }
        : {}),
    },
  };
}

const auth = (index: number, address: string = SWEEPER, nonce = 0) => ({ index, address, nonce });

async function outcome(r: EvmSignRequest, intentId: string | undefined): Promise<unknown> {
  return signer.sign(r, intentId === undefined ? {} : { intentId }).then(
    () => "SIGNED",
    (e: unknown) => e,
  );
}

async function refused(r: EvmSignRequest, intentId: string | undefined, reason?: RegExp) {
  const err = await outcome(r, intentId);
  expect(err, `signed ${intentId}`).toBeInstanceOf(SignerRejectedError);
  if (reason) expect((err as Error).message).toMatch(reason);
}

async function watch(network: CurrencyType, index: number, merchantId: string, address?: string) {
  await db
    .insertInto("watched_addresses")
    .values({
      network,
      environment: "sandbox",
      address: address ?? addr(index, network),
      derivation_index: index,
      merchant_id: merchantId,
      purpose: "wallet",
      reference_id: null,
      watch_until: null,
    })
    .execute();
}

async function confirmedDepositAt(network: CurrencyType, index: number) {
  await db
    .insertInto("chain_observations")
    .values({
      id: `obs_${network}_${index}`,
      network,
      environment: "sandbox",
      address: addr(index, network),
      from_address: "0x1111111111111111111111111111111111111111",
      tx_hash: keccak256(toHex(`deposit ${network} ${index}`)),
      log_index: 0,
      block_number: 1,
      block_hash: "0x00",
      amount: X,
      status: "handed_off",
      handed_off_at: new Date(),
    })
    .execute();
}

beforeAll(async () => {
  database = await openTestDatabase();
  db = database.db;
  const merchant = await createMerchantWithKeys(db, { email: "outside-39@example.com", companyName: "O" });
  for (const i of [A, B, C, D]) {
    await watch(NET, i, merchant.id);
    await confirmedDepositAt(NET, i);
  }
  // Another network's deposit (same key space, another currency type).
  await watch("USDT-BEP20", C, merchant.id);
  await confirmedDepositAt("USDT-BEP20", C);

  const scope = { network: NET, environment: "sandbox" as const };
  await db.transaction().execute(async (trx) => {
    const carried = (id: string, index: number, network: CurrencyType = NET, to: string = HOT) =>
      requestCarriedSweep(trx, {
        intentId: id,
        network,
        environment: "sandbox",
        fromIndex: index,
        to,
        amount: X,
      });
    // A legitimate batch of one.
    await carried("swp_a", A);
    expect(await assembleCarrier(trx, scope, { intentId: "bat_a", hotWallet: HOT, itemIds: ["swp_a"] })).toBe(
      1,
    );
    // Forged: the same deposit address twice in one batch (two carried sweep rows of one address).
    await carried("swp_b1", B);
    await carried("swp_b2", B);
    expect(
      await assembleCarrier(trx, scope, {
        intentId: "bat_dup",
        hotWallet: HOT,
        itemIds: ["swp_b1", "swp_b2"],
      }),
    ).toBe(2);
    // A carried sweep waiting for its carrier (never signed on its own).
    await carried("swp_d", D);
  });
  // Forged rows the worker's role can write directly: a carrier whose sweep is the hot wallet's or
  // the gas tank's key, and a carrier whose sweep is another network's.
  for (const [carrier, sweep, index, network] of [
    ["bat_hot", "swp_hot", HOT_WALLET_INDEX, NET],
    ["bat_tank", "swp_tank", GAS_TANK_INDEX, NET],
    ["bat_bep", "swp_bep", C, "USDT-BEP20"],
  ] as const) {
    await db.transaction().execute(async (trx) => {
      await requestCarriedSweep(trx, {
        intentId: sweep,
        network,
        environment: "sandbox",
        fromIndex: index,
        to: network === NET ? HOT : addr(HOT_WALLET_INDEX, network),
        amount: X,
      });
      await requestTransfer(trx, {
        intentId: carrier,
        kind: "sweep_batch",
        network: NET,
        environment: "sandbox",
        asset: "token",
        fromIndex: GAS_TANK_INDEX,
        to: HOT,
        amount: X,
      });
      await trx
        .updateTable("outgoing_transfers")
        .set({ carrier_intent_id: carrier })
        .where("intent_id", "=", sweep)
        .execute();
    });
  }
  signer = LocalSigner.fromMnemonic(MNEMONIC, {
    db,
    logger: createLogger("silent"),
    tokenContract: () => TOKEN,
  });
}, 60_000);

afterAll(async () => {
  await database?.close();
});

describe("outside review #39: the signer against forged batches", () => {
  it("control: the legitimate batch of one is signed", async () => {
    expect(await outcome(request({ authorizations: [auth(A)] }), "bat_a")).toBe("SIGNED");
  });

  it("refuses a forged carrier whose sweep is the hot wallet's or the gas tank's key (no authorisation for a system key)", async () => {
    await refused(
      request({ data: sweepManyData(TOKEN, [HOT], [X]), authorizations: [auth(HOT_WALLET_INDEX)] }),
      "bat_hot",
    );
    await refused(
      request({
        data: sweepManyData(TOKEN, [addr(GAS_TANK_INDEX)], [X]),
        authorizations: [auth(GAS_TANK_INDEX)],
      }),
      "bat_tank",
    );
  });

  it("refuses a forged carrier of this network whose sweep is another network's row", async () => {
    await refused(
      request({ data: sweepManyData(TOKEN, [addr(C)], [X]), authorizations: [auth(C)] }),
      "bat_bep",
    );
  });

  it("refuses an authorisation to the sweeper of another currency type's hot wallet on the same chain (USDC-ERC20)", async () => {
    await refused(request({ authorizations: [auth(A, sweeperAddress(USDC_HOT, USDC_TOKEN))] }), "bat_a");
    // The legitimate USDT-ERC20 carrier named by a USDC-ERC20 request.
    await refused(
      request({
        network: "USDC-ERC20",
        to: sweeperAddress(USDC_HOT, USDC_TOKEN),
        authorizations: [auth(A, sweeperAddress(USDC_HOT, USDC_TOKEN))],
      }),
      "bat_a",
    );
    await refused(request({ to: CREATE2_DEPLOYER, data: sweeperDeployData(USDC_HOT, USDC_TOKEN) }), "bat_a");
  });

  it("refuses a batch listing the same deposit address twice (forged duplicate carried rows)", async () => {
    // Each Transfer log would then confirm both sweeps (check() matches items with `some`), and the
    // address's second sweep could move more than one queued amount.
    await refused(
      request({ data: sweepManyData(TOKEN, [addr(B), addr(B)], [X, X]), authorizations: [auth(B)] }),
      "bat_dup",
    );
    await refused(request({ data: sweepManyData(TOKEN, [addr(B), addr(B)], [X, X]) }), "bat_dup");
  });

  it("refuses to sign a carried sweep on its own (a plain token transfer from the deposit key)", async () => {
    const transfer = (index: number): EvmSignRequest => ({
      ...request({ index, to: TOKEN }),
      transaction: {
        ...request({ index, to: TOKEN }).transaction,
        data: `0xa9059cbb${HOT.slice(2).toLowerCase().padStart(64, "0")}${X.toString(16).padStart(64, "0")}` as Hex,
      },
    });
    // In a batch already (signed with it), and waiting for its carrier.
    await refused(transfer(A), "swp_a");
    await refused(transfer(D), "swp_d");
  });

  it("refuses the carrier when the request names one of its sweeps, or no intent", async () => {
    await refused(request({ authorizations: [auth(A)] }), "swp_a");
    await refused(request({ authorizations: [auth(A)] }), undefined);
    await refused(request({ authorizations: [auth(A)] }), "x".repeat(101));
  });

  it("malformed requests are refused with SignerRejectedError, never another exception", async () => {
    const selector = sweepManyData(TOKEN, [addr(A)], [X]).slice(0, 10) as Hex;
    const malformed: EvmSignRequest[] = [
      request({ authorizations: [null] }),
      request({ authorizations: [1] }),
      request({ authorizations: ["x"] }),
      request({ authorizations: [[]] }),
      request({ authorizations: null }),
      request({ authorizations: { 0: auth(A), length: 1 } }),
      request({ authorizations: [{ index: "400", address: SWEEPER, nonce: 0 }] }),
      request({ authorizations: [{ index: A, address: 5, nonce: 0 }] }),
      request({ authorizations: [{ index: A, address: SWEEPER, nonce: 2 ** 60 }] }),
      request({ authorizations: [{ index: A, address: SWEEPER, nonce: 1.5 }] }),
      request({ authorizations: [{ index: 2 ** 31, address: SWEEPER, nonce: 0 }] }),
      request({ authorizations: [{ index: -1, address: SWEEPER, nonce: 0 }] }),
      request({ authorizations: [{ index: A, address: `${SWEEPER}00`, nonce: 0 }] }),
      request({ authorizations: [{ ...auth(A), chainId: 1 }] }),
      request({
        authorizations: [
          JSON.parse(
            '{"index":400,"address":"0x0000000000000000000000000000000000000001","nonce":0,"__proto__":{}}',
          ),
        ],
      }),
      request({ data: selector }),
      request({ data: "0x123" as Hex }),
      request({ data: `${selector}${"ff".repeat(32)}${"00".repeat(64)}` as Hex }),
      // accounts and amounts of different lengths (hand-encoded: viem's encoder refuses them).
      request({
        data: concatHex([
          selector,
          encodeAbiParameters(
            [{ type: "address" }, { type: "address[]" }, { type: "uint256[]" }],
            [TOKEN, [addr(A), addr(B)], [X]],
          ),
        ]),
      }),
      // An array length of 2^64 in the accounts' head.
      request({
        data: concatHex([
          selector,
          encodeAbiParameters(
            [{ type: "address" }, { type: "uint256" }, { type: "uint256" }],
            [TOKEN, 96n, 128n],
          ),
          encodeAbiParameters([{ type: "uint256" }], [2n ** 64n]),
        ]),
      }),
      request({ data: sweepManyData(TOKEN, [], []) }),
      request({ data: sweepManyData(TOKEN, [addr(A)], [2n ** 256n - 1n]) }),
      request({ chainId: 0, authorizations: [auth(A)] }),
      request({ chainId: 2 ** 53, authorizations: [auth(A)] }),
      request({ value: "1", authorizations: [auth(A)] }),
      request({ value: "-1" }),
      request({ to: "0x" as Hex }),
      // 18-decimal token: an amount finer than the API's 6 decimals.
      request({ network: "USDT-BEP20", data: sweepManyData(TOKEN, [addr(A)], [10n ** 12n + 1n]) }),
      { ...request(), transaction: undefined } as unknown as EvmSignRequest,
      { ...request(), transaction: { ...request().transaction, gas: 5 } } as unknown as EvmSignRequest,
    ];
    for (const [i, r] of malformed.entries()) {
      const err = await outcome(r, "bat_a");
      expect(
        err,
        `case ${i}: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`,
      ).toBeInstanceOf(SignerRejectedError);
    }
  });
});
