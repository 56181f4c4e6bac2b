import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Db } from "../../src/db/database.js";
import { createMerchantWithKeys } from "../../src/merchants/index.js";
import { RESOURCE_ACCOUNT_INDEX } from "../../src/wallet/derivation-path.js";
import { openTestDatabase } from "../support/db.js";
import { ATTACKER, addr, TRC } from "./energy-support.js";

// The api's database role (stablegate_api) must not get resource intents through request_transfer()
// (migration 0025's check binds only callers that cannot insert outgoing_transfers). On PGlite the
// one user is a superuser: `set session authorization` makes session_user the api group role.

let database: Awaited<ReturnType<typeof openTestDatabase>>;
let db: Db;

beforeAll(async () => {
  database = await openTestDatabase();
  db = database.db;
  await createMerchantWithKeys(db, { email: "attack-api@example.com", companyName: "A" });
});
afterAll(async () => {
  await database?.close();
});

/** Runs `fn` as the api's role on one connection; returns the error text, or null when it ran. */
async function asApi(fn: (trx: Db) => Promise<unknown>): Promise<string | null> {
  return db.connection().execute(async (c) => {
    await sql`set session authorization stablegate_api`.execute(c);
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

const OPEN = ["queued", "signed", "broadcast"] as const;

describe("attack: the api role requests resource intents through request_transfer()", () => {
  for (const [kind, asset, to] of [
    ["resource_delegation", "energy", ATTACKER],
    ["resource_delegation", "energy", addr(0)],
    ["resource_stake", "energy", addr(RESOURCE_ACCOUNT_INDEX)],
    ["resource_reclaim", "energy", ATTACKER],
    ["withdrawal", "energy", ATTACKER],
  ] as const) {
    it(`refuses ${kind} (${asset}) to ${to === ATTACKER ? "the attacker" : to}`, async () => {
      const id = `api_${kind}_${to.slice(0, 6)}`;
      const err = await asApi((trx) =>
        sql`select request_transfer(${id}, ${kind}, ${TRC}, 'sandbox', ${asset}, ${RESOURCE_ACCOUNT_INDEX}::integer,
          ${to}, 7000000::numeric, null)`.execute(trx),
      );
      const row = await db
        .selectFrom("outgoing_transfers")
        .select("status")
        .where("intent_id", "=", id)
        .executeTakeFirst();
      if (!err || row)
        throw new Error(`ATTACK SUCCEEDED: the api role queued a ${kind} (${JSON.stringify(row)})`);
      expect(err).toMatch(/request_transfer|permission denied/);
    });
  }
  it("the api role cannot insert outgoing_transfers directly", async () => {
    const err = await asApi((trx) =>
      sql`insert into outgoing_transfers (intent_id, kind, network, environment, asset, from_index, to_address, amount)
          values ('api_direct', 'resource_delegation', ${TRC}, 'sandbox', 'energy', 2, ${ATTACKER}, 7000000)`.execute(
        trx,
      ),
    );
    if (!err) throw new Error("ATTACK SUCCEEDED: the api role inserted a delegation intent");
    expect(err).toMatch(/permission denied/);
    expect(
      await db.selectFrom("outgoing_transfers").select("intent_id").where("status", "in", OPEN).execute(),
    ).toEqual([]);
  });
});
