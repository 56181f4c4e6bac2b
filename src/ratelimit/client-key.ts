import { isIPv4, isIPv6 } from "node:net";

/**
 * The rate-limit identity of a client address (docs/decisions/security.md). An IPv4 address is its own key. An
 * IPv6 client is limited per /64: one subscriber (a home line, a VM) is routinely given a whole
 * /64, so keying per address would hand it 2^64 fresh counts. An IPv4-mapped IPv6 address
 * (`::ffff:a.b.c.d`, how a dual-stack socket shows an IPv4 peer) counts as the IPv4 address.
 * Anything else (never expected: the caller passes a socket or proxy-derived address) gets a key
 * of its own that no address can collide with.
 */
export function clientKey(ip: string): string {
  const address = ip.split("%")[0] ?? ""; // an IPv6 zone id (`fe80::1%eth0`) names no other host
  if (isIPv4(address)) return address;
  const groups = isIPv6(address) ? ipv6Groups(address) : undefined;
  if (!groups) return `unknown:${ip}`;
  const [a = 0, b = 0, c = 0, d = 0, e = 0, f = 0, g = 0, h = 0] = groups;
  if (a === 0 && b === 0 && c === 0 && d === 0 && e === 0 && f === 0xffff) {
    return `${g >> 8}.${g & 0xff}.${h >> 8}.${h & 0xff}`;
  }
  return `${[a, b, c, d].map((n) => n.toString(16)).join(":")}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address (with `::` and a dotted IPv4 tail expanded). */
function ipv6Groups(address: string): number[] | undefined {
  let text = address.toLowerCase();
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [p, q, r, s] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((p << 8) | q).toString(16)}:${((r << 8) | s).toString(16)}`;
  }
  const [head = "", tail, ...rest] = text.split("::");
  if (rest.length > 0) return undefined;
  const parse = (part: string) => (part === "" ? [] : part.split(":").map((x) => Number.parseInt(x, 16)));
  const left = parse(head);
  const right = tail === undefined ? [] : parse(tail);
  const fill = tail === undefined ? 0 : 8 - left.length - right.length;
  const groups = [...left, ...new Array<number>(Math.max(0, fill)).fill(0), ...right];
  return groups.length === 8 && groups.every((n) => Number.isInteger(n) && n >= 0 && n <= 0xffff)
    ? groups
    : undefined;
}
