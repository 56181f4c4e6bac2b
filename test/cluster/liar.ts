import { randomBytes } from "node:crypto";
import { encodeAbiParameters, type Hex, pad } from "viem";
import { tronAddressToEvm } from "../../src/chains/tron/address.js";
import type { RpcProxy } from "../support/chain/rpc-proxy.js";

/**
 * A lying chain provider for the cluster test (issue #34): an RPC proxy in front of the honest node
 * that, while `on`, lies at random (each answer with probability `rate`) about
 * - receipts: a transaction's receipt reverted, without logs (EVM `eth_getTransactionReceipt`,
 *   TRON `wallet/gettransactioninfobyid`);
 * - logs: a Transfer the chain never had, to an address the test watches and never pays
 *   (`forgeTo`): EVM `eth_getLogs`, TRON the block's receipts and transaction list;
 * - heads: 1 000 blocks ahead; timestamps: a day later.
 * Every lie told is counted by kind.
 */
export interface LieCounts {
  receipts: number;
  logs: number;
  heads: number;
  timestamps: number;
}

export interface Liar {
  on: boolean;
  /** Probability that an answer is a lie (per kind: receipts may differ, e.g. 1 = always). */
  rate: Partial<Record<keyof LieCounts, number>> & { default: number };
  told: LieCounts;
}

const TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
type Json = Record<string, any>;

export function newLiar(rate: number): Liar {
  return { on: false, rate: { default: rate }, told: { receipts: 0, logs: 0, heads: 0, timestamps: 0 } };
}

function lies(liar: Liar, kind: keyof LieCounts): boolean {
  if (!liar.on || Math.random() >= (liar.rate[kind] ?? liar.rate.default)) return false;
  liar.told[kind]++;
  return true;
}

function onEach(answer: unknown, request: unknown, f: (a: Json, r: Json) => void) {
  if (Array.isArray(answer) && Array.isArray(request)) {
    for (const [i, a] of answer.entries()) f(a, request[i]);
  } else if (answer && request) f(answer as Json, request as Json);
  return answer;
}

/** An EVM provider that lies (`proxy` forwards to anvil). */
export function lieAsEvm(proxy: RpcProxy, liar: Liar, token: Hex, forgeTo: () => string | null): void {
  proxy.rewriteResponse = (answer, request) =>
    onEach(answer, request, (a, r) => {
      if (!a || a.result === undefined || a.result === null) return;
      if (r.method === "eth_getTransactionReceipt" && lies(liar, "receipts")) {
        a.result.status = "0x0";
        a.result.logs = [];
      } else if (r.method === "eth_getLogs" && Array.isArray(a.result)) {
        const to = forgeTo();
        if (to && lies(liar, "logs")) {
          const block = (r.params?.[0]?.fromBlock as string | undefined) ?? "0x1";
          a.result.push({
            address: token.toLowerCase(),
            topics: [TRANSFER_TOPIC, pad("0x1111111111111111111111111111111111111111"), pad(to as Hex)],
            data: encodeAbiParameters([{ type: "uint256" }], [1_000_000_000n]),
            blockNumber: block,
            blockHash: `0x${randomBytes(32).toString("hex")}`,
            transactionHash: `0x${randomBytes(32).toString("hex")}`,
            transactionIndex: "0x0",
            logIndex: "0x0",
            removed: false,
          });
        }
      } else if (r.method === "eth_blockNumber" && lies(liar, "heads")) {
        a.result = `0x${(Number(a.result) + 1_000).toString(16)}`;
      } else if (
        r.method === "eth_getBlockByNumber" &&
        typeof a.result.timestamp === "string" &&
        lies(liar, "timestamps")
      ) {
        a.result.timestamp = `0x${(Number(a.result.timestamp) + 86_400).toString(16)}`;
      }
    });
}

/** A TRON provider that lies (`proxy` forwards to the TRON emulator). */
export function lieAsTron(proxy: RpcProxy, liar: Liar, token: Hex, forgeTo: () => string | null): void {
  /** Blocks given a forged transaction: their transaction list carries it too (a consistent liar). */
  const forged = new Map<number, string>();
  const word = (hex: string) => hex.toLowerCase().padStart(64, "0");
  proxy.rewriteResponse = (answer, request) => {
    const r = (request ?? {}) as Json;
    if (Array.isArray(answer)) {
      // wallet/gettransactioninfobyblocknum
      const to = forgeTo();
      if (typeof r.num === "number" && to && lies(liar, "logs")) {
        const txId = randomBytes(32).toString("hex");
        forged.set(r.num, txId);
        answer.push({
          id: txId,
          blockNumber: r.num,
          receipt: { result: "SUCCESS" },
          log: [
            {
              address: token.slice(2).toLowerCase(),
              topics: [
                TRANSFER_TOPIC.slice(2),
                word("1111111111111111111111111111111111111111"),
                word(tronAddressToEvm(to).slice(2)),
              ],
              data: word((1_000_000_000).toString(16)),
            },
          ],
        });
      }
      return answer;
    }
    const a = answer as Json;
    if (!a) return answer;
    if (
      typeof r.value === "string" &&
      a.receipt &&
      typeof a.blockNumber === "number" &&
      lies(liar, "receipts")
    ) {
      a.receipt.result = "REVERT";
      a.result = "FAILED";
      a.log = [];
    }
    const raw = a.block_header?.raw_data;
    if (raw && typeof raw.number === "number") {
      const txId = typeof r.num === "number" ? forged.get(r.num) : undefined;
      if (txId && a.blockID) a.transactions = [...(a.transactions ?? []), { txID: txId }];
      if (typeof r.num !== "number" && lies(liar, "heads")) raw.number += 1_000;
      if (typeof raw.timestamp === "number" && lies(liar, "timestamps")) raw.timestamp += 86_400_000;
    }
    return answer;
  };
}
