import { useQuery, useQueryClient } from "@tanstack/react-query";
import { createContext, type ReactNode, useCallback, useContext, useEffect, useMemo, useState } from "react";
import { ApiError, type Environment, get, setApiEnvironment, setSessionEndedHandler } from "./api/client";
import type { Me } from "./api/types";
import { can, type Permission } from "./lib/permissions";

const STORAGE_KEY = "stablegate.environment";

/** The environments in words, in the switch's order (a new one fails the typecheck until it has one). */
export const ENVIRONMENTS = { sandbox: "Sandbox", production: "Production" } satisfies Record<
  Environment,
  string
>;

interface SessionValue {
  me: Me | undefined;
  loading: boolean;
  environment: Environment;
  setEnvironment(env: Environment): void;
  signedIn(): Promise<void>;
  signedOut(): void;
}

const SessionContext = createContext<SessionValue | null>(null);

function storedEnvironment(): Environment | null {
  try {
    const v = localStorage.getItem(STORAGE_KEY);
    return v !== null && Object.hasOwn(ENVIRONMENTS, v) ? (v as Environment) : null;
  } catch {
    return null;
  }
}

/**
 * Who is signed in and which environment the dashboard looks at. The environment is the merchant's
 * last choice, else the one of the base URL the dashboard was opened on (docs/decisions/dashboard.md#dashboard-channel); it is sent
 * as `X-Environment` on every request and is part of every query key, so switching refetches.
 */
export function SessionProvider({ children }: { children: ReactNode }) {
  const client = useQueryClient();
  const [environment, setEnv] = useState<Environment | null>(() => {
    const env = storedEnvironment();
    setApiEnvironment(env);
    return env;
  });
  const me = useQuery({
    queryKey: ["me"],
    queryFn: async () => {
      try {
        return await get<Me>("/api/v1/auth/me");
      } catch (e) {
        if (e instanceof ApiError && e.status === 401) return null;
        throw e;
      }
    },
    staleTime: 60_000,
    retry: false,
  });

  // Until the merchant chooses, requests carry no X-Environment and the server uses the base URL's
  // environment — the one /auth/me reports — so both sides agree.
  const known: Environment | null = environment ?? me.data?.environment ?? null;
  useEffect(() => setApiEnvironment(known), [known]);
  const effective: Environment = known ?? "sandbox";

  const setEnvironment = useCallback(
    (env: Environment) => {
      setApiEnvironment(env);
      try {
        localStorage.setItem(STORAGE_KEY, env);
      } catch {
        // private mode: the choice lasts for this tab only
      }
      setEnv(env);
      // The role's permissions are per environment (a developer moves money in the sandbox only).
      void client.invalidateQueries({ queryKey: ["me"] });
    },
    [client],
  );

  const signedOut = useCallback(() => {
    client.setQueryData(["me"], null);
    client.removeQueries({ predicate: (q) => q.queryKey[0] !== "me" });
  }, [client]);

  useEffect(() => {
    setSessionEndedHandler(signedOut);
    return () => setSessionEndedHandler(null);
  }, [signedOut]);

  const value = useMemo<SessionValue>(
    () => ({
      me: me.data ?? undefined,
      loading: me.isPending,
      environment: effective,
      setEnvironment,
      signedIn: async () => {
        await client.invalidateQueries({ queryKey: ["me"] });
      },
      signedOut,
    }),
    [me.data, me.isPending, effective, setEnvironment, client, signedOut],
  );
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

export function useSession(): SessionValue {
  const v = useContext(SessionContext);
  if (!v) throw new Error("useSession outside SessionProvider");
  return v;
}

/**
 * What the signed-in member's role may do in the current environment (`permissions` of
 * `/auth/me`): the dashboard hides what the server would refuse.
 */
export function useCan(): (permission: Permission) => boolean {
  const { me } = useSession();
  const permissions = me?.permissions;
  return useCallback((permission: Permission) => can(permissions, permission), [permissions]);
}

/** Query keys of environment-scoped data start with the environment. */
export function useEnvKey(...parts: unknown[]): unknown[] {
  const { environment } = useSession();
  return [environment, ...parts];
}
