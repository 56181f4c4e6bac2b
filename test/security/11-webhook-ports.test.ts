import http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/config.js";
import type { Database } from "../../src/db/database.js";
import type { CreatedMerchant } from "../../src/merchants/index.js";
import { dnsServerResolve, validateWebhookUrl } from "../../src/webhooks/ssrf.js";
import { WebhookTransport } from "../../src/webhooks/transport.js";
import { openTestDatabase } from "../support/db.js";
import { call, keysOf, startTestService, type TestService } from "../support/harness.js";
import { startDnsServer } from "../webhooks/dns-server.js";
import { waitFor } from "../webhooks/support.js";

// Security issue #18, finding 11: webhook and callback URLs on any port made the sender a blind
// port scanner of internet hosts. Afterwards only WEBHOOK_ALLOWED_PORTS (default 80, 443, 8080,
// 8443; a URL without a port uses its scheme's) are accepted when a URL is set (both channels,
// and checkout callbackUrl) and dialled (a stored URL on another port fails its attempt, with no
// connection made). Addresses in SSRF_ALLOW_CIDRS are exempt, their ports included.

const PUBLIC_V4 = "93.184.216.34";

/** A real TCP listener on 127.0.0.1 that counts connections and answers 200 to HTTP. */
async function countingListener() {
  let connections = 0;
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => res.end("ok"));
  });
  server.on("connection", (s) => {
    connections++;
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    port: (server.address() as AddressInfo).port,
    connections: () => connections,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}
type Listener = Awaited<ReturnType<typeof countingListener>>;

function expectField(r: { status: number; body: any; text: string }, field: string, message: RegExp) {
  expect(r.status, r.text).toBe(400);
  expect(r.body.success).toBe(false);
  expect(r.body.error.code).toBe("VALIDATION_ERROR");
  const fields = r.body.error.details.fields as { field: string; message: string }[];
  expect(fields.map((f) => f.field)).toEqual([field]);
  expect(fields[0]?.message).toMatch(message);
}

describe("set time: the service with the default WEBHOOK_ALLOWED_PORTS", () => {
  let svc: TestService;
  let merchant: CreatedMerchant;
  let api: Record<string, string>;
  let bearer: Record<string, string>;
  let listener: Listener;

  beforeAll(async () => {
    svc = await startTestService({
      env: { RATE_LIMIT_ENABLED: "false", SSRF_ALLOW_CIDRS: "127.0.0.0/8", WEBHOOK_TIMEOUT_MS: "2000" },
    });
    merchant = await svc.createMerchant();
    const k = keysOf(merchant, "sandbox");
    api = { apikey: k.apiKey, "x-api-secret": k.apiSecret };
    const reg = await call(svc.urls.sandbox, "/api/v1/auth/register", {
      json: {
        email: `ports-${Date.now()}@example.com`,
        password: "a long passphrase 123",
        companyName: "Ports",
      },
      headers: { "x-token-delivery": "bearer" },
    });
    expect(reg.status, reg.text).toBe(201);
    bearer = { authorization: `Bearer ${reg.body.data.accessToken}` };
    listener = await countingListener();
  });
  afterAll(async () => {
    await listener?.close();
    await svc?.close();
  });

  const setUrl = (headers: Record<string, string>, webhookUrl: string, base?: string) =>
    call(base ?? svc.urls.sandbox, "/api/v1/webhook/url", { headers, json: { webhookUrl } });

  const REFUSED = [
    `https://${PUBLIC_V4}:22/hook`,
    `https://${PUBLIC_V4}:25/hook`,
    `https://${PUBLIC_V4}:6379/`,
    `http://${PUBLIC_V4}:5432/`,
    `https://${PUBLIC_V4}:8444/hook`,
    `https://${PUBLIC_V4}:1/hook`,
    `https://${PUBLIC_V4}:65535/hook`,
    `https://[2606:4700::1111]:3306/hook`,
  ];
  const ACCEPTED = [
    `https://${PUBLIC_V4}/hook`,
    `https://${PUBLIC_V4}:443/hook`,
    `https://${PUBLIC_V4}:8443/hook`,
    `http://${PUBLIC_V4}/hook`,
    `http://${PUBLIC_V4}:8080/hook`,
    `https://${PUBLIC_V4}:80/hook`,
  ];

  it.each(REFUSED)("API-key channel refuses %s", async (url) => {
    expectField(await setUrl(api, url), "webhookUrl", /port/);
  });

  it.each(REFUSED)("dashboard channel refuses %s", async (url) => {
    expectField(await setUrl(bearer, url), "webhookUrl", /port/);
  });

  it.each(ACCEPTED)("both channels accept %s", async (url) => {
    const a = await setUrl(api, url);
    expect(a.status, a.text).toBe(200);
    const b = await setUrl(bearer, url);
    expect(b.status, b.text).toBe(200);
  });

  it("production: an https URL on a refused port is refused there too", async () => {
    const k = keysOf(merchant, "production");
    const headers = { apikey: k.apiKey, "x-api-secret": k.apiSecret };
    expectField(
      await setUrl(headers, `https://${PUBLIC_V4}:2375/`, svc.urls.production),
      "webhookUrl",
      /port/,
    );
  });

  it("checkout callbackUrl on a refused port: 400 on callbackUrl, nothing created", async () => {
    const url = `https://${PUBLIC_V4}:22/cb`;
    const r = await call(svc.urls.sandbox, "/checkout/session", {
      headers: api,
      json: { amount: 1, currencyType: "USDT-TRC20", callbackUrl: url },
    });
    expectField(r, "callbackUrl", /port/);
    const rows = await svc.database.db
      .selectFrom("checkout_sessions")
      .select("id")
      .where("callback_url", "=", url)
      .execute();
    expect(rows).toHaveLength(0);
  });

  it("SSRF_ALLOW_CIDRS exempts its ranges, ports included (local receivers keep working)", async () => {
    const url = `http://127.0.0.1:${listener.port}/hook`;
    const r = await setUrl(api, url);
    expect(r.status, r.text).toBe(200);
    const before = listener.connections();
    const test = await call(svc.urls.sandbox, "/api/v1/webhook/test", { method: "POST", headers: api });
    expect(test.status, test.text).toBe(200);
    expect(test.body.data).toMatchObject({ deliveryStatus: "delivered", responseStatus: 200 });
    expect(listener.connections()).toBeGreaterThan(before);
  });

  it("dial time: a URL stored before the rule, on a refused port, fails its attempt without dialling", async () => {
    const url = `https://${PUBLIC_V4}:22/hook`;
    await svc.database.db
      .updateTable("webhook_endpoints")
      .set({ url })
      .where("merchant_id", "=", merchant.id)
      .where("environment", "=", "sandbox")
      .execute();
    const t0 = Date.now();
    const test = await call(svc.urls.sandbox, "/api/v1/webhook/test", { method: "POST", headers: api });
    expect(test.status, test.text).toBe(200);
    expect(test.body.data).toMatchObject({ deliveryStatus: "failed", responseStatus: null });
    // Refused before any connection: no connect timeout, no network error.
    expect(Date.now() - t0).toBeLessThan(1_500);
    const events = await call(svc.urls.sandbox, "/api/v1/webhook/events?limit=100", { headers: api });
    const event = (events.body.data as { webhookEventId: string; lastError: string; url: string }[]).find(
      (e) => e.webhookEventId === test.body.data.webhookEventId,
    );
    expect(event?.url).toBe(url);
    expect(event?.lastError).toMatch(/^blocked: port 22 is not allowed/);
  });

  it("dial time in the worker: a session's stored callbackUrl on a refused port fails without dialling", async () => {
    const before = listener.connections();
    const good = `http://127.0.0.1:${listener.port}/cb`;
    const created = await call(svc.urls.sandbox, "/checkout/session", {
      headers: api,
      json: { amount: 1, currencyType: "USDT-TRC20", callbackUrl: good },
    });
    expect(created.status, created.text).toBe(201);
    const id = created.body.data.id as string;
    // As if it had been stored before the rule: the session now points at port 23 of a public host.
    const bad = `https://${PUBLIC_V4}:23/cb`;
    await svc.database.db
      .updateTable("checkout_sessions")
      .set({ callback_url: bad })
      .where("id", "=", id)
      .execute();
    const paid = await call(svc.urls.sandbox, `/api/v1/sandbox/checkout/${id}/pay`, {
      headers: api,
      json: {},
    });
    expect(paid.status, paid.text).toBe(202);
    const event = await waitFor(async () => {
      const r = await call(svc.urls.sandbox, "/api/v1/webhook/events?limit=100", { headers: api });
      return (
        r.body.data as { transactionId: string; attempts: number; lastError: string | null; url: string }[]
      ).find((e) => e.transactionId === id && e.attempts > 0);
    }, 20_000);
    expect(event.url).toBe(bad);
    expect(event.lastError).toMatch(/^blocked: port 23 is not allowed/);
    expect(listener.connections()).toBe(before);
  });
});

describe("set time: WEBHOOK_ALLOWED_PORTS configured", () => {
  let svc: TestService;
  let api: Record<string, string>;

  beforeAll(async () => {
    svc = await startTestService({
      env: { RATE_LIMIT_ENABLED: "false", WEBHOOK_ALLOWED_PORTS: "443, 9443" },
    });
    const k = keysOf(await svc.createMerchant(), "sandbox");
    api = { apikey: k.apiKey, "x-api-secret": k.apiSecret };
  });
  afterAll(async () => {
    await svc?.close();
  });

  it.each([
    [`https://${PUBLIC_V4}:9443/hook`, 200],
    [`https://${PUBLIC_V4}/hook`, 200],
    [`https://${PUBLIC_V4}:8443/hook`, 400],
    [`http://${PUBLIC_V4}/hook`, 400], // http's own port 80 is no longer in the list
  ])("%s → %i", async (webhookUrl, status) => {
    const r = await call(svc.urls.sandbox, "/api/v1/webhook/url", { headers: api, json: { webhookUrl } });
    expect(r.status, r.text).toBe(status);
  });

  it("refuses a malformed list at start-up", () => {
    for (const bad of [",", "0", "65536", "http", "443,x", "-1", "44.3"]) {
      expect(() => parseConfig({ WEBHOOK_ALLOWED_PORTS: bad }), bad).toThrow(/WEBHOOK_ALLOWED_PORTS/);
    }
    // Unset (or empty, which means unset) is the contract's default.
    expect(parseConfig({}).webhooks.allowedPorts).toEqual([80, 443, 8080, 8443]);
    expect(parseConfig({ WEBHOOK_ALLOWED_PORTS: "" }).webhooks.allowedPorts).toEqual([80, 443, 8080, 8443]);
  });
});

describe("the SSRF guard on its own: the port rule is not bypassed by a half-exempt host", () => {
  let listener: Listener;
  let dns: Awaited<ReturnType<typeof startDnsServer>>;
  let database: Database;
  const deliveries: WebhookTransport[] = [];

  beforeAll(async () => {
    database = await openTestDatabase(1);
    listener = await countingListener();
    dns = await startDnsServer((name, type) => {
      if (type === "AAAA") return [];
      // Every address allowed, but only the first in SSRF_ALLOW_CIDRS: not an exempt host.
      if (name === "half.attacker.net") return ["127.0.0.1", PUBLIC_V4];
      if (name === "loopback.good.net") return ["127.0.0.1"];
      if (name === "public.attacker.net") return [PUBLIC_V4];
      return [];
    });
  });
  afterAll(async () => {
    for (const d of deliveries) await d.close();
    await listener?.close();
    await dns?.close();
    await database?.close();
  });

  function delivery(allowCidrs: string[], allowedPorts?: number[]) {
    const d = new WebhookTransport({
      timeoutMs: 2_000,
      ssrfAllowCidrs: allowCidrs,
      resolve: dnsServerResolve([dns.server]),
      ...(allowedPorts ? { allowedPorts } : {}),
    });
    deliveries.push(d);
    return d;
  }

  it("a host with one address outside SSRF_ALLOW_CIDRS on a refused port: no connection", async () => {
    const before = listener.connections();
    const o = await delivery(["127.0.0.0/8"]).post(`http://half.attacker.net:${listener.port}/x`, "{}", {});
    expect(o.ok).toBe(false);
    expect(o.error).toMatch(new RegExp(`^blocked: port ${listener.port} is not allowed`));
    expect(listener.connections()).toBe(before);
  });

  it("controls: the same host reaches the listener when the port is allowed; an all-exempt host on any port", async () => {
    const before = listener.connections();
    const allowed = await delivery(["127.0.0.0/8"], [listener.port]).post(
      `http://half.attacker.net:${listener.port}/x`,
      "{}",
      {},
    );
    expect(allowed).toMatchObject({ ok: true, responseStatus: 200 });
    const exempt = await delivery(["127.0.0.0/8"]).post(
      `http://loopback.good.net:${listener.port}/x`,
      "{}",
      {},
    );
    expect(exempt).toMatchObject({ ok: true, responseStatus: 200 });
    expect(listener.connections()).toBe(before + 2);
  });

  it("with no exempt ranges a refused port is refused before any DNS lookup", async () => {
    const before = dns.queries("public.attacker.net");
    const o = await delivery([]).post(`https://public.attacker.net:22/x`, "{}", {});
    expect(o.error).toMatch(/^blocked: port 22 is not allowed/);
    const resolve = dnsServerResolve([dns.server]);
    const errors = await validateWebhookUrl("https://public.attacker.net:22/x", {
      environment: "production",
      allowCidrs: [],
      resolve,
    });
    expect(errors).toHaveLength(1);
    expect(errors[0]?.message).toMatch(/port 22/);
    expect(dns.queries("public.attacker.net")).toBe(before);
    // Control: on an allowed port the name is looked up (and is public).
    expect(
      await validateWebhookUrl("https://public.attacker.net:8443/x", {
        environment: "production",
        allowCidrs: [],
        resolve,
      }),
    ).toEqual([]);
    expect(dns.queries("public.attacker.net")).toBeGreaterThan(before);
  });
});
