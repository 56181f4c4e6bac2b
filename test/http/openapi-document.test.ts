import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, it } from "vitest";
import { ERROR_CODES, type ErrorCode } from "../../src/domain/errors.js";
import { codeToStatus } from "../../src/http/errors.js";
import { SchemaHoister } from "../../src/http/openapi/hoist.js";
import { derivedOperationId, LISTED_OPERATIONS } from "../../src/http/openapi/operations.js";

// The published document (packages/sdk/openapi.json; test/sdk/openapi-client.test.ts holds it
// equal to the served one) as a generator reads it: valid OAS 3.1, every operation named, secured,
// tagged and described, every error status with the exact shapes of its codes, the headers, the
// webhooks. The lint of CI (scripts/lint-api.sh) checks the same file with redocly and spectral.

type Json = Record<string, any>;
const root = path.join(path.dirname(fileURLToPath(import.meta.url)), "../..");
const doc = JSON.parse(readFileSync(path.join(root, "packages/sdk/openapi.json"), "utf8")) as Json;
const METHODS = ["get", "put", "post", "delete", "patch"];
const operations = Object.entries(doc.paths as Record<string, Json>).flatMap(([p, item]) =>
  METHODS.filter((m) => item[m]).map((m) => ({ where: `${m.toUpperCase()} ${p}`, op: item[m] as Json })),
);
const op = (where: string) => {
  const found = operations.find((o) => o.where === where);
  if (!found) throw new Error(`${where} is not in the document`);
  return found.op;
};
const refName = (schema: Json | undefined) => String(schema?.$ref ?? "").replace("#/components/schemas/", "");
/** The error shapes a response declares (one `$ref`, or `anyOf` of them). */
const shapes = (response: Json | undefined): string[] => {
  const schema = response?.content?.["application/json"]?.schema as Json | undefined;
  if (!schema) return [];
  return schema.anyOf ? (schema.anyOf as Json[]).map(refName) : [refName(schema)];
};
const codeOf = (shape: string): ErrorCode => {
  const error = doc.components.schemas[shape]?.properties?.error?.properties?.code;
  return error?.enum?.[0] as ErrorCode;
};

describe("the published OpenAPI document", () => {
  it("is valid OpenAPI 3.1", async () => {
    const validator = new Validator();
    const result = await validator.validate(doc);
    expect(result.errors ?? [], JSON.stringify(result.errors)).toEqual([]);
    expect(validator.version).toBe("3.1");
  });

  it("names, secures, tags and describes every operation, for merchants", () => {
    expect(operations.length).toBeGreaterThan(50);
    const tags = new Map((doc.tags as Json[]).map((t) => [t.name, t.description]));
    const ids = new Set<string>();
    for (const { where, op: o } of operations) {
      expect(o.operationId, where).toMatch(/^[a-z][A-Za-z0-9]+$/);
      expect(ids.has(o.operationId), `${where}: operationId ${o.operationId} is unique`).toBe(false);
      ids.add(o.operationId);
      expect(Array.isArray(o.security), `${where} declares its security`).toBe(true);
      for (const requirement of o.security as Json[]) {
        for (const scheme of Object.keys(requirement))
          expect(doc.components.securitySchemes[scheme]).toBeDefined();
      }
      expect(o.tags?.length, `${where} is tagged`).toBeGreaterThan(0);
      for (const tag of o.tags) expect(tags.get(tag), `${where}: tag ${tag} is defined`).toBeTruthy();
      expect(o.summary, where).toBeTruthy();
      expect(o.description, where).toBeTruthy();
      for (const [status, response] of Object.entries(o.responses as Record<string, Json>)) {
        expect(response.description, `${where} ${status}`).not.toBe("Default Response");
        expect(response.headers?.["X-Request-Id"], `${where} ${status} X-Request-Id`).toBeDefined();
      }
    }
    // The table of names has no stale entry (the webhook stream is registered by its own module).
    const missing = LISTED_OPERATIONS.filter((w) => !operations.some((o) => o.where === w));
    expect(missing.filter((w) => w !== "GET /api/v1/webhook/stream")).toEqual([]);
    // No internal section numbers, no build-time leftovers.
    const text = JSON.stringify(doc);
    expect(text).not.toMatch(/§/);
    expect(text).not.toContain("x-stablegate-route");
  });

  it("derives security from the route's config: API key, API key + secret, dashboard session, none", () => {
    const dashboard = [{ dashboardBearer: [] }, { dashboardCookie: [] }];
    expect(op("GET /api/v1/public/balance").security).toEqual([{ apiKey: [] }]);
    expect(op("POST /api/v1/public/withdrawal-requests").security).toEqual([{ apiKey: [], apiSecret: [] }]);
    expect(op("POST /api/v1/dashboard/payouts").security).toEqual(dashboard);
    expect(op("POST /checkout/session").security).toEqual([{ apiKey: [] }, ...dashboard]);
    expect(op("POST /api/v1/webhook/secret/rotate").security).toEqual([
      { apiKey: [], apiSecret: [] },
      ...dashboard,
    ]);
    expect(op("POST /api/v1/auth/login").security).toEqual([]);
    expect(op("GET /pay/{id}").security).toEqual([]);
    expect(op("POST /checkout/session").operationId).toBe("createCheckoutSession");
    expect(op("GET /api/v1/dashboard/withdrawal-requests").operationId).toBe(
      "dashboardListWithdrawalRequests",
    );
  });

  it("declares per status exactly the error shapes whose code maps to it, with the headers", () => {
    for (const { where, op: o } of operations) {
      for (const [status, response] of Object.entries(o.responses as Record<string, Json>)) {
        if (Number(status) < 400 || !response.content?.["application/json"]) continue;
        if (where === "GET /readyz") continue; // its 503 is the readiness report, not an error
        const declared = shapes(response);
        expect(declared.length, `${where} ${status}`).toBeGreaterThan(0);
        for (const shape of declared) {
          const code = codeOf(shape);
          expect(ERROR_CODES, `${where} ${status} ${shape}`).toContain(code);
          expect(codeToStatus(code), `${where}: ${code} under ${status}`).toBe(Number(status));
        }
        if (status === "429") expect(response.headers["Retry-After"], where).toBeDefined();
      }
    }
    const codes = (where: string, status: string) => shapes(op(where).responses[status]).map(codeOf).sort();
    expect(codes("POST /api/v1/public/withdrawal-requests/{id}/approve", "409")).toEqual(["INVALID_STATE"]);
    expect(codes("POST /api/v1/public/withdrawal-requests", "422")).toEqual([
      "DESTINATION_BLOCKED",
      "IDEMPOTENCY_MISMATCH",
      "INSUFFICIENT_BALANCE",
    ]);
    expect(codes("POST /api/v1/public/withdrawal-requests", "409")).toEqual(["IDEMPOTENCY_CONFLICT"]);
    expect(codes("POST /checkout/session", "503")).toEqual([
      "CHAIN_UNAVAILABLE",
      "RATE_UNAVAILABLE",
      "SERVICE_UNAVAILABLE",
    ]);
    expect(codes("GET /api/v1/public/balance", "401")).toEqual(["INVALID_AUTH"]);
    expect(op("GET /api/v1/public/balance").responses["404"]).toBeUndefined(); // nothing to miss there
    expect(op("GET /api/v1/public/balance").responses["409"]).toBeUndefined();
    // Idempotent creates say when an answer is a replay.
    expect(op("POST /checkout/session").responses["201"].headers["Idempotent-Replayed"]).toBeDefined();
    expect(op("GET /api/v1/public/balance").responses["200"].headers["Idempotent-Replayed"]).toBeUndefined();
    expect(op("GET /api/v1/public/balance").responses["200"].headers["RateLimit-Remaining"]).toBeDefined();
    expect(op("GET /healthz").responses["200"].headers["RateLimit-Remaining"]).toBeUndefined(); // never limited
    // Validation errors type their fields.
    const fields =
      doc.components.schemas.ValidationError.properties.error.properties.details.properties.fields;
    expect(fields).toEqual({ type: "array", items: { $ref: "#/components/schemas/FieldError" } });
    // The 429 keeps the contract's `message` and has the shared `error.code`.
    expect(doc.components.schemas.RateLimitedError.required).toEqual(["success", "message", "error"]);
  });

  it("names every resource and envelope, with its own status enum and examples", () => {
    const schemas = doc.components.schemas as Record<string, Json>;
    for (const name of [
      "CheckoutSession",
      "DepositWallet",
      "Withdrawal",
      "Payout",
      "Transaction",
      "Balance",
      "WebhookEvent",
      "Pagination",
      "FieldError",
      "CheckoutSessionResponse",
      "WithdrawalListResponse",
      "ValidationError",
      "RateLimitedError",
    ]) {
      expect(schemas[name], name).toBeDefined();
    }
    for (const name of ["CheckoutSession", "Withdrawal", "Payout", "Transaction", "Balance"]) {
      expect(schemas[name]?.examples?.length, `${name} example`).toBeGreaterThan(0);
    }
    expect(schemas.CheckoutSessionStatus?.enum).toEqual(["pending", "confirmed", "failed"]);
    expect(schemas.PayoutStatus?.enum).not.toContain("rejected");
    // payout/get says precisely: one payout, or a page of them.
    const payoutRead = op("GET /api/v1/public/payout/get").responses["200"].content["application/json"]
      .schema;
    expect(payoutRead.anyOf.map(refName)).toEqual(["PayoutResponse", "PayoutListResponse"]);
    // The event log's payload is the delivery body.
    expect(JSON.stringify(schemas.WebhookEvent?.properties?.payload)).toContain("DepositWebhook");
  });

  it("lets every all-optional body be left out (reject, sandbox pay, approve…)", () => {
    expect(op("POST /api/v1/public/withdrawal-requests/{id}/reject").requestBody.required).toBe(false);
    expect(op("POST /api/v1/sandbox/checkout/{id}/pay").requestBody.required).toBe(false);
    expect(op("POST /checkout/session").requestBody.required).toBe(true);
  });

  it("has a webhooks section: the delivery body per type and its signature headers", () => {
    expect(Object.keys(doc.webhooks).sort()).toEqual(["deposit", "payout", "test", "withdrawal"]);
    for (const [type, item] of Object.entries(doc.webhooks as Record<string, Json>)) {
      const post = item.post as Json;
      const body = post.requestBody.content["application/json"].schema;
      expect(refName(body)).toBe(`${type[0]?.toUpperCase()}${type.slice(1)}Webhook`);
      const headers = (post.parameters as Json[]).map((p) => p.name);
      for (const h of ["X-Webhook-Signature", "webhook-id", "webhook-timestamp", "webhook-signature"]) {
        expect(headers, `${type}: ${h}`).toContain(h);
      }
    }
    const deposit = doc.components.schemas.DepositWebhook.properties.data.properties;
    expect(deposit.status.enum).toEqual(["confirmed", "failed"]);
    expect(deposit.environment.enum).toEqual(["sandbox", "production"]);
  });
});

describe("the document's building blocks", () => {
  it("derives a readable operationId for a route not in the table", () => {
    expect(derivedOperationId("get", "/api/v1/webhook/stream")).toBe("getWebhookStream");
    expect(derivedOperationId("post", "/api/v1/public/refunds/{id}/cancel")).toBe("createRefundsCancel");
    expect(derivedOperationId("get", "/api/v1/dashboard/reports")).toBe("dashboardGetReports");
  });

  it("refuses two different schemas under one title (they would be one type in every client)", () => {
    const hoister = new SchemaHoister();
    expect(hoister.hoist({ title: "Thing", type: "string" })).toEqual({ $ref: "#/components/schemas/Thing" });
    expect(hoister.hoist({ title: "Thing", type: "string" })).toEqual({ $ref: "#/components/schemas/Thing" });
    expect(() => hoister.hoist({ title: "Thing", type: "number" })).toThrow(/two different schemas/);
    // Children first: a titled part inside an untitled schema is named, the root stays.
    expect(hoister.hoist({ type: "object", properties: { a: { title: "A", const: 1 } } }, true)).toEqual({
      type: "object",
      properties: { a: { $ref: "#/components/schemas/A" } },
    });
    expect(hoister.schemas.A).toEqual({ title: "A", enum: [1] });
  });
});
