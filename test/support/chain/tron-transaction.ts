import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, hexToBytes } from "@noble/hashes/utils.js";
import { utils as tronUtils } from "tronweb";

/**
 * A TRON transaction of one contract as a node builds it (fixed reference block, expiry, fee limit
 * and timestamp), encoded with tronweb's protobuf encoder: the `transaction` of a TRON sign request.
 */
export function tronTransaction(
  type: "TriggerSmartContract" | "TransferContract",
  value: Record<string, unknown>,
) {
  const raw_data = {
    contract: [{ parameter: { value, type_url: `type.googleapis.com/protocol.${type}` }, type }],
    ref_block_bytes: "0001",
    ref_block_hash: "0011223344556677",
    expiration: 1_800_000_000_000,
    fee_limit: 100_000_000,
    timestamp: 1_799_999_940_000,
  };
  const raw_data_hex = tronUtils.transaction
    .txPbToRawDataHex(tronUtils.transaction.txJsonToPb({ raw_data, visible: false } as never))
    .toLowerCase();
  return { txID: bytesToHex(sha256(hexToBytes(raw_data_hex))), raw_data, raw_data_hex };
}
