/**
 * The energy engine's policy (issue #38; docs/decisions/tron-resources.md): when a TRON transfer
 * waits for the resource account's delegated energy and when it burns TRX instead. Pure rules:
 * the engine (engine.ts) reads the chain and the books, these decide.
 */

export interface EnergyPolicy {
  /** A transfer waits at most this long for delegated energy; then it burns. */
  maxWaitMs: number;
  /** A burn of at most this (sun) is paid at once instead of waiting. */
  burnCeilingSun: bigint;
  /** TRX (sun) the resource account keeps unstaked, for its own bandwidth when its stake has none left. */
  reserveSun: bigint;
  /** Share of the resource account's stake kept for bandwidth (its delegations' own fees). */
  bandwidthStakePercent: number;
  /** A transfer waits at most this long for rented energy to arrive on chain (decision 21). Default 10 min. */
  rentalWaitMs?: number;
}

/** Delegated energy is sized with this margin over the estimate (weights move between blocks). */
export const ENERGY_MARGIN_PERCENT = 10;

export const SUN_PER_TRX = 1_000_000n;

/** The network options (`TRC20_*`, src/domain/currency.ts) as a policy. */
export function energyPolicyOf(options: Readonly<Record<string, number>>): EnergyPolicy {
  return {
    maxWaitMs: (options.energyMaxWaitSeconds ?? 3_600) * 1_000,
    burnCeilingSun: BigInt(options.burnCeilingSun ?? 1),
    reserveSun: BigInt(options.resourceReserveSun ?? 10_000_000),
    bandwidthStakePercent: Math.min(100, options.bandwidthStakePercent ?? 6),
    rentalWaitMs: (options.rentalWaitSeconds ?? 600) * 1_000,
  };
}

/** What a transfer short of energy does. */
export type EnergyChoice = "delegate" | "rent" | "wait" | "burn";

/**
 * Delegate when the resource account can. Otherwise a burn under the ceiling is paid at once; with
 * a stake of its own the transfer waits for it (free) up to the policy's delay; then (or at once
 * without a stake) energy is rented when a provider is configured and its price (`rentSun`, null:
 * no rental) is below the burn; else it burns.
 */
export function chooseEnergy(
  policy: EnergyPolicy,
  s: { canDelegate: boolean; staked: boolean; burnSun: bigint; waitedMs: number; rentSun?: bigint | null },
): EnergyChoice {
  if (s.canDelegate) return "delegate";
  if (s.burnSun <= policy.burnCeilingSun) return "burn";
  if (s.staked && s.waitedMs < policy.maxWaitMs) return "wait";
  if (s.rentSun !== undefined && s.rentSun !== null && s.rentSun < s.burnSun) return "rent";
  return "burn";
}

/**
 * What to stake next from `liquidSun` (the resource account's balance above its reserve): whole
 * TRX, bandwidth first while its share of the whole stake is below the policy's, else energy.
 * Null when less than one TRX is free.
 */
export function nextStake(
  policy: EnergyPolicy,
  liquidSun: bigint,
  staked: { energy: bigint; bandwidth: bigint },
): { asset: "energy" | "bandwidth"; sun: bigint } | null {
  const free = ((liquidSun - policy.reserveSun) / SUN_PER_TRX) * SUN_PER_TRX;
  if (free < SUN_PER_TRX) return null;
  const total = staked.energy + staked.bandwidth + free;
  const bandwidthTarget = (total * BigInt(policy.bandwidthStakePercent)) / 100n;
  const bandwidth = ((bandwidthTarget - staked.bandwidth) / SUN_PER_TRX) * SUN_PER_TRX;
  if (bandwidth >= SUN_PER_TRX) return { asset: "bandwidth", sun: bandwidth < free ? bandwidth : free };
  return { asset: "energy", sun: free };
}
