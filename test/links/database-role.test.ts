import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Db } from "../../src/db/database.js";
import { createMerchantWithKeys } from "../../src/merchants/index.js";
import { openTestDatabase } from "../support/db.js";

// Migration 0039's grants: the api's database role creates, locks (select … for update needs
// update) and deactivates payment links; the worker only reads them. On PGlite the one user is a
// superuser: `set session authorization` makes session_user the group role (the constraint check runs
// first, as that superuser).
let database: Awaited<ReturnType<typeof openTestDatabase>>;
let db: Db;
let merchantId: string;

beforeAll(async () => {
  database = await openTestDatabase();
  db = database.db;
  merchantId = (await createMerchantWithKeys(db, { email: "links-role@example.com", companyName: "L" })).id;
});
afterAll(async () => {
  await database?.close();
});

/** Runs `fn` as `role` on one connection; returns the error text, or null when it ran. */
async function as(role: string, fn: (trx: Db) => Promise<unknown>): Promise<string | null> {
  return db.connection().execute(async (c) => {
    await sql`set session authorization ${sql.raw(role)}`.execute(c);
    try {
      await c.transaction().execute(fn);
      return null;
    } catch (e) {
      return (e as Error).message;
    } finally {
      await sql`reset session authorization`.execute(c);
    }
  });
}

const insert = (id: string) => (trx: Db) =>
  sql`insert into payment_links (id, merchant_id, environment, title, amount, currency_types)
      values (${id}, ${merchantId}, 'sandbox', 'T', 1000000, array['USDT-TRC20'])`.execute(trx);

describe("payment_links: database roles (migration 0039)", () => {
  it("the table refuses a link priced twice or with bounds out of order", async () => {
    const bad = [
      sql`insert into payment_links (id, merchant_id, environment, title, amount, price_amount, price_currency, currency_types)
          values ('pl_bad1', ${merchantId}, 'sandbox', 'T', 1, 1, 'USD', array['USDT-TRC20'])`,
      sql`insert into payment_links (id, merchant_id, environment, title, min_amount, max_amount, currency_types)
          values ('pl_bad2', ${merchantId}, 'sandbox', 'T', 5, 1, array['USDT-TRC20'])`,
    ];
    for (const q of bad) await expect(q.execute(db)).rejects.toThrow(/check constraint/);
  });

  it("the api creates, locks and deactivates a link", async () => {
    expect(await as("stablegate_api", insert("pl_role_api"))).toBeNull();
    expect(
      await as("stablegate_api", async (trx) => {
        await sql`select id from payment_links where id = 'pl_role_api' for update`.execute(trx);
        await sql`update payment_links set active = false, deactivated_at = now() where id = 'pl_role_api'`.execute(
          trx,
        );
      }),
    ).toBeNull();
  });

  it("the worker reads links but writes none", async () => {
    expect(
      await as("stablegate_worker", (trx) => sql`select count(*) from payment_links`.execute(trx)),
    ).toBeNull();
    expect(await as("stablegate_worker", insert("pl_role_worker"))).toMatch(/permission denied/);
  });
});
