import type { RateLimitTier } from "../config/config.js";
import type { Environment } from "../domain/environment.js";

/** What the API-key channel established about the caller. */
export interface ApiKeyPrincipal {
  merchantId: string;
  apiKeyId: string;
  environment: Environment;
}

declare module "fastify" {
  interface FastifyContextConfig {
    /** Rate-limit tier (CONTRACT §7); `false` exempts operational routes. */
    tier?: RateLimitTier | false;
    /** Credential channel the route requires. */
    auth?: "apiKey";
    /** `x-api-secret` required (CONTRACT §4: where money leaves or secrets are read). */
    requireSecret?: boolean;
  }
  interface FastifyRequest {
    environment: "production" | "sandbox";
    apiKey: ApiKeyPrincipal | undefined;
  }
}

/** Set by the listener on the raw request: the environment of the base URL that received it. */
export const LISTENER_ENV = Symbol("stablegate.listenerEnvironment");
export type RawWithListener = { [LISTENER_ENV]?: Environment };
