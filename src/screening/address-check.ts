import type { ChainAdapter } from "../chains/index.js";
import type { Screening, ScreeningQuery } from "./provider.js";

/** Why an address may not be paid or credited (README.md#frozen-funds). */
export interface AddressBlock {
  /** `token_blacklist`: the token's issuer froze it; `screening`: the screening provider refused it. */
  reason: "token_blacklist" | "screening";
  /** The provider's reason (or the error policy's), when screening decided. */
  message: string | null;
  /** The provider did not answer and the error policy (closed) refused: a refusal that may not last. */
  unavailable: boolean;
}

/**
 * Thrown where a decision cannot wait for the provider to answer again but should not be final
 * either: just before signing, a provider that does not answer leaves the transfer queued (tried
 * again), as a chain that cannot be read does; only a provider's own refusal fails it.
 */
export class ScreeningUnavailableError extends Error {
  constructor() {
    super("screening provider unavailable: the transfer waits for its answer");
    this.name = "ScreeningUnavailableError";
  }
}

/**
 * The one check of an address against the token's own freeze list and the screening provider, for
 * a destination (`outgoing`: withdrawals and payouts, at request time and again just before
 * signing) or a sender (`incoming`: a deposit is `held`). The issuer's list is read first: it is
 * the chain's own word, and when it says frozen the provider is not asked. A chain that cannot be
 * read throws (`ChainUnavailableError`): nothing is decided on a guess.
 */
export async function addressBlock(
  adapter: Pick<ChainAdapter, "isFrozen">,
  screening: Screening,
  query: ScreeningQuery,
): Promise<AddressBlock | null> {
  if (await adapter.isFrozen(query.address))
    return { reason: "token_blacklist", message: null, unavailable: false };
  const decision = await screening.check(query);
  if (decision.decision !== "deny") return null;
  // A refusal by the error policy names no cause here: the cause (a status, a timeout) is the
  // operator's to read (the warning, the audit record), not every API caller's (outside review).
  return {
    reason: "screening",
    message: decision.source === "policy" ? "screening unavailable" : decision.reason,
    unavailable: decision.source === "policy",
  };
}

/** How a block reads in a transaction's `holdReason` or a failed transfer's reason. */
export function describeBlock(block: AddressBlock): string {
  return block.reason === "screening" ? `screening: ${block.message ?? "refused"}` : block.reason;
}
