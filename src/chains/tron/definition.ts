/**
 * What the TRON module brings to the configuration, as plain data: `config/` reads it (its
 * variable names and defaults) without importing the feature. Imports nothing but `domain/`.
 */
export const TRON_DEFINITION = {
  kind: "tron",
  network: "USDT-TRC20",
  /** SLIP-44 coin type of its HD keys (`m/44'/195'/…`). */
  coinType: 195,
  /** Confirmations when `CONFIRMATIONS_TRC20` is unset (docs/chains.md#the-read-side-chainadapter). */
  defaultConfirmations: 19,
  /** TRON: 3 s blocks, one call per block. */
  scan: { pollIntervalMs: 1_000, initialRangeBlocks: 20, maxRangeBlocks: 100 },
  variables: {
    confirmations: "CONFIRMATIONS_TRC20",
    endpoint: { production: "TRC20_API_URL", sandbox: "SANDBOX_TRC20_API_URL" },
    /** Several providers (comma list; with the single-URL name, all of them): failover and cross-checks. */
    endpoints: { production: "TRC20_API_URLS", sandbox: "SANDBOX_TRC20_API_URLS" },
    contract: { production: "USDT_TRC20_CONTRACT", sandbox: "SANDBOX_USDT_TRC20_CONTRACT" },
    sweepThreshold: "SWEEP_THRESHOLD_TRC20",
    /** `fee_limit` of token transfers, in sun (the most TRX one may burn). */
    feeLimit: "TRC20_FEE_LIMIT_SUN",
  },
  /** Tether's USDT on TRON mainnet: the production contract when the variable is unset. */
  defaultContract: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t",
  /** USDT; deposit balances at or above it are swept to the hot wallet. */
  defaultSweepThreshold: "10",
  /** 100 TRX. */
  defaultFeeLimitSun: 100_000_000,
} as const;
