import { CURRENCY_TYPES, type CurrencyType, isCurrencyType } from "../domain/currency.js";
import { parseAmount } from "../domain/money.js";

/**
 * `SIGNER_MAX_OUTFLOW_PER_HOUR` / `SIGNER_MAX_OUTFLOW_PER_DAY` (docs/decisions/trust-round-two.md#the-signer-finding-1-signer-half-10-and-11, issue #34): the most
 * the signer signs in withdrawals and payouts per sliding hour / day, per currency type, in token
 * units (USDT, up to 6 decimals). Either one amount for each currency type (`5000`), or a list
 * naming every currency type (`USDT-ERC20:5000,USDT-TRC20:2500`); `0` stops a currency type's
 * outflows. Unset: no cap on that window (the signer role refuses to start so in production mode).
 * Read by the signer (the `signer` role, and `serve`, which embeds it); other roles ignore it.
 */
export function parseOutflowCap(
  text: string | undefined,
  enabled: readonly CurrencyType[],
): { limits: Record<CurrencyType, bigint> | null } | { error: string } {
  if (text === undefined || text.trim() === "") return { limits: null };
  const limits = {} as Record<CurrencyType, bigint>;
  if (!text.includes(":")) {
    const r = parseAmount(text.trim());
    if (!r.ok) return { error: `${r.message} (USDT), or a list such as USDT-ERC20:5000,USDT-TRC20:5000` };
    for (const c of CURRENCY_TYPES) limits[c] = r.units;
    return { limits };
  }
  for (const part of text.split(",")) {
    const [name, amount, ...rest] = part.split(":").map((s) => s.trim());
    if (!name || amount === undefined || rest.length > 0)
      return { error: `"${part.trim()}" is not CURRENCY:AMOUNT (e.g. USDT-ERC20:5000)` };
    if (!isCurrencyType(name))
      return { error: `unknown currency type ${name} (${CURRENCY_TYPES.join(", ")})` };
    if (name in limits) return { error: `${name} is given twice` };
    const r = parseAmount(amount);
    if (!r.ok) return { error: `${name}: ${r.message} (USDT)` };
    limits[name] = r.units;
  }
  const missing = enabled.filter((c) => !(c in limits));
  if (missing.length > 0)
    return {
      error: `names no limit for ${missing.join(", ")}: give every enabled currency type (0 stops one), or one amount for all`,
    };
  // A currency type the list leaves out is not enabled: nothing may flow out of it.
  for (const c of CURRENCY_TYPES) limits[c] ??= 0n;
  return { limits };
}
