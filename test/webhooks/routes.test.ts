import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SecretBox } from "../../src/lib/secret-box.js";
import { type CreatedMerchant, createMerchantWithKeys } from "../../src/merchants/index.js";
import { enqueueWebhookEvent } from "../../src/webhooks/outbox.js";
import { readWebhookSecret } from "../../src/webhooks/secrets.js";
import { call, keysOf, startTestService, type TestService } from "../support/harness.js";
import { type Receiver, sampleTransaction, startReceiver, verifyLegacy, verifyStandard } from "./support.js";

let svc: TestService;
let receiver: Receiver;
let m: CreatedMerchant;
let box: SecretBox;

beforeAll(async () => {
  svc = await startTestService({ env: { SSRF_ALLOW_CIDRS: "127.0.0.0/8", RATE_LIMIT_ENABLED: "false" } });
  box = new SecretBox(svc.proc.runtime.secrets.SECRET_ENCRYPTION_KEY);
  receiver = await startReceiver();
  m = await svc.createMerchant();
});
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});

type Env = "production" | "sandbox";
function auth(merchant: CreatedMerchant, env: Env, withSecret = true): Record<string, string> {
  const k = keysOf(merchant, env);
  return withSecret ? { apikey: k.apiKey, "x-api-secret": k.apiSecret } : { apikey: k.apiKey };
}

async function addEvents(merchant: CreatedMerchant, env: Env, n: number) {
  for (let i = 0; i < n; i++) {
    await svc.database.db.transaction().execute((trx) =>
      enqueueWebhookEvent(trx, {
        merchantId: merchant.id,
        environment: env,
        transactionId: `tx_list${i}_${Date.now()}`,
        type: "payout",
        transactionStatus: "completed",
        data: sampleTransaction(merchant.id, `tx_list${i}`, "completed"),
      }),
    );
  }
}

describe("POST /api/v1/webhook/url", () => {
  it("sets the URL per environment (http in sandbox only)", async () => {
    const r = await call(svc.urls.sandbox, "/api/v1/webhook/url", {
      headers: auth(m, "sandbox"),
      json: { webhookUrl: receiver.url("/sb") },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toEqual({ success: true, data: { webhookUrl: receiver.url("/sb") } });
    const prod = await call(svc.urls.production, "/api/v1/webhook/url", {
      headers: auth(m, "production"),
      json: { webhookUrl: receiver.url("/prod") },
    });
    expect(prod.status).toBe(400);
    expect(prod.body.error.code).toBe("VALIDATION_ERROR");
    expect(prod.body.error.details.fields[0]).toMatchObject({ field: "webhookUrl" });
    expect(prod.body.error.details.fields[0].message).toMatch(/https/);
    const ok = await call(svc.urls.production, "/api/v1/webhook/url", {
      headers: auth(m, "production"),
      json: { webhookUrl: "https://8.8.8.8/hooks" },
    });
    expect(ok.status).toBe(200);
  });

  it.each([
    [{ webhookUrl: "https://10.0.0.1/" }, "webhookUrl"],
    [{ webhookUrl: "https://169.254.169.254/" }, "webhookUrl"],
    [{ webhookUrl: "https://[::ffff:a9fe:a9fe]/" }, "webhookUrl"],
    [{ webhookUrl: "not a url" }, "webhookUrl"],
    [{ webhookUrl: 42 }, "webhookUrl"],
    [{}, "webhookUrl"],
    [{ webhookUrl: "https://8.8.8.8/", extra: 1 }, "extra"],
  ])("refuses %j with 400", async (json, field) => {
    const r = await call(svc.urls.sandbox, "/api/v1/webhook/url", { headers: auth(m, "sandbox"), json });
    expect(r.status, r.text).toBe(400);
    expect(r.body.error.code).toBe("VALIDATION_ERROR");
    expect(JSON.stringify(r.body.error.details.fields)).toContain(field);
  });

  it("requires x-api-secret on the API-key channel, the right environment, and credentials at all", async () => {
    const json = { webhookUrl: "https://8.8.8.8/" };
    const noSecret = await call(svc.urls.sandbox, "/api/v1/webhook/url", {
      headers: auth(m, "sandbox", false),
      json,
    });
    expect(noSecret.status).toBe(401);
    const k = keysOf(m, "sandbox");
    const wrong = await call(svc.urls.sandbox, "/api/v1/webhook/url", {
      headers: { apikey: k.apiKey, "x-api-secret": keysOf(m, "production").apiSecret },
      json,
    });
    expect(wrong.status).toBe(401);
    const otherEnv = await call(svc.urls.production, "/api/v1/webhook/url", {
      headers: auth(m, "sandbox"),
      json,
    });
    expect(otherEnv.status).toBe(403);
    expect(otherEnv.body.error.code).toBe("FORBIDDEN");
    const none = await call(svc.urls.sandbox, "/api/v1/webhook/url", { json });
    expect(none.status).toBe(401);
    expect(none.body.error.code).toBe("INVALID_AUTH");
  });
});

describe("webhook secret", () => {
  it("is masked on read (all * but the last 8), rotated in full once, and sealed at rest", async () => {
    const read = await call(svc.urls.sandbox, "/api/v1/webhook/secret", { headers: auth(m, "sandbox") });
    expect(read.status).toBe(200);
    const masked = read.body.data.webhookSecret as string;
    const actual = await readWebhookSecret(svc.database.db, box, m.id, "sandbox");
    expect(masked).toHaveLength(actual.length);
    expect(masked).toBe("*".repeat(actual.length - 8) + actual.slice(-8));

    const rot = await call(svc.urls.sandbox, "/api/v1/webhook/secret/rotate", {
      method: "POST",
      headers: auth(m, "sandbox"),
    });
    expect(rot.status).toBe(200);
    expect(rot.headers.get("cache-control")).toBe("no-store");
    const fresh = rot.body.data.webhookSecret as string;
    expect(fresh).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(fresh).not.toBe(actual);
    const again = await call(svc.urls.sandbox, "/api/v1/webhook/secret", { headers: auth(m, "sandbox") });
    expect(again.body.data.webhookSecret).toBe("*".repeat(fresh.length - 8) + fresh.slice(-8));

    // Production has its own secret.
    const prod = await readWebhookSecret(svc.database.db, box, m.id, "production");
    expect(prod).not.toBe(fresh);
    // Nothing in the table is the secret in clear.
    const rows = await svc.database.db
      .selectFrom("webhook_endpoints")
      .selectAll()
      .where("merchant_id", "=", m.id)
      .execute();
    expect(JSON.stringify(rows)).not.toContain(fresh.slice(6, 30));
    expect(JSON.stringify(rows)).not.toContain(prod.slice(6, 30));
  });

  it("needs the secret header and the right environment", async () => {
    for (const path of ["/api/v1/webhook/secret", "/api/v1/webhook/secret/rotate"]) {
      const method = path.endsWith("rotate") ? "POST" : "GET";
      expect(
        (await call(svc.urls.sandbox, path, { method, headers: auth(m, "sandbox", false) })).status,
      ).toBe(401);
      expect((await call(svc.urls.production, path, { method, headers: auth(m, "sandbox") })).status).toBe(
        403,
      );
      expect((await call(svc.urls.sandbox, path, { method })).status).toBe(401);
    }
  });

  it("is created with the merchant, sealed, one per environment, when the key is at hand", async () => {
    const created = await createMerchantWithKeys(
      svc.database.db,
      { email: `sealed-${Date.now()}@example.com`, companyName: "Sealed" },
      undefined,
      box,
    );
    const rows = await svc.database.db
      .selectFrom("webhook_endpoints")
      .selectAll()
      .where("merchant_id", "=", created.id)
      .execute();
    expect(rows.map((r) => r.environment).sort()).toEqual(["production", "sandbox"]);
    for (const r of rows) {
      expect(r.secret_sealed).toMatch(/^v1\./);
      // Bound to its row: the sandbox ciphertext does not open as production's.
      const other = rows.find((x) => x.environment !== r.environment)!;
      expect(() => box.open(r.secret_sealed!, `webhook:${created.id}:${other.environment}`)).toThrow();
      expect(box.open(r.secret_sealed!, `webhook:${created.id}:${r.environment}`)).toMatch(/^whsec_/);
    }
  });
});

describe("POST /api/v1/webhook/test", () => {
  it("delivers a signed test webhook with X-Webhook-Test: true and reports the result", async () => {
    const r = await call(svc.urls.sandbox, "/api/v1/webhook/test", {
      method: "POST",
      headers: auth(m, "sandbox", false),
    });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ deliveryStatus: "delivered", responseStatus: 200 });
    const got = receiver.received.find((x) => x.headers["webhook-id"] === r.body.data.webhookEventId)!;
    expect(got.headers["x-webhook-test"]).toBe("true");
    const secret = await readWebhookSecret(svc.database.db, box, m.id, "sandbox");
    expect(verifyLegacy(secret, got.raw, got.headers["x-webhook-signature"] as string)).toBe(true);
    expect(verifyStandard(secret, got.raw, got.headers)).toBe(true);
    expect(JSON.parse(got.raw.toString()).data.type).toBe("test");
  });

  it("reports a failing receiver without retrying it, and answers 409 without a URL", async () => {
    receiver.set({ kind: "status", status: 503 });
    const r = await call(svc.urls.sandbox, "/api/v1/webhook/test", {
      method: "POST",
      headers: auth(m, "sandbox"),
    });
    receiver.set({ kind: "status", status: 200 });
    expect(r.body.data).toMatchObject({ deliveryStatus: "failed", responseStatus: 503 });
    const other = await svc.createMerchant();
    const none = await call(svc.urls.sandbox, "/api/v1/webhook/test", {
      method: "POST",
      headers: auth(other, "sandbox"),
    });
    expect(none.status).toBe(409);
    expect(none.body.error.code).toBe("INVALID_STATE");
    expect((await call(svc.urls.sandbox, "/api/v1/webhook/test", { method: "POST" })).status).toBe(401);
  });
});

describe("GET /api/v1/webhook/events and retry", () => {
  it("lists this merchant's events of this environment with the list conventions and both filter names", async () => {
    const lister = await svc.createMerchant();
    await addEvents(lister, "sandbox", 3); // no URL: failed
    await call(svc.urls.sandbox, "/api/v1/webhook/url", {
      headers: auth(lister, "sandbox"),
      json: { webhookUrl: receiver.url("/l") },
    });
    await addEvents(lister, "sandbox", 2); // pending → delivered by the worker
    await addEvents(lister, "production", 1);
    await addEvents(m, "sandbox", 1);

    const all = await call(svc.urls.sandbox, "/api/v1/webhook/events?limit=2&page=1", {
      headers: auth(lister, "sandbox"),
    });
    expect(all.status).toBe(200);
    expect(all.body.pagination).toEqual({ page: 1, limit: 2, total: 5, totalPages: 3 });
    expect(all.body.data).toHaveLength(2);
    const e = all.body.data[0];
    for (const k of [
      "webhookEventId",
      "transactionId",
      "type",
      "transactionStatus",
      "deliveryStatus",
      "url",
      "attempts",
      "nextAttemptAt",
      "lastAttemptAt",
      "lastResponseStatus",
      "lastError",
      "isTest",
      "createdAt",
      "deliveredAt",
      "payload",
    ])
      expect(e).toHaveProperty(k);
    expect(e.payload.data.id).toBe(e.transactionId);

    const failedA = await call(svc.urls.sandbox, "/api/v1/webhook/events?status=failed", {
      headers: auth(lister, "sandbox"),
    });
    const failedB = await call(svc.urls.sandbox, "/api/v1/webhook/events?deliveryStatus=failed", {
      headers: auth(lister, "sandbox"),
    });
    expect(failedA.body.pagination.total).toBe(3);
    expect(failedB.body.data).toEqual(failedA.body.data);
    expect(failedA.body.data.every((x: any) => x.deliveryStatus === "failed" && x.lastError)).toBe(true);

    const capped = await call(svc.urls.sandbox, "/api/v1/webhook/events?limit=500", {
      headers: auth(lister, "sandbox"),
    });
    expect(capped.body.pagination.limit).toBe(100);
    const asc = await call(svc.urls.sandbox, "/api/v1/webhook/events?order=asc&sortBy=nonsense", {
      headers: auth(lister, "sandbox"),
    });
    expect(asc.status).toBe(200);
    expect(asc.body.data[0].createdAt <= asc.body.data[4].createdAt).toBe(true);

    for (const q of [
      "status=bogus",
      "deliveryStatus=sent",
      "status=failed&deliveryStatus=pending",
      "page=0",
      "limit=0",
      "order=up",
    ]) {
      const bad = await call(svc.urls.sandbox, `/api/v1/webhook/events?${q}`, {
        headers: auth(lister, "sandbox"),
      });
      expect(bad.status, q).toBe(400);
      expect(bad.body.error.code).toBe("VALIDATION_ERROR");
    }
    const prod = await call(svc.urls.production, "/api/v1/webhook/events", {
      headers: auth(lister, "production"),
    });
    expect(prod.body.pagination.total).toBe(1);
    expect((await call(svc.urls.sandbox, "/api/v1/webhook/events")).status).toBe(401);
  });

  it("retry: 404 for another merchant's or environment's event, 409 while an attempt holds it", async () => {
    const owner = await svc.createMerchant();
    await addEvents(owner, "sandbox", 1);
    const list = await call(svc.urls.sandbox, "/api/v1/webhook/events", { headers: auth(owner, "sandbox") });
    const id = list.body.data[0].webhookEventId as string;
    const path = `/api/v1/webhook/retry/${id}`;
    expect((await call(svc.urls.sandbox, path, { method: "POST", headers: auth(m, "sandbox") })).status).toBe(
      404,
    );
    expect(
      (await call(svc.urls.production, path, { method: "POST", headers: auth(owner, "production") })).status,
    ).toBe(404);
    expect(
      (
        await call(svc.urls.sandbox, "/api/v1/webhook/retry/whe_nope", {
          method: "POST",
          headers: auth(owner, "sandbox"),
        })
      ).status,
    ).toBe(404);
    expect(
      (await call(svc.urls.sandbox, `/api/v1/webhook/events/${id}`, { headers: auth(m, "sandbox") })).status,
    ).toBe(404);
    await svc.database.db
      .updateTable("webhook_events")
      .set({ locked_by: "someone", locked_until: new Date(Date.now() + 60_000) })
      .where("id", "=", id)
      .execute();
    const busy = await call(svc.urls.sandbox, path, { method: "POST", headers: auth(owner, "sandbox") });
    expect(busy.status).toBe(409);
    expect(busy.body.error.code).toBe("INVALID_STATE");
    expect((await call(svc.urls.sandbox, path, { method: "POST" })).status).toBe(401);
  });

  it("a manual retry of a delivered event makes one more attempt", async () => {
    const r = await call(svc.urls.sandbox, "/api/v1/webhook/test", {
      method: "POST",
      headers: auth(m, "sandbox"),
    });
    const id = r.body.data.webhookEventId;
    const again = await call(svc.urls.sandbox, `/api/v1/webhook/retry/${id}`, {
      method: "POST",
      headers: auth(m, "sandbox"),
    });
    expect(again.status).toBe(200);
    expect(again.body.data).toMatchObject({ deliveryStatus: "delivered", attempts: 2, isTest: true });
    expect(receiver.received.filter((x) => x.headers["webhook-id"] === id)).toHaveLength(2);
  });
});
