import { type Hex, toEventSelector } from "viem";
import type { FreezeKind } from "../domain/currency.js";

/**
 * The events a token's issuer emits when it freezes an address, lifts the freeze or destroys what a
 * frozen address holds (issue #40, `FreezeKind` in domain/currency.ts). EVM networks and TRON share
 * them (TRON runs the same contracts: same topics). Tether's original contract (`tether`, Ethereum
 * and TRON) declares its address NOT indexed, so it is the log's first data word; USDT0's and
 * Circle's index it (the first topic after the event's).
 */
export interface FreezeEvent {
  /** The address the event names, as 20 bytes of lowercase hex without `0x` (the caller spells it). */
  account: string;
  change: "frozen" | "released" | "destroyed";
  blockNumber: number;
}

const SIGNATURES: Record<Exclude<FreezeKind, "none">, Record<FreezeEvent["change"], string | null>> = {
  tether: {
    frozen: "AddedBlackList(address)",
    released: "RemovedBlackList(address)",
    destroyed: "DestroyedBlackFunds(address,uint256)",
  },
  "tether-blocked": {
    frozen: "BlockPlaced(address)",
    released: "BlockReleased(address)",
    destroyed: "DestroyedBlockedFunds(address,uint256)",
  },
  usdc: { frozen: "Blacklisted(address)", released: "UnBlacklisted(address)", destroyed: null },
};

/** topic0 (lowercase, `0x`) → what it announces, for one freeze kind; empty for `none`. */
export function freezeTopics(kind: FreezeKind): Map<string, FreezeEvent["change"]> {
  const topics = new Map<string, FreezeEvent["change"]>();
  if (kind === "none") return topics;
  for (const [change, signature] of Object.entries(SIGNATURES[kind]))
    if (signature) topics.set(toEventSelector(signature).toLowerCase(), change as FreezeEvent["change"]);
  return topics;
}

/**
 * The freeze event of one log of the token, or null when it is none (another event, or a log whose
 * shape is not the event's: no address where it should be).
 */
export function decodeFreezeLog(
  topicsOfKind: Map<string, FreezeEvent["change"]>,
  log: { topics: readonly string[]; data: string; blockNumber: number },
): FreezeEvent | null {
  const change = log.topics[0] ? topicsOfKind.get(withPrefix(log.topics[0]).toLowerCase()) : undefined;
  if (!change) return null;
  // Indexed: the second topic; not indexed (Tether's original): the first word of the data.
  const word = log.topics.length >= 2 ? log.topics[1] : withPrefix(log.data).slice(0, 66);
  if (!word || !/^0x0{24}[0-9a-fA-F]{40}$/.test(withPrefix(word))) return null;
  return { account: withPrefix(word).slice(-40).toLowerCase(), change, blockNumber: log.blockNumber };
}

function withPrefix(s: string): Hex {
  return (s.startsWith("0x") ? s : `0x${s}`) as Hex;
}
