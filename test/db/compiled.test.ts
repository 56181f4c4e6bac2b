import type { Insertable } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compiledByShape } from "../../src/db/compiled.js";
import type { Database, Db } from "../../src/db/database.js";
import type { MerchantsTable } from "../../src/db/tables/foundation.js";
import { openTestDatabase } from "../support/db.js";

describe("compiledByShape: a hot statement built once per shape", () => {
  let database: Database;
  beforeAll(async () => {
    database = await openTestDatabase(2);
  });
  afterAll(async () => {
    await database?.close();
  });

  let builds = 0;
  // The company name is a constant of the statement, the rest comes from the row.
  const insert = compiledByShape((db: Db, r: { m: Insertable<MerchantsTable> }) => {
    builds++;
    return db
      .insertInto("merchants")
      .values({ ...r.m, company_name: "Fixed Co" })
      .returning(["id", "email", "company_name", "status", "created_at"]);
  });

  it("fills each call's values into the statement built the first time", async () => {
    const made = [];
    for (let i = 0; i < 5; i++) {
      const r = await insert(database.db, {
        m: { id: `mer_shape_${i}`, email: `s${i}@shape.example`, company_name: "ignored" },
      });
      made.push(r.rows[0]);
    }
    expect(builds).toBe(1);
    expect(made.map((m) => [m?.id, m?.email, m?.company_name, m?.status])).toEqual(
      Array.from({ length: 5 }, (_, i) => [`mer_shape_${i}`, `s${i}@shape.example`, "Fixed Co", "active"]),
    );
  });

  it("builds another statement for another set of columns; undefined columns keep their default", async () => {
    const at = new Date("2031-02-03T04:05:06.000Z");
    const withStatus = await insert(database.db, {
      m: {
        id: "mer_shape_s",
        email: "s@shape.example",
        company_name: "x",
        status: "suspended",
        created_at: at,
      },
    });
    expect(builds).toBe(2);
    expect(withStatus.rows[0]).toMatchObject({ status: "suspended", created_at: at });
    // status undefined = the first shape again (no third build), and the column's default applies.
    const undef = await insert(database.db, {
      m: { id: "mer_shape_u", email: "u@shape.example", company_name: "x", status: undefined },
    });
    expect(builds).toBe(2);
    expect(undef.rows[0]?.status).toBe("active");
    expect(Math.abs((undef.rows[0]?.created_at.getTime() ?? 0) - Date.now())).toBeLessThan(60_000);
  });

  it("works inside a transaction and rolls back with it", async () => {
    await expect(
      database.db.transaction().execute(async (trx) => {
        await insert(trx, { m: { id: "mer_shape_tx", email: "tx@shape.example", company_name: "x" } });
        throw new Error("roll back");
      }),
    ).rejects.toThrow("roll back");
    const found = await database.db
      .selectFrom("merchants")
      .select("id")
      .where("id", "=", "mer_shape_tx")
      .executeTakeFirst();
    expect(found).toBeUndefined();
  });

  it("a multi-row statement is built once per row count and fills every row's values", async () => {
    let multiBuilds = 0;
    const insertMany = compiledByShape((db: Db, r: { m: Insertable<MerchantsTable>[] }) => {
      multiBuilds++;
      return db.insertInto("merchants").values(r.m).returning(["id", "email", "status"]);
    });
    const rows = (prefix: string, n: number, status?: "suspended") =>
      Array.from({ length: n }, (_, i) => ({
        id: `mer_multi_${prefix}${i}`,
        email: `${prefix}${i}@multi.example`,
        company_name: "m",
        status,
      }));
    const three = await insertMany(database.db, { m: rows("a", 3) });
    const threeAgain = await insertMany(database.db, { m: rows("b", 3) });
    expect(multiBuilds).toBe(1);
    const two = await insertMany(database.db, { m: rows("c", 2, "suspended") });
    expect(multiBuilds).toBe(2);
    expect(three.rows.map((r) => [r.id, r.email, r.status])).toEqual([
      ["mer_multi_a0", "a0@multi.example", "active"],
      ["mer_multi_a1", "a1@multi.example", "active"],
      ["mer_multi_a2", "a2@multi.example", "active"],
    ]);
    expect(threeAgain.rows.map((r) => r.id)).toEqual(["mer_multi_b0", "mer_multi_b1", "mer_multi_b2"]);
    expect(two.rows.map((r) => [r.id, r.status])).toEqual([
      ["mer_multi_c0", "suspended"],
      ["mer_multi_c1", "suspended"],
    ]);
  });
});
