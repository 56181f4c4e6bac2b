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
  };
}

/** What a transfer short of energy does. */
export type EnergyChoice = "delegate" | "wait" | "burn";

/**
 * Delegate when the resource account can; without any stake there is no engine (burn, as before
 * it); otherwise wait, unless the burn is under the ceiling or the transfer has waited long enough.
 */
export function chooseEnergy(
  policy: EnergyPolicy,
  s: { canDelegate: boolean; staked: boolean; burnSun: bigint; waitedMs: number },
): EnergyChoice {
  if (s.canDelegate) return "delegate";
  if (!s.staked) return "burn";
  if (s.burnSun <= policy.burnCeilingSun) return "burn";
  return s.waitedMs >= policy.maxWaitMs ? "burn" : "wait";
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
