/**
 * Energy rental (issue #38, decision 21 of docs/decisions/tron-resources.md): for operators without
 * stake, a provider delegates energy to one of our addresses from its own stake for a short term,
 * paid from a prepaid balance at the provider. Nothing of ours is signed: the provider's API key can
 * spend that balance, never our funds. What an order delivered is read from the chain (the
 * receiver's energy), never taken from the provider's answer.
 */

/** One rental order: `energy` units for `receiver` (an activated TRON address). */
export interface RentalOrder {
  receiver: string;
  energy: number;
  /** Our reference (idempotency at providers that support it; the provider's callbacks carry it). */
  reference: string;
  /** The most the order may cost (sun): a fresh quote above it is refused, nothing ordered. */
  maxSun?: bigint;
}

/** What the provider charged (sun) and its order id. */
export interface RentalReceipt {
  serial: string;
  /** What the provider says it charged (sun): believed only up to `quotedSun`. */
  paidSun: bigint;
  /** The fresh quote the order was placed on (sun). */
  quotedSun: bigint;
  /** The prepaid balance left at the provider (sun), when it says. */
  balanceSun: bigint | null;
}

export interface EnergyRental {
  /** The provider's name (logs, costs). */
  readonly name: string;
  /** What `energy` units for the shortest term cost now (sun). */
  quote(energy: number): Promise<bigint>;
  /** Orders energy; refuses (`RentalRefusedError`) when the quote is above the operator's cap. */
  rent(order: RentalOrder): Promise<RentalReceipt>;
}

/** The provider said no (bad key, balance too low, address not activated, price above the cap). */
export class RentalRefusedError extends Error {
  constructor(
    readonly provider: string,
    message: string,
  ) {
    super(`${provider}: ${message}`);
    this.name = "RentalRefusedError";
  }
}

/** The provider could not be reached or answered something unreadable; the order may be retried. */
export class RentalUnavailableError extends Error {
  constructor(
    readonly provider: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`${provider}: ${message}`, options);
    this.name = "RentalUnavailableError";
  }
}
