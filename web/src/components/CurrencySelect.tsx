import type { CurrencyType } from "../api/types";
import type { Currencies } from "../lib/currencies";
import { ErrorNotice, Loading } from "./ui";

/**
 * The picker of an enabled currency type (the checkout session and payout forms): the environment's
 * listing in words, its load error, or a loading line until it is there.
 */
export function CurrencySelect({
  id,
  currencies,
  value,
  onChange,
}: {
  id: string;
  currencies: Currencies;
  value: CurrencyType | undefined;
  onChange: (currencyType: CurrencyType) => void;
}) {
  if (currencies.list)
    return (
      <select id={id} value={value ?? ""} onChange={(e) => onChange(e.target.value as CurrencyType)}>
        {currencies.list.map((c) => (
          <option key={c.currencyType} value={c.currencyType}>
            {currencies.label(c.currencyType)}
          </option>
        ))}
      </select>
    );
  if (currencies.error) return <ErrorNotice error={currencies.error} />;
  return <Loading label="Loading the currencies…" />;
}
