import { Type } from "@sinclair/typebox";
import type { FastifyInstance, FastifyRequest } from "fastify";
import {
  type AuthKit,
  checkOtp,
  checkStepUp,
  consumeStepUp,
  type OtpPurpose,
  type StepUpHolder,
} from "../../auth/index.js";
import type { Environment } from "../../domain/environment.js";
import { dashboardSession } from "./dashboard-auth.js";

/**
 * Step-up of sensitive dashboard writes (docs/merchants/authentication.md#step-up-for-production-changes), declared by the route:
 *
 *   config: { auth: "dashboard", tier: "dashboard", stepUp: {} }            // the request's environment
 *   config: { ..., stepUp: { target: (request) => keyEnvironment(request) } } // the environment written
 *   config: { ..., stepUp: { target: () => "account" } }                     // account-wide: always
 *
 * and spreads `StepUpFields` into its body schema (so the OpenAPI document shows `otp`/`totp`;
 * registering a `stepUp` route whose body lacks them fails at start-up). For dashboard-channel
 * requests whose target is production (or the account), a `preHandler` checks and consumes the
 * e-mailed `sensitive` code (and the TOTP when 2FA is on) before the handler runs; sandbox writes
 * and the API-key channel (its secret is the second factor) pass untouched.
 *
 * When the write then fails (any 4xx/5xx answer: a bad CIDR, a revoked key), the code is given
 * back, as a refused payout keeps its code: the user fixes the input, not fetches a new mail. A
 * success keeps it consumed; two requests racing with one code: one consumes it, the other is
 * refused.
 *
 * A route whose OTP must be spent inside its own transaction (the payout, whose idempotent replays
 * must not ask for a code again) declares `stepUp: { inRoute: "payout" }` and calls
 * `checkStepUpOf` itself; on the dashboard channel that checks the route's own code in the sandbox
 * too (a payout needs its OTP in both environments, docs/api-reference.md#dashboardcreatepayout).
 *
 * Every code is checked against the session of the request: a code works only in the dashboard
 * session that requested it (issue #34).
 */

export type StepUpTarget = Environment | "account";

export interface StepUpRule {
  /** What the write changes; step-up applies to `production` and `account`. Default: the request's environment. */
  target?: (request: FastifyRequest) => StepUpTarget | Promise<StepUpTarget>;
  /** The route runs the check itself (`checkStepUpOf`) with this OTP purpose. */
  inRoute?: OtpPurpose;
}

declare module "fastify" {
  interface FastifyContextConfig {
    /** A sensitive write: production needs a fresh e-mailed code (and TOTP when 2FA is on). */
    stepUp?: StepUpRule;
  }
}

/** The body fields of a step-up route (optional in the schema; the check requires them in production). */
export const StepUpFields = {
  otp: Type.Optional(
    Type.String({
      maxLength: 16,
      description:
        'Production (dashboard channel): a fresh e-mailed code, from POST /api/v1/auth/otp {"purpose":"sensitive"} (payouts: "payout")',
    }),
  ),
  totp: Type.Optional(
    Type.String({
      maxLength: 16,
      description:
        "Production (dashboard channel), when 2FA is on: the current code of the authenticator app",
    }),
  ),
};

/** The body of a step-up route that takes nothing else. */
export const StepUpBody = Type.Object(StepUpFields, { additionalProperties: false });

const granted = new WeakMap<FastifyRequest, string>();

/** The dashboard session of the request, or null (API-key channel). */
function dashboardHolder(request: FastifyRequest): StepUpHolder | null {
  const p = request.principal;
  if (p?.channel !== "dashboard") return null;
  return { userId: p.userId, sessionId: dashboardSession(request).sessionId };
}

/** Whether the write's target needs step-up (production or the account; not the sandbox). */
async function targetNeedsStepUp(request: FastifyRequest, rule: StepUpRule): Promise<boolean> {
  const target = rule.target ? await rule.target(request) : request.principal?.environment;
  return target !== "sandbox";
}

function codesOf(request: FastifyRequest): { otp?: string; totp?: string } {
  const body = request.body as { otp?: unknown; totp?: unknown } | undefined;
  return {
    ...(typeof body?.otp === "string" ? { otp: body.otp } : {}),
    ...(typeof body?.totp === "string" ? { totp: body.totp } : {}),
  };
}

/**
 * For `inRoute` routes on the dashboard channel: the id of the checked (not consumed) code — the
 * full step-up (the route's e-mailed code, and the TOTP with 2FA on) when the target needs it, the
 * route's e-mailed code alone in the sandbox. Null on the API-key channel.
 */
export async function checkStepUpOf(request: FastifyRequest, kit: AuthKit): Promise<string | null> {
  const rule = request.routeOptions.config?.stepUp;
  if (!rule?.inRoute) throw new Error("route does not declare stepUp.inRoute");
  const holder = dashboardHolder(request);
  if (holder === null) return null;
  const codes = codesOf(request);
  if (await targetNeedsStepUp(request, rule)) return checkStepUp(kit, holder, codes, rule.inRoute);
  return checkOtp(kit, holder.userId, rule.inRoute, codes.otp ?? "", "otp", holder.sessionId);
}

export function registerStepUp(app: FastifyInstance, kit: AuthKit) {
  app.addHook("onRoute", (route) => {
    const rule = route.config?.stepUp;
    if (!rule) return;
    const body = route.schema?.body as { properties?: Record<string, unknown> } | undefined;
    if (!body?.properties?.otp || !body.properties.totp)
      throw new Error(
        `${route.method} ${route.url}: a stepUp route declares otp and totp in its body schema`,
      );
  });

  // A step-up route that takes no other input may be called without a body: every route's
  // bodiless request is `{}` (http/json-body.ts).

  app.addHook("preHandler", async (request) => {
    const rule = request.routeOptions.config?.stepUp;
    if (!rule || rule.inRoute) return;
    const holder = dashboardHolder(request);
    if (holder === null || !(await targetNeedsStepUp(request, rule))) return;
    const otpId = await checkStepUp(kit, holder, codesOf(request), "sensitive");
    await consumeStepUp(kit, otpId);
    granted.set(request, otpId);
  });

  // The write failed after the check: the code is given back (see the header).
  app.addHook("onSend", async (request, reply) => {
    const otpId = granted.get(request);
    if (otpId === undefined || reply.statusCode < 400) return;
    granted.delete(request);
    await kit.otp.release(otpId, kit.now());
  });
}
