import { Type } from "@sinclair/typebox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PERMISSIONS } from "../../src/domain/permissions.js";
import { call, startTestService, type TestService } from "../support/harness.js";
import { addMember, type Headers, registerOwner } from "../team/support.js";
import { allowedBy, documentedMatrix, ROLES, type Role } from "./permission-matrix.js";

// Issue #21 "Must show": a role × route matrix generated from the OpenAPI document. Every operation
// a dashboard session can reach is called with each role's session in both environments, and the
// answer must be what the matrix of docs/permissions.md says: a ✓ passes the permission check
// (whatever the route then answers to the dummy input: 2xx or 4xx, never 5xx), a — is refused with
// 403 naming the permission. The expected matrix is read from the documentation, not from the
// code that enforces it; an operation without a permission fails here, and a route without one
// does not start.

interface Op {
  method: string;
  path: string;
  permission: string | undefined;
}

let svc: TestService;
const sessions = {} as Record<Role, Headers>;
const ops: Op[] = [];
const matrix = documentedMatrix();

beforeAll(async () => {
  svc = await startTestService({
    env: { RATE_LIMIT_ENABLED: "false", DOCS_USER: "docs", DOCS_PASSWORD: "s3cret-docs" },
  });
  const owner = await registerOwner(svc);
  sessions.owner = owner.bearer;
  for (const role of ROLES.filter((r) => r !== "owner"))
    sessions[role] = (await addMember(svc, owner.bearer, role)).bearer;
  const doc = await call(svc.urls.production, "/docs/openapi.json", {
    headers: { authorization: `Basic ${Buffer.from("docs:s3cret-docs").toString("base64")}` },
  });
  expect(doc.status).toBe(200);
  type DocOp = { security?: Record<string, unknown>[]; "x-stablegate-permission"?: string };
  for (const [p, byMethod] of Object.entries(doc.body.paths as Record<string, Record<string, DocOp>>)) {
    for (const [method, op] of Object.entries(byMethod)) {
      const security = op.security ?? [];
      if (!security.some((s) => "dashboardBearer" in s)) continue;
      ops.push({ method: method.toUpperCase(), path: p, permission: op["x-stablegate-permission"] });
    }
  }
}, 60_000);
afterAll(async () => {
  await svc?.close();
});

function send(op: Op, headers: Headers) {
  const url = op.path.replace(/\{(\w+)\}/g, "matrix_dummy");
  const withBody = op.method !== "GET" && op.method !== "DELETE";
  return call(svc.urls.sandbox, url, { method: op.method, headers, ...(withBody ? { json: {} } : {}) });
}

describe("role × route matrix (from the OpenAPI document and docs/permissions.md)", () => {
  it("every dashboard operation declares a permission the matrix documents, and every documented permission exists", () => {
    expect(ops.length).toBeGreaterThan(40);
    const undeclared = ops.filter((o) => !o.permission).map((o) => `${o.method} ${o.path}`);
    expect(undeclared).toEqual([]);
    const unknown = ops
      .filter(
        (o) =>
          o.permission !== "account" && o.permission !== "platform_admin" && !matrix.has(o.permission ?? ""),
      )
      .map((o) => `${o.method} ${o.path}: ${o.permission}`);
    expect(unknown).toEqual([]);
    expect([...matrix.keys()].sort()).toEqual([...PERMISSIONS].sort());
  });

  it("each role's session, in each environment, gets exactly what the matrix says on every operation", async () => {
    const wrong: string[] = [];
    let allowed = 0;
    let refused = 0;
    // One operation at a time (in the document's order); its ten calls (role × environment) in
    // parallel: the run stays well inside the time limit on a loaded machine.
    for (const op of ops) {
      const sandboxOnly = op.path.startsWith("/api/v1/sandbox/");
      const calls = (["sandbox", "production"] as const).flatMap((env) =>
        ROLES.map((role) => ({ env, role })),
      );
      await Promise.all(
        calls.map(async ({ env, role }) => {
          const r = await send(op, { ...sessions[role], "x-environment": env });
          const where = `${role} ${env} ${op.method} ${op.path} (${op.permission}) → ${r.status} ${r.text.slice(0, 160)}`;
          if (r.status >= 500) {
            wrong.push(where);
            return;
          }
          const deniedForPermission =
            r.status === 403 && r.body?.error?.details?.permission === op.permission;
          let expectAllowed: boolean;
          if (op.permission === "account") expectAllowed = true;
          else if (op.permission === "platform_admin") expectAllowed = false;
          else {
            const cell = matrix.get(op.permission ?? "")?.[role];
            expectAllowed = cell !== undefined && allowedBy(cell, env);
          }
          if (sandboxOnly && env === "production") {
            // The sandbox's own routes do not exist on production, whoever asks.
            if (r.status !== 404) wrong.push(`${where}: expected 404`);
            return;
          }
          if (op.permission === "platform_admin") {
            if (r.status !== 403) wrong.push(`${where}: expected 403 (admin views)`);
            else refused++;
            return;
          }
          if (expectAllowed) {
            if (deniedForPermission || r.status === 401)
              wrong.push(`${where}: expected the permission check to pass`);
            else allowed++;
          } else if (!deniedForPermission || r.body?.error?.details?.role !== role) {
            wrong.push(`${where}: expected 403 naming ${op.permission}`);
          } else refused++;
        }),
      );
    }
    expect(wrong).toEqual([]);
    // Both outcomes are exercised at scale (the matrix is not all ✓ or all —).
    expect(allowed).toBeGreaterThan(200);
    expect(refused).toBeGreaterThan(100);
  }, 120_000);
});

describe("a route without a declared permission", () => {
  it("does not start", async () => {
    await expect(
      startTestService({
        extraRoutes: (app) => {
          app.get(
            "/api/v1/dashboard/forgotten",
            {
              config: { auth: "dashboard", tier: "dashboard" },
              schema: { response: { 200: Type.Object({ ok: Type.Boolean() }) } },
            },
            async () => ({ ok: true }),
          );
        },
      }),
    ).rejects.toThrow(/GET \/api\/v1\/dashboard\/forgotten: a dashboard route declares config.permission/);
  });
});
