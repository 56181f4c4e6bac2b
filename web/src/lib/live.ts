import { useQuery } from "@tanstack/react-query";
import { get } from "../api/client";
import { useEnvKey } from "../session";

const IN_FLIGHT = new Set(["pending", "processing"]);

/**
 * Follows a withdrawal or payout just acted on until the chain settles it: re-read every 1.5 s
 * while it is `processing` (or `pending`), starting from the object the action returned.
 */
export function useLiveStatus<T extends { id: string; status: string }>(
  initial: T | null | undefined,
  path: (id: string) => string,
  follow = true,
): T | null | undefined {
  const q = useQuery({
    queryKey: useEnvKey("live", initial?.id),
    queryFn: () => get<T>(path(initial?.id as string)),
    enabled: Boolean(initial) && follow && IN_FLIGHT.has(initial?.status ?? ""),
    refetchInterval: (query) => (IN_FLIGHT.has(query.state.data?.status ?? "processing") ? 1500 : false),
  });
  return q.data ?? initial;
}
