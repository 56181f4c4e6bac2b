import dns from "node:dns";
import { isIP } from "node:net";
import type { Environment } from "../domain/environment.js";
import type { FieldError } from "../domain/errors.js";
import { DEFAULT_WEBHOOK_PORTS, dialPort } from "../domain/webhook-ports.js";
import {
  checkAddress,
  formatIPv4,
  inAllowList,
  parseAddress,
  parseCidrs,
  parseV4Literal,
  type Range,
} from "./ip-addresses.js";

/**
 * SSRF defence for every URL we call on a merchant's behalf (webhook URLs, checkout callbackUrl):
 * docs/merchants/webhooks.md#your-webhook-url.
 *
 *  1. `validateWebhookUrl` at the time the URL is set: scheme, no credentials, host name rules,
 *     every address the host is or resolves to must be public, and the port must be one of
 *     `WEBHOOK_ALLOWED_PORTS`.
 *  2. `createGuardedAgent` (`guarded-agent.ts`) at delivery: the undici dispatcher refuses a port
 *     outside `WEBHOOK_ALLOWED_PORTS` before anything is resolved or dialled (a URL stored before the rule
 *     or the setting changed), resolves names with a lookup that re-checks every address it is
 *     about to dial (so a name that re-binds to 127.0.0.1 after validation is refused before any
 *     packet is sent), refuses IP-literal hosts the same way, and asserts the connected socket's
 *     remote address once more. It has no proxy (environment proxy variables are ignored) and the
 *     caller never follows redirects.
 *
 * `SSRF_ALLOW_CIDRS` exempts its ranges from both rules: a host every address of which is in
 * them may use any port (local receivers in development and tests). A host with one address
 * outside them is held to the port list.
 *
 * This file holds the host name rules, resolution, the policy and set-time validation; the
 * classification of one address is `ip-addresses.ts`.
 */

// ── host names ───────────────────────────────────────────────────────────────────────────────

/** Names of cloud metadata services: refused whatever they resolve to. */
const METADATA_NAMES = new Set([
  "metadata",
  "metadata.google.internal",
  "metadata.goog",
  "metadata.azure.internal",
  "instance-data",
  "instance-data.ec2.internal",
  "metadata.tencentyun.com",
  "metadata.packet.net",
]);

/** Special-use or non-public suffixes: such names only pass when every address is in SSRF_ALLOW_CIDRS. */
const PRIVATE_SUFFIXES = [
  "localhost",
  "local",
  "internal",
  "localdomain",
  "home.arpa",
  "lan",
  "intranet",
  "corp",
  "private",
  "svc",
  "test",
  "invalid",
  "example",
  "onion",
];

export function normalizeHost(hostname: string): string {
  return hostname.toLowerCase().replace(/\.+$/, "");
}

function privateName(host: string): boolean {
  if (!host.includes(".")) return true; // single-label names are resolved by search domains: internal
  return PRIVATE_SUFFIXES.some((s) => host === s || host.endsWith(`.${s}`));
}

// ── resolution ───────────────────────────────────────────────────────────────────────────────

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}
/** Resolves a host name to all its addresses (injectable: tests point it at a local DNS server). */
export type Resolve = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolve: Resolve = async (hostname) => {
  const found = await dns.promises.lookup(hostname, { all: true, verbatim: true });
  return found.map((f) => ({ address: f.address, family: f.family === 6 ? 6 : 4 }));
};

/** A resolver asking the given DNS servers directly (`["127.0.0.1:5353"]`), for tests and tools. */
export function dnsServerResolve(servers: string[]): Resolve {
  const resolver = new dns.promises.Resolver({ timeout: 2_000, tries: 1 });
  resolver.setServers(servers);
  return async (hostname) => {
    const [v4, v6] = await Promise.all([
      resolver.resolve4(hostname).catch(() => [] as string[]),
      resolver.resolve6(hostname).catch(() => [] as string[]),
    ]);
    const out: ResolvedAddress[] = [
      ...v4.map((address) => ({ address, family: 4 as const })),
      ...v6.map((address) => ({ address, family: 6 as const })),
    ];
    if (out.length === 0)
      throw Object.assign(new Error(`${hostname} does not resolve`), { code: "ENOTFOUND" });
    return out;
  };
}

export interface SsrfPolicy {
  /** Parsed `SSRF_ALLOW_CIDRS`. */
  allow: readonly Range[];
  resolve: Resolve;
  /** `WEBHOOK_ALLOWED_PORTS`. */
  ports: ReadonlySet<number>;
}

export function ssrfPolicy(
  allowCidrs: readonly string[],
  resolve: Resolve = systemResolve,
  allowedPorts: readonly number[] = DEFAULT_WEBHOOK_PORTS,
): SsrfPolicy {
  return { allow: parseCidrs(allowCidrs), resolve, ports: new Set(allowedPorts) };
}

/** Raised when a delivery would reach a forbidden address; recorded as the attempt's error. */
export class SsrfBlockedError extends Error {
  readonly code: string = "ESSRFBLOCKED";
  constructor(message: string) {
    super(message);
    this.name = "SsrfBlockedError";
  }
}

/** Raised for a port outside `WEBHOOK_ALLOWED_PORTS` on a host that `SSRF_ALLOW_CIDRS` does not exempt. */
export class PortNotAllowedError extends SsrfBlockedError {
  override readonly code = "ESSRFPORT";
  constructor(port: number, policy: SsrfPolicy) {
    super(`port ${port} is not allowed (WEBHOOK_ALLOWED_PORTS: ${[...policy.ports].join(", ")})`);
    this.name = "PortNotAllowedError";
  }
}

/**
 * Resolves `host` and checks every address (any forbidden one refuses the host: a name that
 * mixes public and private answers is an attack, not a configuration). With `port`, a port outside
 * `WEBHOOK_ALLOWED_PORTS` is refused unless every address is in `SSRF_ALLOW_CIDRS` — and without
 * such ranges, before the name is even resolved. Throws SsrfBlockedError (PortNotAllowedError).
 */
export async function resolveAllowed(
  host: string,
  policy: SsrfPolicy,
  port?: number,
): Promise<ResolvedAddress[]> {
  const portRefused = port !== undefined && !policy.ports.has(port);
  // Nothing can exempt the host: refuse without a DNS query.
  if (portRefused && policy.allow.length === 0) throw new PortNotAllowedError(port, policy);
  const name = normalizeHost(host);
  const bare = name.replace(/^\[|\]$/g, "");
  const literal =
    isIP(bare) === 6 ? parseAddress(bare) : isIP(bare) === 4 ? parseAddress(bare) : parseV4Literal(bare);
  if (literal) {
    const text = literal.family === 4 ? formatIPv4(literal.value) : bare;
    const v = checkAddress(text, policy.allow);
    if (!v.allowed) throw new SsrfBlockedError(`address ${text} is not allowed (${v.reason})`);
    if (portRefused && !inAllowList(text, policy.allow)) throw new PortNotAllowedError(port, policy);
    return [{ address: text, family: literal.family }];
  }
  if (METADATA_NAMES.has(name)) throw new SsrfBlockedError(`host ${name} is a cloud metadata service`);
  let addresses: ResolvedAddress[];
  try {
    addresses = await policy.resolve(name);
  } catch (err) {
    throw new SsrfBlockedError(
      `host ${name} does not resolve (${(err as { code?: string }).code ?? "error"})`,
    );
  }
  if (addresses.length === 0) throw new SsrfBlockedError(`host ${name} does not resolve`);
  for (const a of addresses) {
    const v = checkAddress(a.address, policy.allow);
    if (!v.allowed) throw new SsrfBlockedError(`host ${name} resolves to ${a.address} (${v.reason})`);
  }
  const exempt = addresses.every((a) => inAllowList(a.address, policy.allow));
  if (privateName(name) && !exempt) {
    throw new SsrfBlockedError(`host ${name} is not a public internet name`);
  }
  if (portRefused && !exempt) throw new PortNotAllowedError(port, policy);
  return addresses;
}

// ── URL validation (set time) ────────────────────────────────────────────────────────────────

export const MAX_URL_LENGTH = 2048;

/**
 * Validates a webhook URL or checkout `callbackUrl` (docs/merchants/webhooks.md#your-webhook-url): absolute `https` URL (`http` in
 * sandbox only), no credentials, a host that is, and resolves only to, public addresses, a port in
 * `allowedPorts` (default: `WEBHOOK_ALLOWED_PORTS`'s). Returns field errors (empty = valid).
 */
export async function validateWebhookUrl(
  raw: string,
  options: {
    environment: Environment;
    allowCidrs: readonly string[];
    allowedPorts?: readonly number[];
    resolve?: Resolve;
    field?: string;
  },
): Promise<FieldError[]> {
  const field = options.field ?? "webhookUrl";
  const fail = (message: string) => [{ field, message }];
  if (raw.length === 0 || raw.length > MAX_URL_LENGTH)
    return fail(`must be 1 to ${MAX_URL_LENGTH} characters`);
  if (
    raw.trim() !== raw ||
    /\s|\\/.test(raw) ||
    [...raw].some((c) => c.charCodeAt(0) < 0x20 || c === "\x7f")
  ) {
    return fail("must not contain spaces, control characters or backslashes");
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return fail("must be an absolute URL");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return fail("must be an https URL");
  if (url.protocol === "http:" && options.environment !== "sandbox") {
    return fail("must be an https URL (plain http is accepted in sandbox only)");
  }
  if (url.username || url.password) return fail("must not contain credentials");
  if (!url.hostname) return fail("must have a host");
  try {
    const policy = ssrfPolicy(options.allowCidrs, options.resolve, options.allowedPorts);
    await resolveAllowed(url.hostname, policy, dialPort(url));
  } catch (err) {
    if (err instanceof PortNotAllowedError) return fail(`must use an allowed port: ${err.message}`);
    if (err instanceof SsrfBlockedError)
      return fail(`must point to a public internet address: ${err.message}`);
    throw err;
  }
  return [];
}
