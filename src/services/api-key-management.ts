import type { Db } from "../db/database.js";
import type { ApiKeyRow } from "../db/schema.js";
import type { Environment } from "../domain/environment.js";
import { AppError } from "../domain/errors.js";
import { revokeApiKey } from "../repositories/api-keys.js";
import { issueKeyPair, type KeyPair } from "./merchants.js";

/**
 * Dashboard key management (CONTRACT §6): create per environment (secret shown once), list
 * (never secrets), rotate (new pair; the old one is dead at once), revoke.
 */

export async function listApiKeys(
  db: Db,
  merchantId: string,
  environment: Environment,
  page: { limit: number; offset: number },
): Promise<{ rows: ApiKeyRow[]; total: number }> {
  const base = db
    .selectFrom("api_keys")
    .where("merchant_id", "=", merchantId)
    .where("environment", "=", environment);
  const [rows, count] = await Promise.all([
    base
      .selectAll()
      .orderBy("created_at", "desc")
      .orderBy("id", "desc")
      .limit(page.limit)
      .offset(page.offset)
      .execute(),
    base.select((eb) => eb.fn.countAll<string>().as("n")).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.n) };
}

export async function findOwnApiKey(db: Db, merchantId: string, id: string): Promise<ApiKeyRow> {
  const row = await db
    .selectFrom("api_keys")
    .selectAll()
    .where("id", "=", id)
    .where("merchant_id", "=", merchantId)
    .executeTakeFirst();
  if (!row) throw AppError.notFound("No such API key.");
  return row;
}

export function createApiKey(db: Db, merchantId: string, environment: Environment): Promise<KeyPair> {
  return issueKeyPair(db, merchantId, environment);
}

/** New pair of the same environment; the old one stops working in the same transaction. */
export async function rotateApiKey(db: Db, merchantId: string, id: string): Promise<KeyPair> {
  return db.transaction().execute(async (trx) => {
    const old = await findOwnApiKey(trx, merchantId, id);
    if (old.status !== "active") throw new AppError("INVALID_STATE", "This API key pair is already revoked.");
    const pair = await issueKeyPair(trx, merchantId, old.environment);
    if (!(await revokeApiKey(trx, old.id, "rotated", pair.id))) {
      throw new AppError("INVALID_STATE", "This API key pair is already revoked.");
    }
    return pair;
  });
}

export async function revokeOwnApiKey(db: Db, merchantId: string, id: string): Promise<ApiKeyRow> {
  const key = await findOwnApiKey(db, merchantId, id);
  if (!(await revokeApiKey(db, key.id, "revoked"))) {
    throw new AppError("INVALID_STATE", "This API key pair is already revoked.");
  }
  return findOwnApiKey(db, merchantId, id);
}
