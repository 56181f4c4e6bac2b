import type { FastifyRequest } from "fastify";
import type { Config } from "../../config/config.js";
import { AppError } from "../../domain/errors.js";
import { type ApiKeyFinder, authorizeApiKey } from "../../merchants/index.js";
import { clientIp } from "../client-ip.js";
import type { Principal } from "../context.js";

function header(request: FastifyRequest, name: string): string | undefined {
  // Node lower-cases header names, so `apiKey`, `APIKEY` and `apikey` all arrive as `apikey`.
  const v = request.headers[name];
  return Array.isArray(v) ? v.join(",") : v;
}

/**
 * The API-key channel of a request: the headers and the matched route's own config handed to the
 * one decision `authorizeApiKey` (merchants/authorize.ts: key, environment, secret, revocation,
 * merchant, IP allowlist, then the member the pair acts for against the route's
 * `config.permission`, docs/permissions.md).
 */
export function authenticateApiKey(
  request: FastifyRequest,
  config: Config,
  keys: ApiKeyFinder,
): Promise<Principal> {
  const route = request.routeOptions.config;
  return authorizeApiKey(
    keys,
    { apiKey: header(request, "apikey"), apiSecret: header(request, "x-api-secret") },
    {
      environment: request.environment,
      clientIp: clientIp(request),
      requireSecret: route?.requireSecret === true,
      permission: route?.permission,
      baseUrlOf: (env) => (env === "sandbox" ? config.http.sandboxBaseUrl : config.http.productionBaseUrl),
    },
  );
}

/**
 * For a request whose content makes the secret necessary although the route does not always need
 * it (docs/merchants/authentication.md#where-the-secret-is-required: a checkout session that sets `callbackUrl` aims a signed delivery): 401 on the
 * API-key channel unless a correct `x-api-secret` came with the key. The dashboard channel passes.
 */
export function requireVerifiedSecret(who: Principal, what: string): void {
  if (who.channel === "apiKey" && !who.secretVerified) {
    throw AppError.invalidAuth(`${what} requires the x-api-secret header.`);
  }
}
