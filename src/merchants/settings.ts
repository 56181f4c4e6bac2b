import type { Db } from "../db/database.js";
import { inTransaction } from "../db/transaction.js";
import { MAX_UNDERPAYMENT_TOLERANCE_BP } from "../domain/checkout.js";
import { CURRENCY_TYPES, type CurrencyType } from "../domain/currency.js";
import type { Environment } from "../domain/environment.js";
import { AppError, type FieldError } from "../domain/errors.js";
import { validateAllowlist } from "../domain/ip-allowlist.js";
import { parseAmount, UNIT } from "../domain/money.js";
import { insertDefaultSettings } from "./store.js";

/**
 * Merchant settings per environment (docs/api-reference.md#dashboardupdatesettings): `autoWithdraw` (default on),
 * `autoApproveThreshold` per currency type (default 1,000 USDT; stored as base units, a missing
 * currency means the default), `dualApprovalThreshold` per currency type (issue #21, four-eyes:
 * a withdrawal request above it needs two approvers; a missing currency means off) and the
 * API-key channel's `ipAllowlist`.
 */
export const DEFAULT_AUTO_APPROVE_THRESHOLD = 1_000n * UNIT;
export const MAX_ALLOWLIST_ENTRIES = 100;

export interface MerchantSettings {
  environment: Environment;
  autoWithdraw: boolean;
  autoApproveThreshold: Record<CurrencyType, bigint>;
  /** Four-eyes: above this amount a withdrawal request needs two approvers; null = off. */
  dualApprovalThreshold: Record<CurrencyType, bigint | null>;
  ipAllowlist: string[];
  /** Underpayment tolerance of checkout sessions, in basis points (0..1000 = 0..10 %; README.md#money-when-a-payment-counts-and-books-that-match). */
  underpaymentToleranceBp: number;
  updatedAt: Date;
}

export async function getSettings(
  db: Db,
  merchantId: string,
  environment: Environment,
): Promise<MerchantSettings> {
  let row = await db
    .selectFrom("merchant_settings")
    .selectAll()
    .where("merchant_id", "=", merchantId)
    .where("environment", "=", environment)
    .executeTakeFirst();
  if (!row) {
    await insertDefaultSettings(db, merchantId, environment);
    row = await db
      .selectFrom("merchant_settings")
      .selectAll()
      .where("merchant_id", "=", merchantId)
      .where("environment", "=", environment)
      .executeTakeFirstOrThrow();
  }
  const stored = row.auto_approve_threshold ?? {};
  const thresholds = {} as Record<CurrencyType, bigint>;
  for (const c of CURRENCY_TYPES) {
    const v = stored[c];
    thresholds[c] = v !== undefined && /^\d+$/.test(v) ? BigInt(v) : DEFAULT_AUTO_APPROVE_THRESHOLD;
  }
  const dualStored = row.dual_approval_threshold ?? {};
  const dual = {} as Record<CurrencyType, bigint | null>;
  for (const c of CURRENCY_TYPES) {
    const v = dualStored[c];
    dual[c] = v !== undefined && /^\d+$/.test(v) ? BigInt(v) : null;
  }
  return {
    environment,
    autoWithdraw: row.auto_withdraw,
    autoApproveThreshold: thresholds,
    dualApprovalThreshold: dual,
    ipAllowlist: row.ip_allowlist ?? [],
    underpaymentToleranceBp: row.underpayment_tolerance_bp ?? 0,
    updatedAt: new Date(row.updated_at),
  };
}

export interface SettingsPatch {
  autoWithdraw?: boolean | undefined;
  /** Per currency type: USDT as a JSON number or numeric string (docs/api-reference.md#amounts). */
  autoApproveThreshold?: Record<string, unknown> | undefined;
  /** Per currency type: USDT as a JSON number or numeric string, or null to turn four-eyes off. */
  dualApprovalThreshold?: Record<string, unknown> | undefined;
  ipAllowlist?: string[] | undefined;
  /** Percent of the amount, 0–10, at most 2 decimals. */
  underpaymentTolerancePercent?: number | undefined;
}

export async function updateSettings(
  db: Db,
  merchantId: string,
  environment: Environment,
  patch: SettingsPatch,
  now: Date,
): Promise<MerchantSettings> {
  const errors: FieldError[] = [];
  const thresholds: Partial<Record<CurrencyType, bigint>> = {};
  for (const [currency, value] of Object.entries(patch.autoApproveThreshold ?? {})) {
    const field = `autoApproveThreshold.${currency}`;
    if (!(CURRENCY_TYPES as readonly string[]).includes(currency)) {
      errors.push({ field, message: `must be one of ${CURRENCY_TYPES.join(", ")}` });
      continue;
    }
    const r = parseAmount(value);
    if (r.ok) thresholds[currency as CurrencyType] = r.units;
    else errors.push({ field, message: r.message });
  }
  const dual: Partial<Record<CurrencyType, bigint | null>> = {};
  for (const [currency, value] of Object.entries(patch.dualApprovalThreshold ?? {})) {
    const field = `dualApprovalThreshold.${currency}`;
    if (!(CURRENCY_TYPES as readonly string[]).includes(currency)) {
      errors.push({ field, message: `must be one of ${CURRENCY_TYPES.join(", ")}` });
      continue;
    }
    if (value === null) {
      dual[currency as CurrencyType] = null;
      continue;
    }
    const r = parseAmount(value);
    if (r.ok) dual[currency as CurrencyType] = r.units;
    else errors.push({ field, message: `${r.message} (or null: off)` });
  }
  let allowlist: string[] | undefined;
  if (patch.ipAllowlist !== undefined) {
    allowlist = [...new Set(patch.ipAllowlist.map((e) => e.trim()))];
    errors.push(...validateAllowlist(allowlist));
    if (allowlist.length > MAX_ALLOWLIST_ENTRIES)
      errors.push({ field: "ipAllowlist", message: `must have at most ${MAX_ALLOWLIST_ENTRIES} entries` });
  }
  let toleranceBp: number | undefined;
  if (patch.underpaymentTolerancePercent !== undefined) {
    const bp = patch.underpaymentTolerancePercent * 100;
    const rounded = Math.round(bp);
    if (
      !Number.isFinite(bp) ||
      Math.abs(bp - rounded) > 1e-6 ||
      rounded < 0 ||
      rounded > MAX_UNDERPAYMENT_TOLERANCE_BP
    )
      errors.push({
        field: "underpaymentTolerancePercent",
        message: "must be between 0 and 10 with at most 2 decimals",
      });
    else toleranceBp = rounded;
  }
  if (errors.length > 0) throw AppError.validation(errors);

  return inTransaction(db, async (trx) => {
    const current = await getSettings(trx, merchantId, environment);
    const merged: Record<string, string> = {};
    for (const c of CURRENCY_TYPES) merged[c] = String(thresholds[c] ?? current.autoApproveThreshold[c]);
    const mergedDual: Record<string, string> = {};
    for (const c of CURRENCY_TYPES) {
      const v = c in dual ? dual[c] : current.dualApprovalThreshold[c];
      if (v !== null && v !== undefined) mergedDual[c] = String(v);
    }
    await trx
      .updateTable("merchant_settings")
      .set({
        auto_withdraw: patch.autoWithdraw ?? current.autoWithdraw,
        auto_approve_threshold: JSON.stringify(merged),
        dual_approval_threshold: JSON.stringify(mergedDual),
        ip_allowlist: allowlist ?? current.ipAllowlist,
        underpayment_tolerance_bp: toleranceBp ?? current.underpaymentToleranceBp,
        updated_at: now,
      })
      .where("merchant_id", "=", merchantId)
      .where("environment", "=", environment)
      .execute();
    return getSettings(trx, merchantId, environment);
  });
}
