import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../src/db/database.js";
import { dnsServerResolve, validateWebhookUrl } from "../../src/webhooks/ssrf.js";
import { WebhookTransport } from "../../src/webhooks/transport.js";
import { openTestDatabase } from "../support/db.js";
import { startDnsServer } from "./dns-server.js";

/**
 * One attempt's HTTP exchange (`WebhookTransport.post`) against raw local servers: what is kept of an
 * answer, the overall deadline, and refusals at dial time. The schedule and recording are covered
 * by delivery.test.ts and batch.test.ts.
 */
const TIMEOUT_MS = 600;
const PUBLIC_V4 = "93.184.216.34";

let database: Database;
let server: http.Server;
let port: number;
let received = 0;
let dns: Awaited<ReturnType<typeof startDnsServer>>;
const deliveries: WebhookTransport[] = [];

function delivery(allowCidrs: string[] = ["127.0.0.0/8"], allowedPorts?: number[]) {
  const d = new WebhookTransport({
    ...(allowedPorts ? { allowedPorts } : {}),
    timeoutMs: TIMEOUT_MS,
    ssrfAllowCidrs: allowCidrs,
    resolve: dnsServerResolve([dns.server]),
  });
  deliveries.push(d);
  return d;
}

beforeAll(async () => {
  database = await openTestDatabase(1);
  dns = await startDnsServer((name, type, n) => {
    if (type === "AAAA") return [];
    // Public while it is checked the first time, 127.0.0.1 from then on.
    if (name === "rebind-post.attacker.net") return n <= 0 ? [PUBLIC_V4] : ["127.0.0.1"];
    return [];
  });
  server = http.createServer((req, res) => {
    received++;
    req.resume();
    req.on("end", () => {
      if (req.url === "/big") {
        // 200 KB: far past what is read; the first 1 KB is kept.
        res.writeHead(200, { "content-type": "text/plain" });
        res.end(`${"a".repeat(1000)}${"b".repeat(199_000)}`);
      } else if (req.url === "/drip") {
        // Headers at once, then one byte every 100 ms for ever: only the overall deadline ends it.
        res.writeHead(200, { "content-type": "text/plain" });
        const t = setInterval(() => res.write("x"), 100);
        res.on("close", () => clearInterval(t));
      } else if (req.url === "/utf8") {
        res.writeHead(500);
        res.end("é".repeat(600)); // 1,200 bytes: the cut falls in a character's middle
      } else {
        res.writeHead(201);
        res.end("created");
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  for (const d of deliveries) await d.close();
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
  await dns?.close();
  await database?.close();
});

describe("one webhook attempt's HTTP exchange", () => {
  it("any 2xx succeeds and its answer is recorded", async () => {
    const o = await delivery().post(`http://127.0.0.1:${port}/ok?x=1`, "{}", {
      "content-type": "application/json",
    });
    expect(o).toMatchObject({ ok: true, responseStatus: 201, error: null, responseBody: "created" });
    expect(o.url).toBe(`http://127.0.0.1:${port}/ok?x=1`);
  });

  it("keeps the first 1 KB of a 200 KB answer and stops reading", async () => {
    const o = await delivery().post(`http://127.0.0.1:${port}/big`, "{}", {});
    expect(o.ok).toBe(true);
    expect(o.responseStatus).toBe(200);
    expect(o.responseBody).toBe(`${"a".repeat(1000)}${"b".repeat(24)}`);
  });

  it("a body that never ends fails at the overall deadline, not at the idle timeout", async () => {
    const t0 = Date.now();
    const o = await delivery().post(`http://127.0.0.1:${port}/drip`, "{}", {});
    const took = Date.now() - t0;
    expect(o.ok).toBe(false);
    expect(o.error).toMatch(/^timeout/);
    expect(took).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(took).toBeLessThan(TIMEOUT_MS + 2_000);
  });

  it("records a non-2xx answer, its body cut at 1 KB even inside a character", async () => {
    const o = await delivery().post(`http://127.0.0.1:${port}/utf8`, "{}", {});
    expect(o).toMatchObject({ ok: false, responseStatus: 500, error: "HTTP 500" });
    expect(o.responseBody?.startsWith("é".repeat(512))).toBe(true);
  });

  it("refuses a name that re-binds to loopback at dial time; nothing reaches the server", async () => {
    const before = received;
    const url = `http://rebind-post.attacker.net:${port}/hook`;
    // When the URL is set the name is public (the server's port allowed, as 443 would be)...
    const resolve = dnsServerResolve([dns.server]);
    const allowedPorts = [port];
    expect(
      await validateWebhookUrl(url, { environment: "sandbox", allowCidrs: [], allowedPorts, resolve }),
    ).toEqual([]);
    // ...and when the attempt dials it, it is 127.0.0.1.
    const o = await delivery([], allowedPorts).post(url, "{}", {});
    expect(o.ok).toBe(false);
    expect(o.error).toMatch(/^blocked: .*127\.0\.0\.1/);
    expect(received).toBe(before);
  });

  it("a refused connection and an unparsable URL are failed attempts, not exceptions", async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const refused = await delivery().post(`http://127.0.0.1:${closedPort}/`, "{}", {});
    expect(refused).toMatchObject({ ok: false, responseStatus: null });
    expect(refused.error).toMatch(/ECONNREFUSED/);
    const bad = await delivery().post("not a url", "{}", {});
    expect(bad).toMatchObject({ ok: false, responseStatus: null });
    expect(bad.error).toMatch(/Invalid URL/);
  });
});
