import { compiledByShape } from "../db/compiled.js";
import type { Db } from "../db/database.js";
import { PREPARED } from "../db/prepared.js";
import type { Environment } from "../domain/environment.js";

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

/** The lookup behind every authenticated request: prepared per connection, built once per process. */
const lookup = compiledByShape((db: Db, r: { k: { api_key: string } }) =>
  db
    .selectFrom("api_keys as k")
    .innerJoin("merchants as m", "m.id", "k.merchant_id")
    .leftJoin("merchant_settings as s", (j) =>
      j.onRef("s.merchant_id", "=", "k.merchant_id").onRef("s.environment", "=", "k.environment"),
    )
    .select([
      "k.id",
      "k.merchant_id",
      "k.environment",
      "k.secret_hash",
      "k.status",
      "k.revoked_reason",
      "m.status as merchant_status",
      "s.ip_allowlist",
    ])
    .where("k.api_key", "=", r.k.api_key)
    .modifyEnd(PREPARED),
);

/** One indexed round trip per authenticated request: key, merchant status and the allowlist. */
export async function findApiKey(db: Db, apiKey: string): Promise<ApiKeyLookup | undefined> {
  const row = (await lookup(db, { k: { api_key: apiKey } })).rows[0];
  if (!row) return undefined;
  return {
    id: row.id,
    merchantId: row.merchant_id,
    environment: row.environment,
    secretHash: Buffer.from(row.secret_hash),
    status: row.status,
    revokedReason: row.revoked_reason,
    merchantStatus: row.merchant_status,
    ipAllowlist: row.ip_allowlist ?? [],
  };
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
