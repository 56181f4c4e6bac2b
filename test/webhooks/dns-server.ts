import dgram from "node:dgram";
import type { AddressInfo } from "node:net";

/**
 * A tiny authoritative DNS server over UDP for tests (A and AAAA only). `answer(name, type, n)`
 * gets the n-th query (0-based) for that name and type and returns the addresses to answer
 * (empty = NXDOMAIN). TTL 0, so nothing is cached between queries.
 */
export async function startDnsServer(answer: (name: string, type: "A" | "AAAA", n: number) => string[]) {
  const counts = new Map<string, number>();
  const socket = dgram.createSocket("udp4");
  socket.on("message", (msg, rinfo) => {
    if (msg.length < 12) return;
    let off = 12;
    const labels: string[] = [];
    while (off < msg.length) {
      const len = msg[off] as number;
      if (len === 0) break;
      labels.push(msg.subarray(off + 1, off + 1 + len).toString("ascii"));
      off += 1 + len;
    }
    const qEnd = off + 5; // zero byte + qtype + qclass
    const qtype = msg.readUInt16BE(off + 1);
    const name = labels.join(".").toLowerCase();
    const type = qtype === 28 ? "AAAA" : qtype === 1 ? "A" : null;
    const key = `${name}/${type}`;
    const n = counts.get(key) ?? 0;
    counts.set(key, n + 1);
    const addresses = type ? answer(name, type, n) : [];
    const header = Buffer.alloc(12);
    msg.copy(header, 0, 0, 2); // id
    const anyForName =
      type !== null && (addresses.length > 0 || answer(name, type === "A" ? "AAAA" : "A", -1).length > 0);
    header.writeUInt16BE(0x8400 | (anyForName || addresses.length ? 0 : 3), 2); // QR AA, rcode NXDOMAIN when the name has nothing
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(addresses.length, 6);
    const rrs = addresses.map((a) => {
      const rdata = type === "A" ? Buffer.from(a.split(".").map(Number)) : ipv6Bytes(a);
      const rr = Buffer.alloc(12);
      rr.writeUInt16BE(0xc00c, 0);
      rr.writeUInt16BE(qtype, 2);
      rr.writeUInt16BE(1, 4);
      rr.writeUInt32BE(0, 6);
      rr.writeUInt16BE(rdata.length, 10);
      return Buffer.concat([rr, rdata]);
    });
    socket.send(Buffer.concat([header, msg.subarray(12, qEnd), ...rrs]), rinfo.port, rinfo.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  const port = (socket.address() as AddressInfo).port;
  return {
    server: `127.0.0.1:${port}`,
    queries: (name: string, type: "A" | "AAAA" = "A") => counts.get(`${name}/${type}`) ?? 0,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}

function ipv6Bytes(a: string): Buffer {
  const [head = "", tail = ""] = a.split("::");
  const h = head ? head.split(":") : [];
  const t = tail ? tail.split(":") : [];
  const groups = a.includes("::") ? [...h, ...Array(8 - h.length - t.length).fill("0"), ...t] : h;
  const buf = Buffer.alloc(16);
  groups.forEach((g, i) => {
    buf.writeUInt16BE(Number.parseInt(g, 16), i * 2);
  });
  return buf;
}
