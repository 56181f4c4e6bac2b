/**
 * The dashboard's view of the API: the named schemas of the OpenAPI document, generated from the
 * route schemas (`npm run api:generate` → packages/sdk/src/generated/api.ts), never typed by hand;
 * the values of its enumerations likewise (→ packages/sdk/src/generated/enums.ts), never listed by
 * hand: a caption per value is keyed by the generated type, so a new value fails the typecheck.
 */
import type { components, paths } from "../../../packages/sdk/src/generated/api";

export {
  AUDIT_ACTIONS,
  CURRENCY_TYPES,
  TRANSACTION_STATUSES,
  TRANSACTION_TYPES,
  WITHDRAWAL_STATUSES,
} from "../../../packages/sdk/src/generated/enums";

type Schemas = components["schemas"];
/** The `data` of an operation's 200 answer. */
type DataOf<P extends keyof paths, M extends "get" | "post"> = paths[P][M] extends {
  responses: { 200: { content: { "application/json": { data: infer D } } } };
}
  ? D
  : never;

export type CurrencyType = Schemas["CurrencyType"];
/** How a network's addresses look: `evm` (0x…, the same on every EVM network) or `tron` (T…). */
export type ChainFamily = Schemas["ChainFamily"];
/** An enabled currency type of the environment, as `/api/v1/dashboard/currencies` lists it. */
export type Currency = DataOf<"/api/v1/dashboard/currencies", "get">[number];
export type TransactionStatus = Schemas["TransactionStatus"];
export type WithdrawalStatus = Schemas["WithdrawalStatus"];

export type AuditRecord = Schemas["AuditRecord"];
export type AuditAction = Schemas["AuditAction"];
/** Each action in words (the filter's options and the log's rows); the code stays visible too. */
export const AUDIT_LABELS = {
  "auth.sign_in": "Signed in",
  "auth.sign_in_failed": "Failed sign-in",
  "auth.password_change": "Password changed",
  "auth.password_reset": "Password reset by e-mail",
  "auth.two_factor_enable": "Two-factor turned on",
  "auth.two_factor_disable": "Two-factor turned off",
  "api_key.create": "API key pair created",
  "api_key.rotate": "API key pair rotated",
  "api_key.reassign": "API key pair taken over",
  "api_key.revoke": "API key pair revoked",
  "settings.update": "Settings changed",
  "settings.branding_update": "Checkout page branding changed",
  "webhook.url_update": "Webhook URL changed",
  "webhook.secret_rotate": "Webhook secret rotated",
  "payout.create": "Payout sent",
  "withdrawal.approve": "Withdrawal approved",
  "withdrawal.reject": "Withdrawal rejected",
  "deposit.release": "Held deposit released",
  "deposit.return": "Held deposit returned",
  "screening.decision": "Screening decision",
  "export.transactions": "Transactions exported",
  "member.invite": "Member invited",
  "member.invitation_revoke": "Invitation revoked",
  "member.join": "Member joined",
  "member.role_change": "Member's role changed",
  "member.remove": "Member removed",
  "ownership.transfer": "Ownership transferred",
} satisfies Record<AuditAction, string>;

export type User = Schemas["User"];
export type Me = DataOf<"/api/v1/auth/me", "get">;
export type KeyPair = Schemas["NewApiKeyPair"];
export type ApiKey = Schemas["ApiKey"];
export type Balance = Schemas["Balance"];
export type Transaction = Schemas["Transaction"];
export type VolumePoint = Schemas["VolumePoint"];
export type CheckoutSession = Schemas["CheckoutSession"];
/** A reusable page that opens a checkout session per payer (issue #41). */
export type PaymentLink = Schemas["PaymentLink"];
export type Withdrawal = Schemas["Withdrawal"];
export type Payout = Schemas["Payout"];
export type WebhookEvent = Schemas["WebhookEvent"];
export type DeliveryStatus = WebhookEvent["deliveryStatus"];
/** The list order of the API's lists (`order` of their query). */
export type SortOrder = NonNullable<
  NonNullable<paths["/api/v1/dashboard/transactions"]["get"]["parameters"]["query"]>["order"]
>;
export type WebhookAttempt = Schemas["WebhookDeliveryAttempt"];
export type Settings = Schemas["Settings"];
/** The hosted payment page's display name and logo (per merchant). */
export type Branding = Schemas["Branding"];
export type Mail = Schemas["DevMail"];
export type Member = Schemas["Member"];
export type Invitation = Schemas["Invitation"];
