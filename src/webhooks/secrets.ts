import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import type { Db } from "../db/database.js";
import type { WebhookEndpointRow } from "../db/tables/webhooks.js";
import { inTransaction } from "../db/transaction.js";
import { ENVIRONMENTS, type Environment } from "../domain/environment.js";
import type { SecretBox } from "../lib/secret-box.js";
import { SECRET_PREFIX } from "./signing.js";

/**
 * Webhook secrets: one per merchant × environment (docs/merchants/webhooks.md#secret-rotation), sealed at rest with SecretBox
 * (AES-256-GCM under SECRET_ENCRYPTION_KEY, bound to the row by its associated data), masked on
 * read, returned in full once on rotation. After a rotation the previous secret keeps signing the
 * Standard Webhooks header for 24 h.
 */

export const PREVIOUS_SECRET_GRACE_MS = 24 * 3600_000;

export function generateWebhookSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(32).toString("base64")}`;
}

/** All `*` but the last 8 characters (docs/api-reference.md#getwebhooksecret). */
export function maskSecret(secret: string): string {
  return "*".repeat(Math.max(0, secret.length - 8)) + secret.slice(-8);
}

function associatedData(merchantId: string, environment: Environment): string {
  return `webhook:${merchantId}:${environment}`;
}

/**
 * Creates the endpoint rows of a new merchant (both environments) inside the caller's transaction,
 * with a sealed secret each when the encryption key is at hand (else generated on first use).
 */
export async function createWebhookEndpoints(trx: Db, merchantId: string, box?: SecretBox): Promise<void> {
  await trx
    .insertInto("webhook_endpoints")
    .values(
      ENVIRONMENTS.map((environment) => ({
        merchant_id: merchantId,
        environment,
        url: null,
        secret_sealed: box?.seal(generateWebhookSecret(), associatedData(merchantId, environment)) ?? null,
        previous_secret_sealed: null,
        previous_secret_expires_at: null,
        secret_rotated_at: null,
      })),
    )
    .onConflict((oc) => oc.columns(["merchant_id", "environment"]).doNothing())
    .execute();
}

/** The endpoint row, created (and its secret generated) if missing: merchants made before 0003 or without the key. */
export async function ensureEndpoint(
  db: Db,
  box: SecretBox,
  merchantId: string,
  environment: Environment,
): Promise<WebhookEndpointRow> {
  const row = await db
    .selectFrom("webhook_endpoints")
    .selectAll()
    .where("merchant_id", "=", merchantId)
    .where("environment", "=", environment)
    .executeTakeFirst();
  if (row?.secret_sealed) return row;
  const sealed = box.seal(generateWebhookSecret(), associatedData(merchantId, environment));
  // Concurrent first uses: exactly one generated secret wins (insert-or-fill only when still empty).
  await db
    .insertInto("webhook_endpoints")
    .values({ merchant_id: merchantId, environment, secret_sealed: sealed, url: null })
    .onConflict((oc) =>
      oc
        .columns(["merchant_id", "environment"])
        .doUpdateSet({ secret_sealed: sealed, updated_at: sql`now()` })
        .where("webhook_endpoints.secret_sealed", "is", null),
    )
    .execute();
  return db
    .selectFrom("webhook_endpoints")
    .selectAll()
    .where("merchant_id", "=", merchantId)
    .where("environment", "=", environment)
    .executeTakeFirstOrThrow();
}

export interface SigningSecrets {
  current: string;
  /** Present during the 24 h after a rotation. */
  previous: string | undefined;
}

/** Opens the secrets of an endpoint row; `now` decides whether the previous one still counts. */
export function openSecrets(box: SecretBox, row: WebhookEndpointRow, now: Date): SigningSecrets {
  if (!row.secret_sealed) throw new Error("webhook endpoint without a secret");
  const ad = associatedData(row.merchant_id, row.environment);
  const previous =
    row.previous_secret_sealed && row.previous_secret_expires_at && row.previous_secret_expires_at > now
      ? box.open(row.previous_secret_sealed, ad)
      : undefined;
  return { current: box.open(row.secret_sealed, ad), previous };
}

export async function readWebhookSecret(
  db: Db,
  box: SecretBox,
  merchantId: string,
  environment: Environment,
): Promise<string> {
  const row = await ensureEndpoint(db, box, merchantId, environment);
  return openSecrets(box, row, new Date()).current;
}

/**
 * Replaces the secret; the replaced one stays valid (Standard Webhooks signature) for 24 h.
 * Row-locked so two concurrent rotations do not lose a secret. Returns the new secret in full.
 */
export async function rotateWebhookSecret(
  db: Db,
  box: SecretBox,
  merchantId: string,
  environment: Environment,
  now: Date,
): Promise<string> {
  await ensureEndpoint(db, box, merchantId, environment);
  return inTransaction(db, async (trx) => {
    const row = await trx
      .selectFrom("webhook_endpoints")
      .selectAll()
      .where("merchant_id", "=", merchantId)
      .where("environment", "=", environment)
      .forUpdate()
      .executeTakeFirstOrThrow();
    const secret = generateWebhookSecret();
    await trx
      .updateTable("webhook_endpoints")
      .set({
        secret_sealed: box.seal(secret, associatedData(merchantId, environment)),
        previous_secret_sealed: row.secret_sealed,
        previous_secret_expires_at: new Date(now.getTime() + PREVIOUS_SECRET_GRACE_MS),
        secret_rotated_at: now,
        updated_at: now,
      })
      .where("merchant_id", "=", merchantId)
      .where("environment", "=", environment)
      .execute();
    return secret;
  });
}

export async function setWebhookUrl(
  db: Db,
  box: SecretBox,
  merchantId: string,
  environment: Environment,
  url: string,
): Promise<void> {
  await ensureEndpoint(db, box, merchantId, environment);
  await db
    .updateTable("webhook_endpoints")
    .set({ url, updated_at: sql`now()` })
    .where("merchant_id", "=", merchantId)
    .where("environment", "=", environment)
    .execute();
}
