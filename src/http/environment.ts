import type { Config } from "../config/config.js";
import type { Environment } from "../domain/environment.js";

/**
 * The environment of a request is the base URL that received it (docs/merchants/authentication.md#two-environments-two-base-urls): behind a proxy,
 * the Host (or X-Forwarded-Host with TRUST_PROXY) matching a configured base URL decides;
 * otherwise the listener it arrived on.
 */
export function environmentResolver(config: Config) {
  const byHost = new Map<string, Environment>([
    [new URL(config.http.productionBaseUrl).host.toLowerCase(), "production"],
    [new URL(config.http.sandboxBaseUrl).host.toLowerCase(), "sandbox"],
  ]);
  return (host: string | undefined, listenerEnv: Environment | undefined): Environment =>
    (host ? byHost.get(host.toLowerCase()) : undefined) ?? listenerEnv ?? "production";
}
