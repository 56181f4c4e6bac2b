import { useQuery } from "@tanstack/react-query";
import { useCallback, useMemo } from "react";
import { get } from "../api/client";
import type { Currency } from "../api/types";
import { useSession } from "../session";

/** A currency type in words, from its listing: "USDT on BNB Smart Chain (BEP-20)". */
export function currencyName(c: Currency): string {
  return `${c.token} on ${c.networkName}`;
}

export interface Currencies {
  /** The environment's enabled currency types, in the gateway's order; undefined until loaded. */
  list: Currency[] | undefined;
  isPending: boolean;
  error: unknown;
  /** The listing of an enabled currency type (undefined before the load, or when it is not enabled). */
  find(currencyType: string): Currency | undefined;
  /** The currency type in words; the currency type itself until the listing is there. */
  label(currencyType: string): string;
  /** The token of the currency type ("USDT", "USDC"); the currency type itself until the listing is there. */
  unit(currencyType: string): string;
}

/**
 * The currency types this deployment enables in the current environment, with their token,
 * network name and address family (`GET /api/v1/dashboard/currencies`): the pickers offer these,
 * labels and address checks come from them. Which types exist at all is the generated enum
 * (`CURRENCY_TYPES` of api/types); nothing here lists them by hand.
 *
 * Read once per environment: the listing is the deployment's configuration, so its key does not
 * start with the environment (the invalidation of `[environment]` after a payout or a decision
 * would otherwise read it again) and it never goes stale while the page is open.
 */
export function useCurrencies(): Currencies {
  const { environment } = useSession();
  const q = useQuery({
    queryKey: ["currencies", environment],
    queryFn: () => get<Currency[]>("/api/v1/dashboard/currencies"),
    staleTime: Number.POSITIVE_INFINITY,
    gcTime: Number.POSITIVE_INFINITY,
  });
  const list = q.data;
  const byType = useMemo(() => new Map((list ?? []).map((c) => [c.currencyType as string, c])), [list]);
  const find = useCallback((currencyType: string) => byType.get(currencyType), [byType]);
  const label = useCallback(
    (currencyType: string) => {
      const c = byType.get(currencyType);
      return c ? currencyName(c) : currencyType;
    },
    [byType],
  );
  const unit = useCallback(
    (currencyType: string) => byType.get(currencyType)?.token ?? currencyType,
    [byType],
  );
  return { list, isPending: q.isPending, error: q.error, find, label, unit };
}
