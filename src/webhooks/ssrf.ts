import dns from "node:dns";
import { isIP, type LookupFunction, type Socket } from "node:net";
import { Agent, buildConnector } from "undici";
import type { Environment } from "../domain/environment.js";
import type { FieldError } from "../domain/errors.js";
import { DEFAULT_WEBHOOK_PORTS, dialPort } from "../domain/webhook-ports.js";

/**
 * SSRF defence for every URL we call on a merchant's behalf (webhook URLs, checkout callbackUrl):
 * SPEC §8.5, CONTRACT §5.
 *
 *  1. `validateWebhookUrl` at the time the URL is set: scheme, no credentials, host name rules,
 *     every address the host is or resolves to must be public, and the port must be one of
 *     `WEBHOOK_ALLOWED_PORTS`.
 *  2. `createGuardedAgent` at delivery: the undici dispatcher refuses a port outside
 *     `WEBHOOK_ALLOWED_PORTS` before anything is resolved or dialled (a URL stored before the rule
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
 * Address classification is hand-written on purpose: Node's `BlockList` does not decode the IPv6
 * embeddings of IPv4 (6to4, NAT64, Teredo, IPv4-translated), and no IP library is a dependency.
 * Addresses are handled as integers (IPv4 as a 32-bit bigint, IPv6 as a 128-bit bigint).
 */

// ── address parsing ──────────────────────────────────────────────────────────────────────────

/**
 * Parses an IPv4 address in any spelling `inet_aton` accepts (and thus that some resolvers and
 * HTTP clients dial): 1 to 4 parts, each decimal, octal (leading 0) or hex (0x) — `127.1`,
 * `2130706433`, `0177.0.0.1`, `0x7f.0.0.1`. Returns the 32-bit value or null.
 */
export function parseIPv4(text: string): bigint | null {
  const parts = text.split(".");
  if (parts.length < 1 || parts.length > 4) return null;
  const nums: bigint[] = [];
  for (const p of parts) {
    let n: bigint;
    if (/^0[xX][0-9a-fA-F]*$/.test(p)) n = p.length === 2 ? 0n : BigInt(p);
    else if (/^0[0-7]+$/.test(p)) n = BigInt(`0o${p.slice(1)}`);
    else if (/^(0|[1-9][0-9]*)$/.test(p)) n = BigInt(p);
    else return null;
    nums.push(n);
  }
  const last = nums.length - 1;
  let value = 0n;
  for (let i = 0; i < last; i++) {
    const n = nums[i] as bigint;
    if (n > 255n) return null;
    value |= n << BigInt(8 * (3 - i));
  }
  const tail = nums[last] as bigint;
  if (tail >= 1n << BigInt(8 * (4 - last))) return null;
  return value | tail;
}

/** Parses an IPv6 address (with `::` compression, a trailing dotted quad, and an optional zone) to 128 bits. */
export function parseIPv6(text: string): bigint | null {
  let s = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  const zone = s.indexOf("%");
  if (zone >= 0) s = s.slice(0, zone);
  if (isIP(s) !== 6) return null;
  let groups: string[];
  const lastColon = s.lastIndexOf(":");
  const tail = s.slice(lastColon + 1);
  if (tail.includes(".")) {
    const v4 = parseIPv4(tail);
    if (v4 === null) return null;
    s = `${s.slice(0, lastColon + 1)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const halves = s.split("::");
  if (halves.length > 2) return null;
  const head = halves[0] ? halves[0].split(":") : [];
  if (halves.length === 2) {
    const rest = halves[1] ? halves[1].split(":") : [];
    groups = [...head, ...Array<string>(8 - head.length - rest.length).fill("0"), ...rest];
  } else groups = head;
  if (groups.length !== 8) return null;
  let value = 0n;
  for (const g of groups) value = (value << 16n) | BigInt(`0x${g || "0"}`);
  return value;
}

export type ParsedAddress = { family: 4 | 6; value: bigint };

/** An IP literal (any IPv4 spelling, or IPv6 with or without brackets), else null. */
export function parseAddress(text: string): ParsedAddress | null {
  const v6 = text.includes(":") ? parseIPv6(text) : null;
  if (v6 !== null) return { family: 6, value: v6 };
  const v4 = parseIPv4(text);
  return v4 === null ? null : { family: 4, value: v4 };
}

export function formatIPv4(v: bigint): string {
  return [24n, 16n, 8n, 0n].map((s) => String((v >> s) & 0xffn)).join(".");
}

// ── ranges ───────────────────────────────────────────────────────────────────────────────────

interface Range {
  family: 4 | 6;
  base: bigint;
  bits: number;
  label: string;
}

function range(cidr: string, label: string): Range {
  const [addr, bits] = cidr.split("/") as [string, string];
  const parsed = parseAddress(addr);
  if (!parsed) throw new Error(`bad range ${cidr}`);
  return { family: parsed.family, base: parsed.value, bits: Number(bits), label };
}

function inRange(a: ParsedAddress, r: Range): boolean {
  if (a.family !== r.family) return false;
  const width = a.family === 4 ? 32 : 128;
  const shift = BigInt(width - r.bits);
  return a.value >> shift === r.base >> shift;
}

/** Parses `SSRF_ALLOW_CIDRS` entries (`127.0.0.0/8`, `::1/128`, or a single address). */
export function parseCidrs(entries: readonly string[]): Range[] {
  return entries.map((entry) => {
    const [addr = "", bits] = entry.split("/");
    const parsed = parseAddress(addr);
    if (!parsed) throw new Error(`SSRF_ALLOW_CIDRS: not an address or CIDR range: ${entry}`);
    const max = parsed.family === 4 ? 32 : 128;
    const n = bits === undefined ? max : Number(bits);
    if (!Number.isInteger(n) || n < 0 || n > max) throw new Error(`SSRF_ALLOW_CIDRS: bad prefix: ${entry}`);
    return { family: parsed.family, base: parsed.value, bits: n, label: "allowed" };
  });
}

/** Cloud metadata endpoints, named before the range that contains them for a clearer message. */
const METADATA_V4 = [
  range("169.254.169.254/32", "cloud metadata"), // AWS, GCP, Azure, DigitalOcean, OpenStack…
  range("169.254.170.2/32", "cloud metadata"), // AWS ECS task metadata
  range("100.100.100.200/32", "cloud metadata"), // Alibaba Cloud
  range("192.0.0.192/32", "cloud metadata"), // Oracle Cloud
];

const BLOCKED_V4: Range[] = [
  ...METADATA_V4,
  range("0.0.0.0/8", "this-network"),
  range("10.0.0.0/8", "private"),
  range("100.64.0.0/10", "carrier-grade NAT"),
  range("127.0.0.0/8", "loopback"),
  range("169.254.0.0/16", "link-local"),
  range("172.16.0.0/12", "private"),
  range("192.0.0.0/24", "IETF protocol assignments"),
  range("192.0.2.0/24", "documentation"),
  range("192.31.196.0/24", "reserved (AS112)"),
  range("192.52.193.0/24", "reserved (AMT)"),
  range("192.88.99.0/24", "reserved (6to4 relay)"),
  range("192.168.0.0/16", "private"),
  range("192.175.48.0/24", "reserved (AS112)"),
  range("198.18.0.0/15", "benchmarking"),
  range("198.51.100.0/24", "documentation"),
  range("203.0.113.0/24", "documentation"),
  range("224.0.0.0/4", "multicast"),
  range("240.0.0.0/4", "reserved"),
];

const BLOCKED_V6: Range[] = [
  range("::/128", "unspecified"),
  range("::1/128", "loopback"),
  range("fd00:ec2::254/128", "cloud metadata"), // AWS IMDS over IPv6
  range("::/96", "IPv4-compatible (deprecated)"),
  range("64:ff9b:1::/48", "local NAT64"),
  range("100::/64", "discard"),
  range("2001:db8::/32", "documentation"),
  range("3fff::/20", "documentation"),
  range("5f00::/16", "segment routing"),
  range("fc00::/7", "unique local (private)"),
  range("fe80::/10", "link-local"),
  range("fec0::/10", "site-local (deprecated)"),
  range("ff00::/8", "multicast"),
];

const MAPPED = range("::ffff:0:0/96", "");
const TRANSLATED = range("::ffff:0:0:0/96", "");
const NAT64 = range("64:ff9b::/96", "");
const SIX_TO_FOUR = range("2002::/16", "");
const TEREDO = range("2001::/32", "");
const IETF_2001 = range("2001::/23", "reserved (IETF protocol assignments)");
const GLOBAL_UNICAST = range("2000::/3", "");

export type AddressVerdict = { allowed: true } | { allowed: false; reason: string };

function classifyV4(v: bigint): string | null {
  const a: ParsedAddress = { family: 4, value: v };
  return BLOCKED_V4.find((r) => inRange(a, r))?.label ?? null;
}

/** Why an address must not be dialled (null = public). Decodes IPv4 embedded in IPv6. */
export function blockedReason(a: ParsedAddress): string | null {
  if (a.family === 4) return classifyV4(a.value);
  const low32 = a.value & 0xffffffffn;
  const embedded = (kind: string, v4: bigint) => {
    const r = classifyV4(v4);
    return r ? `${kind} of ${formatIPv4(v4)} (${r})` : null;
  };
  if (inRange(a, MAPPED)) return embedded("IPv4-mapped IPv6", low32);
  if (inRange(a, TRANSLATED)) return embedded("IPv4-translated IPv6", low32);
  if (inRange(a, NAT64)) return embedded("NAT64", low32);
  if (inRange(a, SIX_TO_FOUR)) return embedded("6to4", (a.value >> 80n) & 0xffffffffn);
  if (inRange(a, TEREDO)) {
    const server = (a.value >> 64n) & 0xffffffffn;
    const client = low32 ^ 0xffffffffn;
    return embedded("Teredo server", server) ?? embedded("Teredo client", client);
  }
  const named = BLOCKED_V6.find((r) => inRange(a, r));
  if (named) return named.label;
  if (inRange(a, IETF_2001)) return IETF_2001.label;
  if (!inRange(a, GLOBAL_UNICAST)) return "reserved";
  return null;
}

/** A host spelled as an IPv4 number in any inet_aton form (`127.1`, `0x7f000001`), else null. */
function parseV4Literal(host: string): ParsedAddress | null {
  if (!/^[0-9a-fx.]+$/i.test(host) || !/^(0x[0-9a-f]*|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+))*$/i.test(host))
    return null;
  const v = parseIPv4(host);
  return v === null ? null : { family: 4, value: v };
}

/** Whether the address (or the IPv4 inside an IPv4-mapped IPv6 address) is in `SSRF_ALLOW_CIDRS`. */
export function inAllowList(text: string, allow: readonly Range[]): boolean {
  const a = parseAddress(text);
  if (!a || allow.length === 0) return false;
  const candidates: ParsedAddress[] = [a];
  if (a.family === 6 && inRange(a, MAPPED)) candidates.push({ family: 4, value: a.value & 0xffffffffn });
  return candidates.some((c) => allow.some((r) => inRange(c, r)));
}

/** The verdict for one address, `SSRF_ALLOW_CIDRS` first (checked on the address and its embedded IPv4). */
export function checkAddress(text: string, allow: readonly Range[]): AddressVerdict {
  const a = parseAddress(text);
  if (!a) return { allowed: false, reason: "not an IP address" };
  if (inAllowList(text, allow)) return { allowed: true };
  const reason = blockedReason(a);
  return reason ? { allowed: false, reason } : { allowed: true };
}

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
 * Validates a webhook URL or checkout `callbackUrl` (CONTRACT §5): absolute `https` URL (`http` in
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

// ── the guarded dispatcher (delivery time) ───────────────────────────────────────────────────

/**
 * A `net` lookup that resolves through the policy and refuses forbidden addresses (and, given the
 * port it is for, a port the host is not exempt on: `net` does not tell a lookup the port).
 */
export function guardedLookup(policy: SsrfPolicy, port?: number): LookupFunction {
  return (hostname, options, callback) => {
    resolveAllowed(hostname, policy, port).then(
      (addresses) => {
        const family = typeof options === "object" ? options.family : options;
        const usable =
          family === 4 || family === 6 ? addresses.filter((a) => a.family === family) : addresses;
        if (usable.length === 0) {
          const err = Object.assign(new Error(`no IPv${family} address for ${hostname}`), {
            code: "ENOTFOUND",
          });
          (callback as (e: Error) => void)(err);
          return;
        }
        if (typeof options === "object" && options.all) {
          (callback as (e: null, a: ResolvedAddress[]) => void)(null, usable);
        } else {
          const first = usable[0] as ResolvedAddress;
          (callback as (e: null, a: string, f: number) => void)(null, first.address, first.family);
        }
      },
      (err: Error) => (callback as (e: Error) => void)(err),
    );
  };
}

export interface GuardedAgentOptions {
  policy: SsrfPolicy;
  connectTimeoutMs: number;
  /** Keep-alive connections per origin (deliveries to one merchant reuse them). */
  connections?: number;
}

/**
 * The undici dispatcher for deliveries: a port outside `WEBHOOK_ALLOWED_PORTS` is refused before
 * anything is resolved or dialled unless `SSRF_ALLOW_CIDRS` exempts the host (then its lookup
 * demands that every address be exempt); every connection goes through the guarded lookup; IP
 * literal hosts (which `net` never looks up) are checked before dialling; the remote address of
 * every new socket is checked again. No proxy: this Agent ignores HTTP(S)_PROXY.
 */
export function createGuardedAgent(options: GuardedAgentOptions): Agent {
  const { policy } = options;
  const base = buildConnector({ timeout: options.connectTimeoutMs, lookup: guardedLookup(policy) });
  const connect: buildConnector.connector = (opts, callback) => {
    const host = opts.hostname.replace(/^\[|\]$/g, "");
    const port = Number(opts.port) || (opts.protocol === "https:" ? 443 : 80);
    const portRefused = !policy.ports.has(port);
    if (portRefused && policy.allow.length === 0) {
      callback(new PortNotAllowedError(port, policy), null);
      return;
    }
    if (isIP(host) !== 0) {
      const v = checkAddress(host, policy.allow);
      if (!v.allowed) {
        callback(new SsrfBlockedError(`address ${host} is not allowed (${v.reason})`), null);
        return;
      }
      if (portRefused && !inAllowList(host, policy.allow)) {
        callback(new PortNotAllowedError(port, policy), null);
        return;
      }
    }
    // Only exempt hosts get here with a refused port (development and tests): a connector whose
    // lookup knows the port. Allowed ports share the one connector (and its TLS session cache).
    const connector = portRefused
      ? buildConnector({ timeout: options.connectTimeoutMs, lookup: guardedLookup(policy, port) })
      : base;
    connector(opts, (err, socket) => {
      if (err || !socket) {
        callback(err ?? new Error("connect failed"), null);
        return;
      }
      const remote = (socket as Socket).remoteAddress;
      const v = remote ? checkAddress(remote, policy.allow) : { allowed: false as const, reason: "unknown" };
      if (!v.allowed) {
        socket.destroy();
        callback(new SsrfBlockedError(`connected address ${remote} is not allowed (${v.reason})`), null);
        return;
      }
      if (portRefused && !inAllowList(remote as string, policy.allow)) {
        socket.destroy();
        callback(new PortNotAllowedError(port, policy), null);
        return;
      }
      callback(null, socket);
    });
  };
  return new Agent({
    connect,
    connections: options.connections ?? 64,
    keepAliveTimeout: 10_000,
    keepAliveMaxTimeout: 60_000,
  });
}
