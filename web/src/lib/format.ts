const amountFormat = new Intl.NumberFormat("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 6 });

/**
 * 1234.5 → "1,234.50"; amounts arrive as JSON numbers in the token (USDT, USDC) with at most 6
 * decimals. A currency type in words is `useCurrencies().label` (lib/currencies.ts).
 */
export function formatAmount(n: number): string {
  return amountFormat.format(n);
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
