import { timingSafeEqual } from "node:crypto";
import type { FastifyRequest } from "fastify";
import type { Config } from "../../config/config.js";
import { hashSecret, parseCredential } from "../../domain/api-key-format.js";
import { AppError } from "../../domain/errors.js";
import { ipAllowed } from "../../domain/ip-allowlist.js";
import type { ApiKeyLookups } from "../../merchants/index.js";
import { clientIp } from "../client-ip.js";
import type { Principal } from "../context.js";

function header(request: FastifyRequest, name: string): string | undefined {
  // Node lower-cases header names, so `apiKey`, `APIKEY` and `apikey` all arrive as `apikey`.
  const v = request.headers[name];
  return Array.isArray(v) ? v.join(",") : v;
}

/**
 * The API-key channel (SPEC §5.1, CONTRACT §4), in this order:
 *  missing/malformed/unknown key → 401; key of the other environment → 403; a sent secret that is
 *  wrong, or a required secret missing → 401; revoked or rotated pair → 403; suspended merchant →
 *  403; client IP (`clientIp`, the one the rate limiter counts) outside the merchant's allowlist → 403.
 */
export async function authenticateApiKey(
  request: FastifyRequest,
  config: Config,
  keys: ApiKeyLookups,
  requireSecret: boolean,
): Promise<Principal> {
  const key = header(request, "apikey");
  if (!key) throw AppError.invalidAuth("Missing API key: send it in the apikey header.");
  const parsed = parseCredential(key);
  if (parsed?.kind !== "key") throw AppError.invalidAuth("Invalid API key.");
  const found = await keys.find(key);
  if (!found) throw AppError.invalidAuth("Invalid API key.");

  if (found.environment !== request.environment) {
    const base = found.environment === "sandbox" ? config.http.sandboxBaseUrl : config.http.productionBaseUrl;
    throw AppError.forbidden(
      `This API key belongs to the ${found.environment} environment; send it to ${base} instead.`,
    );
  }

  const secret = header(request, "x-api-secret");
  if (secret !== undefined) {
    if (!timingSafeEqual(hashSecret(secret), found.secretHash))
      throw AppError.invalidAuth("Invalid API secret.");
  } else if (requireSecret) {
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
  if (!ipAllowed(found.ipAllowlist, clientIp(request))) {
    throw AppError.forbidden("Requests from this IP address are not allowed by the merchant's IP allowlist.");
  }
  return {
    channel: "apiKey",
    merchantId: found.merchantId,
    environment: found.environment,
    apiKeyId: found.id,
    secretVerified: secret !== undefined,
  };
}

/**
 * For a request whose content makes the secret necessary although the route does not always need
 * it (CONTRACT §4: a checkout session that sets `callbackUrl` aims a signed delivery): 401 on the
 * API-key channel unless a correct `x-api-secret` came with the key. The dashboard channel passes.
 */
export function requireVerifiedSecret(who: Principal, what: string): void {
  if (who.channel === "apiKey" && !who.secretVerified) {
    throw AppError.invalidAuth(`${what} requires the x-api-secret header.`);
  }
}
