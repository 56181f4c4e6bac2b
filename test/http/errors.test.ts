import net from "node:net";
import { Type } from "@sinclair/typebox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CURRENCY_TYPES } from "../../src/domain/currency.js";
import type { App } from "../../src/http/app-types.js";
import { commonErrors, ok } from "../../src/http/schemas/common.js";
import { call, keysOf, startTestService, type TestService } from "../support/harness.js";

// Probe routes exercising the shared error machinery (a body schema, an unexpected failure).
function probes(app: App) {
  app.post(
    "/api/v1/public/test-echo",
    {
      config: { tier: "standard" },
      schema: {
        body: Type.Object(
          {
            name: Type.String({ minLength: 1 }),
            count: Type.Integer({ minimum: 1 }),
            note: Type.Optional(Type.String()),
          },
          { additionalProperties: false },
        ),
        response: { 200: ok(Type.Object({ name: Type.String(), count: Type.Integer() })), ...commonErrors },
      },
    },
    async (request) => ({
      success: true as const,
      data: { name: request.body.name, count: request.body.count },
    }),
  );
  app.get("/api/v1/public/test-explode", { config: { tier: "standard" } }, async () => {
    throw new Error("database password is hunter2 at 10.0.0.5");
  });
}

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ extraRoutes: probes, env: { BODY_LIMIT_BYTES: "1024" } });
});
afterAll(() => svc?.close());

const ECHO = "/api/v1/public/test-echo";

function expectValidation(r: { status: number; body: any }) {
  expect(r.status).toBe(400);
  expect(r.body.success).toBe(false);
  expect(r.body.error.code).toBe("VALIDATION_ERROR");
  expect(typeof r.body.error.message).toBe("string");
  expect(Array.isArray(r.body.error.details.fields)).toBe(true);
  expect(r.body.error.details.fields.length).toBeGreaterThan(0);
  return r.body.error.details.fields as { field: string; message: string }[];
}

describe("bad input gets 400 VALIDATION_ERROR with details.fields", () => {
  it("accepts a valid body", async () => {
    const r = await call(svc.urls.sandbox, ECHO, { json: { name: "a", count: 2 } });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ success: true, data: { name: "a", count: 2 } });
  });

  it("malformed JSON", async () => {
    const fields = expectValidation(
      await call(svc.urls.sandbox, ECHO, {
        body: '{"name": "a",',
        headers: { "content-type": "application/json" },
      }),
    );
    expect(fields[0]?.field).toBe("body");
  });

  it("empty JSON body", async () => {
    expectValidation(
      await call(svc.urls.sandbox, ECHO, {
        method: "POST",
        body: "",
        headers: { "content-type": "application/json" },
      }),
    );
  });

  it("wrong content type", async () => {
    const fields = expectValidation(
      await call(svc.urls.sandbox, ECHO, {
        body: "name=a&count=2",
        headers: { "content-type": "application/x-www-form-urlencoded" },
      }),
    );
    expect(fields[0]?.field).toBe("Content-Type");
    expectValidation(
      await call(svc.urls.sandbox, ECHO, { body: "hello", headers: { "content-type": "text/plain" } }),
    );
  });

  it("oversized body", async () => {
    const r = await call(svc.urls.sandbox, ECHO, { json: { name: "x".repeat(2000), count: 1 } });
    const fields = expectValidation(r);
    expect(fields[0]?.message).toMatch(/1024 bytes/);
  });

  it("schema failures name every bad field", async () => {
    const fields = expectValidation(
      await call(svc.urls.sandbox, ECHO, { json: { name: "", count: "2", extra: true } }),
    );
    const names = fields.map((f) => f.field).sort();
    expect(names).toEqual(["count", "extra", "name"]);
  });

  it("missing required fields", async () => {
    const fields = expectValidation(await call(svc.urls.sandbox, ECHO, { json: {} }));
    expect(fields.map((f) => f.field).sort()).toEqual(["count", "name"]);
    expect(fields.every((f) => f.message === "is required")).toBe(true);
  });

  it("a JSON array or scalar where an object is expected", async () => {
    expectValidation(await call(svc.urls.sandbox, ECHO, { json: [1, 2] }));
    expectValidation(await call(svc.urls.sandbox, ECHO, { json: 42 }));
  });
});

describe("text PostgreSQL cannot store, and URLs the router refuses", () => {
  it("a NUL character or an unpaired surrogate in a body field is a 400 on that field", async () => {
    for (const name of ["a\u0000b", "\ud800", "x\udc00"]) {
      const fields = expectValidation(await call(svc.urls.sandbox, ECHO, { json: { name, count: 1 } }));
      expect(fields).toEqual([
        { field: "name", message: "must not contain NUL characters or unpaired surrogates" },
      ]);
    }
    // A well-formed pair (an emoji) is ordinary text.
    expect((await call(svc.urls.sandbox, ECHO, { json: { name: "💥", count: 1 } })).status).toBe(200);
  });

  it("a value outside an enum names the allowed values", async () => {
    const key = keysOf(await svc.createMerchant(), "sandbox");
    const r = await call(svc.urls.sandbox, "/checkout/session", {
      headers: { apikey: key.apiKey },
      json: { amount: 5, currencyType: "USDT-SOLANA" },
    });
    expect(r.status, r.text).toBe(400);
    expect(r.body.error.details.fields).toEqual([
      { field: "currencyType", message: `must be one of: ${CURRENCY_TYPES.join(", ")}` },
    ]);
  });

  it("a currency type the deployment does not enable (CURRENCY_TYPES) is a 400 on currencyType too", async () => {
    const key = keysOf(await svc.createMerchant(), "sandbox");
    const r = await call(svc.urls.sandbox, "/checkout/session", {
      headers: { apikey: key.apiKey },
      json: { amount: 5, currencyType: "USDT-BEP20" },
    });
    expect(r.status, r.text).toBe(400);
    expect(r.body.error.details.fields).toEqual([
      { field: "currencyType", message: "USDT-BEP20 is not enabled (enabled: USDT-TRC20, USDT-ERC20)" },
    ]);
  });

  it("a NUL in a query value or a path parameter is a 400 too", async () => {
    const key = keysOf(await svc.createMerchant(), "sandbox");
    const q = await call(svc.urls.sandbox, "/api/v1/public/transactions?search=a%00", {
      headers: { apikey: key.apiKey, "x-api-secret": key.apiSecret },
    });
    expect(q.status, q.text).toBe(400);
    expect(q.body.error.details.fields).toEqual([
      { field: "search", message: "must not contain NUL characters or unpaired surrogates" },
    ]);
    const p = await call(svc.urls.sandbox, "/pay/a%00b");
    expect(p.status).toBe(400);
    expect(p.body.error.details.fields).toEqual([
      { field: "id", message: "must not contain NUL characters or unpaired surrogates" },
    ]);
  });

  it("a path that is not valid percent-encoding, or a parameter over 200 characters, is a 400 envelope", async () => {
    for (const path of ["/pay/%ZZ", "/pay/%C0%AF", `/pay/${"x".repeat(201)}`]) {
      const r = await call(svc.urls.sandbox, path);
      expect(r.status, path).toBe(400);
      expect(r.body.error.code).toBe("VALIDATION_ERROR");
      expect(r.body.error.details.fields[0].field).toBe("path");
      expect(r.headers.get("x-request-id")).toMatch(/^req_/);
      expect(r.body.error.requestId).toBe(r.headers.get("x-request-id"));
    }
  });
});

describe("requests Node's HTTP parser refuses", () => {
  /** Sends raw bytes on a fresh connection and returns everything the server wrote before closing. */
  function raw(base: string, bytes: string): Promise<string> {
    const { hostname, port } = new URL(base);
    return new Promise((resolve, reject) => {
      const socket = net.connect(Number(port), hostname, () => socket.write(bytes));
      let out = "";
      socket.on("data", (d) => {
        out += d.toString("utf8");
      });
      socket.on("close", () => resolve(out));
      socket.on("error", reject);
    });
  }

  function envelopeOf(answer: string) {
    const [head = "", body = ""] = answer.split("\r\n\r\n");
    expect(head.split("\r\n")[0]).toBe("HTTP/1.1 400 Bad Request");
    expect(head).toMatch(/content-type: application\/json/i);
    return JSON.parse(body);
  }

  it("a malformed request line or header is a 400 envelope, and the connection closes", async () => {
    for (const bytes of ["NOT HTTP AT ALL\r\n\r\n", "GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n"]) {
      const answer = await raw(svc.urls.production, bytes);
      const body = envelopeOf(answer);
      expect(body).toEqual({
        success: false,
        error: {
          code: "VALIDATION_ERROR",
          message: "Malformed HTTP request.",
          details: { fields: [{ field: "request", message: "is malformed" }] },
          requestId: expect.stringMatching(/^req_/),
        },
      });
      // Refused before it was a request, it still names itself in the header and the body alike.
      expect(answer).toMatch(new RegExp(`X-Request-Id: ${body.error.requestId}\r\n`));
    }
  });

  it("headers over Node's limit are a 400 envelope naming the headers", async () => {
    const body = envelopeOf(
      await raw(svc.urls.sandbox, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`),
    );
    expect(body.error.details.fields).toEqual([{ field: "headers", message: "are too large" }]);
  });

  it("after a good request on a keep-alive connection, a bad one still gets its envelope", async () => {
    const answer = await raw(svc.urls.production, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nBROKEN\r\n\r\n");
    expect(answer.startsWith("HTTP/1.1 200 OK")).toBe(true);
    expect(answer).toContain("HTTP/1.1 400 Bad Request");
    expect(answer).toContain('"code":"VALIDATION_ERROR"');
  });
});

describe("unknown routes, 500s and request ids", () => {
  it("unknown route → 404 NOT_FOUND envelope", async () => {
    for (const [method, path] of [
      ["GET", "/nope"],
      ["POST", "/api/v1/public/nope"],
      ["DELETE", "/api/v1/public/account"],
    ] as const) {
      const r = await call(svc.urls.production, path, { method });
      expect(r.status).toBe(404);
      expect(r.body).toMatchObject({ success: false, error: { code: "NOT_FOUND", details: {} } });
    }
  });

  it("a 500 says nothing internal and carries a request id", async () => {
    const r = await call(svc.urls.production, "/api/v1/public/test-explode");
    expect(r.status).toBe(500);
    expect(r.body).toEqual({
      success: false,
      error: {
        code: "INTERNAL_ERROR",
        message: "Internal server error.",
        details: {},
        requestId: r.headers.get("x-request-id"),
      },
    });
    expect(r.text).not.toMatch(/hunter2|10\.0\.0\.5|Error|at /);
    expect(r.headers.get("x-request-id")).toMatch(/^req_/);
  });

  it("X-Request-Id on every response; a well-formed incoming id is kept, a bad one replaced", async () => {
    const responses = await Promise.all([
      call(svc.urls.production, "/healthz"),
      call(svc.urls.production, "/api/v1/public/account"),
      call(svc.urls.sandbox, "/nope"),
      call(svc.urls.sandbox, ECHO, { json: {} }),
    ]);
    for (const r of responses) expect(r.headers.get("x-request-id")).toMatch(/^req_[0-9A-Za-z]+$/);
    // Every error body carries the same id (docs/merchants/errors.md#the-envelope: a merchant quotes it to support).
    for (const r of responses.slice(1)) expect(r.body.error.requestId).toBe(r.headers.get("x-request-id"));
    const kept = await call(svc.urls.production, "/healthz", {
      headers: { "x-request-id": "trace-abc.123" },
    });
    expect(kept.headers.get("x-request-id")).toBe("trace-abc.123");
    const keptError = await call(svc.urls.sandbox, "/nope", { headers: { "x-request-id": "trace-abc.124" } });
    expect(keptError.body.error.requestId).toBe("trace-abc.124");
    const replaced = await call(svc.urls.production, "/healthz", { headers: { "x-request-id": "<script>" } });
    expect(replaced.headers.get("x-request-id")).toMatch(/^req_/);
  });
});
