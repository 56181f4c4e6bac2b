import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { App } from "../../src/http/app-types.js";
import { ListQuerySchema, listParams, MAX_LIMIT, pagination, SORT_FIELDS } from "../../src/http/list.js";
import { call, startTestService, type TestService } from "../support/harness.js";

describe("listParams (docs/api-reference.md#pagination)", () => {
  it("defaults", () => {
    expect(listParams({})).toEqual({ page: 1, limit: 20, offset: 0, sortBy: "createdAt", order: "desc" });
  });

  it("caps limit at 100 and computes the offset", () => {
    expect(listParams({ page: 3, limit: 1000 })).toMatchObject({ limit: 100, offset: 200 });
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10_000 }),
        fc.integer({ min: 1, max: 1_000_000 }),
        (limit, page) => {
          const p = listParams({ limit, page });
          return p.limit === Math.min(limit, MAX_LIMIT) && p.offset === (page - 1) * p.limit;
        },
      ),
    );
  });

  it("keeps known sort fields and falls back to createdAt for anything else", () => {
    for (const f of SORT_FIELDS) expect(listParams({ sortBy: f }).sortBy).toBe(f);
    fc.assert(
      fc.property(fc.string(), (s) => {
        const p = listParams({ sortBy: s });
        return (SORT_FIELDS as readonly string[]).includes(s) ? p.sortBy === s : p.sortBy === "createdAt";
      }),
    );
  });

  it("pagination totals", () => {
    expect(pagination(listParams({ limit: 20 }), 41)).toEqual({
      page: 1,
      limit: 20,
      total: 41,
      totalPages: 3,
    });
    expect(pagination(listParams({}), 0).totalPages).toBe(0);
  });
});

// The shared query schema, through a real route.
function probe(app: App) {
  app.get(
    "/api/v1/public/test-list",
    { config: { tier: "standard" }, schema: { querystring: ListQuerySchema } },
    async (request) => {
      const p = listParams(request.query);
      return { success: true, data: [], pagination: pagination(p, 250), applied: p };
    },
  );
}

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ extraRoutes: probe });
});
afterAll(() => svc?.close());

describe("list query over HTTP", () => {
  const get = (q: string) => call(svc.urls.sandbox, `/api/v1/public/test-list${q}`);

  it("caps limit=500 at 100 without an error", async () => {
    const r = await get("?limit=500&page=2");
    expect(r.status).toBe(200);
    expect(r.body.pagination).toEqual({ page: 2, limit: 100, total: 250, totalPages: 3 });
  });

  it("falls back to createdAt for an unknown sortBy (even a hostile one)", async () => {
    for (const s of ["password", "amount;drop table merchants", "__proto__", ""]) {
      const r = await get(`?sortBy=${encodeURIComponent(s)}`);
      expect(r.status).toBe(200);
      expect(r.body.applied.sortBy).toBe("createdAt");
    }
    expect((await get("?sortBy=amount&order=asc")).body.applied).toMatchObject({
      sortBy: "amount",
      order: "asc",
    });
  });

  it("rejects nonsense page, limit and order with 400 naming the field", async () => {
    for (const [q, field] of [
      ["?page=0", "page"],
      ["?page=abc", "page"],
      ["?limit=0", "limit"],
      ["?limit=-5", "limit"],
      ["?limit=1.5", "limit"],
      ["?order=sideways", "order"],
    ] as const) {
      const r = await get(q);
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe("VALIDATION_ERROR");
      expect(r.body.error.details.fields.map((f: { field: string }) => f.field)).toContain(field);
    }
  });
});
