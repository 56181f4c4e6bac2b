import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, hexToBytes } from "@noble/hashes/utils.js";
import { utils as tronUtils } from "tronweb";
import { expect } from "vitest";
import { tronAddressToHex } from "../../src/chains/tron/address.js";
import type { Db } from "../../src/db/database.js";
import { requestTransfer } from "../../src/sender/intents.js";
import type { LocalSigner } from "../../src/signer/local-signer.js";
import { SignerRejectedError, type SignRequest } from "../../src/signer/protocol.js";
import { AddressDeriver } from "../../src/wallet/address-deriver.js";

// Shared helpers of the energy engine's signer tests (test/security/34 and 35): TRON transactions built and encoded locally, intents, refusals.

export const MNEMONIC = "test test test test test test test test test test test junk";
export const TRC = "USDT-TRC20" as const;
export const wallet = AddressDeriver.fromMnemonic(MNEMONIC);
export const addr = (index: number) => wallet.address(TRC, "sandbox", index);
export const TOKEN = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
/** An address of nobody we know (the attacker's). */
export const ATTACKER = "TJRabPrwbZy45sbavfcjinPJC18kjpRTv8";
export const hex = (a: string) => tronAddressToHex(a);

/** A TRON transaction of one contract (or several), encoded as a node would build it. */
export function tron(
  index: number,
  type: string,
  value: Record<string, unknown>,
  extra: {
    contractFields?: Record<string, unknown>;
    contracts?: unknown[];
    rawData?: Record<string, unknown>;
  } = {},
): SignRequest {
  const first = {
    parameter: { value, type_url: `type.googleapis.com/protocol.${type}` },
    type,
    ...(extra.contractFields ?? {}),
  };
  const raw_data = {
    contract: [first, ...(extra.contracts ?? [])],
    ref_block_bytes: "0001",
    ref_block_hash: "0102030405060708",
    expiration: 1_900_000_060_000,
    timestamp: 1_900_000_000_000,
    ...(extra.rawData ?? {}),
  };
  const raw_data_hex = tronUtils.transaction
    .txPbToRawDataHex(tronUtils.transaction.txJsonToPb({ raw_data, visible: false } as never))
    .toLowerCase();
  const txID = bytesToHex(sha256(hexToBytes(raw_data_hex)));
  return {
    chain: "tron",
    network: TRC,
    environment: "sandbox",
    index,
    transaction: { txID, raw_data, raw_data_hex },
  };
}

/** What the signed bytes of a DelegateResourceContract really say (decoded from raw_data_hex). */
export function decodeDelegation(rawDataHex: string): {
  lock: boolean;
  lockPeriod: number;
  resource: number;
} {
  const P = (globalThis as unknown as { TronWebProto: Record<string, any> }).TronWebProto;
  const raw = P.Transaction.raw.deserializeBinary(hexToBytes(rawDataHex));
  const any = raw.getContractList()[0].getParameter();
  const d = P.DelegateResourceContract.deserializeBinary(any.getValue_asU8());
  return { lock: d.getLock(), lockPeriod: d.getLockPeriod(), resource: d.getResource() };
}

export async function intent(
  db: Db,
  intentId: string,
  kind: "resource_delegation" | "resource_reclaim" | "resource_stake" | "sweep" | "gas_topup" | "withdrawal",
  o: {
    from: number;
    to: string;
    amount: bigint;
    asset: "energy" | "bandwidth" | "token" | "native";
    after?: string;
  },
) {
  await db.transaction().execute((trx) =>
    requestTransfer(trx, {
      intentId,
      kind,
      network: TRC,
      environment: "sandbox",
      asset: o.asset,
      fromIndex: o.from,
      to: o.to,
      amount: o.amount,
      ...(o.after ? { afterIntentId: o.after } : {}),
    }),
  );
}

/**
 * The defence holds when the signer refuses; when it signs, the attack succeeded: the test fails
 * with `ATTACK SUCCEEDED: <what>` and the signed transaction's hash.
 */
export async function expectRefused(
  signer: LocalSigner,
  request: SignRequest,
  intentId: string,
  what: string,
  reason?: RegExp,
): Promise<string> {
  let signed: { hash: string } | null = null;
  let error: unknown = null;
  try {
    signed = await signer.sign(request, { intentId });
  } catch (e) {
    error = e;
  }
  if (signed) throw new Error(`ATTACK SUCCEEDED: the signer signed ${what} (txID ${signed.hash})`);
  expect(error).toBeInstanceOf(SignerRejectedError);
  if (reason) expect((error as Error).message).toMatch(reason);
  return (error as Error).message;
}
