import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import { compiledByShape } from "../db/compiled.js";
import type { Db } from "../db/database.js";
import { paginate } from "../db/paginate.js";
import { PREPARED } from "../db/prepared.js";
import type { ApiKeyRow } from "../db/schema.js";
import { inTransaction } from "../db/transaction.js";
import { formatCredential, hashSecret } from "../domain/api-key-format.js";
import type { Environment } from "../domain/environment.js";
import { AppError } from "../domain/errors.js";
import { newId } from "../domain/ids.js";
import type { MemberRole } from "../domain/permissions.js";
import { Coalescer } from "../lib/coalescer.js";

/**
 * SQL of `api_keys`: the per-request lookup of the API-key channel, and the dashboard's key
 * management (docs/permissions.md): create per environment (secret shown once), list (never secrets),
 * rotate (new pair; the old one is dead at once), revoke.
 */

export interface KeyPair {
  id: string;
  environment: Environment;
  apiKey: string;
  /** Shown once; only its hash is stored. */
  apiSecret: string;
  /** The member the pair acts for (its creator); null: issued by the operator, the owner's. */
  createdBy: string | null;
}

/**
 * The member a key pair acts for, as read with the key (docs/permissions.md): a current member with its
 * role; a member no longer in the merchant (`removed`: the pair stops until reassigned); or, for a
 * pair the operator issued to a merchant without members, the merchant itself (`merchant`: acts
 * with the owner's role, as it has no person to be scoped to).
 */
export type KeyHolder =
  | { status: "member"; userId: string; email: string; role: MemberRole }
  | { status: "removed"; userId: string }
  | { status: "merchant" };

export interface ApiKeyLookup {
  id: string;
  merchantId: string;
  environment: Environment;
  secretHash: Buffer;
  status: "active" | "revoked";
  revokedReason: "revoked" | "rotated" | null;
  merchantStatus: "active" | "suspended";
  ipAllowlist: string[];
  holder: KeyHolder;
}

/**
 * The lookup behind every authenticated request, for one or many keys (`= any($1)`: one text for
 * any count): prepared per connection, built once per process. One indexed round trip: the key
 * (unique), its merchant and settings (primary keys), the member it acts for (`created_by`, primary
 * key) and, for a pair without one, the merchant's owner (the partial unique index of owners).
 */
const lookup = compiledByShape((db: Db, r: { k: { api_keys: string[] } }) =>
  db
    .selectFrom("api_keys as k")
    .innerJoin("merchants as m", "m.id", "k.merchant_id")
    .leftJoin("merchant_settings as s", (j) =>
      j.onRef("s.merchant_id", "=", "k.merchant_id").onRef("s.environment", "=", "k.environment"),
    )
    .leftJoin("dashboard_users as c", "c.id", "k.created_by")
    .leftJoin("dashboard_users as o", (j) =>
      j
        .on("k.created_by", "is", null)
        .onRef("o.merchant_id", "=", "k.merchant_id")
        .on("o.member_role", "=", "owner")
        .on("o.removed_at", "is", null),
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
      "k.created_by",
      "c.merchant_id as creator_merchant_id",
      "c.member_role as creator_role",
      "c.removed_at as creator_removed_at",
      "c.email as creator_email",
      "o.id as owner_id",
      "o.email as owner_email",
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
      holder: holderOf(row),
    });
  }
  return apiKeys.map((k) => byKey.get(k));
}

function holderOf(row: {
  merchant_id: string;
  created_by: string | null;
  creator_merchant_id: string | null;
  creator_role: MemberRole | null;
  creator_removed_at: Date | null;
  creator_email: string | null;
  owner_id: string | null;
  owner_email: string | null;
}): KeyHolder {
  if (row.created_by === null) {
    return row.owner_id !== null && row.owner_email !== null
      ? { status: "member", userId: row.owner_id, email: row.owner_email, role: "owner" }
      : { status: "merchant" };
  }
  // A login of another merchant (never written so; checked anyway), a removed member, or a login
  // without a member role (a platform admin) is no member here.
  if (
    row.creator_merchant_id !== row.merchant_id ||
    row.creator_removed_at !== null ||
    row.creator_role === null ||
    row.creator_email === null
  )
    return { status: "removed", userId: row.created_by };
  return { status: "member", userId: row.created_by, email: row.creator_email, role: row.creator_role };
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
  /** The member the pair acts for; null: the operator's pair for a merchant without members. */
  createdBy: string | null;
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
      created_by: k.createdBy,
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
export async function issueKeyPair(
  db: Db,
  merchantId: string,
  environment: Environment,
  createdBy: string | null,
): Promise<KeyPair> {
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
    createdBy,
  });
  return { id, environment, apiKey, apiSecret, createdBy };
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

/**
 * A new pair of the member `createdBy`: it acts for that member (docs/permissions.md). Null only for the
 * operator's pairs of a merchant without members (they act with the owner's role).
 */
export function createApiKey(
  db: Db,
  merchantId: string,
  environment: Environment,
  createdBy: string | null,
): Promise<KeyPair> {
  return issueKeyPair(db, merchantId, environment, createdBy);
}

/**
 * New pair of the same environment; the old one stops working in the same transaction. The new
 * pair acts for the member who rotated it (`rotatedBy`, who receives its secret), not for the old
 * pair's member: rotating someone else's pair never hands over that member's role.
 */
export async function rotateApiKey(
  db: Db,
  merchantId: string,
  id: string,
  rotatedBy: string | null,
): Promise<KeyPair> {
  return inTransaction(db, async (trx) => {
    const old = await findOwnApiKey(trx, merchantId, id);
    if (old.status !== "active") throw new AppError("INVALID_STATE", "This API key pair is already revoked.");
    const pair = await issueKeyPair(trx, merchantId, old.environment, rotatedBy);
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

/** A key pair of the merchant locked for a change (404 for anyone else's). */
export async function lockOwnApiKey(trx: Db, merchantId: string, id: string): Promise<ApiKeyRow> {
  const row = await trx
    .selectFrom("api_keys")
    .selectAll()
    .where("id", "=", id)
    .where("merchant_id", "=", merchantId)
    .forUpdate()
    .executeTakeFirst();
  if (!row) throw AppError.notFound("No such API key.");
  return row;
}

/**
 * Hands a pair to `userId` (the caller checked who may; under `lockOwnApiKey`): a pair acts for
 * whoever holds its secret, so it gets a new secret, shown once to `userId` in the returned pair,
 * and the old secret stops at once. The public key and id stay, so a front-end that embeds the key
 * keeps working.
 */
export async function setApiKeyHolder(trx: Db, id: string, userId: string): Promise<KeyPair> {
  const row = await trx
    .selectFrom("api_keys")
    .select(["environment"])
    .where("id", "=", id)
    .executeTakeFirstOrThrow();
  const apiSecret = formatCredential("secret", row.environment, randomBytes(32));
  const updated = await trx
    .updateTable("api_keys")
    .set({ created_by: userId, secret_hash: hashSecret(apiSecret), secret_hint: apiSecret.slice(-4) })
    .where("id", "=", id)
    .returning(["id", "environment", "api_key", "created_by"])
    .executeTakeFirstOrThrow();
  return {
    id: updated.id,
    environment: updated.environment,
    apiKey: updated.api_key,
    apiSecret,
    createdBy: updated.created_by,
  };
}

/**
 * The pairs of a merchant that no member created (registration issues them before its owner's
 * login exists) become the owner's, if the merchant has one (docs/permissions.md). Migration 0024 did the
 * same for the pairs that existed before. Returns the owner (null: none).
 */
export async function assignUnownedKeysToOwner(trx: Db, merchantId: string): Promise<string | null> {
  const rows = await trx
    .updateTable("api_keys")
    .set((eb) => ({
      created_by: eb
        .selectFrom("dashboard_users")
        .select("id")
        .where("merchant_id", "=", merchantId)
        .where("member_role", "=", "owner")
        .where("removed_at", "is", null),
    }))
    .where("merchant_id", "=", merchantId)
    .where("created_by", "is", null)
    .returning("created_by")
    .execute();
  return rows[0]?.created_by ?? null;
}
