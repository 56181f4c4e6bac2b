import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGuardedAgent } from "../../src/webhooks/guarded-agent.js";
import { checkAddress, parseCidrs } from "../../src/webhooks/ip-addresses.js";
import { dnsServerResolve, type Resolve, ssrfPolicy, validateWebhookUrl } from "../../src/webhooks/ssrf.js";
import { startDnsServer } from "./dns-server.js";
import { type Receiver, startReceiver } from "./support.js";

const PUBLIC_V4 = "93.184.216.34";

// The names our local DNS server knows (A / AAAA answers).
const ZONE: Record<string, { A?: string[]; AAAA?: string[] }> = {
  "public.attacker.net": { A: [PUBLIC_V4] },
  "v6public.attacker.net": { AAAA: ["2606:4700::1111"] },
  "loop.attacker.net": { A: ["127.0.0.1"] },
  "internal.attacker.net": { A: ["10.0.0.1"] },
  "meta.attacker.net": { A: ["169.254.169.254"] },
  "cgnat.attacker.net": { A: ["100.64.1.1"] },
  "v6loop.attacker.net": { AAAA: ["::1"] },
  "mapped.attacker.net": { AAAA: ["::ffff:7f00:1"] },
  "ula.attacker.net": { AAAA: ["fd12:3456::1"] },
  "mixed.attacker.net": { A: ["8.8.8.8", "10.0.0.5"] },
  "mixed6.attacker.net": { A: ["8.8.8.8"], AAAA: ["fe80::1"] },
  localhost: { A: ["127.0.0.1"], AAAA: ["::1"] },
  "printer.local": { A: ["192.168.1.20"] },
  "svc.cluster.internal": { A: [PUBLIC_V4] },
  intranet: { A: [PUBLIC_V4] },
  "metadata.google.internal": { A: ["169.254.169.254"] },
  "loopback.good.net": { A: ["127.0.0.1"] },
};

let dns: Awaited<ReturnType<typeof startDnsServer>>;
let resolve: Resolve;
let receiver: Receiver;

beforeAll(async () => {
  dns = await startDnsServer((name, type, n) => {
    if (name.startsWith("rebind")) {
      // Public while the URL is validated (the first A query), 127.0.0.1 from then on.
      if (type === "AAAA") return [];
      return n <= 0 ? [PUBLIC_V4] : ["127.0.0.1"];
    }
    return ZONE[name]?.[type] ?? [];
  });
  resolve = dnsServerResolve([dns.server]);
  receiver = await startReceiver();
});
afterAll(async () => {
  await dns?.close();
  await receiver?.close();
});

const REJECTED: [url: string, env?: "production" | "sandbox"][] = [
  // IPv4 loopback in every spelling
  ["https://127.0.0.1/"],
  ["https://127.0.0.1:8443/hook"],
  ["https://127.1/"],
  ["https://127.0.1/"],
  ["https://2130706433/"],
  ["https://0x7f000001/"],
  ["https://0x7f.0.0.1/"],
  ["https://0177.0.0.1/"],
  ["https://017700000001/"],
  ["https://0x7F.1/"],
  ["https://127.255.255.254/"],
  // this network, private, CGNAT, link-local, metadata, reserved, multicast
  ["https://0.0.0.0/"],
  ["https://0/"],
  ["https://10.0.0.1/"],
  ["https://10.255.255.255/"],
  ["https://0xa.0.0.1/"],
  ["https://172.16.0.1/"],
  ["https://172.31.255.255/"],
  ["https://192.168.1.1/"],
  ["https://3232235777/"],
  ["https://0300.0250.0.1/"],
  ["https://192.168.257/"],
  ["https://100.64.0.1/"],
  ["https://100.127.255.254/"],
  ["https://169.254.169.254/latest/meta-data/"],
  ["https://169.254.170.2/v2/credentials"],
  ["https://100.100.100.200/latest/meta-data"],
  ["https://192.0.0.192/"],
  ["https://2852039166/"], // 169.254.169.254 as one number
  ["https://192.0.2.1/"],
  ["https://198.18.0.1/"],
  ["https://198.51.100.7/"],
  ["https://203.0.113.9/"],
  ["https://192.88.99.1/"],
  ["https://224.0.0.1/"],
  ["https://239.255.255.250/"],
  ["https://240.0.0.1/"],
  ["https://255.255.255.255/"],
  // IPv6 and IPv4 embedded in IPv6
  ["https://[::1]/"],
  ["https://[0:0:0:0:0:0:0:1]/"],
  ["https://[::]/"],
  ["https://[::ffff:127.0.0.1]/"],
  ["https://[::ffff:7f00:1]/"],
  ["https://[::ffff:10.0.0.1]/"],
  ["https://[::ffff:169.254.169.254]/"],
  ["https://[::127.0.0.1]/"],
  ["https://[::ffff:0:7f00:1]/"],
  ["https://[64:ff9b::127.0.0.1]/"],
  ["https://[64:ff9b::a00:1]/"],
  ["https://[64:ff9b:1::8.8.8.8]/"],
  ["https://[2002:7f00:1::]/"],
  ["https://[2002:a9fe:a9fe::1]/"],
  ["https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/"], // Teredo client 127.0.0.1
  ["https://[fc00::1]/"],
  ["https://[fd00:ec2::254]/"],
  ["https://[fe80::1]/"],
  ["https://[fec0::1]/"],
  ["https://[ff02::1]/"],
  ["https://[2001:db8::1]/"],
  ["https://[100::1]/"],
  // names
  ["https://localhost/"],
  ["https://LOCALHOST./"],
  ["https://foo.localhost/"],
  ["https://metadata.google.internal/computeMetadata/v1/"],
  ["https://metadata.google.internal./"],
  ["https://metadata/"],
  ["https://instance-data/"],
  ["https://svc.cluster.internal/"],
  ["https://printer.local/"],
  ["https://intranet/"],
  ["https://loop.attacker.net/"],
  ["https://internal.attacker.net/"],
  ["https://meta.attacker.net/"],
  ["https://cgnat.attacker.net/"],
  ["https://v6loop.attacker.net/"],
  ["https://mapped.attacker.net/"],
  ["https://ula.attacker.net/"],
  ["https://mixed.attacker.net/"],
  ["https://mixed6.attacker.net/"],
  ["https://nxdomain.attacker.net/"],
  // URL forms
  ["http://8.8.8.8/", "production"],
  ["ftp://8.8.8.8/"],
  ["file:///etc/passwd"],
  ["gopher://8.8.8.8:70/_x"],
  ["javascript:alert(1)"],
  ["https://user:pass@8.8.8.8/"],
  ["not a url"],
  ["//8.8.8.8/hook"],
  ["https://"],
  [" https://8.8.8.8/"],
  ["https://8.8.8.8\\@127.0.0.1/"],
  [`https://8.8.8.8/${"a".repeat(2100)}`],
];

const ACCEPTED: [url: string, env?: "production" | "sandbox"][] = [
  ["https://8.8.8.8/hook"],
  ["https://1.1.1.1"],
  [`https://${PUBLIC_V4}:8443/x?y=1`],
  ["https://[2606:4700:4700::1111]/"],
  ["https://public.attacker.net/webhooks"],
  ["https://v6public.attacker.net/"],
  ["https://[2002:808:808::1]/"], // 6to4 of 8.8.8.8
  ["https://[64:ff9b::8.8.8.8]/"], // NAT64 of 8.8.8.8
  ["https://[::ffff:8.8.8.8]/"],
  ["https://172.32.0.1/"],
  ["https://100.128.0.1/"],
  ["https://192.169.0.1/"],
  ["https://11.0.0.1/"],
  ["http://8.8.8.8/hook", "sandbox"],
  ["https://rebind.attacker.net/"], // public while validated: caught at delivery (below)
];

describe("SSRF: URL validation", () => {
  it("has at least 60 rejected addresses and spellings", () => {
    expect(REJECTED.length).toBeGreaterThanOrEqual(60);
  });

  it.each(REJECTED)("rejects %s", async (url, env) => {
    const errors = await validateWebhookUrl(url, {
      environment: env ?? "production",
      allowCidrs: [],
      resolve,
    });
    expect(errors).toHaveLength(1);
    expect(errors[0]!.field).toBe("webhookUrl");
  });

  it.each(ACCEPTED)("accepts %s", async (url, env) => {
    const errors = await validateWebhookUrl(url, {
      environment: env ?? "production",
      allowCidrs: [],
      resolve,
    });
    expect(errors).toEqual([]);
  });

  it("SSRF_ALLOW_CIDRS exempts ranges (also for IPv4-mapped spellings), nothing else", async () => {
    const opts = { environment: "sandbox" as const, allowCidrs: ["127.0.0.0/8"], resolve };
    expect(await validateWebhookUrl("http://127.0.0.1:9/", opts)).toEqual([]);
    expect(await validateWebhookUrl("http://[::ffff:127.0.0.1]:9/", opts)).toEqual([]);
    expect(await validateWebhookUrl("http://loopback.good.net:9/", opts)).toEqual([]);
    expect(await validateWebhookUrl("http://10.0.0.1/", opts)).toHaveLength(1);
    expect(await validateWebhookUrl("http://metadata.google.internal/", opts)).toHaveLength(1);
    expect(() => parseCidrs(["nonsense"])).toThrow();
    expect(checkAddress("127.0.0.1", parseCidrs(["127.0.0.1"])).allowed).toBe(true);
  });
});

describe("SSRF: the address actually dialled", () => {
  it("a name that re-binds to 127.0.0.1 after validation is refused at delivery, before any request", async () => {
    const url = `http://rebind-delivery.attacker.net:${receiver.port}/hook`;
    // Set time: the name resolves to a public address (the receiver's port allowed, as 443 would be).
    const allowedPorts = [receiver.port];
    expect(
      await validateWebhookUrl(url, { environment: "sandbox", allowCidrs: [], allowedPorts, resolve }),
    ).toEqual([]);
    const before = dns.queries("rebind-delivery.attacker.net");
    const agent = createGuardedAgent({
      policy: ssrfPolicy([], resolve, allowedPorts),
      connectTimeoutMs: 2_000,
    });
    try {
      const err = await request(url, { method: "POST", body: "{}", dispatcher: agent }).then(
        () => null,
        (e: Error) => e,
      );
      expect(err?.message).toMatch(/rebind-delivery\.attacker\.net resolves to 127\.0\.0\.1 \(loopback\)/);
      // The dial-time lookup really asked DNS again and got the rebound answer.
      expect(dns.queries("rebind-delivery.attacker.net")).toBeGreaterThan(before);
      expect(receiver.received).toHaveLength(0);
    } finally {
      await agent.close();
    }
  });

  it("the same dispatcher connects where allowed (control: the DNS answer is what gets dialled)", async () => {
    const agent = createGuardedAgent({
      policy: ssrfPolicy(["127.0.0.0/8"], resolve),
      connectTimeoutMs: 2_000,
    });
    try {
      const res = await request(`http://loopback.good.net:${receiver.port}/control`, {
        method: "POST",
        body: "{}",
        dispatcher: agent,
      });
      expect(res.statusCode).toBe(200);
      await res.body.text();
      expect(receiver.received.map((r) => r.path)).toEqual(["/control"]);
    } finally {
      await agent.close();
    }
  });

  it.each([
    "http://127.0.0.1:PORT/x",
    "http://2130706433:PORT/x",
    "http://[::ffff:127.0.0.1]:PORT/x",
    "http://localhost:PORT/x",
  ])("refuses %s at dial time (IP literals never reach the DNS lookup)", async (template) => {
    const before = receiver.received.length;
    const agent = createGuardedAgent({ policy: ssrfPolicy([], resolve), connectTimeoutMs: 2_000 });
    try {
      const err = await request(template.replace("PORT", String(receiver.port)), {
        method: "POST",
        body: "{}",
        dispatcher: agent,
      }).then(
        () => null,
        (e: Error) => e,
      );
      expect(err?.message).toMatch(/not allowed|resolves to|not a public/);
      expect(receiver.received.length).toBe(before);
    } finally {
      await agent.close();
    }
  });
});
