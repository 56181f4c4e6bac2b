import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import createClient, { type Client } from "openapi-fetch";
import openapiTS, { astToString } from "openapi-typescript";
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from "vitest";
import type { components, paths } from "../../packages/sdk/src/generated/api.js";
import { call, startTestService, type TestService } from "../support/harness.js";
import { type Receiver, startReceiver, waitFor } from "../webhooks/support.js";

// Issue 24, "Must show": a client generated with openapi-typescript + openapi-fetch from the
// served document runs the README's tour against the real service, with no any/unknown/never on
// documented bodies (checked by `npm run typecheck`: this file is in the root tsconfig), and
// every real answer — the 409/422/429/503 ones included — validates against the schema the
// document declares for its status (ajv, JSON Schema 2020-12, with the document's components).

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), "../..");
const TRC = "USDT-TRC20";
const TRON_TO = "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW";
const DOCS = { authorization: `Basic ${Buffer.from("docs:docs-pass-123").toString("base64")}` };

// ---- type level: no any / unknown / never anywhere in a documented JSON body ----
type IsAny<T> = 0 extends 1 & T ? true : false;
/** The paths (`.data.status`, `.error.details.fields[]`) whose type is any, unknown or never. */
type Loose<T, At extends string = ""> =
  IsAny<T> extends true
    ? At
    : [T] extends [never]
      ? At
      : unknown extends T
        ? At
        : T extends readonly (infer U)[]
          ? Loose<U, `${At}[]`>
          : T extends object
            ? {
                // An index signature (`metadata`: your own JSON) may hold anything; named fields may not.
                [K in keyof T & string]-?: string extends K
                  ? never
                  : Loose<Exclude<T[K], undefined>, `${At}.${K}`>;
              }[keyof T & string]
            : never;
type JsonBodies<Op> = Op extends { responses: infer R }
  ? { [S in keyof R]: R[S] extends { content: { "application/json": infer B } } ? B : never }[keyof R]
  : never;
type Methods = "get" | "post" | "put" | "patch" | "delete";
/** Every JSON body (success and error) of every operation of the document. */
type EveryBody = { [P in keyof paths]: { [M in Methods]: JsonBodies<paths[P][M]> }[Methods] }[keyof paths];
type JsonRequest<Op> = Op extends { requestBody?: infer B }
  ? [NonNullable<B>] extends [never] // GETs: `requestBody?: never`
    ? never
    : NonNullable<B> extends { content: { "application/json": infer J } }
      ? J
      : never
  : never;
/** Every JSON request body. */
type EveryRequest = {
  [P in keyof paths]: { [M in Methods]: JsonRequest<paths[P][M]> }[Methods];
}[keyof paths];
/** And every webhook delivery body. */
type EveryDelivery = components["schemas"][
  | "DepositWebhook"
  | "WithdrawalWebhook"
  | "PayoutWebhook"
  | "TestWebhook"];

describe("the generated types", () => {
  it("type no documented body, nor any field of one, as any, unknown or never (checked by tsc)", () => {
    expectTypeOf<Loose<EveryBody>>().toBeNever();
    expectTypeOf<Loose<EveryDelivery>>().toBeNever();
    expectTypeOf<Loose<EveryRequest>>().toBeNever();
    expectTypeOf<EveryRequest>().not.toBeNever();
    expectTypeOf<EveryBody>().not.toBeNever();
    // Names for the resources, and statuses of their own.
    expectTypeOf<components["schemas"]["CheckoutSession"]["status"]>().toEqualTypeOf<
      "pending" | "confirmed" | "failed"
    >();
    expectTypeOf<components["schemas"]["Payout"]["status"]>().toEqualTypeOf<
      "processing" | "completed" | "failed"
    >();
    expectTypeOf<components["schemas"]["ValidationError"]["error"]["details"]["fields"]>().toEqualTypeOf<
      { field: string; message: string }[]
    >();
    // A body-less reject and sandbox pay compile (their bodies are optional).
    expectTypeOf<
      paths["/api/v1/public/withdrawal-requests/{id}/reject"]["post"]["requestBody"]
    >().toMatchTypeOf<undefined | object>();
  });
});

// ---- the service, the document, the validator ----
let svc: TestService;
let receiver: Receiver;
let doc: {
  paths: Record<string, Record<string, { responses: Record<string, Response> }>>;
  [k: string]: unknown;
};
interface Response {
  headers?: Record<string, unknown>;
  content?: Record<string, { schema: unknown }>;
}
const DOC_ID = "https://stablegate.test/openapi.json";
const ajv = new Ajv2020.default({ strict: false, allErrors: true, validateSchema: false });
addFormats.default(ajv);
const validators = new Map<string, ReturnType<typeof ajv.compile>>();
const seen: string[] = [];

const pointer = (...parts: string[]) =>
  parts.map((p) => p.replace(/~/g, "~0").replace(/\//g, "~1")).join("/");

/**
 * The real answer conforms to the document: its status is declared for the operation, its body
 * validates against that status's schema, and the headers the document promises are there.
 */
function conforms<R extends { response: globalThis.Response; data?: unknown; error?: unknown }>(
  method: string,
  template: string,
  r: R,
): R {
  const status = String(r.response.status);
  const where = `${method.toUpperCase()} ${template} → ${status}`;
  const declared = doc.paths[template]?.[method]?.responses?.[status];
  expect(declared, `${where} is declared`).toBeDefined();
  const key = `${template} ${method} ${status}`;
  let validate = validators.get(key);
  if (!validate) {
    validate = ajv.compile({
      $ref: `${DOC_ID}#/${pointer("paths", template, method, "responses", status, "content", "application/json", "schema")}`,
    });
    validators.set(key, validate);
  }
  const body = r.data ?? r.error;
  expect(validate(body), `${where}: ${JSON.stringify(validate.errors)}\n${JSON.stringify(body)}`).toBe(true);
  const headers = Object.keys(declared?.headers ?? {});
  expect(headers).toContain("X-Request-Id");
  for (const name of headers) {
    const optional = name === "Idempotent-Replayed" || (name === "Retry-After" && status !== "429");
    if (!optional) expect(r.response.headers.get(name), `${where}: header ${name}`).not.toBeNull();
  }
  seen.push(`${method.toUpperCase()} ${template} ${status}`);
  return r;
}

/** The body of a documented success, defined. */
function ok<R extends { data?: unknown; error?: unknown }>(r: R): NonNullable<R["data"]> {
  expect(r.error, JSON.stringify(r.error)).toBeUndefined();
  expect(r.data).toBeDefined();
  return r.data as NonNullable<R["data"]>;
}

type Api = Client<paths>;
let sandbox: Api;
let production: Api;
let dashboard: Api;

beforeAll(async () => {
  svc = await startTestService({
    env: {
      DOCS_USER: "docs",
      DOCS_PASSWORD: "docs-pass-123",
      SSRF_ALLOW_CIDRS: "127.0.0.0/8",
      // The wallet tier is small here so the tour can exhaust it for a real 429.
      RATE_LIMIT_WALLET: "3",
    },
  });
  receiver = await startReceiver();
  const served = await call(svc.urls.production, "/docs/openapi.json", { headers: DOCS });
  expect(served.status).toBe(200);
  doc = served.body;
  ajv.addSchema({ ...doc, $id: DOC_ID });

  // A merchant as the README makes one: registered on the dashboard, one key pair per environment.
  const anonymous = createClient<paths>({ baseUrl: svc.urls.sandbox });
  const reg = conforms(
    "post",
    "/api/v1/auth/register",
    await anonymous.POST("/api/v1/auth/register", {
      body: { email: "tour@example.com", password: "a long passphrase 123", companyName: "Tour Shop" },
      headers: { "x-token-delivery": "bearer" },
    }),
  );
  const registered = ok(reg).data;
  expectTypeOf(registered.apiKeys).not.toBeAny();
  const key = (env: "sandbox" | "production") => {
    const k = registered.apiKeys.find((p) => p.environment === env);
    if (!k) throw new Error(`no ${env} key pair`);
    return { apikey: k.apiKey, "x-api-secret": k.apiSecret };
  };
  sandbox = createClient<paths>({ baseUrl: svc.urls.sandbox, headers: key("sandbox") });
  production = createClient<paths>({ baseUrl: svc.urls.production, headers: key("production") });
  dashboard = createClient<paths>({
    baseUrl: svc.urls.sandbox,
    headers: { authorization: `Bearer ${registered.accessToken}` },
  });
}, 60_000);

afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});

describe("the committed artefacts are the served document's", () => {
  it("packages/sdk/openapi.json and src/generated/api.ts equal what the running service serves", async () => {
    const committed = JSON.parse(await readFile(path.join(root, "packages/sdk/openapi.json"), "utf8"));
    // Only the servers differ: the served document names this instance's base URLs.
    expect({ ...doc, servers: [] }).toEqual({ ...committed, servers: [] });
    const types = astToString(await openapiTS(doc as never, { exportType: true }));
    const file = await readFile(path.join(root, "packages/sdk/src/generated/api.ts"), "utf8");
    expect(file.endsWith(types), "regenerate with npm run api:generate").toBe(true);
  });
});

describe("the README tour through the generated client", () => {
  let sessionId = "";
  let withdrawalId = "";

  it("account, checkout session, sandbox pay (no body), confirmed session, permanent address", async () => {
    const account = ok(
      conforms("get", "/api/v1/public/account", await sandbox.GET("/api/v1/public/account")),
    ).data;
    expectTypeOf(account.environment).toEqualTypeOf<"production" | "sandbox">();
    expect(account.environment).toBe("sandbox");

    const created = conforms(
      "post",
      "/checkout/session",
      await sandbox.POST("/checkout/session", {
        body: { amount: 100, currencyType: TRC, orderId: "order-1", metadata: { cart: "c-1" } },
      }),
    );
    const session = ok(created).data;
    expectTypeOf(session.status).toEqualTypeOf<"pending" | "confirmed" | "failed">();
    expect(created.response.status).toBe(201);
    expect(session.status).toBe("pending");
    sessionId = session.id;
    // The validator is not a rubber stamp: a session cannot be `rejected`, an amount is a number.
    const check = ajv.compile({ $ref: `${DOC_ID}#/components/schemas/CheckoutSessionResponse` });
    expect(check(created.data)).toBe(true);
    expect(check({ success: true, data: { ...session, status: "rejected" } })).toBe(false);
    expect(check({ success: true, data: { ...session, amount: "100" } })).toBe(false);

    const paid = conforms(
      "post",
      "/api/v1/sandbox/checkout/{id}/pay",
      await sandbox.POST("/api/v1/sandbox/checkout/{id}/pay", { params: { path: { id: sessionId } } }),
    );
    expect(paid.response.status).toBe(202);
    expect(ok(paid).data.walletAddress).toBe(session.walletAddress);

    await waitFor(async () => {
      const r = await sandbox.GET("/checkout/session/{id}", { params: { path: { id: sessionId } } });
      conforms("get", "/checkout/session/{id}", r);
      return r.data?.data.status === "confirmed";
    }, 15_000);

    const wallet = conforms(
      "post",
      "/wallet/generate",
      await sandbox.POST("/wallet/generate", { body: { currencyType: TRC, externalUserId: "user-1" } }),
    );
    expect(ok(wallet).data.walletAddress).toMatch(/^T/);
  });

  it("balance and transactions", async () => {
    const balances = ok(
      conforms("get", "/api/v1/public/balance", await sandbox.GET("/api/v1/public/balance")),
    ).data;
    expectTypeOf(balances).toEqualTypeOf<components["schemas"]["Balance"][]>();
    expect(balances.find((b) => b.currencyType === TRC)?.available).toBeGreaterThan(0);

    const page = ok(
      conforms(
        "get",
        "/api/v1/public/transactions",
        await sandbox.GET("/api/v1/public/transactions", {
          params: { query: { type: "deposit", limit: 10, sortBy: "amount", order: "asc" } },
        }),
      ),
    );
    expectTypeOf(page.data).toEqualTypeOf<components["schemas"]["Transaction"][]>();
    expect(page.pagination.total).toBe(1);
    const one = ok(
      conforms(
        "get",
        "/api/v1/public/transactions/{id}",
        await sandbox.GET("/api/v1/public/transactions/{id}", { params: { path: { id: sessionId } } }),
      ),
    ).data;
    expect(one.status).toBe("confirmed");
  });

  it("webhooks: url, masked secret, a test delivery, the event log with the typed payload", async () => {
    conforms(
      "post",
      "/api/v1/webhook/url",
      await sandbox.POST("/api/v1/webhook/url", { body: { webhookUrl: receiver.url() } }),
    );
    const secret = ok(
      conforms("get", "/api/v1/webhook/secret", await sandbox.GET("/api/v1/webhook/secret")),
    ).data;
    expect(secret.webhookSecret).toMatch(/^\*+[A-Za-z0-9+/=]{4,}$/); // masked
    const test = ok(
      conforms("post", "/api/v1/webhook/test", await sandbox.POST("/api/v1/webhook/test")),
    ).data;
    expect(test.deliveryStatus).toBe("delivered");
    const events = ok(
      conforms(
        "get",
        "/api/v1/webhook/events",
        await sandbox.GET("/api/v1/webhook/events", { params: { query: { limit: 50 } } }),
      ),
    ).data;
    const testEvent = events.find((e) => e.webhookEventId === test.webhookEventId);
    expect(testEvent?.payload.data.type).toBe("test");
    // The payload is the delivery body, typed by `type`.
    const payload = testEvent?.payload;
    if (payload?.data.type === "deposit")
      expectTypeOf(payload.data.status).toEqualTypeOf<"confirmed" | "failed">();
    const detail = ok(
      conforms(
        "get",
        "/api/v1/webhook/events/{webhookEventId}",
        await sandbox.GET("/api/v1/webhook/events/{webhookEventId}", {
          params: { path: { webhookEventId: test.webhookEventId } },
        }),
      ),
    ).data;
    expect(detail.deliveryAttempts.length).toBeGreaterThan(0);
    // The delivery a receiver got matches the document's webhook body for its type.
    const delivered = receiver.received.at(-1);
    const validate = ajv.compile({ $ref: `${DOC_ID}#/components/schemas/TestWebhook` });
    expect(validate(JSON.parse(String(delivered?.raw))), JSON.stringify(validate.errors)).toBe(true);
  });

  it("withdrawals: create (pending), list, get, approve; approve again is a typed 409; reject with no body", async () => {
    conforms(
      "patch",
      "/api/v1/dashboard/settings",
      await dashboard.PATCH("/api/v1/dashboard/settings", { body: { autoWithdraw: false } }),
    );
    const create = () =>
      sandbox.POST("/api/v1/public/withdrawal-requests", {
        body: { amount: 10, currencyType: TRC, walletAddress: TRON_TO, reference: "r-1" },
      });
    const first = ok(conforms("post", "/api/v1/public/withdrawal-requests", await create())).data;
    expectTypeOf(first.status).toEqualTypeOf<
      "pending" | "processing" | "completed" | "failed" | "rejected"
    >();
    expect(first.status).toBe("pending");
    withdrawalId = first.id;
    const listed = ok(
      conforms(
        "get",
        "/api/v1/public/withdrawal-requests",
        await sandbox.GET("/api/v1/public/withdrawal-requests", { params: { query: { status: "pending" } } }),
      ),
    );
    expect(listed.data.map((w) => w.id)).toContain(withdrawalId);
    conforms(
      "get",
      "/api/v1/public/withdrawal-requests/{id}",
      await sandbox.GET("/api/v1/public/withdrawal-requests/{id}", {
        params: { path: { id: withdrawalId } },
      }),
    );
    const approve = () =>
      sandbox.POST("/api/v1/public/withdrawal-requests/{id}/approve", {
        params: { path: { id: withdrawalId } },
      });
    expect(
      ok(conforms("post", "/api/v1/public/withdrawal-requests/{id}/approve", await approve())).data.id,
    ).toBe(withdrawalId);
    const again = conforms("post", "/api/v1/public/withdrawal-requests/{id}/approve", await approve());
    expect(again.response.status).toBe(409);
    // Every error body has `error.code`, typed as the codes the document declares for the route.
    expectTypeOf(again.error?.error.code).toEqualTypeOf<
      | "VALIDATION_ERROR"
      | "INVALID_AUTH"
      | "FORBIDDEN"
      | "NOT_FOUND"
      | "INVALID_STATE"
      | "RATE_LIMITED"
      | "INTERNAL_ERROR"
      | "SERVICE_UNAVAILABLE"
      | undefined
    >();
    expect(again.error?.error.code).toBe("INVALID_STATE");

    const second = ok(conforms("post", "/api/v1/public/withdrawal-requests", await create())).data;
    const rejected = conforms(
      "post",
      "/api/v1/public/withdrawal-requests/{id}/reject",
      await sandbox.POST("/api/v1/public/withdrawal-requests/{id}/reject", {
        params: { path: { id: second.id } },
      }),
    );
    expect(ok(rejected).data.status).toBe("rejected");

    const payouts = ok(
      conforms("get", "/api/v1/public/payout/get", await sandbox.GET("/api/v1/public/payout/get")),
    );
    // One payout or a page of them: the union says which by `pagination`.
    expect("pagination" in payouts && Array.isArray(payouts.data)).toBe(true);
  });

  it("422: insufficient balance, and an Idempotency-Key reused with another body; a replay says so", async () => {
    const poor = conforms(
      "post",
      "/api/v1/public/withdrawal-requests",
      await sandbox.POST("/api/v1/public/withdrawal-requests", {
        body: { amount: 1_000_000, currencyType: TRC, walletAddress: TRON_TO },
      }),
    );
    expect(poor.response.status).toBe(422);
    const e = poor.error?.error;
    if (e?.code !== "INSUFFICIENT_BALANCE") throw new Error(JSON.stringify(poor.error));
    expectTypeOf(e.details).toEqualTypeOf<{ available: number; required: number }>();
    expect(e.details.required).toBe(1_000_000);

    const keyed = (amount: number) =>
      sandbox.POST("/checkout/session", {
        body: { amount, currencyType: TRC },
        headers: { "idempotency-key": "tour-key-1" },
      });
    const firstTime = conforms("post", "/checkout/session", await keyed(5));
    const replay = conforms("post", "/checkout/session", await keyed(5));
    expect(replay.response.headers.get("idempotent-replayed")).toBe("true");
    expect(ok(replay).data.id).toBe(ok(firstTime).data.id);
    const mismatch = conforms("post", "/checkout/session", await keyed(6));
    expect(mismatch.response.status).toBe(422);
    expect(mismatch.error?.error.code).toBe("IDEMPOTENCY_MISMATCH");
  });

  it("400 with typed fields, 401, 404", async () => {
    const bad = conforms(
      "post",
      "/checkout/session",
      await sandbox.POST("/checkout/session", { body: { amount: -1, currencyType: TRC } }),
    );
    const e = bad.error?.error;
    if (e?.code !== "VALIDATION_ERROR") throw new Error(JSON.stringify(bad.error));
    expectTypeOf(e.details.fields).toEqualTypeOf<{ field: string; message: string }[]>();
    expect(e.details.fields.map((f) => f.field)).toContain("amount");

    const stranger = createClient<paths>({ baseUrl: svc.urls.sandbox, headers: { apikey: "sk_nope" } });
    const unauthorized = conforms(
      "get",
      "/api/v1/public/balance",
      await stranger.GET("/api/v1/public/balance"),
    );
    expect(unauthorized.response.status).toBe(401);
    const missing = conforms(
      "get",
      "/checkout/session/{id}",
      await sandbox.GET("/checkout/session/{id}", { params: { path: { id: "tx_nope" } } }),
    );
    expect(missing.error?.error.code).toBe("NOT_FOUND");
  });

  it("503 CHAIN_UNAVAILABLE (no production chain configured here)", async () => {
    const r = conforms(
      "post",
      "/checkout/session",
      await production.POST("/checkout/session", { body: { amount: 5, currencyType: TRC } }),
    );
    expect(r.response.status).toBe(503);
    expect(r.error?.error.code).toBe("CHAIN_UNAVAILABLE");
  });

  it("429 once the tier is spent: the contract's message and the shared error.code", async () => {
    let r = await sandbox.POST("/wallet/generate", { body: { currencyType: TRC } });
    for (let i = 0; i < 5 && r.response.status !== 429; i++) {
      conforms("post", "/wallet/generate", r);
      r = await sandbox.POST("/wallet/generate", { body: { currencyType: TRC } });
    }
    conforms("post", "/wallet/generate", r);
    expect(r.response.status).toBe(429);
    const e = r.error;
    if (e?.error.code !== "RATE_LIMITED") throw new Error(JSON.stringify(e));
    expect("message" in e && e.message).toBe(e.error.message);
    expect(Number(r.response.headers.get("retry-after"))).toBeGreaterThan(0);
  });

  it("covered every status the Must show names", () => {
    const statuses = new Set(seen.map((s) => s.split(" ").at(-1)));
    for (const s of ["200", "201", "202", "400", "401", "404", "409", "422", "429", "503"]) {
      expect(statuses, s).toContain(s);
    }
  });
});
