import { BlockList, isIP } from "node:net";
import type { FieldError } from "./errors.js";

/**
 * A merchant's IP allowlist (docs/merchants/authentication.md#what-is-refused-and-how): single addresses or CIDR ranges, IPv4 or IPv6.
 * An empty list allows every address.
 */
export function validateAllowlistEntry(entry: string): string | null {
  const [addr, prefix, ...rest] = entry.split("/");
  if (rest.length > 0 || addr === undefined) return "must be an IP address or CIDR range";
  const family = isIP(addr);
  if (family === 0) return "must be an IP address or CIDR range";
  if (prefix !== undefined) {
    const n = Number(prefix);
    const max = family === 4 ? 32 : 128;
    if (!/^\d{1,3}$/.test(prefix) || n > max) return `CIDR prefix must be 0..${max}`;
  }
  return null;
}

export function validateAllowlist(entries: string[], field = "ipAllowlist"): FieldError[] {
  return entries.flatMap((e, i) => {
    const message = validateAllowlistEntry(e);
    return message ? [{ field: `${field}[${i}]`, message }] : [];
  });
}

export function ipAllowed(allowlist: readonly string[], ip: string): boolean {
  if (allowlist.length === 0) return true;
  const list = new BlockList();
  for (const entry of allowlist) {
    const [addr, prefix] = entry.split("/");
    if (!addr) continue;
    const type = isIP(addr) === 6 ? "ipv6" : "ipv4";
    if (prefix === undefined) list.addAddress(addr, type);
    else list.addSubnet(addr, Number(prefix), type);
  }
  const v4mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  const candidate = v4mapped?.[1] ?? ip;
  const family = isIP(candidate);
  if (family === 0) return false;
  return list.check(candidate, family === 6 ? "ipv6" : "ipv4");
}
