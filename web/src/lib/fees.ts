import type { CurrencyType, Settings } from "../api/types";

/**
 * A fee rule as the settings read gives it (the gateway's schedule, set by the operator), per
 * enabled currency type.
 */
export type FeeRule = NonNullable<Settings["fees"][CurrencyType]>["payout"];

const UNIT = 1_000_000;

/** Amount text as base units (6 decimals), or null when it isn't a positive amount with at most 6 decimals. */
export function amountUnits(text: string): number | null {
  const m = /^(\d{1,10})(?:\.(\d{1,6}))?$/.exec(text.trim());
  if (!m) return null;
  const units = Number(m[1]) * UNIT + Number((m[2] ?? "").padEnd(6, "0"));
  return units > 0 ? units : null;
}

/** The fee and what the recipient gets, in the token (the percentage part rounded up, as the server does). */
export function payoutQuote(rule: FeeRule, amount: number): { fee: number; net: number } {
  const units = Math.round(amount * UNIT);
  const fee = Math.round(rule.fixed * UNIT) + Math.ceil((units * rule.percent) / 100);
  return { fee: fee / UNIT, net: (units - fee) / UNIT };
}
