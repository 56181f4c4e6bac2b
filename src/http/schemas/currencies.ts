import { Type } from "@sinclair/typebox";
import type { CurrencyListing } from "../../chains/index.js";
import { CurrencyTypeSchema, literals, nullable } from "./transaction.js";

/** One enabled currency type (`GET /api/v1/public/currencies`). */
export const CurrencySchema = Type.Object(
  {
    currencyType: CurrencyTypeSchema,
    token: Type.String({ description: "USDT or USDC" }),
    network: Type.String({ description: "The network: TRC20, ERC20, BEP20, POLYGON, ARBITRUM, BASE" }),
    networkName: Type.String({ description: "The network's name as the hosted page shows it" }),
    chain: literals(["evm", "tron"] as const, {
      title: "ChainFamily",
      description: "Address format: evm (0x…, one address on every EVM network) or tron (T…)",
    }),
    chainId: nullable(Type.Integer({ description: "EIP-155 chain id; null on TRON" })),
    contract: nullable(
      Type.String({ description: "The token contract in this environment; null on the sandbox simulator" }),
    ),
    confirmations: Type.Integer({ description: "Confirmations a deposit needs" }),
    decimals: Type.Integer({
      description: "The token contract's decimals; amounts at the API keep at most 6 whatever this is",
    }),
  },
  {
    title: "Currency",
    examples: [
      {
        currencyType: "USDT-ERC20",
        token: "USDT",
        network: "ERC20",
        networkName: "Ethereum (ERC-20)",
        chain: "evm",
        chainId: 1,
        contract: "0xdAC17F958D2ee523a2206206994597C13D831ec7",
        confirmations: 12,
        decimals: 6,
      },
    ],
  },
);

export function presentCurrency(c: CurrencyListing) {
  return { ...c };
}
