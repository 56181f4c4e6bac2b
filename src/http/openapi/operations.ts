import type { FastifyContextConfig } from "fastify";

/**
 * Names and security of each operation. `operationId`s are what generated clients call their
 * methods, so they are stable: written here once per operation (`METHOD path`); a route not
 * listed (a new one) gets one derived from its method and path (`derivedOperationId`), so no
 * operation is ever without one. Dashboard-channel twins of API-key operations are prefixed
 * `dashboard`, the operator's views `admin`.
 */
const OPERATION_IDS: Record<string, string> = {
  "GET /healthz": "getHealth",
  "GET /readyz": "getReadiness",
  "GET /api/v1/public/account": "getAccount",
  "GET /api/v1/public/balance": "getBalance",
  "GET /api/v1/public/currencies": "listCurrencies",
  "GET /api/v1/public/transactions": "listTransactions",
  "GET /api/v1/public/transactions/{id}": "getTransaction",
  "GET /api/v1/public/exports/transactions.csv": "exportTransactions",
  "POST /checkout/session": "createCheckoutSession",
  "GET /checkout/session/{id}": "getCheckoutSession",
  "POST /wallet/generate": "generateDepositWallet",
  "POST /api/v1/sandbox/checkout/{id}/pay": "sandboxPayCheckoutSession",
  "POST /api/v1/sandbox/wallet/{address}/pay": "sandboxPayDepositWallet",
  "POST /api/v1/public/withdrawal-requests": "createWithdrawalRequest",
  "GET /api/v1/public/withdrawal-requests": "listWithdrawalRequests",
  "GET /api/v1/public/withdrawal-requests/{id}": "getWithdrawalRequest",
  "POST /api/v1/public/withdrawal-requests/{id}/approve": "approveWithdrawalRequest",
  "POST /api/v1/public/withdrawal-requests/{id}/reject": "rejectWithdrawalRequest",
  "GET /api/v1/public/payout/get": "getPayouts",
  "POST /api/v1/webhook/url": "setWebhookUrl",
  "POST /api/v1/webhook/test": "sendTestWebhook",
  "GET /api/v1/webhook/secret": "getWebhookSecret",
  "POST /api/v1/webhook/secret/rotate": "rotateWebhookSecret",
  "POST /api/v1/webhook/retry/{webhookEventId}": "retryWebhookEvent",
  "GET /api/v1/webhook/events": "listWebhookEvents",
  "GET /api/v1/webhook/events/{webhookEventId}": "getWebhookEvent",
  "GET /api/v1/webhook/stream": "streamWebhookDeliveries",
  "POST /api/v1/auth/register": "register",
  "POST /api/v1/auth/login": "login",
  "POST /api/v1/auth/refresh": "refreshSession",
  "POST /api/v1/auth/logout": "logout",
  "GET /api/v1/auth/me": "getCurrentUser",
  "POST /api/v1/auth/password/forgot": "requestPasswordReset",
  "POST /api/v1/auth/password/reset": "resetPassword",
  "POST /api/v1/auth/otp": "requestOtp",
  "POST /api/v1/auth/password/change": "changePassword",
  "POST /api/v1/auth/2fa/setup": "setUpTwoFactor",
  "POST /api/v1/auth/2fa/enable": "enableTwoFactor",
  "POST /api/v1/auth/2fa/disable": "disableTwoFactor",
  "GET /api/v1/dashboard/api-keys": "dashboardListApiKeys",
  "POST /api/v1/dashboard/api-keys": "dashboardCreateApiKey",
  "POST /api/v1/dashboard/api-keys/{id}/rotate": "dashboardRotateApiKey",
  "POST /api/v1/dashboard/api-keys/{id}/reassign": "dashboardReassignApiKey",
  "DELETE /api/v1/dashboard/api-keys/{id}": "dashboardRevokeApiKey",
  "GET /api/v1/dashboard/settings": "dashboardGetSettings",
  "PATCH /api/v1/dashboard/settings": "dashboardUpdateSettings",
  "GET /api/v1/dashboard/settings/branding": "dashboardGetBranding",
  "PATCH /api/v1/dashboard/settings/branding": "dashboardUpdateBranding",
  "GET /api/v1/dashboard/dev/mail": "dashboardListDevMail",
  "GET /api/v1/dashboard/balance": "dashboardGetBalance",
  "GET /api/v1/dashboard/currencies": "dashboardListCurrencies",
  "GET /api/v1/dashboard/transactions": "dashboardListTransactions",
  "GET /api/v1/dashboard/transactions/{id}": "dashboardGetTransaction",
  "GET /api/v1/dashboard/exports/transactions.csv": "dashboardExportTransactions",
  "GET /api/v1/dashboard/audit-log": "dashboardListAuditLog",
  "GET /api/v1/dashboard/members": "dashboardListMembers",
  "PATCH /api/v1/dashboard/members/{id}": "dashboardChangeMemberRole",
  "DELETE /api/v1/dashboard/members/{id}": "dashboardRemoveMember",
  "POST /api/v1/dashboard/members/{id}/transfer-ownership": "dashboardTransferOwnership",
  "GET /api/v1/dashboard/invitations": "dashboardListInvitations",
  "POST /api/v1/dashboard/invitations": "dashboardInviteMember",
  "DELETE /api/v1/dashboard/invitations/{id}": "dashboardRevokeInvitation",
  "POST /api/v1/auth/invitations/accept": "acceptInvitation",
  "GET /api/v1/dashboard/volume": "dashboardGetVolume",
  "GET /api/v1/dashboard/withdrawal-requests": "dashboardListWithdrawalRequests",
  "GET /api/v1/dashboard/withdrawal-requests/{id}": "dashboardGetWithdrawalRequest",
  "POST /api/v1/dashboard/withdrawal-requests/{id}/approve": "dashboardApproveWithdrawalRequest",
  "POST /api/v1/dashboard/withdrawal-requests/{id}/reject": "dashboardRejectWithdrawalRequest",
  "GET /api/v1/dashboard/payouts": "dashboardGetPayouts",
  "POST /api/v1/dashboard/payouts": "dashboardCreatePayout",
  "POST /api/v1/public/payment-links": "createPaymentLink",
  "GET /api/v1/public/payment-links": "listPaymentLinks",
  "GET /api/v1/public/payment-links/{id}": "getPaymentLink",
  "POST /api/v1/public/payment-links/{id}/deactivate": "deactivatePaymentLink",
  "POST /api/v1/dashboard/payment-links": "dashboardCreatePaymentLink",
  "GET /api/v1/dashboard/payment-links": "dashboardListPaymentLinks",
  "GET /api/v1/dashboard/payment-links/{id}": "dashboardGetPaymentLink",
  "POST /api/v1/dashboard/payment-links/{id}/deactivate": "dashboardDeactivatePaymentLink",
  "GET /l/{id}": "getPaymentLinkPage",
  "POST /l/{id}": "payThroughPaymentLink",
  "GET /api/v1/admin/merchants": "adminListMerchants",
  "GET /api/v1/admin/merchants/{id}": "adminGetMerchant",
  "GET /api/v1/admin/transactions": "adminListTransactions",
  "GET /api/v1/admin/transactions/{id}": "adminGetTransaction",
  "GET /api/v1/admin/chain-costs": "adminListChainCosts",
  "GET /pay/{id}": "getPaymentPage",
  "GET /pay/{id}/events": "streamPaymentPageEvents",
  "GET /pay/logo/{file}": "getPaymentPageLogo",
};

const VERBS: Record<string, string> = {
  get: "get",
  post: "create",
  put: "replace",
  patch: "update",
  delete: "delete",
};
const pascal = (segment: string) =>
  segment
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w[0]?.toUpperCase() + w.slice(1))
    .join("");

/** `GET /api/v1/public/foo-bars/{id}` → `getFooBars`; `/api/v1/dashboard/...` → `dashboardGet...`. */
export function derivedOperationId(method: string, path: string): string {
  const segments = path.split("/").filter((s) => s && !s.startsWith("{"));
  const rest = segments[0] === "api" ? segments.slice(2) : segments;
  const [area, ...tail] = rest;
  const prefix = area === "dashboard" || area === "admin" ? area : "";
  const words = area === "public" || prefix ? tail : rest;
  const name = `${VERBS[method] ?? method}${words.map(pascal).join("")}`;
  return prefix ? `${prefix}${name[0]?.toUpperCase()}${name.slice(1)}` : name;
}

export function operationIdOf(method: string, path: string): string {
  return OPERATION_IDS[`${method.toUpperCase()} ${path}`] ?? derivedOperationId(method, path);
}

/** Every listed operation (a test checks none is stale). */
export const LISTED_OPERATIONS = Object.keys(OPERATION_IDS);

type Requirement = Record<string, string[]>;
const API_KEY: Requirement = { apiKey: [] };
const API_KEY_AND_SECRET: Requirement = { apiKey: [], apiSecret: [] };
const DASHBOARD: Requirement[] = [{ dashboardBearer: [] }, { dashboardCookie: [] }];

/**
 * The operation's security, from the route's own `config.auth` / `config.requireSecret` (what the
 * auth plugin enforces): any one requirement of the list suffices; `[]` = no credentials.
 */
export function securityOf(config: FastifyContextConfig): Requirement[] {
  const apiKey = config.requireSecret ? API_KEY_AND_SECRET : API_KEY;
  switch (config.auth) {
    case "apiKey":
      return [apiKey];
    case "dashboard":
      return DASHBOARD;
    case "merchant":
      return [apiKey, ...DASHBOARD];
    default:
      return [];
  }
}

/** The tags of the document, in the order a reader meets them. */
export const TAGS: { name: string; description: string }[] = [
  {
    name: "Deposits",
    description:
      "Take payments: a checkout session is one payment of an amount to a fresh address with a hosted " +
      "page; a deposit wallet is a permanent address for one of your users. API key or dashboard session.",
  },
  {
    name: "Payment links",
    description:
      "Reusable pages (`/l/{id}`) that open a checkout session for each payer: a fixed amount, a price in " +
      "fiat, or an amount the payer enters. Writes need the API secret.",
  },
  {
    name: "Sandbox",
    description:
      "Sandbox only: pay your own checkout sessions and deposit addresses from a simulated faucet.",
  },
  {
    name: "Withdrawals",
    description:
      "Pay your users out: a withdrawal request holds the amount, then runs automatically (up to your " +
      "threshold) or waits for your approval. Writes need the API secret.",
  },
  {
    name: "Payouts",
    description: "Send your own balance to an address of yours (dashboard, with an e-mailed code).",
  },
  { name: "Account", description: "Your merchant account and its balances." },
  { name: "Transactions", description: "Every deposit, withdrawal and payout, with filters and paging." },
  {
    name: "Webhooks",
    description:
      "Where your webhooks go, their signing secret, a test delivery, and the log of every event with its " +
      "delivery attempts. The bodies and headers you receive are in the document's `webhooks` section.",
  },
  {
    name: "Dashboard auth",
    description: "Dashboard accounts: registration, sign-in sessions, passwords, one-time codes and 2FA.",
  },
  {
    name: "Dashboard",
    description: "What the dashboard reads and changes with a signed-in session: API keys, settings, reads.",
  },
  {
    name: "Team",
    description:
      "The merchant's members, their roles and invitations. Every dashboard operation names the permission a " +
      "member's role needs in `x-stablegate-permission` (the matrix: docs/permissions.md).",
  },
  {
    name: "Admin",
    description: "Read-only views across merchants for the platform operator's admin accounts.",
  },
  {
    name: "Hosted payment page",
    description: "The page and live status your customer sees; no credentials.",
  },
  { name: "Operations", description: "Liveness and readiness probes for the operator." },
];
