import { type TNumber, type TOptional, Type } from "@sinclair/typebox";
import { audited } from "../../audit/index.js";
import { CURRENCY_TYPES, type CurrencyType } from "../../domain/currency.js";
import type { FeeRule, FeeSchedule } from "../../domain/fees.js";
import { formatAmount } from "../../domain/money.js";
import { getSettings, type MerchantSettings, updateSettings } from "../../merchants/index.js";
import type { App, RouteDeps } from "../app-types.js";
import { auditTrail } from "../plugins/audit.js";
import { dashboardPrincipal } from "../plugins/dashboard-auth.js";
import { StepUpFields } from "../plugins/step-up.js";
import { commonErrors, Nullable, ok } from "../schemas/common.js";

const Amount = Type.Union([Type.Number(), Type.String()], {
  description: "In the token (USDT, USDC), at most 6 decimals",
});

const FeeRuleSchema = Type.Object(
  {
    fixed: Type.Number({ description: "In the token (USDT, USDC)" }),
    percent: Type.Number({ description: "percent of the amount" }),
  },
  { title: "FeeRule" },
);
const FeesOfCurrency = Type.Object({
  deposit: FeeRuleSchema,
  withdrawal: FeeRuleSchema,
  payout: FeeRuleSchema,
});

const SettingsSchema = Type.Object(
  {
    environment: Type.Union([Type.Literal("production"), Type.Literal("sandbox")]),
    autoWithdraw: Type.Boolean(),
    autoApproveThreshold: Type.Object(
      Object.fromEntries(CURRENCY_TYPES.map((c) => [c, Type.Optional(Type.Number())])) as Record<
        string,
        TOptional<TNumber>
      >,
      { description: "Per enabled currency type, in its token" },
    ),
    dualApprovalThreshold: Type.Object(
      Object.fromEntries(CURRENCY_TYPES.map((c) => [c, Type.Optional(Nullable(Type.Number()))])) as Record<
        string,
        TOptional<ReturnType<typeof Nullable<TNumber>>>
      >,
      {
        description:
          "Four-eyes, per enabled currency type, in its token: a withdrawal request above it needs approvals from two different members (the API-key channel counts as one); null = off (default)",
      },
    ),
    ipAllowlist: Type.Array(Type.String()),
    underpaymentTolerancePercent: Type.Number({
      description:
        "A checkout session whose payment reaches amount × (1 − tolerance) by its deadline is confirmed",
    }),
    fees: Type.Object(
      Object.fromEntries(CURRENCY_TYPES.map((c) => [c, Type.Optional(FeesOfCurrency)])) as Record<
        string,
        TOptional<typeof FeesOfCurrency>
      >,
      {
        description:
          "The gateway's fee schedule (set by the operator, read-only here): per enabled currency type and kind, " +
          "fee = fixed + amount × percent / 100 (the percentage part rounded up to the next base unit)",
      },
    ),
    updatedAt: Type.String({ format: "date-time" }),
  },
  { title: "Settings" },
);

function feeView(fees: FeeSchedule, enabled: readonly CurrencyType[]) {
  const rule = (r: FeeRule) => ({ fixed: formatAmount(r.fixed), percent: Number(r.ppm) / 10_000 });
  return Object.fromEntries(
    enabled.map((c) => {
      const k = fees[c];
      return [c, { deposit: rule(k.deposit), withdrawal: rule(k.withdrawal), payout: rule(k.payout) }];
    }),
  );
}

/** The settings of the enabled currency types (the others are kept, not shown). */
function view(s: MerchantSettings, fees: FeeSchedule, enabled: readonly CurrencyType[]) {
  const shown = ([c]: [string, unknown]) => enabled.includes(c as CurrencyType);
  return {
    environment: s.environment,
    autoWithdraw: s.autoWithdraw,
    autoApproveThreshold: Object.fromEntries(
      Object.entries(s.autoApproveThreshold)
        .filter(shown)
        .map(([c, units]) => [c, formatAmount(units)]),
    ),
    dualApprovalThreshold: Object.fromEntries(
      Object.entries(s.dualApprovalThreshold)
        .filter(shown)
        .map(([c, units]) => [c, units === null ? null : formatAmount(units)]),
    ),
    ipAllowlist: s.ipAllowlist,
    underpaymentTolerancePercent: s.underpaymentToleranceBp / 100,
    fees: feeView(fees, enabled),
    updatedAt: s.updatedAt.toISOString(),
  };
}

/** `/api/v1/dashboard/settings`: withdrawal settings and IP allowlist of the dashboard's environment. */
export function dashboardSettingsRoutes(app: App, deps: RouteDeps) {
  const db = deps.database.db;
  const cfg = { auth: "dashboard", tier: "dashboard" } as const;
  const read = { ...cfg, permission: "settings:read" } as const;

  app.get(
    "/api/v1/dashboard/settings",
    {
      config: read,
      schema: {
        summary: "Settings of the environment",
        tags: ["Dashboard"],
        response: { 200: ok(SettingsSchema), ...commonErrors },
      },
    },
    async (request) => {
      const p = dashboardPrincipal(request);
      return {
        success: true as const,
        data: view(
          await getSettings(db, p.merchantId, p.environment),
          deps.config.fees,
          deps.chains.enabledCurrencyTypes(),
        ),
      };
    },
  );

  app.patch(
    "/api/v1/dashboard/settings",
    {
      // Every setting here guards money or access: production changes need step-up.
      config: {
        ...cfg,
        permission: "settings:write",
        stepUp: {},
        audit: { action: "settings.update", target: "settings" },
      },
      schema: {
        summary: "Change settings of the environment (fields not sent stay as they are)",
        description: "Production needs the step-up codes `otp` (and `totp` when 2FA is on).",
        tags: ["Dashboard"],
        body: Type.Object(
          {
            autoWithdraw: Type.Optional(Type.Boolean()),
            autoApproveThreshold: Type.Optional(Type.Record(Type.String(), Amount)),
            dualApprovalThreshold: Type.Optional(Type.Record(Type.String(), Nullable(Amount))),
            ipAllowlist: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 1000 })),
            underpaymentTolerancePercent: Type.Optional(
              Type.Number({ minimum: 0, maximum: 10, description: "0–10 %, at most 2 decimals (default 0)" }),
            ),
            ...StepUpFields,
          },
          { additionalProperties: false },
        ),
        response: { 200: ok(SettingsSchema), ...commonErrors },
      },
    },
    async (request) => {
      const p = dashboardPrincipal(request);
      const { otp: _otp, totp: _totp, ...patch } = request.body;
      const enabled = deps.chains.enabledCurrencyTypes();
      const { after } = await audited(
        db,
        auditTrail(request),
        async (trx) => ({
          before: view(await getSettings(trx, p.merchantId, p.environment), deps.config.fees, enabled),
          after: view(
            await updateSettings(trx, p.merchantId, p.environment, patch, new Date(deps.clock.now())),
            deps.config.fees,
            enabled,
          ),
        }),
        (change) => ({ targetId: p.environment, details: change }),
      );
      return { success: true as const, data: after };
    },
  );
}
