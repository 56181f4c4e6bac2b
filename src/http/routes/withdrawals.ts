import { Type } from "@sinclair/typebox";
import { AppError } from "../../domain/errors.js";
import { amountField } from "../../domain/money.js";
import type { Approver } from "../../domain/withdrawal.js";
import {
  approveWithdrawalRequest,
  createPayout,
  getPayout,
  getWithdrawalWithApprovals,
  listPayouts,
  listWithdrawals,
  rejectWithdrawalRequest,
  requestWithdrawal,
} from "../../withdrawals/index.js";
import type { App, RouteDeps } from "../app-types.js";
import type { AuthMode, Principal } from "../context.js";
import { idempotentCall, sendAnswer } from "../idempotency.js";
import { ListQuerySchema, listParams, pagination } from "../list.js";
import { auditTrail } from "../plugins/audit.js";
import { principal } from "../plugins/auth.js";
import { dashboardSession } from "../plugins/dashboard-auth.js";
import { checkStepUpOf } from "../plugins/step-up.js";
import { commonErrors, list, ok } from "../schemas/common.js";
import {
  CreatePayoutBody,
  CreateWithdrawalBody,
  PayoutSchema,
  presentApprovals,
  presentPayout,
  presentWithdrawal,
  RejectBody,
  WithdrawalSchema,
  WithdrawalStatusSchema,
} from "../schemas/withdrawals.js";

type ListQuery = Parameters<typeof listParams>[0];

const IdParams = Type.Object({ id: Type.String({ maxLength: 100 }) });
const WithdrawalListQuery = Type.Composite([
  ListQuerySchema,
  Type.Object({ status: Type.Optional(WithdrawalStatusSchema) }),
]);

/**
 * Withdrawal requests (docs/api-reference.md#withdrawals) on the API-key channel (`/api/v1/public/…`, secret required
 * where money moves) and the same reads and approve/reject on the dashboard channel
 * (`/api/v1/dashboard/…`); payouts (docs/api-reference.md#dashboardcreatepayout): created from the dashboard after an OTP, read on both.
 */
export function withdrawalRoutes(app: App, deps: RouteDeps) {
  const desk = deps.useCases.withdrawals;
  const db = desk.db;
  const kit = desk.kit;
  const tags = ["Withdrawals"];
  const channels: { prefix: string; auth: AuthMode; readTier: "standard" | "dashboard" }[] = [
    { prefix: "/api/v1/public", auth: "apiKey", readTier: "standard" },
    { prefix: "/api/v1/dashboard", auth: "dashboard", readTier: "dashboard" },
  ];
  /** Writes on the dashboard are the merchant's own (an admin only reads). */
  const writer = (request: Parameters<typeof principal>[0]): Principal => {
    const who = principal(request);
    if (who.channel === "dashboard" && who.role !== "merchant") {
      throw new AppError("FORBIDDEN", "Administrators have read-only access.");
    }
    return who;
  };

  app.post(
    "/api/v1/public/withdrawal-requests",
    {
      config: {
        auth: "apiKey",
        tier: "financial",
        permission: "withdrawals:create",
        requireSecret: true,
        errors: ["INSUFFICIENT_BALANCE", "DESTINATION_BLOCKED", "CHAIN_UNAVAILABLE"],
      },
      schema: {
        summary: "Request a withdrawal to an end user's address",
        description:
          "Holds `amount` from the available balance. By the settings `autoWithdraw` and `autoApproveThreshold` " +
          "it is executed at once (one webhook: completed or failed) or waits for approval (webhook `pending`).",
        tags,
        headers: Type.Object({ "idempotency-key": Type.Optional(Type.String()) }),
        body: CreateWithdrawalBody,
        response: { 201: ok(WithdrawalSchema), ...commonErrors },
      },
    },
    async (request, reply) => {
      const who = principal(request);
      const body = request.body;
      const amount = amountField("amount", body.amount);
      if (amount.units === undefined) throw AppError.validation(amount.errors);
      const answer = await requestWithdrawal(
        desk,
        who,
        {
          amount: amount.units,
          currencyType: body.currencyType,
          walletAddress: body.walletAddress,
          externalUserId: body.externalUserId ?? null,
          reference: body.reference ?? null,
        },
        idempotentCall(request, reply, who, 201, (t) => ({
          success: true as const,
          data: presentWithdrawal(t),
        })),
      );
      return sendAnswer(reply, answer);
    },
  );

  for (const { prefix, auth, readTier } of channels) {
    app.get(
      `${prefix}/withdrawal-requests`,
      {
        config: { auth, tier: readTier, permission: "money:read" },
        schema: {
          summary: "List withdrawal requests (default: pending)",
          tags,
          querystring: WithdrawalListQuery,
          response: { 200: list(WithdrawalSchema), ...commonErrors },
        },
      },
      async (request) => {
        const who = principal(request);
        const params = listParams(request.query);
        const { rows, total } = await listWithdrawals(db, who, request.query.status, params);
        return {
          success: true as const,
          data: rows.map(presentWithdrawal),
          pagination: pagination(params, total),
        };
      },
    );

    app.get(
      `${prefix}/withdrawal-requests/:id`,
      {
        config: { auth, tier: readTier, permission: "money:read" },
        schema: {
          summary: "Get a withdrawal request",
          tags,
          params: IdParams,
          response: { 200: ok(WithdrawalSchema), ...commonErrors },
        },
      },
      async (request) => {
        const r = await getWithdrawalWithApprovals(db, principal(request), request.params.id);
        return {
          success: true as const,
          data: { ...presentWithdrawal(r.record), ...presentApprovals(r.approvals, r.required) },
        };
      },
    );

    app.post(
      `${prefix}/withdrawal-requests/:id/approve`,
      {
        config: {
          auth,
          tier: "financial",
          permission: "withdrawals:approve",
          requireSecret: true,
          errors: ["INVALID_STATE"],
          audit: { action: "withdrawal.approve", target: "withdrawal_request" },
        },
        schema: {
          summary: "Approve a pending withdrawal request (executed once it has the approvals it needs)",
          description:
            "Above the settings' `dualApprovalThreshold` (four-eyes) a request needs two different approvers: the " +
            "first approval is recorded and the request stays `pending`; the second executes it. Approvals are " +
            "counted per person: an approval with an API key pair counts as the member the pair acts for " +
            "(`createdBy`), so that member's session and key pairs are one approver; the same person twice is " +
            "refused (409 `INVALID_STATE`).",
          tags,
          params: IdParams,
          response: { 200: ok(WithdrawalSchema), ...commonErrors },
        },
      },
      async (request) => {
        const who = writer(request);
        const approver: Approver =
          who.channel === "apiKey"
            ? { type: "api_key", id: who.apiKeyId, member: who.member }
            : { type: "user", id: who.userId, email: dashboardSession(request).email };
        const r = await approveWithdrawalRequest(desk, who, request.params.id, approver, auditTrail(request));
        return {
          success: true as const,
          data: { ...presentWithdrawal(r.record), ...presentApprovals(r.approvals, r.required) },
        };
      },
    );

    app.post(
      `${prefix}/withdrawal-requests/:id/reject`,
      {
        config: {
          auth,
          tier: "financial",
          permission: "withdrawals:approve",
          requireSecret: true,
          errors: ["INVALID_STATE"],
          audit: {
            action: "withdrawal.reject",
            target: "withdrawal_request",
            fields: { from: "body", names: ["reason"] },
          },
        },
        schema: {
          summary: "Reject a pending withdrawal request (the hold is released)",
          tags,
          params: IdParams,
          body: RejectBody,
          response: { 200: ok(WithdrawalSchema), ...commonErrors },
        },
      },
      async (request) => {
        const who = writer(request);
        const reason = request.body?.reason ?? null;
        const t = await rejectWithdrawalRequest(desk, who, request.params.id, reason, auditTrail(request));
        return { success: true as const, data: presentWithdrawal(t) };
      },
    );
  }

  const payoutRead = async (who: Principal, query: { id?: string | undefined } & ListQuery) => {
    if (query.id !== undefined) {
      const t = await getPayout(db, who, query.id);
      return { success: true as const, data: presentPayout(t) };
    }
    const params = listParams(query);
    const { rows, total } = await listPayouts(db, who, params);
    return { success: true as const, data: rows.map(presentPayout), pagination: pagination(params, total) };
  };
  const PayoutQuery = Type.Composite([
    ListQuerySchema,
    Type.Object({ id: Type.Optional(Type.String({ maxLength: 100 })) }),
  ]);
  // One path answers both (the contract's `payout/get`): the document says which by `id`.
  const PayoutReadResponse = Type.Union([ok(PayoutSchema), list(PayoutSchema)], {
    description:
      "With `id`: that payout (`PayoutResponse`). Without: one page of payouts, newest first (`PayoutListResponse`).",
  });

  // The same payout read on both channels: `/api/v1/public/payout/get` (docs/api-reference.md#getpayouts) and the dashboard's.
  for (const route of [
    { url: "/api/v1/public/payout/get", auth: "apiKey", tier: "standard" },
    { url: "/api/v1/dashboard/payouts", auth: "dashboard", tier: "dashboard" },
  ] as const) {
    app.get(
      route.url,
      {
        config: { auth: route.auth, tier: route.tier, permission: "money:read" },
        schema: {
          summary: "Get one payout (?id=) or list payouts",
          description:
            "With `id`, the payout with that id (404 if none); without, one page of payouts with `pagination`. " +
            "Payouts are created from the dashboard.",
          tags: ["Payouts"],
          querystring: PayoutQuery,
          response: { 200: PayoutReadResponse, ...commonErrors },
        },
      },
      async (request) => payoutRead(principal(request), request.query),
    );
  }

  app.post(
    "/api/v1/dashboard/payouts",
    {
      // The payout OTP is its step-up (docs/merchants/authentication.md#step-up-for-production-changes); in production with 2FA on, the TOTP too.
      config: {
        auth: "dashboard",
        tier: "financial",
        permission: "payouts:create",
        stepUp: { inRoute: "payout" },
        errors: ["INSUFFICIENT_BALANCE", "DESTINATION_BLOCKED", "CHAIN_UNAVAILABLE"],
        audit: {
          action: "payout.create",
          target: "transaction",
          fields: { from: "body", names: ["amount", "currencyType", "walletAddress"] },
        },
      },
      schema: {
        summary: "Send a payout from the merchant's balance (needs the e-mailed payout OTP)",
        description: "Held, executed at once, then `completed` or `failed` (balance restored); one webhook.",
        tags: ["Payouts"],
        headers: Type.Object({ "idempotency-key": Type.Optional(Type.String()) }),
        body: CreatePayoutBody,
        response: { 201: ok(PayoutSchema), ...commonErrors },
      },
    },
    async (request, reply) => {
      const who = writer(request);
      if (who.channel !== "dashboard") throw AppError.invalidAuth();
      const body = request.body;
      const amount = amountField("amount", body.amount);
      if (amount.units === undefined) throw AppError.validation(amount.errors);
      const answer = await createPayout(
        desk,
        who,
        {
          amount: amount.units,
          currencyType: body.currencyType,
          walletAddress: body.walletAddress,
          otp: body.otp,
        },
        {
          ...idempotentCall(request, reply, who, 201, (t) => ({
            success: true as const,
            data: presentPayout(t),
          })),
          // Production: the step-up check (OTP, and TOTP when 2FA is on); sandbox: the OTP (docs/api-reference.md#dashboardcreatepayout).
          stepUp: () => checkStepUpOf(request, kit),
          audit: auditTrail(request),
        },
      );
      return sendAnswer(reply, answer);
    },
  );
}
