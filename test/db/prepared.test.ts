import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../src/db/database.js";
import { PREPARED } from "../../src/db/prepared.js";
import { onPostgres, openTestDatabase } from "../support/db.js";

describe("PREPARED: hot fixed-shape statements as named prepared statements", () => {
  let database: Database;
  beforeAll(async () => {
    database = await openTestDatabase(1); // one connection: every statement below shares it
  });
  afterAll(async () => {
    await database?.close();
  });

  const marked = (id: string) =>
    database.db.selectFrom("merchants").select(["id"]).where("id", "=", id).modifyEnd(PREPARED).execute();

  it("answers the same as the unmarked query, repeatedly and with other parameters", async () => {
    await database.db
      .insertInto("merchants")
      .values([
        { id: "mer_prep_a", email: "a@prep.example", company_name: "A" },
        { id: "mer_prep_b", email: "b@prep.example", company_name: "B" },
      ])
      .execute();
    for (let i = 0; i < 8; i++) {
      expect(await marked("mer_prep_a")).toEqual([{ id: "mer_prep_a" }]);
      expect(await marked("mer_prep_b")).toEqual([{ id: "mer_prep_b" }]);
      expect(await marked("mer_prep_none")).toEqual([]);
    }
  });

  it.runIf(onPostgres)(
    "is parsed once per connection and kept as a named statement there; unmarked ones are not",
    async () => {
      await marked("mer_prep_a");
      await database.db.selectFrom("merchants").select(["email"]).where("id", "=", "mer_prep_a").execute();
      const rows = await sql<{
        name: string;
        statement: string;
      }>`select name, statement from pg_prepared_statements`.execute(database.db);
      const named = rows.rows.filter((r) => r.name.startsWith("sg_"));
      expect(named).toHaveLength(1);
      expect(named[0]?.statement).toContain('select "id" from "merchants"');
      expect(rows.rows.some((r) => r.statement.includes('select "email"'))).toBe(false);
    },
  );
});
