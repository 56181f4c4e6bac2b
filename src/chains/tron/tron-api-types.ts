/**
 * The parts of TRON HTTP API (java-tron FullNode / TronGrid) responses the adapter reads.
 * Hex strings carry no `0x`; log addresses are 20 bytes without the 41 prefix.
 */
export interface TronBlock {
  blockID?: string;
  block_header?: { raw_data?: { number?: number; parentHash?: string; timestamp?: number } };
  transactions?: { txID: string }[];
}

export interface TronLog {
  address: string;
  topics?: string[];
  data?: string;
}

export interface TronTransactionInfo {
  id: string;
  blockNumber?: number;
  blockTimeStamp?: number;
  /** Sun the transaction burned (energy, bandwidth, account creation); absent when none. */
  fee?: number;
  /** Absent for transactions without a contract receipt (TRX transfers). */
  receipt?: { result?: string; energy_usage_total?: number };
  /** `FAILED` when the transaction failed. */
  result?: string;
  log?: TronLog[];
}
