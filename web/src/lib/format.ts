import type { CurrencyType } from "../api/types";

const amountFormat = new Intl.NumberFormat("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 6 });

/** 1234.5 → "1,234.50"; amounts arrive as JSON numbers in USDT with at most 6 decimals. */
export function formatAmount(n: number): string {
  return amountFormat.format(n);
}

export function money(n: number, currency?: CurrencyType | string): string {
  return currency ? `${formatAmount(n)} ${currencyLabel(currency)}` : formatAmount(n);
}

/** Each currency type in words (a new one fails the typecheck until it has its label). */
const CURRENCY_LABELS = {
  "USDT-TRC20": "USDT (TRON)",
  "USDT-ERC20": "USDT (Ethereum)",
} satisfies Record<CurrencyType, string>;

export function currencyLabel(c: string): string {
  return Object.hasOwn(CURRENCY_LABELS, c) ? CURRENCY_LABELS[c as CurrencyType] : c;
}

const dateTime = new Intl.DateTimeFormat("en-GB", {
  year: "numeric",
  month: "short",
  day: "numeric",
  hour: "2-digit",
  minute: "2-digit",
});

export function formatDate(iso: string | null | undefined): string {
  return iso ? dateTime.format(new Date(iso)) : "—";
}

/** "abcdef…7890": long ids and addresses in tables (the full value is in the title and detail). */
export function shorten(s: string | null | undefined, head = 10, tail = 6): string {
  if (!s) return "—";
  return s.length <= head + tail + 1 ? s : `${s.slice(0, head)}…${s.slice(-tail)}`;
}

export function download(filename: string, content: Blob) {
  const url = URL.createObjectURL(content);
  const a = document.createElement("a");
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
