import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type OpenStream, openStream } from "../http/webhook-stream-client.js";
import { call, startTestService, type TestService } from "../support/harness.js";
import { type Headers, registerOwner } from "../team/support.js";
import { waitFor } from "../webhooks/support.js";

// Issue #34 finding 9 (Low): webhook streams were capped per API key only, in each process's
// memory, and key pairs are free to mint: one merchant could hold any number of streams (each a
// connection and a poll). Afterwards: per key, per merchant and overall caps, counted in the shared
// database across every instance, and a stream lifetime limit (a stream ended by its lifetime frees
// its place).

const CAPS = {
  RATE_LIMIT_ENABLED: "false",
  WEBHOOK_STREAM_MAX_PER_KEY: "2",
  WEBHOOK_STREAM_MAX_PER_MERCHANT: "3",
  WEBHOOK_STREAM_MAX_TOTAL: "5",
};

let a: TestService;
/** A second app instance on the same database. */
let b: TestService;
/** A third instance on the same database whose streams live 2 s. */
let c: TestService;
const streams: OpenStream[] = [];

beforeAll(async () => {
  a = await startTestService({ env: CAPS });
  [b, c] = await Promise.all([
    startTestService({ env: CAPS, database: a.database, role: "api" }),
    startTestService({
      env: { ...CAPS, WEBHOOK_STREAM_MAX_LIFETIME_SECONDS: "2" },
      database: a.database,
      role: "api",
    }),
  ]);
}, 120_000);
afterAll(async () => {
  for (const s of streams) await s.close();
  await c?.close();
  await b?.close();
  await a?.close();
});

async function open(on: TestService, headers: Headers) {
  const s = await openStream(on.urls.sandbox, headers);
  streams.push(s);
  return s;
}

async function refused(on: TestService, headers: Headers, scope: RegExp) {
  const r = await call(on.urls.sandbox, "/api/v1/webhook/stream", { headers });
  expect(r.status, r.text).toBe(429);
  expect(r.body).toMatchObject({ success: false, error: { code: "RATE_LIMITED" } });
  expect(r.body.error.message).toMatch(scope);
  expect(r.headers.get("retry-after")).toBeTruthy();
}

/** A fresh sandbox key pair of the merchant (sandbox pairs need no step-up). */
async function mint(bearer: Headers): Promise<Headers> {
  const r = await call(a.urls.sandbox, "/api/v1/dashboard/api-keys", {
    headers: bearer,
    json: { environment: "sandbox" },
  });
  expect(r.status, r.text).toBe(201);
  return { apikey: r.body.data.apiKey, "x-api-secret": r.body.data.apiSecret };
}

async function closeAll() {
  for (const s of streams.splice(0)) await s.close();
  // Closed streams give their places back as soon as their connections close.
  await waitFor(async () => {
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from webhook_streams`.execute(
      a.database.db,
    );
    return rows[0]?.n === 0;
  }, 5_000);
}

describe("caps counted across instances", { timeout: 90_000 }, () => {
  it("per key, across two instances", async () => {
    const owner = await registerOwner(a);
    expect((await open(a, owner.sandboxApi)).res.status).toBe(200);
    expect((await open(b, owner.sandboxApi)).res.status).toBe(200);
    await refused(a, owner.sandboxApi, /per API key/);
    await refused(b, owner.sandboxApi, /per API key/);
    await closeAll();
  });

  it("per merchant, whatever the number of key pairs it mints, across two instances", async () => {
    const owner = await registerOwner(a);
    const keys = [
      owner.sandboxApi,
      await mint(owner.bearer),
      await mint(owner.bearer),
      await mint(owner.bearer),
    ];
    expect((await open(a, keys[0]!)).res.status).toBe(200);
    expect((await open(b, keys[1]!)).res.status).toBe(200);
    expect((await open(a, keys[2]!)).res.status).toBe(200);
    await refused(b, keys[3]!, /per merchant/);
    await refused(a, keys[3]!, /per merchant/);
    // Another merchant is not affected.
    const other = await registerOwner(a);
    expect((await open(b, other.sandboxApi)).res.status).toBe(200);
    // One closed on instance a: instance b admits the next at once.
    const first = streams[0]!;
    await first.close();
    await waitFor(async () => {
      const r = await fetch(`${b.urls.sandbox}/api/v1/webhook/stream`, { headers: keys[3]! });
      if (r.status === 200) {
        await r.body?.cancel();
        return true;
      }
      await r.text();
      return false;
    }, 5_000);
    await closeAll();
  });

  it("overall, across merchants and instances", async () => {
    const owners = await Promise.all([registerOwner(a), registerOwner(a), registerOwner(a)]);
    // 2 + 2 + 1 = 5 (the total), spread over both instances.
    expect((await open(a, owners[0]!.sandboxApi)).res.status).toBe(200);
    expect((await open(b, owners[0]!.sandboxApi)).res.status).toBe(200);
    expect((await open(a, owners[1]!.sandboxApi)).res.status).toBe(200);
    expect((await open(b, owners[1]!.sandboxApi)).res.status).toBe(200);
    expect((await open(b, owners[2]!.sandboxApi)).res.status).toBe(200);
    await refused(a, owners[2]!.sandboxApi, /in total/);
    await refused(b, owners[2]!.sandboxApi, /in total/);
    await closeAll();
  });

  it("the places of an instance that died without closing are freed when its lease runs out", async () => {
    const owner = await registerOwner(a);
    // What a crashed instance leaves: leases nobody renews. Live ones still count.
    await sql`insert into webhook_streams (id, instance_id, merchant_id, environment, api_key_id, expires_at)
      values ('wss_dead1', 'dead-instance', ${owner.merchantId}, 'sandbox', 'key_x', now() - interval '1 second'),
             ('wss_dead2', 'dead-instance', ${owner.merchantId}, 'sandbox', 'key_x', now() - interval '1 second'),
             ('wss_dead3', 'dead-instance', ${owner.merchantId}, 'sandbox', 'key_x', now() - interval '1 second'),
             ('wss_live1', 'live-instance', ${owner.merchantId}, 'sandbox', 'key_y', now() + interval '30 seconds'),
             ('wss_live2', 'live-instance', ${owner.merchantId}, 'sandbox', 'key_y', now() + interval '30 seconds')`.execute(
      a.database.db,
    );
    expect((await open(a, owner.sandboxApi)).res.status).toBe(200);
    await refused(b, await mint(owner.bearer), /per merchant/);
    await sql`delete from webhook_streams where instance_id = 'live-instance'`.execute(a.database.db);
    await closeAll();
  });
});

describe("lifetime", { timeout: 90_000 }, () => {
  it("a stream ended by its lifetime gives its place back", async () => {
    const owner = await registerOwner(a);
    const s1 = await open(c, owner.sandboxApi);
    const s2 = await open(c, owner.sandboxApi);
    expect([s1.res.status, s2.res.status]).toEqual([200, 200]);
    await waitFor(() => s1.ended && s2.ended, 8_000);
    expect(s1.others.map((m) => JSON.parse(m.data).reason)).toEqual(["lifetime"]);
    // Both places of the key (its cap is 2) are free again.
    const again = [await open(c, owner.sandboxApi), await open(c, owner.sandboxApi)];
    expect(again.map((s) => s.res.status)).toEqual([200, 200]);
    await closeAll();
  });
});
