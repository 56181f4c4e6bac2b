import { randomBytes } from "node:crypto";
import type { Db } from "../db/database.js";
import { formatCredential, hashSecret } from "../domain/api-key-format.js";
import { ENVIRONMENTS, type Environment } from "../domain/environment.js";
import { AppError, type FieldError } from "../domain/errors.js";
import { newId } from "../domain/ids.js";
import type { SecretBox } from "../lib/secret-box.js";
import { insertApiKey } from "../repositories/api-keys.js";
import { findMerchantByEmail, insertDefaultSettings, insertMerchant } from "../repositories/merchants.js";
import { createWebhookEndpoints } from "../webhooks/secrets.js";

export interface KeyPair {
  id: string;
  environment: Environment;
  apiKey: string;
  /** Shown once; only its hash is stored. */
  apiSecret: string;
}

export interface CreatedMerchant {
  id: string;
  email: string;
  companyName: string;
  createdAt: Date;
  keys: KeyPair[];
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export function validateMerchantInput(input: { email: string; companyName: string }): FieldError[] {
  const errors: FieldError[] = [];
  const email = input.email.trim();
  if (email.length > 254 || !EMAIL.test(email))
    errors.push({ field: "email", message: "must be an e-mail address" });
  const company = input.companyName.trim();
  if (company.length < 1 || company.length > 200) {
    errors.push({ field: "companyName", message: "must be 1 to 200 characters" });
  }
  return errors;
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

/**
 * Creates a merchant with its settings and one key pair per environment, in one transaction.
 * Used by the operator command now and by dashboard registration later.
 */
export async function createMerchantWithKeys(
  db: Db,
  input: { email: string; companyName: string },
  /** Runs inside the same transaction after the merchant row exists (dashboard registration adds its login). */
  within?: (trx: Db, merchantId: string) => Promise<void>,
  /** Seals the webhook secrets created here; without it they are generated on first use (webhooks decision 1). */
  webhookSecretBox?: SecretBox,
): Promise<CreatedMerchant> {
  const errors = validateMerchantInput(input);
  if (errors.length > 0) throw AppError.validation(errors);
  const email = input.email.trim();
  const taken = () => AppError.validation([{ field: "email", message: "is already registered" }]);
  try {
    return await db.transaction().execute(async (trx) => {
      if (await findMerchantByEmail(trx, email)) throw taken();
      const merchant = await insertMerchant(trx, {
        id: newId("mer"),
        email,
        companyName: input.companyName.trim(),
      });
      const keys: KeyPair[] = [];
      for (const env of ENVIRONMENTS) {
        await insertDefaultSettings(trx, merchant.id, env);
        keys.push(await issueKeyPair(trx, merchant.id, env));
      }
      await createWebhookEndpoints(trx, merchant.id, webhookSecretBox);
      if (within) await within(trx, merchant.id);
      return {
        id: merchant.id,
        email: merchant.email,
        companyName: merchant.company_name,
        createdAt: merchant.created_at,
        keys,
      };
    });
  } catch (err) {
    // Two registrations of one e-mail racing: the unique index decides, the loser gets a 400.
    if ((err as { code?: string }).code === "23505") throw taken();
    throw err;
  }
}
