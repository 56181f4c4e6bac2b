import { Type } from "@sinclair/typebox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { issueKeyPair } from "../../src/merchants/index.js";
import { call, startTestService, type TestService } from "../support/harness.js";
import { addMember, type Headers, otpFor, registerOwner } from "../team/support.js";
import { allowedBy, documentedMatrix, type Env, ROLES, type Role } from "./permission-matrix.js";

// Issue #34 "Must show": the principal matrix, generated from the OpenAPI document. One principal
// model (docs/permissions.md): every credential acts for a member. Each role's sessions are walked over
// every dashboard operation by role-matrix.test.ts; here each role's key pairs are walked over every
// API-key operation, in both environments: a pair the member minted itself where its role may mint
// (owner: its registration pairs; admin, developer: minted on the dashboard, production ones with
// step-up), else one issued to it directly in the database (finance, viewer: see below). The answer must be
// what docs/permissions.md says for the member the pair acts for: a ✓ passes the permission check
// (then 2xx or 4xx for the dummy input, never 5xx), a — is 403 `key_owner_role` naming the
// permission and the role. A pair whose member was removed is 403 `key_owner_removed` everywhere.

interface Op {
  method: string;
  path: string;
  permission: string | undefined;
  stream: boolean;
}

let svc: TestService;
const pairs = {} as Record<Role, Record<Env, Headers & { id: string }>>;
const members = {} as Record<Role, string>;
let removedPairs: Record<Env, Headers>;
const ops: Op[] = [];
const matrix = documentedMatrix();

const baseOf = (env: Env) => (env === "production" ? svc.urls.production : svc.urls.sandbox);

/** A key pair minted on the dashboard by `who` (production: with its step-up code). */
async function mint(who: Headers, env: Env) {
  const json: Record<string, unknown> = { environment: env };
  if (env === "production") json.otp = await otpFor(svc.urls.sandbox, who);
  const r = await call(svc.urls.sandbox, "/api/v1/dashboard/api-keys", { headers: who, json });
  expect(r.status, r.text).toBe(201);
  return {
    id: r.body.data.id as string,
    createdBy: r.body.data.createdBy as string,
    apikey: r.body.data.apiKey as string,
    "x-api-secret": r.body.data.apiSecret as string,
  };
}

/**
 * A pair acting for `memberId`, issued through the project's own insert (`issueKeyPair`, the one
 * behind minting). Finance and viewer have no `api_keys:write`, so they cannot mint a pair, and no
 * one can hand them one: a pair acts for whoever holds its secret, so reassigning only ever makes a
 * pair the actor's own. Such a pair still exists in the world (one minted before a demotion, or
 * before the role lost the permission), and the matrix must show what it may do.
 */
async function issuedTo(merchantId: string, env: Env, memberId: string) {
  const pair = await issueKeyPair(svc.database.db, merchantId, env, memberId);
  expect(pair.createdBy).toBe(memberId);
  return { id: pair.id, createdBy: memberId, apikey: pair.apiKey, "x-api-secret": pair.apiSecret };
}

const strip = ({ id: _id, createdBy: _c, ...headers }: Awaited<ReturnType<typeof mint>>) => headers;

beforeAll(async () => {
  svc = await startTestService({
    env: { RATE_LIMIT_ENABLED: "false", DOCS_USER: "docs", DOCS_PASSWORD: "s3cret-docs" },
  });
  const owner = await registerOwner(svc);
  members.owner = owner.userId;
  const registered = await call(svc.urls.sandbox, "/api/v1/dashboard/api-keys?limit=100", {
    headers: owner.bearer,
  });
  const prodRegistered = await call(svc.urls.sandbox, "/api/v1/dashboard/api-keys?limit=100", {
    headers: { ...owner.bearer, "x-environment": "production" },
  });
  pairs.owner = {
    sandbox: { ...owner.sandboxApi, id: registered.body.data[0].id },
    production: { ...owner.productionApi, id: prodRegistered.body.data[0].id },
  };
  // The registration's pairs act for the owner.
  expect(registered.body.data[0].createdBy).toBe(owner.userId);
  expect(prodRegistered.body.data[0].createdBy).toBe(owner.userId);

  for (const role of ROLES.filter((r) => r !== "owner")) {
    const m = await addMember(svc, owner.bearer, role);
    members[role] = m.userId;
    const mintsItself = role === "admin" || role === "developer";
    const entry = {} as Record<Env, Headers & { id: string }>;
    for (const env of ["sandbox", "production"] as const) {
      if (mintsItself) {
        const pair = await mint(m.bearer, env);
        expect(pair.createdBy).toBe(m.userId);
        entry[env] = { ...strip(pair), id: pair.id };
      } else {
        // A role that cannot mint (no api_keys:write): a pair issued to it directly (`issuedTo`).
        const pair = await issuedTo(owner.merchantId, env, m.userId);
        entry[env] = { ...strip(pair), id: pair.id };
      }
    }
    pairs[role] = entry;
  }

  // A member who minted pairs and was then removed.
  const leaver = await addMember(svc, owner.bearer, "admin");
  removedPairs = {
    sandbox: strip(await mint(leaver.bearer, "sandbox")),
    production: strip(await mint(leaver.bearer, "production")),
  };
  const removed = await call(svc.urls.sandbox, `/api/v1/dashboard/members/${leaver.userId}`, {
    method: "DELETE",
    headers: owner.bearer,
  });
  expect(removed.status, removed.text).toBe(200);

  const doc = await call(svc.urls.production, "/docs/openapi.json", {
    headers: { authorization: `Basic ${Buffer.from("docs:s3cret-docs").toString("base64")}` },
  });
  expect(doc.status).toBe(200);
  type DocOp = {
    security?: Record<string, unknown>[];
    "x-stablegate-permission"?: string;
    responses?: Record<string, { content?: Record<string, unknown> }>;
  };
  for (const [p, byMethod] of Object.entries(doc.body.paths as Record<string, Record<string, DocOp>>)) {
    for (const [method, op] of Object.entries(byMethod)) {
      if (!(op.security ?? []).some((s) => "apiKey" in s)) continue;
      ops.push({
        method: method.toUpperCase(),
        path: p,
        permission: op["x-stablegate-permission"],
        stream: op.responses?.["200"]?.content?.["text/event-stream"] !== undefined,
      });
    }
  }
}, 120_000);
afterAll(async () => {
  await svc?.close();
});

interface Answer {
  status: number;
  text: string;
  body: any;
}

async function send(op: Op, env: Env, headers: Headers): Promise<Answer> {
  const url = op.path.replace(/\{(\w+)\}/g, "matrix_dummy");
  if (op.stream) {
    // A long-lived stream: the status line is the answer; the connection is closed at once.
    const ctl = new AbortController();
    const res = await fetch(baseOf(env) + url, { headers, signal: ctl.signal });
    const text = res.status === 200 ? "" : await res.text();
    ctl.abort();
    return { status: res.status, text, body: text ? JSON.parse(text) : undefined };
  }
  const withBody = op.method !== "GET" && op.method !== "DELETE";
  return call(baseOf(env), url, { method: op.method, headers, ...(withBody ? { json: {} } : {}) });
}

const sandboxOnly = (op: Op) => op.path.startsWith("/api/v1/sandbox/");

describe("principal × operation matrix on the API-key channel (from the OpenAPI document and docs/permissions.md)", () => {
  it("every API-key operation declares a documented permission", () => {
    expect(ops.length).toBeGreaterThan(15);
    // The webhook stream is among them (answered by its status line).
    expect(ops.some((o) => o.stream)).toBe(true);
    expect(ops.filter((o) => !o.permission).map((o) => `${o.method} ${o.path}`)).toEqual([]);
    expect(ops.filter((o) => !matrix.has(o.permission ?? "")).map((o) => `${o.method} ${o.path}`)).toEqual(
      [],
    );
  });

  it("each role's key pair, in each environment, gets exactly what the member's role allows on every operation", async () => {
    const wrong: string[] = [];
    let allowed = 0;
    let refused = 0;
    const cases = ops.flatMap((op) =>
      (["sandbox", "production"] as const).flatMap((env) => ROLES.map((role) => ({ op, env, role }))),
    );
    // A few requests in flight at a time: each case is independent (dummy ids, empty bodies).
    for (let i = 0; i < cases.length; i += 8) {
      await Promise.all(
        cases.slice(i, i + 8).map(async ({ op, env, role }) => {
          const { id: _id, ...headers } = pairs[role][env];
          const r = await send(op, env, headers);
          const where = `${role} ${env} ${op.method} ${op.path} (${op.permission}) → ${r.status} ${r.text.slice(0, 160)}`;
          if (r.status >= 500) {
            wrong.push(where);
            return;
          }
          if (sandboxOnly(op) && env === "production") {
            if (r.status !== 404) wrong.push(`${where}: expected 404`);
            return;
          }
          const cell = matrix.get(op.permission ?? "")?.[role];
          const expectAllowed = cell !== undefined && allowedBy(cell, env);
          const details = r.body?.error?.details;
          const refusedForRole = r.status === 403 && details?.reason === "key_owner_role";
          if (expectAllowed) {
            if (r.status === 401 || r.status === 403)
              wrong.push(`${where}: expected the permission check to pass`);
            else allowed++;
          } else if (!refusedForRole || details.permission !== op.permission || details.role !== role) {
            wrong.push(`${where}: expected 403 key_owner_role naming ${op.permission}`);
          } else refused++;
        }),
      );
    }
    expect(wrong).toEqual([]);
    // Both outcomes are exercised at scale.
    expect(allowed).toBeGreaterThan(100);
    expect(refused).toBeGreaterThan(30);
  }, 120_000);

  it("a removed member's pairs are refused on every operation (key_owner_removed), in both environments", async () => {
    const wrong: string[] = [];
    for (const env of ["sandbox", "production"] as const) {
      await Promise.all(
        ops
          .filter((op) => !(sandboxOnly(op) && env === "production"))
          .map(async (op) => {
            const r = await send(op, env, removedPairs[env]);
            if (r.status !== 403 || r.body?.error?.details?.reason !== "key_owner_removed")
              wrong.push(`${env} ${op.method} ${op.path} → ${r.status} ${r.text.slice(0, 160)}`);
          }),
      );
    }
    expect(wrong).toEqual([]);
  });
});

describe("an API-key route without a declared permission", () => {
  it("does not start", async () => {
    await expect(
      startTestService({
        extraRoutes: (app) => {
          app.get(
            "/api/v1/public/forgotten",
            {
              config: { auth: "apiKey", tier: "standard" },
              schema: { response: { 200: Type.Object({ ok: Type.Boolean() }) } },
            },
            async () => ({ ok: true }),
          );
        },
      }),
    ).rejects.toThrow(/GET \/api\/v1\/public\/forgotten: an API-key route declares config.permission/);
  });
});
