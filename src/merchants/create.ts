import type { Db } from "../db/database.js";
import { ENVIRONMENTS } from "../domain/environment.js";
import { AppError, type FieldError } from "../domain/errors.js";
import { newId } from "../domain/ids.js";
import type { SecretBox } from "../lib/secret-box.js";
import { createWebhookEndpoints } from "../webhooks/index.js";
import { assignUnownedKeysToOwner, issueKeyPair, type KeyPair } from "./api-keys.js";
import { findMerchantByEmail, insertDefaultSettings, insertMerchant } from "./store.js";

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
        keys.push(await issueKeyPair(trx, merchant.id, env, null));
      }
      await createWebhookEndpoints(trx, merchant.id, webhookSecretBox);
      let owner: string | null = null;
      if (within) {
        await within(trx, merchant.id);
        // Registration made the owner's login: the pairs act for it (docs/permissions.md). From the CLI,
        // without a member, they stay the operator's: the owner's, whoever that is when used.
        owner = await assignUnownedKeysToOwner(trx, merchant.id);
      }
      return {
        id: merchant.id,
        email: merchant.email,
        companyName: merchant.company_name,
        createdAt: merchant.created_at,
        keys: keys.map((k) => ({ ...k, createdBy: owner })),
      };
    });
  } catch (err) {
    // Two registrations of one e-mail racing: the unique index decides, the loser gets a 400.
    if ((err as { code?: string }).code === "23505") throw taken();
    throw err;
  }
}
