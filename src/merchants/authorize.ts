import { timingSafeEqual } from "node:crypto";
import { hashSecret, parseCredential } from "../domain/api-key-format.js";
import type { Environment } from "../domain/environment.js";
import { AppError } from "../domain/errors.js";
import { ipAllowed } from "../domain/ip-allowlist.js";
import { assertRoleAllows, type MemberRole, type Permission } from "../domain/permissions.js";
import type { ApiKeyLookup } from "./api-keys.js";

/**
 * The API-key channel's one decision (docs/merchants/authentication.md, docs/permissions.md), usable in a request and
 * outside one (a long-lived stream re-authorises with it while it lives): who a key pair is, and
 * whether it may do what is asked now.
 */

/** Whatever reads a key (`ApiKeyLookups` coalesces a process's lookups into one statement). */
export interface ApiKeyFinder {
  find(apiKey: string): Promise<ApiKeyLookup | undefined>;
}

export interface ApiKeyCredentials {
  /** The `apikey` header. */
  apiKey: string | undefined;
  /** The `x-api-secret` header, when sent. */
  apiSecret: string | undefined;
}

export interface ApiKeyDemand {
  /** The environment of the base URL that received the request. */
  environment: Environment;
  /** The client address the IP allowlist checks (the one the rate limiter counts). */
  clientIp: string;
  /** The secret must come with the key (where money leaves or secrets are read). */
  requireSecret: boolean;
  /** What the acting member's role must allow (the route's `config.permission`); none: refused. */
  permission: Permission | undefined;
  /** The base URL of an environment, named when a key is sent to the other one. */
  baseUrlOf?: (environment: Environment) => string;
}

/** The caller on the API-key channel: a key pair, and the member it acts for. */
export interface ApiKeyPrincipal {
  channel: "apiKey";
  merchantId: string;
  environment: Environment;
  apiKeyId: string;
  /** A correct `x-api-secret` came with the key (a wrong one never gets this far). */
  secretVerified: boolean;
  /**
   * The member the pair acts for (its creator, or whom it was reassigned to); null for a pair the
   * operator issued to a merchant without members, which acts with the owner's role.
   */
  member: { userId: string; email: string } | null;
  /** That member's role now (read with the key on every call). */
  memberRole: MemberRole;
}

/**
 * In this order: missing/malformed/unknown key → 401; key of the other environment → 403; a sent
 * secret that is wrong, or a required secret missing → 401; revoked or rotated pair → 403;
 * suspended merchant → 403; client IP outside the merchant's allowlist → 403; the member the pair
 * acts for removed → 403 `key_owner_removed`; its role not allowing `permission` in this
 * environment → 403 `key_owner_role`. Each call reads the key afresh (no cache).
 */
export async function authorizeApiKey(
  keys: ApiKeyFinder,
  credentials: ApiKeyCredentials,
  demand: ApiKeyDemand,
): Promise<ApiKeyPrincipal> {
  const key = credentials.apiKey;
  if (!key) throw AppError.invalidAuth("Missing API key: send it in the apikey header.");
  const parsed = parseCredential(key);
  if (parsed?.kind !== "key") throw AppError.invalidAuth("Invalid API key.");
  const found = await keys.find(key);
  if (!found) throw AppError.invalidAuth("Invalid API key.");

  if (found.environment !== demand.environment) {
    const where = demand.baseUrlOf ? `; send it to ${demand.baseUrlOf(found.environment)} instead` : "";
    throw AppError.forbidden(`This API key belongs to the ${found.environment} environment${where}.`);
  }

  const secret = credentials.apiSecret;
  if (secret !== undefined) {
    if (!timingSafeEqual(hashSecret(secret), found.secretHash))
      throw AppError.invalidAuth("Invalid API secret.");
  } else if (demand.requireSecret) {
    throw AppError.invalidAuth("This endpoint requires the x-api-secret header.");
  }

  if (found.status !== "active") {
    throw AppError.forbidden(
      found.revokedReason === "rotated"
        ? "This API key pair was rotated and no longer works; use the new pair."
        : "This API key pair has been revoked.",
    );
  }
  if (found.merchantStatus !== "active") throw AppError.forbidden("This merchant account is suspended.");
  if (!ipAllowed(found.ipAllowlist, demand.clientIp)) {
    throw AppError.forbidden("Requests from this IP address are not allowed by the merchant's IP allowlist.");
  }

  // One principal model: the pair acts for its member, with that member's current role.
  const holder = found.holder;
  const acting = {
    via: "api_key" as const,
    role: holder.status === "member" ? holder.role : holder.status === "merchant" ? ("owner" as const) : null,
  };
  assertRoleAllows(acting, demand.permission, found.environment);
  return {
    channel: "apiKey",
    merchantId: found.merchantId,
    environment: found.environment,
    apiKeyId: found.id,
    secretVerified: secret !== undefined,
    member: holder.status === "member" ? { userId: holder.userId, email: holder.email } : null,
    memberRole: acting.role,
  };
}
