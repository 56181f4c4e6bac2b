/**
 * The API's field names in the words of the dashboard's forms (issue #35): a validation error names
 * "Recipient wallet address", never `walletAddress`. Pure (no imports): the tests load it in Node.
 */

/** The default label of each field the API may name; a form passes its own labels on top. */
export const FIELD_NAMES: Record<string, string> = {
  email: "E-mail",
  password: "Password",
  newPassword: "New password",
  currentPassword: "Current password",
  companyName: "Company name",
  amount: "Amount",
  currencyType: "Currency",
  network: "Network",
  walletAddress: "Wallet address",
  webhookUrl: "Webhook URL",
  callbackUrl: "Callback URL",
  ipAllowlist: "IP allowlist",
  autoApproveThreshold: "Auto-approve threshold",
  dualApprovalThreshold: "Two approvals above",
  underpaymentTolerancePercent: "Underpayment tolerance",
  autoWithdraw: "Auto-withdraw",
  otp: "Code",
  code: "Code",
  totp: "Two-factor code",
  token: "Link",
  role: "Role",
  memberId: "Member",
  expiresInMinutes: "Expiry",
  orderId: "Order ID",
  externalUserId: "External user ID",
  reference: "Reference",
  reason: "Reason",
  search: "Search",
  from: "From date",
  to: "To date",
  name: "Name",
  "X-Environment": "Environment",
};

export type FieldLabels = Readonly<Record<string, string>>;

/** `body/walletAddress`, `/amount`, `autoApproveThreshold.USDT-TRC20` → the field's name as the API has it. */
function bareName(field: string): string {
  return field.replace(/^(body|querystring|params|headers)[./]/, "").replace(/^\//, "");
}

/** The label of an API field: the form's own label, else the dashboard's default, else the name itself. */
export function fieldLabel(field: string, labels: FieldLabels = {}): string {
  const base = bareName(field);
  const top = base.split(/[./[]/)[0] ?? base;
  return labels[base] ?? labels[top] ?? FIELD_NAMES[base] ?? FIELD_NAMES[top] ?? base;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * A field's message without the API's field name: "walletAddress must be a valid TRON address"
 * (shown after the label) → "must be a valid TRON address"; another field's name inside the
 * message becomes its label ("must be more than fee" stays, "amount must exceed the fee" →
 * "must exceed the fee").
 */
export function fieldMessage(field: string, message: string, labels: FieldLabels = {}): string {
  const base = bareName(field);
  const top = base.split(/[./[]/)[0] ?? base;
  let m = message.trim();
  for (const name of new Set([field, base, top])) {
    const lead = new RegExp(`^(?:body[./])?/?${escapeRegExp(name)}(?:\\s*[:=-])?\\s+`);
    if (lead.test(m)) {
      m = m.replace(lead, "");
      break;
    }
  }
  // Other API field names inside the sentence (camelCase identifiers only: plain words stay).
  const names = new Set([...Object.keys(FIELD_NAMES), ...Object.keys(labels)]);
  for (const name of names) {
    if (!/[A-Z]/.test(name) || name.startsWith("X-")) continue;
    m = m.replace(new RegExp(`\\b${escapeRegExp(name)}\\b`, "g"), fieldLabel(name, labels));
  }
  return m;
}
