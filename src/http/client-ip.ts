import { isIP } from "node:net";
import type { FastifyRequest } from "fastify";
import type { Config } from "../config/config.js";

/**
 * The client's address (docs/decisions/security.md), the one the rate limiter counts and the merchant's IP
 * allowlist checks. Without TRUST_PROXY it is the socket's peer. Behind proxies, X-Forwarded-For
 * is read from the right — the end the proxies write — and never from the left, which the client
 * writes: with a hop count N the client is the entry the outermost of the N proxies appended;
 * with a list of proxy addresses/CIDRs, listed entries are skipped from the right (starting with
 * the peer itself) and the first other one is the client.
 *
 * Fastify does the walk (proxy-addr). Its own `trustProxy: <number>` is not used: Fastify 5 turns a
 * bare number into "trust nobody" (test/security/03-client-ip.test.ts shows the difference), so a
 * hop count is given as the trust function proxy-addr defines for hops (`i < N`), and a list as
 * the list, which proxy-addr compiles.
 */
export function trustProxyOption(
  trust: Config["http"]["trustProxy"],
): false | string[] | ((address: string, hop: number) => boolean) {
  if (trust === false) return false;
  if (typeof trust === "number") return (_address, hop) => hop < trust;
  return trust;
}

/**
 * The derived client address of a request. An entry that is not an IP address (garbage a proxy
 * passed on) falls back to the socket's peer rather than becoming a rate-limit identity of its
 * own. A hop count larger than the proxies really in front lets the client pick the entry: the
 * count must match the deployment (docs/decisions).
 */
export function clientIp(request: FastifyRequest): string {
  const derived = request.ip;
  if (typeof derived === "string" && isIP(derived) !== 0) return derived;
  return request.socket.remoteAddress ?? "";
}
