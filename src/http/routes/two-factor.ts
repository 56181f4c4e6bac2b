import { Type } from "@sinclair/typebox";
import { disableTotp, enableTotp, setupTotp } from "../../auth/index.js";
import type { App, RouteDeps } from "../app-types.js";
import { auditTrail } from "../plugins/audit.js";
import { dashboardPrincipal } from "../plugins/dashboard-auth.js";
import { StepUpBody, StepUpFields } from "../plugins/step-up.js";
import { Code, Done } from "../schemas/auth.js";
import { commonErrors, ok } from "../schemas/common.js";

/** Two-factor authentication (TOTP) of the signed-in account: setup, enable, disable (docs/decisions/dashboard.md#dashboard-channel). */
export function twoFactorRoutes(app: App, deps: RouteDeps) {
  const kit = deps.authKit;

  app.post(
    "/api/v1/auth/2fa/setup",
    {
      config: { auth: "dashboard", audience: "account", tier: "dashboard", errors: ["INVALID_STATE"] },
      schema: {
        summary: "Start TOTP enrolment: a new seed as otpauth URI and QR code (not active until enabled)",
        tags: ["Dashboard auth"],
        response: {
          200: ok(
            Type.Object({
              secret: Type.String({ description: "Base32 seed, for manual entry" }),
              otpauthUri: Type.String(),
              qrCode: Type.String({ description: "PNG data URL of the otpauth URI" }),
            }),
          ),
          409: commonErrors[400],
          ...commonErrors,
        },
      },
    },
    async (request) => {
      const p = dashboardPrincipal(request);
      return { success: true as const, data: await setupTotp(kit, p.userId) };
    },
  );

  app.post(
    "/api/v1/auth/2fa/enable",
    {
      // Account-wide, whatever the environment (docs/merchants/authentication.md#step-up-for-production-changes): a session alone must not enrol an
      // authenticator, or a stolen session would lock the owner out of the next sign-in.
      config: {
        auth: "dashboard",
        audience: "account",
        tier: "auth",
        errors: ["INVALID_STATE"],
        stepUp: { target: () => "account" },
        audit: { action: "auth.two_factor_enable", accountWide: true },
      },
      schema: {
        summary:
          "Enable TOTP: a valid code of the seed from setup (`code`) and an e-mailed `sensitive` code (`otp`)",
        description:
          'The e-mailed code is requested with POST /api/v1/auth/otp `{ purpose: "sensitive" }` in the same session. A wrong `code` leaves the e-mailed code usable. The owner is e-mailed when 2FA is turned on or off.',
        tags: ["Dashboard auth"],
        body: Type.Object({ ...Code.properties, ...StepUpFields }, { additionalProperties: false }),
        response: { 200: ok(Done), 409: commonErrors[400], ...commonErrors },
      },
    },
    async (request) => {
      await enableTotp(kit, dashboardPrincipal(request).userId, request.body.code, auditTrail(request));
      return { success: true as const, data: { message: "Two-factor authentication enabled." } };
    },
  );

  app.post(
    "/api/v1/auth/2fa/disable",
    {
      // Account-wide (it guards the production sign-in too): step-up whatever the environment.
      config: {
        auth: "dashboard",
        audience: "account",
        tier: "auth",
        errors: ["INVALID_STATE"],
        stepUp: { target: () => "account" },
        audit: { action: "auth.two_factor_disable", accountWide: true },
      },
      schema: {
        summary: "Disable TOTP: an e-mailed `sensitive` code (`otp`) and the current TOTP code (`totp`)",
        tags: ["Dashboard auth"],
        body: StepUpBody,
        response: { 200: ok(Done), 409: commonErrors[400], ...commonErrors },
      },
    },
    async (request) => {
      await disableTotp(kit, dashboardPrincipal(request).userId, auditTrail(request));
      return { success: true as const, data: { message: "Two-factor authentication disabled." } };
    },
  );
}
