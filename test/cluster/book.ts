/**
 * The test's own books: fees computed from the schedule it configured (written here from the
 * contract's rule, not imported from the code under test) and the balance every merchant must end
 * with, from what the test asked for and what each flow's inputs say must happen.
 */

export const CURRENCIES = ["USDT-TRC20", "USDT-ERC20"] as const;
export type Currency = (typeof CURRENCIES)[number];

const UNIT = 1_000_000n;

/** Fixed part in base units, percent in parts per million. */
export interface Rule {
  fixed: bigint;
  ppm: bigint;
}

/** The cluster's FEE_SCHEDULE: non-zero deposit and withdrawal fees on both networks. */
export const FEES: Record<Currency, { deposit: Rule; withdrawal: Rule }> = {
  "USDT-TRC20": { deposit: { fixed: 100_000n, ppm: 5_000n }, withdrawal: { fixed: 1_500_000n, ppm: 2_500n } },
  "USDT-ERC20": {
    deposit: { fixed: 250_000n, ppm: 10_000n },
    withdrawal: { fixed: 3_000_000n, ppm: 1_000n },
  },
};

/** FEE_SCHEDULE's JSON for `FEES` (fixed in USDT, percent as text). */
export function feeScheduleJson(): string {
  const rule = (r: Rule) => ({ fixed: formatUnits(r.fixed), percent: (Number(r.ppm) / 10_000).toString() });
  return JSON.stringify(
    Object.fromEntries(
      CURRENCIES.map((c) => [c, { deposit: rule(FEES[c].deposit), withdrawal: rule(FEES[c].withdrawal) }]),
    ),
  );
}

/** docs/decisions.md#ledger: fixed + percent, the percentage part rounded up to the next base unit. */
export function fee(rule: Rule, amount: bigint): bigint {
  return rule.fixed + (amount * rule.ppm + 999_999n) / 1_000_000n;
}

/** A deposit's fee never exceeds what arrived. */
export function depositFee(currency: Currency, received: bigint): bigint {
  const f = fee(FEES[currency].deposit, received);
  return f > received ? received : f;
}

export function formatUnits(units: bigint): string {
  const whole = units / UNIT;
  const frac = (units % UNIT).toString().padStart(6, "0").replace(/0+$/, "");
  return frac ? `${whole}.${frac}` : `${whole}`;
}

/** A JSON amount (number or numeric string, ≤ 6 decimals) in base units. */
export function toUnits(value: unknown): bigint {
  const text = typeof value === "number" ? value.toFixed(6) : String(value);
  const m = /^(\d+)(?:\.(\d{1,6}))?$/.exec(text);
  if (!m) throw new Error(`not an amount: ${String(value)}`);
  return BigInt(m[1] as string) * UNIT + BigInt((m[2] ?? "").padEnd(6, "0"));
}

export type Decision = "approve" | "reject";

/** One deposit the test made: a checkout session, paid (or not, when the pay call's outcome is unknown). */
export interface DepositFlow {
  kind: "deposit";
  merchant: number;
  currency: Currency;
  key: string;
  amount: bigint;
  sessionId: string | undefined;
  /** "unknown": the pay call got no clear answer (a fault); the session shows whether it was paid. */
  paid: "yes" | "no" | "unknown";
  /** The session's deposit address (once created). */
  address?: string;
}

/** One withdrawal request the test made. */
export interface WithdrawalFlow {
  kind: "withdrawal";
  merchant: number;
  currency: Currency;
  key: string;
  amount: bigint;
  /** To the network's test failure address: must end `failed`. */
  failing: boolean;
  /** Above the auto-approve threshold: `pending` until approved or rejected. */
  manual: boolean;
  id: string | undefined;
  /** What the create answered (fee checked against the schedule). */
  fee: bigint | undefined;
  /** The decision the test took on a manual request; "race": approve and reject at once from both apis. */
  plan: Decision | "race" | undefined;
  /** Answers of every approve/reject attempt (the race's winner is the one that got 200). */
  attempts: { action: Decision; outcome: number | "error" }[];
  /** The destination when the flow chose one (real chains: one address per withdrawal). */
  to?: string | undefined;
}

export type Flow = DepositFlow | WithdrawalFlow;

/** The decision that took effect on a manual request, as the answers show it (undefined: none clear). */
export function answeredWinner(w: WithdrawalFlow): Decision | undefined {
  const won = w.attempts.filter((a) => a.outcome === 200);
  return won.length === 1 ? won[0]?.action : undefined;
}

/**
 * The status a withdrawal must end in, given its inputs and (for a manual one) the decision that
 * won: rejected → `rejected`; executed → `failed` to the failure address, else `completed`.
 */
export function expectedWithdrawalStatus(w: WithdrawalFlow, winner: Decision | undefined): string {
  if (w.manual && winner === "reject") return "rejected";
  return w.failing ? "failed" : "completed";
}

/**
 * Every merchant's balance per currency from the flows: deposits credit what was paid less the
 * deposit fee; a completed withdrawal takes its amount (the fee included); a failed or rejected one
 * nothing. `paidOf` says whether a deposit whose pay answer was lost was paid after all; `winnerOf`
 * which decision took effect on a manual withdrawal.
 */
export function expectedBalances(
  flows: readonly Flow[],
  merchants: number,
  paidOf: (d: DepositFlow) => boolean,
  winnerOf: (w: WithdrawalFlow) => Decision | undefined,
): Record<Currency, bigint>[] {
  const books = Array.from({ length: merchants }, () => ({ "USDT-TRC20": 0n, "USDT-ERC20": 0n }));
  for (const f of flows) {
    const book = books[f.merchant] as Record<Currency, bigint>;
    if (f.kind === "deposit") {
      if (f.sessionId && paidOf(f)) book[f.currency] += f.amount - depositFee(f.currency, f.amount);
    } else if (f.id && expectedWithdrawalStatus(f, winnerOf(f)) === "completed") {
      book[f.currency] -= f.amount;
    }
  }
  return books;
}
