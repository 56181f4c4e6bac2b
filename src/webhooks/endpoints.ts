import type { AuditRecorder } from "../audit/index.js";
import type { Config } from "../config/config.js";
import type { Db } from "../db/database.js";
import { inTransaction } from "../db/transaction.js";
import type { Environment } from "../domain/environment.js";
import { AppError } from "../domain/errors.js";
import type { SecretBox } from "../lib/secret-box.js";
import { maskSecret, readWebhookSecret, rotateWebhookSecret, setWebhookUrl } from "./secrets.js";
import { validateWebhookUrl } from "./ssrf.js";

/**
 * The endpoint of a merchant × environment as the merchant manages it (docs/api-reference.md#webhooks): its URL, its
 * secret masked, and the secret's rotation. The rows and their sealing are `secrets.ts`.
 */

export interface EndpointDeps {
  db: Db;
  box: SecretBox;
  webhooks: Pick<Config["webhooks"], "ssrfAllowCidrs" | "allowedPorts">;
}

/** Sets the webhook URL after validating it (scheme, host, public addresses, port); 400 if invalid. */
export async function setEndpointUrl(
  deps: EndpointDeps,
  merchantId: string,
  environment: Environment,
  webhookUrl: string,
  audit?: AuditRecorder,
): Promise<void> {
  const errors = await validateWebhookUrl(webhookUrl, {
    environment,
    allowCidrs: deps.webhooks.ssrfAllowCidrs,
    allowedPorts: deps.webhooks.allowedPorts,
  });
  if (errors.length > 0) throw AppError.validation(errors);
  await inTransaction(deps.db, async (trx) => {
    await setWebhookUrl(trx, deps.box, merchantId, environment, webhookUrl);
    await audit?.record(trx);
  });
}

/** The current secret, all `*` but its last 8 characters. */
export async function maskedEndpointSecret(
  deps: Pick<EndpointDeps, "db" | "box">,
  merchantId: string,
  environment: Environment,
): Promise<string> {
  return maskSecret(await readWebhookSecret(deps.db, deps.box, merchantId, environment));
}

/** A new secret (returned in full, this once); the previous one keeps signing for the grace period. */
export function rotateEndpointSecret(
  deps: Pick<EndpointDeps, "db" | "box">,
  merchantId: string,
  environment: Environment,
  audit?: AuditRecorder,
): Promise<string> {
  return inTransaction(deps.db, async (trx) => {
    const secret = await rotateWebhookSecret(trx, deps.box, merchantId, environment, new Date());
    await audit?.record(trx);
    return secret;
  });
}
