import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AppError } from "../../src/domain/errors.js";
import type { App, RouteDeps } from "../../src/http/app-types.js";
import { idempotentCall, sendAnswer } from "../../src/http/idempotency.js";
import { principal } from "../../src/http/plugins/auth.js";
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  type IdempotencyScope,
  renewIdempotencyClaim,
  runIdempotent,
} from "../../src/idempotency/index.js";
import { ManualClock } from "../../src/lib/clock.js";
import type { CreatedMerchant } from "../../src/merchants/index.js";
import { call, keysOf, startTestService, type TestService } from "../support/harness.js";
import { sleep, waitFor } from "../webhooks/support.js";

// Reported with security issue #18: an Idempotency-Key claim older than 2 minutes was re-claimable
// while the first request could still be running, so a slow creating POST could run twice.
// Afterwards the claim's lease is renewed by a heartbeat while its request runs, so the same key
// stays 409 IDEMPOTENCY_CONFLICT until the first request's answer is stored (then it replays); a
// claim whose process died is re-claimable once its lease has run out. The lease is short here
// (IDEMPOTENCY_LEASE_SECONDS) so that "longer than the lease" takes a second of real time.

const LEASE_MS = 600;

/** A creating POST held in its "only a request that runs may do this" step until the test lets it go. */
let gate: Promise<void> = Promise.resolve();
let openGate: () => void = () => {};
let runs = 0;

function holdNext() {
  gate = new Promise((resolve) => {
    openGate = resolve;
  });
}

function slowCreateRoute(app: App, deps: RouteDeps) {
  const ctx = { db: deps.database.db, clock: deps.clock, leaseMs: deps.config.idempotency.leaseMs };
  const config = { auth: "apiKey", tier: false, permission: "payments:create" } as const;
  app.post("/test/slow-create", { config }, async (request, reply) => {
    const who = principal(request);
    let mine = 0;
    const call = idempotentCall(request, reply, who, 201, (run: number) => ({
      success: true,
      data: { run },
    }));
    const answer = await runIdempotent(
      ctx,
      call.idempotency(),
      async (trx) => {
        // The operation's write, in the transaction that stores the answer.
        await trx
          .updateTable("merchants")
          .set({ company_name: `run ${mine}` })
          .where("id", "=", who.merchantId)
          .execute();
        return call.answer(mine);
      },
      {
        beforeRun: async () => {
          mine = ++runs;
          // Only the first run of a case waits: a second run (the bug) answers at once.
          if (mine === 1) await gate;
          if ((request.body as { fail?: boolean }).fail) {
            throw AppError.validation([{ field: "fail", message: "asked to fail" }]);
          }
        },
      },
    );
    return sendAnswer(reply, answer);
  });
}

let svc: TestService;
let merchant: CreatedMerchant;
let api: Record<string, string>;

beforeAll(async () => {
  svc = await startTestService({
    env: { RATE_LIMIT_ENABLED: "false", IDEMPOTENCY_LEASE_SECONDS: String(LEASE_MS / 1000) },
    extraRoutes: slowCreateRoute,
  });
  merchant = await svc.createMerchant();
  const k = keysOf(merchant, "sandbox");
  api = { apikey: k.apiKey, "x-api-secret": k.apiSecret };
});
afterAll(async () => {
  openGate();
  await svc?.close();
});

const slow = (key: string, json: unknown = { n: 1 }) =>
  call(svc.urls.sandbox, "/test/slow-create", { headers: { ...api, "idempotency-key": key }, json });

describe("a slow first request keeps its Idempotency-Key", () => {
  it("held for several leases: 409 IDEMPOTENCY_CONFLICT all along, run once, then replayed", async () => {
    const key = `held-${Date.now()}`;
    runs = 0;
    holdNext();
    const first = slow(key);
    await waitFor(() => runs === 1);
    for (let i = 0; i < 4; i++) {
      await sleep(LEASE_MS / 1.5); // 4 × 400 ms: well past the 600 ms lease by the end
      const again = await slow(key);
      expect(again.status, again.text).toBe(409);
      expect(again.body.error.code).toBe("IDEMPOTENCY_CONFLICT");
    }
    expect(runs).toBe(1);
    openGate();
    const done = await first;
    expect(done.status, done.text).toBe(201);
    expect(done.body.data).toEqual({ run: 1 });
    const replay = await slow(key);
    expect(replay.status).toBe(201);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.text).toBe(done.text);
    expect(runs).toBe(1);
  });

  it("a different body under a held key is 422 IDEMPOTENCY_MISMATCH, not a second run", async () => {
    const key = `other-${Date.now()}`;
    runs = 0;
    holdNext();
    const first = slow(key, { n: 2 });
    await waitFor(() => runs === 1);
    await sleep(LEASE_MS * 1.5);
    const other = await slow(key, { n: 3 });
    expect(other.status, other.text).toBe(422);
    expect(other.body.error.code).toBe("IDEMPOTENCY_MISMATCH");
    openGate();
    expect((await first).status).toBe(201);
    expect(runs).toBe(1);
  });

  it("a request that fails after a heartbeat frees its key: the retry runs (no 409 left behind)", async () => {
    const key = `freed-${Date.now()}`;
    runs = 0;
    holdNext();
    const first = slow(key, { fail: true });
    await waitFor(() => runs === 1);
    await sleep(LEASE_MS * 1.5); // heartbeats have renewed the claim meanwhile
    openGate();
    expect((await first).status).toBe(400);
    const retry = await slow(key, { fail: true });
    expect(retry.status, retry.text).toBe(400);
    expect(runs).toBe(2);
    const row = await svc.database.db
      .selectFrom("idempotency_keys")
      .select("state")
      .where("merchant_id", "=", merchant.id)
      .where("key", "=", key)
      .executeTakeFirst();
    expect(row).toBeUndefined();
  });
});

describe("a claim whose process died", () => {
  /** The request hash the service stores for a body: read from a finished key's row. */
  async function hashOf(json: unknown): Promise<string> {
    const key = `probe-${Date.now()}-${Math.random()}`;
    const r = await call(svc.urls.sandbox, "/checkout/session", {
      headers: { ...api, "idempotency-key": key },
      json,
    });
    expect(r.status, r.text).toBe(201);
    const row = await svc.database.db
      .selectFrom("idempotency_keys")
      .select("request_hash")
      .where("merchant_id", "=", merchant.id)
      .where("key", "=", key)
      .executeTakeFirstOrThrow();
    return row.request_hash;
  }

  it("is 409 while its lease runs, then re-claimable: the request runs and is stored", async () => {
    const body = { amount: 4.5, currencyType: "USDT-TRC20", orderId: `dead-${Date.now()}` };
    const requestHash = await hashOf(body);
    const key = `dead-${Date.now()}`;
    const now = new Date();
    // What a process that crashed right after claiming leaves behind: a running claim, no heartbeat.
    await svc.database.db
      .insertInto("idempotency_keys")
      .values({
        merchant_id: merchant.id,
        environment: "sandbox",
        key,
        request_hash: requestHash,
        state: "running",
        created_at: now,
        locked_at: now,
      })
      .execute();
    const send = () =>
      call(svc.urls.sandbox, "/checkout/session", {
        headers: { ...api, "idempotency-key": key },
        json: body,
      });
    const early = await send();
    expect(early.status, early.text).toBe(409);
    expect(early.body.error.code).toBe("IDEMPOTENCY_CONFLICT");

    await sleep(LEASE_MS + 300);
    const late = await send();
    expect(late.status, late.text).toBe(201);
    expect(late.headers.get("idempotent-replayed")).toBeNull();
    const replay = await send();
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.text).toBe(late.text);
  });
});

describe("the claim is fenced: a request that lost its lease cannot store, renew or free it", () => {
  it("a first request stalled past its lease and taken over gets 409, and its write rolls back", async () => {
    // A clock the test moves: 61 s pass for the service in an instant, so the first request's
    // heartbeat (every 20 s of a 60 s lease) misses them, as a stalled process would.
    const clock = new ManualClock(Date.now());
    const stalled = await startTestService({
      env: { RATE_LIMIT_ENABLED: "false", IDEMPOTENCY_LEASE_SECONDS: "60" },
      extraRoutes: slowCreateRoute,
      clock,
    });
    try {
      const m = await stalled.createMerchant();
      const k = keysOf(m, "sandbox");
      const headers = { apikey: k.apiKey, "x-api-secret": k.apiSecret, "idempotency-key": "stalled" };
      const send = () => call(stalled.urls.sandbox, "/test/slow-create", { headers, json: { n: 9 } });
      runs = 0;
      holdNext();
      const first = send();
      await waitFor(() => runs === 1);
      clock.advance(61_000);
      const second = await send();
      expect(second.status, second.text).toBe(201);
      expect(second.body.data).toEqual({ run: 2 });
      openGate();
      const late = await first;
      expect(late.status, late.text).toBe(409);
      expect(late.body.error.code).toBe("IDEMPOTENCY_CONFLICT");
      const row = await stalled.database.db
        .selectFrom("merchants")
        .select("company_name")
        .where("id", "=", m.id)
        .executeTakeFirstOrThrow();
      expect(row.company_name).toBe("run 2");
      const replay = await send();
      expect(replay.headers.get("idempotent-replayed")).toBe("true");
      expect(replay.text).toBe(second.text);
    } finally {
      openGate();
      await stalled.close();
    }
  });

  it("after another request re-claimed the key, the first one's renewal and completion do nothing", async () => {
    const db = svc.database.db;
    const scope: IdempotencyScope = {
      merchantId: merchant.id,
      environment: "sandbox",
      key: `fence-${Date.now()}`,
    };
    const t0 = Date.now();
    const at = (t: number) => ({
      now: new Date(t),
      retainedSince: new Date(t - 24 * 3600_000),
      abandonedBefore: new Date(t - LEASE_MS),
    });
    const a = await claimIdempotencyKey(db, scope, "h", at(t0));
    expect(a.kind).toBe("claimed");
    // A stalled past its lease; B takes the key over.
    const b = await claimIdempotencyKey(db, scope, "h", at(t0 + LEASE_MS + 1));
    expect(b.kind).toBe("claimed");
    if (a.kind !== "claimed" || b.kind !== "claimed") return;
    expect(await renewIdempotencyClaim(db, scope, a.claimedAt, new Date(t0 + LEASE_MS + 2))).toBe(false);
    expect(await completeIdempotencyKey(db, scope, a.claimedAt, { status: 201, body: "A" })).toBe(false);
    expect(await renewIdempotencyClaim(db, scope, b.claimedAt, new Date(t0 + LEASE_MS + 3))).toBe(true);
    expect(await completeIdempotencyKey(db, scope, b.claimedAt, { status: 201, body: "B" })).toBe(true);
    const replay = await claimIdempotencyKey(db, scope, "h", at(t0 + LEASE_MS + 4));
    expect(replay).toEqual({ kind: "replay", status: 201, body: "B" });
  });
});
