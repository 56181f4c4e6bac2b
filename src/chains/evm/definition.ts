/**
 * What the Ethereum module brings to the configuration, as plain data: `config/` reads it (its
 * variable names and defaults) without importing the feature. Imports nothing but `domain/`.
 */
export const EVM_DEFINITION = {
  kind: "evm",
  network: "USDT-ERC20",
  /** SLIP-44 coin type of its HD keys (`m/44'/60'/…`). */
  coinType: 60,
  /** Confirmations when `CONFIRMATIONS_ERC20` is unset (docs/chains.md#the-read-side-chainadapter). */
  defaultConfirmations: 12,
  /** Ethereum: 12 s blocks, log queries over ranges. */
  scan: { pollIntervalMs: 2_000, initialRangeBlocks: 100, maxRangeBlocks: 1_000 },
  variables: {
    confirmations: "CONFIRMATIONS_ERC20",
    endpoint: { production: "ERC20_RPC_URL", sandbox: "SANDBOX_ERC20_RPC_URL" },
    /** Several providers (comma list; with the single-URL name, all of them): failover and cross-checks. */
    endpoints: { production: "ERC20_RPC_URLS", sandbox: "SANDBOX_ERC20_RPC_URLS" },
    contract: { production: "USDT_ERC20_CONTRACT", sandbox: "SANDBOX_USDT_ERC20_CONTRACT" },
    sweepThreshold: "SWEEP_THRESHOLD_ERC20",
  },
  /** Tether's USDT on Ethereum mainnet: the production contract when the variable is unset. */
  defaultContract: "0xdAC17F958D2ee523a2206206994597C13D831ec7",
  /** USDT; deposit balances at or above it are swept to the hot wallet. */
  defaultSweepThreshold: "50",
} as const;
