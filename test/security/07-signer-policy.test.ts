import { Writable } from "node:stream";
import { encodeFunctionData, parseAbi } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tronAddressFromHex, tronAddressToHex } from "../../src/chains/tron/address.js";
import { ConfigError, parseConfig } from "../../src/config/config.js";
import { formatAccountXpubs } from "../../src/config/xpubs.js";
import type { Db } from "../../src/db/database.js";
import type { CurrencyType } from "../../src/domain/currency.js";
import type { Environment } from "../../src/domain/environment.js";
import { createMerchantWithKeys } from "../../src/merchants/index.js";
import { createLogger } from "../../src/observability/logger.js";
import { startRole } from "../../src/roles/processes.js";
import type { TransferIntent } from "../../src/sender/intents.js";
import { HttpSignerClient } from "../../src/signer/http-client.js";
import { LocalSigner } from "../../src/signer/local-signer.js";
import { type Signer, SignerRejectedError, type SignRequest } from "../../src/signer/protocol.js";
import { startSignerRole } from "../../src/signer/role.js";
import type { RunningSignerServer } from "../../src/signer/server.js";
import { accountXpubsOf } from "../../src/wallet/account-keys.js";
import { AddressDeriver } from "../../src/wallet/address-deriver.js";
import { GAS_TANK_INDEX, HOT_WALLET_INDEX } from "../../src/wallet/derivation-path.js";
// Withdrawal and payout intents with their evidence (issue #34: the signer checks it, test/security/18).
import { requestTransfer } from "../support/backed-transfer.js";
import { tronTransaction } from "../support/chain/tron-transaction.js";
import { openTestDatabase } from "../support/db.js";

// Security issue #18, finding 7: the signer signed any transfer to any destination, and the
// internet-facing `api` role held INTERNAL_SHARED_SECRET, so a compromised api process could have
// the signer drain the hot wallet. docs/decisions/trust-round-two.md#the-signer-finding-1-signer-half-10-and-11: the signer accepts only transfers from the hot
// wallet to a recorded withdrawal/payout destination (amount matching), sweeps from deposit
// addresses to the hot wallet and gas top-ups from the gas tank to deposit addresses, checked
// against rows it reads itself, per chain (network, environment); anything else is refused and
// logged. The api role starts without the secret, and refuses it in production mode.
//
// Both signers are exercised: in-process (`LocalSigner`, as `serve` runs it) and the `stablegate
// signer` role over its HMAC-authenticated HTTP endpoint (`startSignerRole` with this test's
// database), through the worker's client.

const MNEMONIC = "test test test test test test test test test test test junk";
const SECRET = "p".repeat(48);
const ERC20_TOKEN = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
const TRC20_TOKEN_HEX = "41a614f803b6fd780986a42c78ec9c7f77e6ded13c";
const ERC20 = parseAbi(["function transfer(address to, uint256 value) returns (bool)"]);
const wallet = AddressDeriver.fromMnemonic(MNEMONIC);
const addr = (network: CurrencyType, environment: Environment, index: number) =>
  wallet.address(network, environment, index);

// Outside addresses (no key of ours: the mnemonic's production index 1 is the gas tank, issue #34,
// and index 2 TRON's resource account, issue #38: anvil's accounts #1 and #2 are ours).
const DEST = "0x52908400098527886E0F7030069857D2E4169EE7";
const DEST_PROD = "0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc";
const STRANGER = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";
// Not anvil's account #1 (0x7099…79c8): with the test mnemonic that key is the gateway's own
// USDT-ERC20 gas tank, so its TRON spelling is one of our addresses (issue #37, own addresses in
// every spelling) and the policy rightly refuses it as a destination.
const TRON_DEST = tronAddressFromHex("4152908400098527886e0f7030069857d2e4169ee7");
const TRON_STRANGER = tronAddressFromHex("4190f79bf6eb2c4f870365e785982e1f101e93b906");

const DEPOSIT = 200; // recorded for ERC20 and TRC20 sandbox
const DEPOSIT_PROD = 201; // recorded for ERC20 production only
const DEPOSIT_TRON_ONLY = 202; // recorded for TRC20 sandbox only
const UNRECORDED = 300;

let database: Awaited<ReturnType<typeof openTestDatabase>>;
let db: Db;
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

function erc20(
  environment: Environment,
  index: number,
  to: string,
  amount: bigint,
  token = ERC20_TOKEN,
): SignRequest {
  return {
    chain: "evm",
    network: "USDT-ERC20",
    environment,
    index,
    transaction: {
      // Production keys sign only for Ethereum's own chain id (issue #37); the sandbox's testnet is anvil.
      chainId: environment === "production" ? 1 : 31337,
      nonce: 3,
      to: token,
      value: "0",
      data: encodeFunctionData({ abi: ERC20, functionName: "transfer", args: [to as `0x${string}`, amount] }),
      gas: "60000",
      maxFeePerGas: "2000000000",
      maxPriorityFeePerGas: "1000000000",
    },
  };
}

function ether(environment: Environment, index: number, to: string, wei: bigint): SignRequest {
  return {
    chain: "evm",
    network: "USDT-ERC20",
    environment,
    index,
    transaction: {
      chainId: environment === "production" ? 1 : 31337,
      nonce: 4,
      to,
      value: wei.toString(),
      data: "0x",
      gas: "21000",
      maxFeePerGas: "2000000000",
      maxPriorityFeePerGas: "1000000000",
    },
  };
}

/** A TRON transaction as a node builds it: a TRC20 transfer, or a TRX `TransferContract`. */
function tron(index: number, to: string, amount: bigint, kind: "token" | "native"): SignRequest {
  const owner = tronAddressToHex(addr("USDT-TRC20", "sandbox", index));
  const type = kind === "token" ? "TriggerSmartContract" : "TransferContract";
  const value: Record<string, unknown> =
    kind === "token"
      ? {
          owner_address: owner,
          contract_address: TRC20_TOKEN_HEX,
          data: `a9059cbb${tronAddressToHex(to).slice(2).padStart(64, "0")}${amount.toString(16).padStart(64, "0")}`,
        }
      : { owner_address: owner, to_address: tronAddressToHex(to), amount: Number(amount) };
  return {
    chain: "tron",
    network: "USDT-TRC20",
    environment: "sandbox",
    index,
    transaction: tronTransaction(type, value),
  };
}

async function intent(i: Omit<TransferIntent, "intentId"> & { intentId: string }) {
  await db.transaction().execute((trx) => requestTransfer(trx, i));
}

beforeAll(async () => {
  database = await openTestDatabase();
  db = database.db;
  const merchant = await createMerchantWithKeys(db, { email: "policy@example.com", companyName: "Policy" });
  const watch = (network: CurrencyType, environment: Environment, index: number) =>
    db
      .insertInto("watched_addresses")
      .values({
        network,
        environment,
        address: addr(network, environment, index),
        derivation_index: index,
        merchant_id: merchant.id,
        purpose: "wallet",
        reference_id: null,
        watch_until: null,
      })
      .execute();
  await watch("USDT-ERC20", "sandbox", DEPOSIT);
  await watch("USDT-TRC20", "sandbox", DEPOSIT);
  await watch("USDT-ERC20", "production", DEPOSIT_PROD);
  await watch("USDT-TRC20", "sandbox", DEPOSIT_TRON_ONLY);

  const e = "USDT-ERC20" as const;
  const t = "USDT-TRC20" as const;
  await intent({
    intentId: "tx_w1",
    kind: "withdrawal",
    network: e,
    environment: "sandbox",
    to: DEST,
    amount: 7_000_000n,
  });
  await intent({
    intentId: "tx_p1",
    kind: "payout",
    network: e,
    environment: "production",
    to: DEST_PROD,
    amount: 4_000_000n,
  });
  await intent({
    intentId: "swp_1",
    kind: "sweep",
    network: e,
    environment: "sandbox",
    fromIndex: DEPOSIT,
    to: addr(e, "sandbox", HOT_WALLET_INDEX),
    amount: 3_000_000n,
  });
  await intent({
    intentId: "gas_1",
    kind: "gas_topup",
    network: e,
    environment: "sandbox",
    asset: "native",
    fromIndex: GAS_TANK_INDEX,
    to: addr(e, "sandbox", DEPOSIT),
    amount: 5_000n,
  });
  // The same sweep and top-up shapes recorded for other chains only (network / environment).
  await intent({
    intentId: "swp_tron_only",
    kind: "sweep",
    network: t,
    environment: "sandbox",
    fromIndex: DEPOSIT_TRON_ONLY,
    to: addr(t, "sandbox", HOT_WALLET_INDEX),
    amount: 3_000_000n,
  });
  await intent({
    intentId: "swp_prod",
    kind: "sweep",
    network: e,
    environment: "production",
    fromIndex: DEPOSIT_PROD,
    to: addr(e, "production", HOT_WALLET_INDEX),
    amount: 3_000_000n,
  });
  await intent({
    intentId: "tx_t1",
    kind: "withdrawal",
    network: t,
    environment: "sandbox",
    to: TRON_DEST,
    amount: 9_000_000n,
  });
  await intent({
    intentId: "gas_t1",
    kind: "gas_topup",
    network: t,
    environment: "sandbox",
    asset: "native",
    fromIndex: GAS_TANK_INDEX,
    to: addr(t, "sandbox", DEPOSIT),
    amount: 1_000n,
  });
  // The sweep moves a recorded deposit (issue #34: a sweep needs the address's recorded credits).
  await db
    .insertInto("chain_observations")
    .values({
      id: "obs_policy_1",
      network: e,
      environment: "sandbox",
      address: addr(e, "sandbox", DEPOSIT),
      from_address: STRANGER,
      tx_hash: `0x${"ab".repeat(32)}`,
      log_index: 0,
      block_number: 1,
      block_hash: `0x${"cd".repeat(32)}`,
      amount: 3_000_000n,
      status: "handed_off",
      handed_off_at: new Date(),
    })
    .execute();
  // Intents outside a source's rules (written by whoever can write the table): still refused.
  await intent({
    intentId: "gas_to_hot",
    kind: "gas_topup",
    network: e,
    environment: "sandbox",
    asset: "native",
    fromIndex: GAS_TANK_INDEX,
    to: addr(e, "sandbox", HOT_WALLET_INDEX),
    amount: 5_000n,
  });
  await intent({
    intentId: "swp_to_dest",
    kind: "sweep",
    network: e,
    environment: "sandbox",
    fromIndex: DEPOSIT,
    to: DEST,
    amount: 3_000_000n,
  });
  // A finished withdrawal is no longer signable.
  await intent({
    intentId: "tx_done",
    kind: "withdrawal",
    network: e,
    environment: "sandbox",
    to: STRANGER,
    amount: 1_000n,
  });
  await db
    .updateTable("outgoing_transfers")
    .set({ status: "confirmed", finished_at: new Date() })
    .where("intent_id", "=", "tx_done")
    .execute();

  const tokens = (network: CurrencyType) =>
    network === "USDT-ERC20" ? ERC20_TOKEN : tronAddressFromHex(TRC20_TOKEN_HEX);
  inProcess = LocalSigner.fromMnemonic(MNEMONIC, { db, logger, tokenContract: tokens });
  const config = parseConfig({
    NODE_ENV: "test",
    LOG_LEVEL: "warn",
    MASTER_MNEMONIC: MNEMONIC,
    INTERNAL_SHARED_SECRET: SECRET,
    SIGNER_PORT: "0",
    USDT_ERC20_CONTRACT: ERC20_TOKEN,
    SANDBOX_USDT_ERC20_CONTRACT: ERC20_TOKEN,
    SANDBOX_USDT_TRC20_CONTRACT: tronAddressFromHex(TRC20_TOKEN_HEX),
    DATA_DIR: `/tmp/sg-policy-${process.pid}`,
  });
  server = await startSignerRole(config, { database, logger });
  overHttp = new HttpSignerClient({ url: server.url, secret: SECRET });
});

afterAll(async () => {
  await overHttp?.close();
  await server?.close();
  await database?.close();
});

const hot = (network: CurrencyType, environment: Environment) => addr(network, environment, HOT_WALLET_INDEX);

const allowed: [string, string, () => SignRequest][] = [
  [
    "hot wallet → a recorded withdrawal destination, its amount",
    "tx_w1",
    () => erc20("sandbox", HOT_WALLET_INDEX, DEST, 7_000_000n),
  ],
  [
    "hot wallet → a recorded payout destination (production rows, production key)",
    "tx_p1",
    () => erc20("production", HOT_WALLET_INDEX, DEST_PROD, 4_000_000n),
  ],
  [
    "deposit address → the hot wallet (a recorded sweep)",
    "swp_1",
    () => erc20("sandbox", DEPOSIT, hot("USDT-ERC20", "sandbox"), 3_000_000n),
  ],
  [
    "gas tank → a recorded deposit address (a recorded top-up)",
    "gas_1",
    () => ether("sandbox", GAS_TANK_INDEX, addr("USDT-ERC20", "sandbox", DEPOSIT), 5_000n),
  ],
  [
    "TRON hot wallet → a recorded withdrawal destination",
    "tx_t1",
    () => tron(HOT_WALLET_INDEX, TRON_DEST, 9_000_000n, "token"),
  ],
  [
    "TRON gas tank → a recorded deposit address (TRX)",
    "gas_t1",
    () => tron(GAS_TANK_INDEX, addr("USDT-TRC20", "sandbox", DEPOSIT), 1_000n, "native"),
  ],
];

// Each request names the intent it claims to pay (issue #34); the reason is the first rule broken.
const refused: [string, string, () => SignRequest, RegExp][] = [
  [
    "hot wallet → an address that is no recorded destination",
    "tx_w1",
    () => erc20("sandbox", HOT_WALLET_INDEX, STRANGER, 7_000_000n),
    /does not match its intent/,
  ],
  [
    "hot wallet → a recorded destination, another amount",
    "tx_w1",
    () => erc20("sandbox", HOT_WALLET_INDEX, DEST, 7_000_001n),
    /does not match its intent/,
  ],
  [
    "hot wallet → the destination of a finished withdrawal",
    "tx_done",
    () => erc20("sandbox", HOT_WALLET_INDEX, STRANGER, 1_000n),
    /no open intent/,
  ],
  [
    "hot wallet → the native coin to a recorded destination",
    "tx_w1",
    () => ether("sandbox", HOT_WALLET_INDEX, DEST, 7_000_000n),
    /hot wallet sends only the token/,
  ],
  [
    "hot wallet → a recorded destination through another token contract",
    "tx_w1",
    () => erc20("sandbox", HOT_WALLET_INDEX, DEST, 7_000_000n, STRANGER),
    /configured token/,
  ],
  [
    "deposit address → a withdrawal destination (not the hot wallet), even with an intent saying so",
    "swp_to_dest",
    () => erc20("sandbox", DEPOSIT, DEST, 3_000_000n),
    /only to the hot wallet/,
  ],
  [
    "deposit address → the hot wallet, another amount than its sweep",
    "swp_1",
    () => erc20("sandbox", DEPOSIT, hot("USDT-ERC20", "sandbox"), 3_000_001n),
    /does not match its intent/,
  ],
  [
    "deposit address → the native coin to the hot wallet",
    "swp_1",
    () => ether("sandbox", DEPOSIT, hot("USDT-ERC20", "sandbox"), 3_000_000n),
    /sends only the token/,
  ],
  [
    "gas tank → an address that is no deposit address",
    "gas_1",
    () => ether("sandbox", GAS_TANK_INDEX, STRANGER, 5_000n),
    /does not match its intent/,
  ],
  [
    "gas tank → the hot wallet, even with an intent saying so",
    "gas_to_hot",
    () => ether("sandbox", GAS_TANK_INDEX, hot("USDT-ERC20", "sandbox"), 5_000n),
    /recorded deposit addresses/,
  ],
  [
    "gas tank → the token to a deposit address",
    "gas_1",
    () => erc20("sandbox", GAS_TANK_INDEX, addr("USDT-ERC20", "sandbox", DEPOSIT), 5_000n),
    /gas tank sends only the native coin/,
  ],
  [
    "an unknown source key (an index below the deposit range)",
    "swp_1",
    () => erc20("sandbox", 5, hot("USDT-ERC20", "sandbox"), 3_000_000n),
    /source key/,
  ],
  [
    "an unknown source key (an unrecorded deposit index)",
    "swp_1",
    () => erc20("sandbox", UNRECORDED, hot("USDT-ERC20", "sandbox"), 3_000_000n),
    /source key/,
  ],
  [
    "sandbox key, a production withdrawal's destination and amount",
    "tx_p1",
    () => erc20("sandbox", HOT_WALLET_INDEX, DEST_PROD, 4_000_000n),
    /does not match its intent/,
  ],
  [
    "production key, a sandbox withdrawal's destination and amount",
    "tx_w1",
    () => erc20("production", HOT_WALLET_INDEX, DEST, 7_000_000n),
    /does not match its intent/,
  ],
  [
    "sandbox key of an index recorded in production only",
    "swp_prod",
    () => erc20("sandbox", DEPOSIT_PROD, hot("USDT-ERC20", "sandbox"), 3_000_000n),
    /source key/,
  ],
  [
    "ERC20 key of an index recorded on TRC20 only",
    "swp_tron_only",
    () => erc20("sandbox", DEPOSIT_TRON_ONLY, hot("USDT-ERC20", "sandbox"), 3_000_000n),
    /source key/,
  ],
  [
    "TRON hot wallet → an address that is no recorded destination",
    "tx_t1",
    () => tron(HOT_WALLET_INDEX, TRON_STRANGER, 9_000_000n, "token"),
    /does not match its intent/,
  ],
  [
    "TRON hot wallet → TRX to a recorded destination",
    "tx_t1",
    () => tron(HOT_WALLET_INDEX, TRON_DEST, 9_000_000n, "native"),
    /hot wallet sends only the token/,
  ],
  [
    "TRON gas tank → TRX to an address that is no deposit address",
    "gas_t1",
    () => tron(GAS_TANK_INDEX, TRON_STRANGER, 1_000n, "native"),
    /does not match its intent/,
  ],
];

const signers: [string, () => Signer][] = [
  ["in-process", () => inProcess],
  ["the signer role over HMAC HTTP", () => overHttp],
];

describe.each(signers)("signer policy (finding 7): %s", (_name, signerOf) => {
  it.each(allowed)("signs: %s", async (_label, intentId, request) => {
    const r = request();
    const signed = await signerOf().sign(r, { intentId });
    expect(signed.from).toBe(addr(r.network, r.environment, r.index));
  });

  it.each(refused)("refuses and logs: %s", async (label, intentId, request, reason) => {
    const before = logLines.length;
    const r = request();
    const err = await signerOf()
      .sign(r, { intentId })
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
      network: r.network,
      environment: r.environment,
      index: r.index,
      reason: expect.stringMatching(reason),
    });
    // The shape only: never key material.
    expect(JSON.stringify(logged[0])).not.toMatch(/test test test|privateKey|raw_data_hex/);
  });
});

describe("the api role and INTERNAL_SHARED_SECRET (finding 7)", () => {
  const production = {
    NODE_ENV: "production",
    LOG_LEVEL: "silent",
    PORT: "0",
    SANDBOX_PORT: "0",
    PRODUCTION_BASE_URL: "http://api.stablegate.test",
    SANDBOX_BASE_URL: "http://sandbox.stablegate.test",
    SECRET_ENCRYPTION_KEY: "a".repeat(64),
    JWT_SECRET: "j".repeat(40),
    METRICS_TOKEN: "m".repeat(32),
    // api and worker derive addresses from the account public keys only (docs/decisions/custody-and-faults.md#key-custody).
    MASTER_XPUBS: formatAccountXpubs(accountXpubsOf(wallet)),
    DATA_DIR: `/tmp/sg-policy-api-${process.pid}`,
  };

  it("in production mode the api role refuses to start with it, saying why; without it, it starts", async () => {
    const config = parseConfig({ ...production, INTERNAL_SHARED_SECRET: SECRET });
    const err = await startRole("api", config, { database }).then(
      (p) => p.stop().then(() => null),
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/INTERNAL_SHARED_SECRET: the api role never calls the signer/);

    const proc = await startRole("api", parseConfig(production), { database });
    try {
      expect(proc.runtime.secrets.INTERNAL_SHARED_SECRET).toBeUndefined();
      expect(proc.runtime.signer).toBeNull();
    } finally {
      await proc.stop();
    }
  });

  it("serve and worker keep it (required in production mode); outside production the api role drops it", async () => {
    for (const role of ["serve", "worker"] as const) {
      const err = await startRole(role, parseConfig(production), { database }).then(
        (p) => p.stop().then(() => null),
        (e: unknown) => e,
      );
      expect(err, role).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toMatch(/INTERNAL_SHARED_SECRET: required in production mode/);
    }
    const dev = parseConfig({ ...production, NODE_ENV: "test", INTERNAL_SHARED_SECRET: SECRET });
    const api = await startRole("api", dev, { database });
    try {
      expect(api.runtime.secrets.INTERNAL_SHARED_SECRET).toBeUndefined();
      expect(api.runtime.config.secrets.INTERNAL_SHARED_SECRET).toBeUndefined();
    } finally {
      await api.stop();
    }
    const worker = await startRole("worker", dev, { database });
    try {
      expect(worker.runtime.secrets.INTERNAL_SHARED_SECRET).toBe(SECRET);
    } finally {
      await worker.stop();
    }
  });
});
