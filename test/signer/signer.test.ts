import { mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { hexToBytes } from "@noble/hashes/utils.js";
import { encodeFunctionData, type Hex, parseAbi, parseTransaction, recoverTransactionAddress } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { evmAddressFromPublicKey } from "../../src/chains/evm/address.js";
import { tronAddressFromHex, tronAddressToHex } from "../../src/chains/tron/address.js";
import type { Database } from "../../src/db/database.js";
import { ManualClock } from "../../src/lib/clock.js";
import { createLogger } from "../../src/observability/logger.js";

import { authHeaders, MAX_SKEW_MS, SIGNATURE_HEADER, TIMESTAMP_HEADER } from "../../src/signer/hmac.js";
import { HttpSignerClient } from "../../src/signer/http-client.js";
import { LocalSigner } from "../../src/signer/local-signer.js";
import { OUTFLOW_FILE, OutflowGuard } from "../../src/signer/outflow.js";
import { type EvmSignRequest, SignerRejectedError, type TronSignRequest } from "../../src/signer/protocol.js";
import { type RunningSignerServer, startSignerServer } from "../../src/signer/server.js";
import { AddressDeriver } from "../../src/wallet/address-deriver.js";
import { HOT_WALLET_INDEX } from "../../src/wallet/derivation-path.js";
// Withdrawal intents with the evidence the signer checks (issue #34: test/security/18).
import { requestTransfer } from "../support/backed-transfer.js";
import { tronTransaction } from "../support/chain/tron-transaction.js";
import { openTestDatabase } from "../support/db.js";

const MNEMONIC = "test test test test test test test test test test test junk";
const SECRET = "s".repeat(40);
const wallet = AddressDeriver.fromMnemonic(MNEMONIC);
const ERC20 = parseAbi(["function transfer(address to, uint256 value) returns (bool)"]);
const recipient = "0x52908400098527886E0F7030069857D2E4169EE7";
const token = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
const tronToken = "41a614f803b6fd780986a42c78ec9c7f77e6ded13c";

// The structural checks of the signer; its transfer policy (which key may send what to whom,
// against the database) is test/security/07-signer-policy.test.ts, the evidence behind an intent
// test/security/18, the outflow cap test/security/19. The transfers signed here are recorded
// withdrawals with their evidence, named by their intent, so the policy lets them through.
const SANDBOX = { intentId: "tx_signer_sandbox" };
const PRODUCTION = { intentId: "tx_signer_production" };
const TRON = { intentId: "tx_signer_tron" };
let database: Database;
let signer: LocalSigner;
beforeAll(async () => {
  database = await openTestDatabase();
  signer = LocalSigner.fromMnemonic(MNEMONIC, {
    db: database.db,
    logger: createLogger("silent"),
    tokenContract: (network) => (network === "USDT-ERC20" ? token : tronAddressFromHex(tronToken)),
  });
  await database.db.transaction().execute(async (trx) => {
    for (const environment of ["sandbox", "production"] as const)
      await requestTransfer(trx, {
        intentId: `tx_signer_${environment}`,
        kind: "withdrawal",
        network: "USDT-ERC20",
        environment,
        to: recipient,
        amount: 1_500_000n,
      });
    await requestTransfer(trx, {
      intentId: "tx_signer_tron",
      kind: "withdrawal",
      network: "USDT-TRC20",
      environment: "sandbox",
      // Not anvil's account #1 (0x7099…79c8): with the test mnemonic that key is our own USDT-ERC20
      // gas tank, and its TRON spelling one of our addresses (issue #37): the policy refuses it.
      to: tronAddressFromHex("4152908400098527886e0f7030069857d2e4169ee7"),
      amount: 5n,
    });
  });
});
afterAll(async () => {
  await database?.close();
});

function evmRequest(
  overrides: Partial<EvmSignRequest["transaction"]> = {},
  index = HOT_WALLET_INDEX,
): EvmSignRequest {
  return {
    chain: "evm",
    network: "USDT-ERC20",
    environment: "sandbox",
    index,
    transaction: {
      chainId: 31337,
      nonce: 7,
      to: token,
      value: "0",
      data: encodeFunctionData({ abi: ERC20, functionName: "transfer", args: [recipient, 1_500_000n] }),
      gas: "60000",
      maxFeePerGas: "2000000000",
      maxPriorityFeePerGas: "1000000000",
      ...overrides,
    },
  };
}

/** A TRON TriggerSmartContract transaction encoded with tronweb's protobuf encoder (as a node builds it). */
function tronRequest(
  owner: string,
  data: string,
  type: "TriggerSmartContract" | "TransferContract" = "TriggerSmartContract",
): TronSignRequest {
  const value: Record<string, unknown> =
    type === "TriggerSmartContract"
      ? {
          data,
          owner_address: tronAddressToHex(owner),
          contract_address: tronToken,
        }
      : {
          owner_address: tronAddressToHex(owner),
          to_address: "41a614f803b6fd780986a42c78ec9c7f77e6ded13c",
          amount: 1000,
        };
  return {
    chain: "tron",
    network: "USDT-TRC20",
    environment: "sandbox",
    index: HOT_WALLET_INDEX,
    transaction: tronTransaction(type, value),
  };
}
const transferData = (to20: string, amount: bigint) =>
  `a9059cbb${to20.padStart(64, "0")}${amount.toString(16).padStart(64, "0")}`;

describe("LocalSigner policy", () => {
  it("signs an ERC20 transfer with the key of the requested index (the signature recovers to the derived address)", async () => {
    // (Other indexes, the gas tank and deposit addresses, sign only their own shapes: test/security/07.)
    for (const index of [HOT_WALLET_INDEX]) {
      const signed = await signer.sign(evmRequest({}, index), SANDBOX);
      const expected = wallet.address("USDT-ERC20", "sandbox", index);
      expect(signed.from).toBe(expected);
      expect(await recoverTransactionAddress({ serializedTransaction: signed.raw as never })).toBe(expected);
      const tx = parseTransaction(signed.raw as Hex);
      expect(tx.nonce).toBe(7);
      expect(tx.to?.toLowerCase()).toBe(token.toLowerCase());
    }
    // Production and sandbox keys differ (separate BIP44 accounts).
    const prod = await signer.sign({ ...evmRequest({ chainId: 1 }), environment: "production" }, PRODUCTION);
    expect(prod.from).toBe(wallet.address("USDT-ERC20", "production", HOT_WALLET_INDEX));
  });

  it("production signs only for the network's own chain id (issue #37: one key is an address on every EVM chain)", async () => {
    // Whatever the worker or its RPC says: a production USDT-ERC20 transfer for chain 56 or 31337 is refused.
    for (const chainId of [56, 137, 31337])
      await expect(
        signer.sign({ ...evmRequest({ chainId }), environment: "production" }, PRODUCTION),
      ).rejects.toThrow(new RegExp(`chainId ${chainId} is not USDT-ERC20's \\(1\\)`));
    // The sandbox's testnets have their own chain ids.
    await expect(signer.sign(evmRequest({ chainId: 11155111 }), SANDBOX)).resolves.toMatchObject({
      from: wallet.address("USDT-ERC20", "sandbox", HOT_WALLET_INDEX),
    });
  });

  it("refuses anything but a token transfer or a plain native transfer", async () => {
    // A plain native transfer is well-formed, but from the hot wallet the policy refuses it (gas
    // top-ups come from the gas tank: test/security/07).
    await expect(
      signer.sign(evmRequest({ to: recipient, data: "0x", value: "1000", gas: "21000" }), SANDBOX),
    ).rejects.toThrow(/policy: the hot wallet sends only the token/);
    const refusals: Partial<EvmSignRequest["transaction"]>[] = [
      { data: "0x095ea7b3" + "0".repeat(128) }, // approve
      { data: "0xdeadbeef" }, // arbitrary call
      { value: "1" }, // token transfer with ETH value
      { nonce: -1 },
      { gas: "1e6" },
      { maxPriorityFeePerGas: "3000000000" }, // above max fee
      { to: "0x123" },
    ];
    for (const r of refusals)
      await expect(signer.sign(evmRequest(r))).rejects.toBeInstanceOf(SignerRejectedError);
    await expect(signer.sign({ ...evmRequest(), index: -1 })).rejects.toBeInstanceOf(SignerRejectedError);
    await expect(signer.sign({ ...evmRequest(), environment: "staging" as never })).rejects.toBeInstanceOf(
      SignerRejectedError,
    );
  });

  it("signs a TRON token transfer whose owner is the requested key; refuses tampered or foreign ones", async () => {
    const owner = wallet.address("USDT-TRC20", "sandbox", HOT_WALLET_INDEX);
    const req = tronRequest(owner, transferData("52908400098527886e0f7030069857d2e4169ee7", 5n));
    const signed = await signer.sign(req, TRON);
    expect(signed.hash).toBe(req.transaction.txID);
    const tx = JSON.parse(signed.raw) as { signature: string[] };
    const sig = hexToBytes(tx.signature[0]!);
    const pub = secp256k1.Signature.fromBytes(sig.slice(0, 64), "compact")
      .addRecoveryBit(sig[64]! - 27)
      .recoverPublicKey(hexToBytes(req.transaction.txID));
    expect(evmAddressFromPublicKey(pub.toBytes(false)).slice(2).toLowerCase()).toBe(
      tronAddressToHex(owner).slice(2),
    );

    // raw_data changed after encoding: the hex no longer matches.
    const tampered = structuredClone(req);
    (tampered.transaction.raw_data as { fee_limit: number }).fee_limit = 1;
    await expect(signer.sign(tampered)).rejects.toThrow(/does not encode/);
    // txID not the hash of the raw data.
    await expect(
      signer.sign({ ...req, transaction: { ...req.transaction, txID: "00".repeat(32) } }),
    ).rejects.toThrow(/txID/);
    // Another owner than the requested key.
    const other = tronRequest(wallet.address("USDT-TRC20", "sandbox", 5), transferData("11", 5n));
    await expect(signer.sign(other)).rejects.toThrow(/owner_address/);
    // A contract call that is not a transfer.
    await expect(signer.sign(tronRequest(owner, `095ea7b3${"0".repeat(128)}`))).rejects.toBeInstanceOf(
      SignerRejectedError,
    );
    // A TRX transfer is well-formed; from the hot wallet the policy refuses it (top-ups: gas tank).
    await expect(signer.sign(tronRequest(owner, "", "TransferContract"), TRON)).rejects.toThrow(
      /policy: the hot wallet sends only the token/,
    );
  });
});

describe("signer HTTP endpoint (INTERNAL_SHARED_SECRET)", () => {
  const clock = new ManualClock(Date.parse("2026-03-01T00:00:00Z"));
  let server: RunningSignerServer;

  beforeAll(async () => {
    server = await startSignerServer({ signer, secret: SECRET, host: "127.0.0.1", port: 0, clock });
  });
  afterAll(async () => {
    await server?.close();
  });

  const post = (body: string, headers: Record<string, string>) =>
    fetch(`${server.url}/v1/sign`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body,
    });

  it("signs through the client with the shared secret", async () => {
    const client = new HttpSignerClient({ url: server.url, secret: SECRET, clock });
    const remote = await client.sign(evmRequest(), SANDBOX);
    const local = await signer.sign(evmRequest(), SANDBOX);
    expect(remote).toEqual(local); // deterministic (RFC 6979) signatures: same bytes
    await expect(client.sign(evmRequest({ data: "0xdeadbeef" }), SANDBOX)).rejects.toBeInstanceOf(
      SignerRejectedError,
    );
    // The intent id travels in the authenticated body: without it the policy refuses.
    await expect(client.sign(evmRequest())).rejects.toThrow(/names no intent/);
    await client.close();
  });

  it("rejects unsigned, stale, replayed, tampered and wrongly keyed requests", async () => {
    const body = JSON.stringify({ requestId: "r1", request: evmRequest(), ...SANDBOX });
    const unsigned = await post(body, {});
    expect(unsigned.status).toBe(401);
    expect(await unsigned.json()).toEqual({ error: "unsigned" });

    const stale = await post(body, authHeaders(SECRET, body, clock.now() - MAX_SKEW_MS - 1));
    expect(stale.status).toBe(401);
    expect(await stale.json()).toEqual({ error: "stale" });
    const future = await post(body, authHeaders(SECRET, body, clock.now() + MAX_SKEW_MS + 1));
    expect(await future.json()).toEqual({ error: "stale" });

    const headers = authHeaders(SECRET, body, clock.now());
    const first = await post(body, headers);
    expect(first.status).toBe(200);
    const replay = await post(body, headers);
    expect(replay.status).toBe(401);
    expect(await replay.json()).toEqual({ error: "replayed" });

    // Same headers, body changed (another recipient): the MAC no longer matches.
    const tamperedBody = body.replace(recipient.slice(2).toLowerCase(), "00".repeat(20));
    expect(tamperedBody).not.toBe(body);
    const h2 = authHeaders(SECRET, JSON.stringify({ requestId: "r2", request: evmRequest() }), clock.now());
    const tampered = await post(tamperedBody, h2);
    expect(tampered.status).toBe(401);
    expect(await tampered.json()).toEqual({ error: "bad_signature" });
    // Timestamp changed under a valid MAC.
    const h3 = authHeaders(SECRET, body.replace("r1", "r3"), clock.now());
    const shifted = await post(body.replace("r1", "r3"), {
      ...h3,
      [TIMESTAMP_HEADER]: String(clock.now() + 1),
    });
    expect(await shifted.json()).toEqual({ error: "bad_signature" });

    const wrongKey = await post(
      body.replace("r1", "r4"),
      authHeaders("x".repeat(40), body.replace("r1", "r4"), clock.now()),
    );
    expect(wrongKey.status).toBe(401);
    const garbage = await post(body, { [TIMESTAMP_HEADER]: "soon", [SIGNATURE_HEADER]: "v1=00" });
    expect(garbage.status).toBe(401);
  });

  it("has no other endpoint", async () => {
    expect((await fetch(`${server.url}/v1/sign-bytes`, { method: "POST", body: "{}" })).status).toBe(404);
    expect((await fetch(`${server.url}/v1/sign`)).status).toBe(404);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    // Metrics only when the role gave the server its registry (the signer role does: test/security/19).
    expect((await fetch(`${server.url}/metrics`)).status).toBe(404);
  });

  it("refuses an intent id that is not a string (400)", async () => {
    const body = JSON.stringify({ requestId: "r9", request: evmRequest(), intentId: 5 });
    const res = await post(body, authHeaders(SECRET, body, clock.now()));
    expect(res.status).toBe(400);
  });
});

describe("the outflow record (DATA_DIR/signer-outflow.json)", () => {
  it("a corrupt or foreign record stops the signer from starting instead of resetting the cap", async () => {
    const dir = await mkdtemp(join(tmpdir(), "sg-outflow-record-"));
    try {
      const file = join(dir, OUTFLOW_FILE);
      const open = () =>
        OutflowGuard.open({
          limits: { perHour: null, perDay: null },
          file,
          clock: new ManualClock(),
          logger: createLogger("silent"),
        });
      await open(); // missing: an empty record
      await writeFile(file, "{ not json");
      await expect(open()).rejects.toThrow(/corrupt/);
      await writeFile(file, JSON.stringify({ version: 1, entries: [{ intent: "x", at: 1, amount: "-5" }] }));
      await expect(open()).rejects.toThrow(/malformed/);
      await rm(file);
      await symlink("/etc/hostname", file);
      await expect(open()).rejects.toThrow(/cannot be read/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
