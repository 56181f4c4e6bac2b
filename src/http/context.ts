import type { RateLimitTier } from "../config/config.js";
import type { Environment } from "../domain/environment.js";
import type { MemberRole, Permission } from "../domain/permissions.js";
import type { ApiKeyPrincipal } from "../merchants/index.js";

/**
 * Who is calling, established by one of the two merchant channels (docs/merchants/authentication.md). Both act for a member
 * (docs/permissions.md): a session its own; a key pair the member it records (`ApiKeyPrincipal.member`).
 */
export type Principal =
  | ApiKeyPrincipal
  | {
      channel: "dashboard";
      merchantId: string;
      environment: Environment;
      userId: string;
      role: "merchant" | "admin";
      /** The member's role in its merchant (issue #21); null for a platform admin. */
      memberRole: MemberRole | null;
    };

/**
 * Credentials a route accepts: `apiKey` (apikey + x-api-secret), `dashboard` (JWT cookie or
 * `Authorization: Bearer`), or `merchant` — either one (an `apikey` header selects the API-key
 * channel; otherwise the dashboard channel is tried), as the webhook management routes do.
 */
export type AuthMode = "apiKey" | "dashboard" | "merchant";

/**
 * Which dashboard accounts a route serves (default `merchant`): `merchant` — merchant accounts
 * only (their own data); `admin` — the platform operator's admin accounts only, read-only (safe
 * methods); `account` — any signed-in account, for its own profile, password, OTP and 2FA
 * (`/api/v1/auth/*`). The decision is taken from the matched route's config, never from the URL
 * the client sent (issue #18 finding 1: `/api/v1/%61dmin/...` routed to the admin views while a
 * check on the raw URL saw no admin path).
 */
export type Audience = "merchant" | "admin" | "account";

declare module "fastify" {
  interface FastifyContextConfig {
    /** Rate-limit tier (docs/merchants/authentication.md#rate-limits); `false` exempts operational routes. */
    tier?: RateLimitTier | false;
    /** Credential channel(s) the route accepts. */
    auth?: AuthMode;
    /** `x-api-secret` required on the API-key channel (docs/merchants/authentication.md#where-the-secret-is-required: where money leaves or secrets are read). */
    requireSecret?: boolean;
    /** Dashboard accounts the route serves (default `merchant`); only with `auth`. */
    audience?: Audience;
    /**
     * What a member's role must allow to call this route (issue #21; domain/permissions.ts): the
     * session's member on the dashboard channel, the member a key pair acts for on the API-key
     * channel (issue #34). Required on every route either channel reaches (`merchant` audience):
     * registering one without it fails at start-up.
     */
    permission?: Permission;
  }
  interface FastifyRequest {
    environment: "production" | "sandbox";
    principal: Principal | undefined;
  }
}

/** Set by the listener on the raw request: the environment of the base URL that received it. */
export const LISTENER_ENV = Symbol("stablegate.listenerEnvironment");
export type RawWithListener = { [LISTENER_ENV]?: Environment };
