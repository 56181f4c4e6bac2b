/**
 * Progressive lockout per account, on top of the per-IP Auth rate-limit tier: the first
 * FREE_FAILURES consecutive failures cost nothing; each further one locks the account for twice as
 * long as the previous (1 min, 2 min, 4 min, … capped at 1 hour). A success resets the count.
 */
export const FREE_FAILURES = 5;
export const FIRST_LOCK_MS = 60_000;
export const MAX_LOCK_MS = 60 * 60_000;

/** How long the account is locked after its `failures`-th consecutive failure (0 = not locked). */
export function lockDurationMs(failures: number): number {
  if (failures < FREE_FAILURES) return 0;
  const doublings = Math.min(failures - FREE_FAILURES, 20);
  return Math.min(FIRST_LOCK_MS * 2 ** doublings, MAX_LOCK_MS);
}
