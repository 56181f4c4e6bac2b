import { CURRENCY_TYPES, type CurrencyType, currencyOf } from "./currency.js";
import { parseAmount, UNIT } from "./money.js";

/**
 * Fees (docs/decisions.md#ledger): fixed + percent, per currency type and kind, computed once when a
 * transaction is created and stored with it. Percent is held exactly as parts per million
 * (0.5 % = 5000 ppm); the percentage part is rounded up to the next base unit, so a fee is
 * never under-collected by rounding.
 */
export type FeeKind = "deposit" | "withdrawal" | "payout";

export interface FeeRule {
  fixed: bigint;
  ppm: bigint;
}

export type FeeSchedule = Record<CurrencyType, Record<FeeKind, FeeRule>>;

/**
 * The defaults of every currency type the registry knows: no deposit fee; withdrawals and payouts
 * the network's `defaultWithdrawalFee` (5 USDT on Ethereum, 1 elsewhere).
 */
export function defaultFeeSchedule(): FeeSchedule {
  return Object.fromEntries(
    CURRENCY_TYPES.map((c) => {
      const parsed = parseAmount(currencyOf(c).definition.defaultWithdrawalFee);
      const fixed = parsed.ok ? parsed.units : 0n;
      return [
        c,
        { deposit: { fixed: 0n, ppm: 0n }, withdrawal: { fixed, ppm: 0n }, payout: { fixed, ppm: 0n } },
      ];
    }),
  ) as FeeSchedule;
}

/** The defaults of the built-in currency types (what tests start from). */
export const DEFAULT_FEE_SCHEDULE: FeeSchedule = defaultFeeSchedule();

export interface FeeQuote {
  amount: bigint;
  fee: bigint;
  netAmount: bigint;
}

export function computeFee(rule: FeeRule, amount: bigint): FeeQuote {
  if (amount <= 0n) throw new RangeError("amount must be positive");
  const percentPart = (amount * rule.ppm + 999_999n) / 1_000_000n;
  const fee = rule.fixed + percentPart;
  return { amount, fee, netAmount: amount - fee };
}

/** The deposit fee on what actually arrived (never more than that). */
export function depositFee(fees: FeeSchedule, currencyType: CurrencyType, received: bigint): bigint {
  if (received <= 0n) return 0n;
  const { fee } = computeFee(fees[currencyType].deposit, received);
  return fee > received ? received : fee;
}

/** Parses a percent written as decimal text with at most 4 decimals ("0.5" → 5000 ppm). */
export function percentToPpm(text: string): bigint | null {
  const m = /^(\d{1,3})(?:\.(\d{1,4}))?$/.exec(text);
  if (!m) return null;
  const ppm = BigInt(m[1] as string) * 10_000n + BigInt((m[2] ?? "").padEnd(4, "0"));
  return ppm <= 1_000_000n ? ppm : null;
}

const FEE_KINDS: readonly FeeKind[] = ["deposit", "withdrawal", "payout"];

/**
 * Reads the `FEE_SCHEDULE` setting: JSON such as
 * `{"USDT-TRC20": {"withdrawal": {"fixed": "1.5", "percent": "0.1"}}}` (fixed in USDT, percent as
 * text with up to 4 decimals); what it leaves out keeps the default. Returns an error message
 * naming the bad entry.
 */
export function parseFeeSchedule(json: string): { schedule: FeeSchedule } | { error: string } {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    return { error: "must be JSON" };
  }
  if (raw === null || typeof raw !== "object" || Array.isArray(raw))
    return { error: "must be a JSON object" };
  const schedule = defaultFeeSchedule();
  for (const [currency, kinds] of Object.entries(raw)) {
    if (!(currency in schedule)) return { error: `unknown currency type ${currency}` };
    if (kinds === null || typeof kinds !== "object") return { error: `${currency} must be an object` };
    for (const [kind, rule] of Object.entries(kinds as Record<string, unknown>)) {
      if (!FEE_KINDS.includes(kind as FeeKind)) return { error: `${currency}: unknown fee kind ${kind}` };
      const r = (rule ?? {}) as { fixed?: unknown; percent?: unknown };
      const fixedText = String(r.fixed ?? "0");
      const m = /^(\d{1,10})(?:\.(\d{1,6}))?$/.exec(fixedText);
      if (!m) return { error: `${currency}.${kind}.fixed must be a USDT amount with at most 6 decimals` };
      const ppm = percentToPpm(String(r.percent ?? "0"));
      if (ppm === null)
        return { error: `${currency}.${kind}.percent must be 0..100 with at most 4 decimals` };
      const fixed = BigInt(m[1] as string) * UNIT + BigInt((m[2] ?? "").padEnd(6, "0"));
      schedule[currency as CurrencyType][kind as FeeKind] = { fixed, ppm };
    }
  }
  return { schedule };
}
