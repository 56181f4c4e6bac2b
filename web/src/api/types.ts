import type { Environment } from "./client";

export const CURRENCIES = ["USDT-TRC20", "USDT-ERC20"] as const;
export type CurrencyType = (typeof CURRENCIES)[number];
export const TX_TYPES = ["deposit", "withdrawal", "payout"] as const;
export const TX_STATUSES = ["pending", "processing", "confirmed", "completed", "failed", "rejected"] as const;

export interface User {
  id: string;
  email: string;
  role: "merchant" | "admin";
  merchantId: string | null;
  companyName: string | null;
  totpEnabled: boolean;
  createdAt: string;
}

export interface Me {
  user: User;
  environment: Environment;
}

export interface KeyPair {
  id: string;
  environment: Environment;
  apiKey: string;
  apiSecret: string;
}

export interface ApiKey {
  id: string;
  environment: Environment;
  apiKey: string;
  secretHint: string;
  status: "active" | "revoked";
  revokedReason: "revoked" | "rotated" | null;
  replacedBy: string | null;
  createdAt: string;
  revokedAt: string | null;
}

export interface Balance {
  currencyType: CurrencyType;
  available: number;
  held: number;
  total: number;
}

export interface Transaction {
  type: "deposit" | "withdrawal" | "payout";
  transactionId: string;
  id: string;
  clientId: string;
  amount: number;
  fee: number;
  netAmount: number;
  actualBalance: number | null;
  currencyType: CurrencyType;
  network: CurrencyType;
  status: (typeof TX_STATUSES)[number];
  createdAt: string;
  updatedAt: string;
  confirmedAt: string | null;
  blockchainTxHash: string | null;
  walletAddress: string | null;
  orderId: string | null;
  reference: string | null;
  externalUserId: string | null;
  checkoutSessionId: string | null;
}

export interface VolumePoint {
  date: string;
  currencyType: CurrencyType;
  incoming: number;
  outgoing: number;
  count: number;
}

export interface CheckoutSession {
  id: string;
  transactionId: string;
  status: string;
  amount: number;
  currencyType: CurrencyType;
  network: CurrencyType;
  walletAddress: string;
  expiresAt: string;
  checkoutUrl: string;
  callbackUrl: string | null;
  orderId: string | null;
  actualBalance: number;
  blockchainTxHash: string | null;
  createdAt: string;
  confirmedAt: string | null;
  detectedAt: string | null;
  detectedAmount: number;
  confirmations: { current: number; required: number };
}

export interface Withdrawal {
  id: string;
  transactionId: string;
  status: string;
  amount: number;
  fee: number;
  netAmount: number;
  currencyType: CurrencyType;
  network: CurrencyType;
  walletAddress: string;
  externalUserId: string | null;
  reference: string | null;
  blockchainTxHash: string | null;
  rejectionReason: string | null;
  createdAt: string;
  updatedAt: string;
  confirmedAt: string | null;
}

export interface Payout {
  id: string;
  transactionId: string;
  status: string;
  amount: number;
  fee: number;
  netAmount: number;
  currencyType: CurrencyType;
  network: CurrencyType;
  walletAddress: string;
  blockchainTxHash: string | null;
  createdAt: string;
  confirmedAt: string | null;
}

export type DeliveryStatus = "pending" | "delivered" | "failed";

export interface WebhookEvent {
  webhookEventId: string;
  transactionId: string;
  type: "deposit" | "withdrawal" | "payout" | "test";
  transactionStatus: string;
  deliveryStatus: DeliveryStatus;
  url: string | null;
  attempts: number;
  nextAttemptAt: string | null;
  lastAttemptAt: string | null;
  lastResponseStatus: number | null;
  lastError: string | null;
  isTest: boolean;
  createdAt: string;
  deliveredAt: string | null;
  payload: { success: boolean; message: string; data: Record<string, unknown> };
}

export interface WebhookAttempt {
  attemptNumber: number;
  manual: boolean;
  startedAt: string;
  url: string | null;
  responseStatus: number | null;
  latencyMs: number;
  error: string | null;
  responseBody: string | null;
}

export interface Settings {
  environment: Environment;
  autoWithdraw: boolean;
  autoApproveThreshold: Record<string, number>;
  ipAllowlist: string[];
  underpaymentTolerancePercent: number;
  updatedAt: string;
}

export interface Mail {
  id: string;
  to: string;
  subject: string;
  text: string;
  createdAt: string;
}
