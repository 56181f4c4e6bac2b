import { isIP } from "node:net";

/**
 * Address classification of the SSRF defence (`ssrf.ts`): IPv4/IPv6 parsing in every spelling a
 * resolver or HTTP client accepts, CIDR ranges (`SSRF_ALLOW_CIDRS`), and the verdict on one address
 * (private, loopback, link-local, metadata, reserved; IPv4 embedded in IPv6 decoded).
 *
 * Hand-written on purpose: Node's `BlockList` does not decode the IPv6 embeddings of IPv4 (6to4,
 * NAT64, Teredo, IPv4-translated), and no IP library is a dependency. Addresses are handled as
 * integers (IPv4 as a 32-bit bigint, IPv6 as a 128-bit bigint).
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

export interface Range {
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
export function parseV4Literal(host: string): ParsedAddress | null {
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
