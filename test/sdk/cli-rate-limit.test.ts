import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { listen } from "../../packages/sdk/src/cli/listen.js";
import { trigger } from "../../packages/sdk/src/cli/trigger.js";

// Issue 35, item 3: `stablegate-dev listen` against a gateway that rate-limits it says how long it
// waits (the gateway's Retry-After) and keeps waiting as told, instead of retrying silently or
// taking a busy gateway for an unreachable one.

let server: http.Server;
let base: string;
let hits: number[] = [];
beforeAll(async () => {
  server = http.createServer((_req, res) => {
    hits.push(Date.now());
    res.writeHead(429, { "content-type": "application/json", "retry-after": "1" });
    res.end(
      JSON.stringify({
        success: false,
        error: { code: "RATE_LIMITED", message: "API rate limit exceeded, please retry later.", details: {} },
      }),
    );
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

it("a 429 prints the wait and waits Retry-After between attempts; five of them are not 'cannot reach'", async () => {
  hits = [];
  const status: string[] = [];
  const stop = new AbortController();
  const done = listen({
    apiKey: "ak_test_x",
    apiSecret: "sk_test_x",
    baseUrl: base,
    environment: "sandbox",
    forwardTo: "http://127.0.0.1:9/hooks",
    signal: stop.signal,
    onLine: () => {},
    onStatus: (line) => {
      status.push(line);
      if (hits.length >= 5) stop.abort();
    },
    backoffMs: 10, // the reconnect backoff alone would retry after 10 ms
  });
  await expect(done).resolves.toBeUndefined(); // ended by the abort, not by a ListenError
  expect(hits.length).toBeGreaterThanOrEqual(5);
  for (let i = 1; i < hits.length; i++)
    expect((hits[i] as number) - (hits[i - 1] as number)).toBeGreaterThanOrEqual(950);
  expect(status[0]).toMatch(
    /^rate limited by the gateway \(HTTP 429 RATE_LIMITED: .*\); waiting 1 s \(Retry-After\) before reconnecting$/,
  );
  expect(status.join("\n")).not.toMatch(/cannot reach/);
}, 30_000);

it("trigger says each time the gateway rate-limits a call and how long the SDK waits before retrying", async () => {
  hits = [];
  const lines: string[] = [];
  const run = trigger({
    apiKey: "ak_test_x",
    apiSecret: "sk_test_x",
    baseUrl: base,
    environment: "sandbox",
    event: "deposit.confirmed",
    currency: "USDT-TRC20",
    signal: new AbortController().signal,
    onLine: (line) => lines.push(line),
  });
  await expect(run).rejects.toThrow(); // the SDK's retries run out: the 429 is the answer
  expect(hits.length).toBeGreaterThanOrEqual(2);
  expect(lines.filter((l) => l.startsWith("rate limited"))).toHaveLength(hits.length);
  expect(lines[0]).toBe(
    "rate limited by the gateway (HTTP 429 on POST /checkout/session): the SDK waits 1 s (Retry-After) before a retry",
  );
}, 30_000);
