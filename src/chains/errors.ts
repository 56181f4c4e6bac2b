import type { CurrencyType } from "../domain/currency.js";

/** A string that is not a valid address of the network. Callers validate user input before this happens. */
export class InvalidAddressError extends Error {
  constructor(
    readonly network: CurrencyType,
    readonly input: string,
  ) {
    super(`Invalid ${network} address.`);
    this.name = "InvalidAddressError";
  }
}

/**
 * The chain endpoint failed or answered something unusable (timeout, HTTP error, inconsistent data).
 * Always retryable: a job (the watcher, the sender) tries again at its next run; under a request,
 * `http/errors.ts` answers it as 503 `CHAIN_UNAVAILABLE`.
 */
export class ChainUnavailableError extends Error {
  readonly retryable = true;

  constructor(
    readonly network: CurrencyType,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`${network}: ${message}`, options);
    this.name = "ChainUnavailableError";
  }
}

/**
 * A block without a usable timestamp. Whether a payment was on time is decided by block time
 * (README.md#money-when-a-payment-counts-and-books-that-match), so such a chain cannot be watched: the watcher refuses to start on it
 * (`ChainWatcher` checks the head block first) rather than fall back on its own clock. Met later on
 * a single block, it is retried like any unusable answer.
 */
export class ChainTimeError extends ChainUnavailableError {
  constructor(network: CurrencyType, message: string) {
    super(network, message);
    this.name = "ChainTimeError";
  }
}
