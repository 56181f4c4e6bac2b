import type { Db } from "../db/database.js";
import type { Merchant } from "../db/schema.js";
import type { Environment } from "../domain/environment.js";

export async function insertMerchant(
  db: Db,
  m: { id: string; email: string; companyName: string },
): Promise<Merchant> {
  return db
    .insertInto("merchants")
    .values({ id: m.id, email: m.email, company_name: m.companyName })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function findMerchantById(db: Db, id: string): Promise<Merchant | undefined> {
  return db.selectFrom("merchants").selectAll().where("id", "=", id).executeTakeFirst();
}

export async function findMerchantByEmail(db: Db, email: string): Promise<Merchant | undefined> {
  return db
    .selectFrom("merchants")
    .selectAll()
    .where((eb) => eb(eb.fn("lower", ["email"]), "=", email.toLowerCase()))
    .executeTakeFirst();
}

export async function insertDefaultSettings(
  db: Db,
  merchantId: string,
  environment: Environment,
): Promise<void> {
  await db
    .insertInto("merchant_settings")
    .values({ merchant_id: merchantId, environment })
    .onConflict((oc) => oc.columns(["merchant_id", "environment"]).doNothing())
    .execute();
}
