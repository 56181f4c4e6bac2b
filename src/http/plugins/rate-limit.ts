import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Config, RateLimitTier } from "../../config/config.js";
import type { Clock } from "../../lib/clock.js";
import type { RateLimitStore } from "../../ratelimit/index.js";
import { clientKey } from "../../ratelimit/index.js";
import { clientIp } from "../client-ip.js";

export const RATE_LIMIT_MESSAGE = "API rate limit exceeded, please retry later.";

/**
 * The 429 body: the contract's `{ success: false, message }` (kept exactly), plus the `error`
 * object every other error body has, so a client reads `error.code` on any failure.
 */
export function rateLimitedBody(message: string, requestId: string, details: Record<string, unknown> = {}) {
  return {
    success: false as const,
    message,
    error: { code: "RATE_LIMITED" as const, message, details, requestId },
  };
}

/**
 * The tier of a request: the matched route's own `config.tier` (every authenticated route declares
 * one; `buildApp` refuses one that does not). Only a request no route declares a tier for — an
 * unknown path answered 404, a CORS preflight — is counted in the tier of the area its path names;
 * that choice grants nothing, whatever the spelling.
 */
export function tierOf(request: FastifyRequest): RateLimitTier | false {
  const configured = request.routeOptions.config?.tier;
  if (configured !== undefined) return configured;
  const url = request.url;
  if (url.startsWith("/pay/")) return "publicPage";
  if (url.startsWith("/api/v1/dashboard/") || url.startsWith("/api/v1/admin/")) return "dashboard";
  return "standard";
}

/**
 * Per client (its address, an IPv6 client's /64: `clientKey`), per tier, sliding 15-minute window
 * (docs/merchants/authentication.md#rate-limits, docs/decisions/security.md). The client address is `clientIp`, the one the IP allowlist checks. Runs first, before
 * authentication, so credential guessing is limited too; its headers are set before anything can
 * fail, so every response — 2xx, 4xx and 5xx alike — carries them.
 */
export function registerRateLimit(app: FastifyInstance, config: Config, store: RateLimitStore, clock: Clock) {
  if (!config.rateLimit.enabled) return;
  const windowMs = config.rateLimit.windowMs;
  const windowSeconds = Math.round(windowMs / 1000);

  app.addHook("onRequest", async (request: FastifyRequest, reply: FastifyReply) => {
    const tier = tierOf(request);
    if (tier === false) return;
    const limit = config.rateLimit.limits[tier];
    const result = await store.hit(`${tier}:${clientKey(clientIp(request))}`, limit, windowMs, clock.now());
    const resetSeconds = Math.ceil(result.resetMs / 1000);
    reply.header("RateLimit-Limit", String(limit));
    reply.header("RateLimit-Remaining", String(Math.max(0, limit - result.count)));
    reply.header("RateLimit-Reset", String(resetSeconds));
    reply.header("RateLimit-Policy", `${limit};w=${windowSeconds}`);
    if (!result.allowed) {
      reply.header("Retry-After", String(Math.max(1, resetSeconds)));
      return reply.code(429).send(rateLimitedBody(RATE_LIMIT_MESSAGE, request.id));
    }
  });
}

/**
 * The second count of an API-key request (issue #35): besides its client address, the key pair
 * it authenticated with, per tier, with the same limit, whichever address it comes from. A key
 * used from many addresses at once is limited as one client; keys of different merchants behind
 * one address are not each other's limit beyond the address's own. Registered after
 * authentication, and only for a request that sent the right secret: one without it (the `apikey`
 * alone authorizes reads and checkout creation, and may be embedded in a front-end) or whose key did
 * not authenticate is counted for its address only, so nobody spends a merchant's key budget
 * without its secret.
 * The RateLimit-* headers show the tighter of the two counts.
 */
export function registerKeyRateLimit(
  app: FastifyInstance,
  config: Config,
  store: RateLimitStore,
  clock: Clock,
) {
  if (!config.rateLimit.enabled) return;
  const windowMs = config.rateLimit.windowMs;
  app.addHook("onRequest", async (request: FastifyRequest, reply: FastifyReply) => {
    const who = request.principal;
    // Only a request that proved the secret: the `apikey` alone is public enough (a front-end may
    // embed it) that counting it per key would let anyone who saw it spend the merchant's budget.
    if (who?.channel !== "apiKey" || !who.secretVerified) return;
    const tier = tierOf(request);
    if (tier === false) return;
    const limit = config.rateLimit.limits[tier];
    const result = await store.hit(`${tier}:key:${who.apiKeyId}`, limit, windowMs, clock.now());
    const remaining = Math.max(0, limit - result.count);
    const shown = Number(reply.getHeader("RateLimit-Remaining") ?? Number.POSITIVE_INFINITY);
    if (remaining < shown) {
      reply.header("RateLimit-Remaining", String(remaining));
      reply.header("RateLimit-Reset", String(Math.ceil(result.resetMs / 1000)));
    }
    if (!result.allowed) {
      reply.header("Retry-After", String(Math.max(1, Math.ceil(result.resetMs / 1000))));
      return reply.code(429).send(rateLimitedBody(RATE_LIMIT_MESSAGE, request.id, { scope: "apiKey" }));
    }
  });
}
