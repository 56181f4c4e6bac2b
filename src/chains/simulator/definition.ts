/**
 * The sandbox simulator's settings, as plain data (it has no variables: it is what a sandbox chain
 * is when its `SANDBOX_*` endpoint is unset). Imports nothing but `domain/`.
 */
export const SIMULATOR_DEFINITION = {
  kind: "simulator",
  /** The sandbox simulator always uses 1 (docs/chains.md#the-read-side-chainadapter). */
  confirmations: 1,
  /**
   * Each mined block is announced by NOTIFY, so the watcher wakes at once; the poll is the
   * fallback when LISTEN is unavailable.
   */
  scan: { pollIntervalMs: 1_000, initialRangeBlocks: 1000, maxRangeBlocks: 5000 },
  /** NOTIFY channel of newly mined simulator blocks (payload `<network>/<environment>`). */
  blockChannel: "stablegate_sim_blocks",
} as const;
