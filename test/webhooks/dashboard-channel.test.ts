import { afterAll, beforeAll, expect, it } from "vitest";
import { call, startTestService, type TestService } from "../support/harness.js";
import { type Receiver, startReceiver, verifyLegacy, verifyStandard } from "./support.js";

// Webhook management accepts both channels (docs/merchants/authentication.md#webhook-management-from-the-dashboard): here, the dashboard session.
let svc: TestService;
let receiver: Receiver;
let bearer: Record<string, string>;

beforeAll(async () => {
  svc = await startTestService({ env: { SSRF_ALLOW_CIDRS: "127.0.0.0/8", RATE_LIMIT_ENABLED: "false" } });
  receiver = await startReceiver();
  const reg = await call(svc.urls.sandbox, "/api/v1/auth/register", {
    json: {
      email: `hooks-${Date.now()}@example.com`,
      password: "a long passphrase 123",
      companyName: "Hooks Ltd",
    },
    headers: { "x-token-delivery": "bearer" },
  });
  expect(reg.status, reg.text).toBe(201);
  bearer = { authorization: `Bearer ${reg.body.data.accessToken}` };
});
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});

it("manages and tests webhooks with a dashboard Bearer token, per environment, without x-api-secret", async () => {
  const setUrl = await call(svc.urls.sandbox, "/api/v1/webhook/url", {
    headers: bearer,
    json: { webhookUrl: receiver.url("/dash") },
  });
  expect(setUrl.status, setUrl.text).toBe(200);
  expect(setUrl.body.data).toEqual({ webhookUrl: receiver.url("/dash") });

  const masked = await call(svc.urls.sandbox, "/api/v1/webhook/secret", { headers: bearer });
  expect(masked.status).toBe(200);
  expect(masked.body.data.webhookSecret).toMatch(/^\*+[^*]{8}$/);

  const rotated = await call(svc.urls.sandbox, "/api/v1/webhook/secret/rotate", {
    method: "POST",
    headers: bearer,
  });
  expect(rotated.status).toBe(200);
  const secret: string = rotated.body.data.webhookSecret;
  expect(secret.slice(-8)).not.toBe(masked.body.data.webhookSecret.slice(-8));

  const test = await call(svc.urls.sandbox, "/api/v1/webhook/test", { method: "POST", headers: bearer });
  expect(test.status, test.text).toBe(200);
  expect(test.body.data).toMatchObject({ deliveryStatus: "delivered", responseStatus: 200 });
  const got = receiver.received.at(-1)!;
  expect(got.path).toBe("/dash");
  expect(got.headers["x-webhook-test"]).toBe("true");
  expect(verifyLegacy(secret, got.raw, got.headers["x-webhook-signature"] as string)).toBe(true);
  expect(verifyStandard(secret, got.raw, got.headers)).toBe(true);

  const events = await call(svc.urls.sandbox, "/api/v1/webhook/events?deliveryStatus=delivered", {
    headers: bearer,
  });
  expect(events.status).toBe(200);
  expect(events.body.data.map((e: { webhookEventId: string }) => e.webhookEventId)).toContain(
    test.body.data.webhookEventId,
  );

  // The dashboard's environment switch: production has its own (unset) URL and its own events.
  const prodEvents = await call(svc.urls.sandbox, "/api/v1/webhook/events", {
    headers: { ...bearer, "x-environment": "production" },
  });
  expect(prodEvents.status).toBe(200);
  expect(prodEvents.body.pagination.total).toBe(0);
});

it("refuses the webhook routes without a session or with a bad token", async () => {
  for (const headers of [{}, { authorization: "Bearer not-a-jwt" }] as Record<string, string>[]) {
    const r = await call(svc.urls.sandbox, "/api/v1/webhook/secret", { headers });
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe("INVALID_AUTH");
  }
});
