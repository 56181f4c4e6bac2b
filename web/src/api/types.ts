/**
 * The dashboard's view of the API: the named schemas of the OpenAPI document, generated from the
 * route schemas (`npm run api:generate` → packages/sdk/src/generated/api.ts), never typed by hand.
 */
import type { components, paths } from "../../../packages/sdk/src/generated/api";

type Schemas = components["schemas"];
/** The `data` of an operation's 200 answer. */
type DataOf<P extends keyof paths, M extends "get" | "post"> = paths[P][M] extends {
  responses: { 200: { content: { "application/json": { data: infer D } } } };
}
  ? D
  : never;

export const CURRENCIES = ["USDT-TRC20", "USDT-ERC20"] as const satisfies readonly Schemas["CurrencyType"][];
export type CurrencyType = Schemas["CurrencyType"];
export const TX_TYPES = [
  "deposit",
  "withdrawal",
  "payout",
] as const satisfies readonly Schemas["TransactionType"][];
export const TX_STATUSES = [
  "pending",
  "processing",
  "confirmed",
  "completed",
  "failed",
  "rejected",
] as const satisfies readonly Schemas["TransactionStatus"][];

export type AuditRecord = Schemas["AuditRecord"];
export const AUDIT_ACTIONS = [
  "auth.sign_in",
  "auth.sign_in_failed",
  "auth.password_change",
  "auth.password_reset",
  "auth.two_factor_enable",
  "auth.two_factor_disable",
  "api_key.create",
  "api_key.rotate",
  "api_key.reassign",
  "api_key.revoke",
  "settings.update",
  "webhook.url_update",
  "webhook.secret_rotate",
  "payout.create",
  "withdrawal.approve",
  "withdrawal.reject",
  "export.transactions",
  "member.invite",
  "member.invitation_revoke",
  "member.join",
  "member.role_change",
  "member.remove",
  "ownership.transfer",
] as const satisfies readonly Schemas["AuditAction"][];
export type AuditAction = Schemas["AuditAction"];
/** Each action in words (the filter's options and the log's rows); the code stays visible too. */
export const AUDIT_LABELS: Record<AuditAction, string> = {
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
  "webhook.url_update": "Webhook URL changed",
  "webhook.secret_rotate": "Webhook secret rotated",
  "payout.create": "Payout sent",
  "withdrawal.approve": "Withdrawal approved",
  "withdrawal.reject": "Withdrawal rejected",
  "export.transactions": "Transactions exported",
  "member.invite": "Member invited",
  "member.invitation_revoke": "Invitation revoked",
  "member.join": "Member joined",
  "member.role_change": "Member's role changed",
  "member.remove": "Member removed",
  "ownership.transfer": "Ownership transferred",
};

export type User = Schemas["User"];
export type Me = DataOf<"/api/v1/auth/me", "get">;
export type KeyPair = Schemas["NewApiKeyPair"];
export type ApiKey = Schemas["ApiKey"];
export type Balance = Schemas["Balance"];
export type Transaction = Schemas["Transaction"];
export type VolumePoint = Schemas["VolumePoint"];
export type CheckoutSession = Schemas["CheckoutSession"];
export type Withdrawal = Schemas["Withdrawal"];
export type Payout = Schemas["Payout"];
export type WebhookEvent = Schemas["WebhookEvent"];
export type DeliveryStatus = WebhookEvent["deliveryStatus"];
export type WebhookAttempt = Schemas["WebhookDeliveryAttempt"];
export type Settings = Schemas["Settings"];
export type Mail = Schemas["DevMail"];
export type Member = Schemas["Member"];
export type Invitation = Schemas["Invitation"];
