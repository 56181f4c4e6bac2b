import { parseAbi } from "viem";

/** The part of the ERC20 ABI the adapter reads. */
export const ERC20_READ_ABI = parseAbi([
  "event Transfer(address indexed from, address indexed to, uint256 value)",
  "function balanceOf(address owner) view returns (uint256)",
  "function decimals() view returns (uint8)",
]);

export const TRANSFER_EVENT = ERC20_READ_ABI[0];
