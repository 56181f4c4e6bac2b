import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import { compiledByShape } from "../db/compiled.js";
import type { Db } from "../db/database.js";
import { paginate } from "../db/paginate.js";
import { PREPARED } from "../db/prepared.js";
import type { ApiKeyRow } from "../db/schema.js";
import { formatCredential, hashSecret } from "../domain/api-key-format.js";
import type { Environment } from "../domain/environment.js";
import { AppError } from "../domain/errors.js";
import { newId } from "../domain/ids.js";
import { Coalescer } from "../lib/coalescer.js";

/**
 * SQL of `api_keys`: the per-request lookup of the API-key channel, and the dashboard's key
 * management (CONTRACT §6): create per environment (secret shown once), list (never secrets),
 * rotate (new pair; the old one is dead at once), revoke.
 */

export interface KeyPair {
  id: string;
  environment: Environment;
  apiKey: string;
  /** Shown once; only its hash is stored. */
  apiSecret: string;
}

export interface ApiKeyLookup {
  id: string;
  merchantId: string;
  environment: Environment;
  secretHash: Buffer;
  status: "active" | "revoked";
  revokedReason: "revoked" | "rotated" | null;
  merchantStatus: "active" | "suspended";
  ipAllowlist: string[];
}

/**
 * The lookup behind every authenticated request, for one or many keys (`= any($1)`: one text for
 * any count): prepared per connection, built once per process.
 */
const lookup = compiledByShape((db: Db, r: { k: { api_keys: string[] } }) =>
  db
    .selectFrom("api_keys as k")
    .innerJoin("merchants as m", "m.id", "k.merchant_id")
    .leftJoin("merchant_settings as s", (j) =>
      j.onRef("s.merchant_id", "=", "k.merchant_id").onRef("s.environment", "=", "k.environment"),
    )
    .select([
      "k.id",
      "k.api_key",
      "k.merchant_id",
      "k.environment",
      "k.secret_hash",
      "k.status",
      "k.revoked_reason",
      "m.status as merchant_status",
      "s.ip_allowlist",
    ])
    .where("k.api_key", "=", sql<string>`any(${r.k.api_keys}::text[])`)
    .modifyEnd(PREPARED),
);

/** Key, merchant status and allowlist of each key, in one indexed round trip (unknown keys: undefined). */
export async function findApiKeys(db: Db, apiKeys: string[]): Promise<(ApiKeyLookup | undefined)[]> {
  // Concurrent requests often carry the same key: each distinct key is sent once.
  const { rows } = await lookup(db, { k: { api_keys: [...new Set(apiKeys)] } });
  const byKey = new Map<string, ApiKeyLookup>();
  for (const row of rows) {
    byKey.set(row.api_key, {
      id: row.id,
      merchantId: row.merchant_id,
      environment: row.environment,
      secretHash: Buffer.from(row.secret_hash),
      status: row.status,
      revokedReason: row.revoked_reason,
      merchantStatus: row.merchant_status,
      ipAllowlist: row.ip_allowlist ?? [],
    });
  }
  return apiKeys.map((k) => byKey.get(k));
}

/**
 * The API-key lookups of one process, coalesced: requests that arrive while a lookup is in flight
 * share the next statement (up to 64 keys). No cache: every request's key is read by a statement
 * sent after the request arrived, so a revocation committed before it is seen (decision 15a).
 */
export class ApiKeyLookups {
  readonly #batches: Coalescer<string, ApiKeyLookup | undefined>;

  constructor(db: Db, options: { maxInFlight?: number } = {}) {
    this.#batches = new Coalescer((keys) => findApiKeys(db, keys), {
      maxBatch: 64,
      maxInFlight: options.maxInFlight ?? 2,
      splitOnError: false,
    });
  }

  find(apiKey: string): Promise<ApiKeyLookup | undefined> {
    return this.#batches.submit(apiKey);
  }
}

export interface NewApiKey {
  id: string;
  merchantId: string;
  environment: Environment;
  apiKey: string;
  secretHash: Buffer;
  secretHint: string;
}

export async function insertApiKey(db: Db, k: NewApiKey): Promise<void> {
  await db
    .insertInto("api_keys")
    .values({
      id: k.id,
      merchant_id: k.merchantId,
      environment: k.environment,
      api_key: k.apiKey,
      secret_hash: k.secretHash,
      secret_hint: k.secretHint,
      revoked_reason: null,
      replaced_by: null,
      revoked_at: null,
    })
    .execute();
}

/** Revokes an active key; returns false when it was not active (already revoked or unknown). */
export async function revokeApiKey(
  db: Db,
  id: string,
  reason: "revoked" | "rotated",
  replacedBy: string | null = null,
): Promise<boolean> {
  const res = await db
    .updateTable("api_keys")
    .set({ status: "revoked", revoked_reason: reason, replaced_by: replacedBy, revoked_at: new Date() })
    .where("id", "=", id)
    .where("status", "=", "active")
    .executeTakeFirst();
  return res.numUpdatedRows === 1n;
}

/** Generates a fresh key pair for an environment and stores the key and the secret's hash. */
export async function issueKeyPair(db: Db, merchantId: string, environment: Environment): Promise<KeyPair> {
  const apiKey = formatCredential("key", environment, randomBytes(32));
  const apiSecret = formatCredential("secret", environment, randomBytes(32));
  const id = newId("key");
  await insertApiKey(db, {
    id,
    merchantId,
    environment,
    apiKey,
    secretHash: hashSecret(apiSecret),
    secretHint: apiSecret.slice(-4),
  });
  return { id, environment, apiKey, apiSecret };
}

export function listApiKeys(
  db: Db,
  merchantId: string,
  environment: Environment,
  page: { limit: number; offset: number },
): Promise<{ rows: ApiKeyRow[]; total: number }> {
  const filtered = db
    .selectFrom("api_keys")
    .where("merchant_id", "=", merchantId)
    .where("environment", "=", environment);
  return paginate(filtered, page, (q) => q.selectAll().orderBy("created_at", "desc").orderBy("id", "desc"));
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
