import { parseAbi } from "viem";

/** The part of the ERC20 ABI the adapter reads. */
export const ERC20_READ_ABI = parseAbi([
  "event Transfer(address indexed from, address indexed to, uint256 value)",
  "function balanceOf(address owner) view returns (uint256)",
  "function decimals() view returns (uint8)",
]);

export const TRANSFER_EVENT = ERC20_READ_ABI[0];

/**
 * The issuers' freeze views (README.md#frozen-funds), by `FreezeKind`: Tether's original contract,
 * Tether's newer ones (USDT0), Circle's FiatToken.
 */
export const FREEZE_ABI = parseAbi([
  "function isBlackListed(address) view returns (bool)",
  "function isBlocked(address) view returns (bool)",
  "function isBlacklisted(address) view returns (bool)",
]);

export const FREEZE_VIEW = {
  tether: "isBlackListed",
  "tether-blocked": "isBlocked",
  usdc: "isBlacklisted",
} as const;
