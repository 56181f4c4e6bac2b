import { Type } from "@sinclair/typebox";
import { decideHeldDeposit, type HeldAction } from "../../deposits/index.js";
import { presentTransaction } from "../../domain/transaction.js";
import type { App, RouteDeps } from "../app-types.js";
import { auditTrail } from "../plugins/audit.js";
import { dashboardPrincipal } from "../plugins/dashboard-auth.js";
import { StepUpFields } from "../plugins/step-up.js";
import { commonErrors, ok } from "../schemas/common.js";
import { TransactionSchema } from "../schemas/transaction.js";

const WHAT: Record<HeldAction, { summary: string; description: string }> = {
  release: {
    summary: "Release a held deposit: credit it",
    description:
      "A deposit from a frozen or refused sender is `held` (README.md#frozen-funds). Releasing it credits it like any deposit " +
      "(`confirmed`, with its `deposit` webhook) within a second or two; the answer (202) is the deposit as it is now, still `held`. " +
      "It never completes a checkout session. Owner and admins; production needs the step-up codes `otp` (and `totp` when 2FA is on).",
  },
  return: {
    summary: "Return a held deposit to its sender",
    description:
      "Sends exactly what arrived back to the address it came from, in one transfer from the deposit address (`returned`, with its " +
      "`deposit` webhook, within a second or two); should that transfer fail, the deposit is `held` again. The answer (202) is the deposit " +
      "as it is now, still `held`. Owner and admins; production needs the step-up codes `otp` (and `totp` when 2FA is on).",
  },
};

/**
 * The decisions on held deposits (README.md#frozen-funds): owner and admins
 * (`deposits:review`), step-up in production, audited. The api records the decision; a worker
 * carries it out (it may move money, the api may not).
 */
export function heldDepositRoutes(app: App, deps: RouteDeps) {
  const db = deps.database.db;
  for (const action of ["release", "return"] as const) {
    app.post(
      `/api/v1/dashboard/transactions/:id/${action}`,
      {
        config: {
          auth: "dashboard",
          tier: "dashboard",
          permission: "deposits:review",
          stepUp: {},
          errors: ["INVALID_STATE"],
          audit: {
            action: action === "release" ? "deposit.release" : "deposit.return",
            target: "transaction",
          },
        },
        schema: {
          ...WHAT[action],
          tags: ["Dashboard"],
          params: Type.Object({ id: Type.String({ maxLength: 100 }) }),
          body: Type.Object({ ...StepUpFields }, { additionalProperties: false }),
          response: { 202: ok(TransactionSchema), ...commonErrors },
        },
      },
      async (request, reply) => {
        const p = dashboardPrincipal(request);
        const t = await decideHeldDeposit(
          db,
          { merchantId: p.merchantId, environment: p.environment },
          request.params.id,
          action,
          p.userId,
          auditTrail(request),
        );
        reply.code(202);
        return { success: true as const, data: presentTransaction(t) };
      },
    );
  }
}
