import { Type } from "@sinclair/typebox";
import type { FastifyRequest } from "fastify";
import {
  changePassword,
  currentUser,
  forgotPassword,
  login,
  logout,
  OTP_PURPOSES,
  refreshSession,
  register,
  requestOtp,
  resetPassword,
  type TokenDelivery,
} from "../../auth/index.js";
import { AppError } from "../../domain/errors.js";
import { permissionsOf } from "../../domain/permissions.js";
import { clientKey } from "../../ratelimit/index.js";
import type { App, RouteDeps } from "../app-types.js";
import { clientIp } from "../client-ip.js";
import { auditTrail } from "../plugins/audit.js";
import { allowedOrigins, assertWriteOrigin } from "../plugins/cors.js";
import {
  clearSessionCookies,
  dashboardPrincipal,
  dashboardSession,
  REFRESH_COOKIE,
  setSessionCookies,
} from "../plugins/dashboard-auth.js";
import {
  Done,
  Email,
  KeyPairSchema,
  Password,
  PermissionSchema,
  SessionTokens,
  TokenDeliveryHeaders,
  tokenFields,
  UserSchema,
  userView,
} from "../schemas/auth.js";
import { commonErrors, ok } from "../schemas/common.js";

/**
 * The client a failed sign-in is counted against: its address as the rate limiter and the IP
 * allowlist see it, an IPv6 client per /64 (docs/decisions/security.md) — one subscriber's /64 is one client.
 */
function throttleClient(request: FastifyRequest): string {
  return clientKey(clientIp(request));
}

function deliveryOf(request: FastifyRequest): TokenDelivery {
  return request.headers["x-token-delivery"] === "bearer" ? "bearer" : "cookie";
}

/** `/api/v1/auth/*`: registration, sessions, password reset and change, OTPs and TOTP enrolment. */
export function authRoutes(app: App, deps: RouteDeps) {
  const { authKit: kit, config } = deps;
  const origins = allowedOrigins(config);

  function refreshCookie(request: FastifyRequest): string | undefined {
    const v = request.cookies?.[REFRESH_COOKIE];
    return v ? v : undefined;
  }

  app.post(
    "/api/v1/auth/register",
    {
      config: { tier: "auth", errors: ["FORBIDDEN"] },
      schema: {
        summary: "Register a merchant account (signs in; returns one API key pair per environment, once)",
        tags: ["Dashboard auth"],
        headers: TokenDeliveryHeaders,
        body: Type.Object(
          { email: Email, password: Password, companyName: Type.String({ minLength: 1, maxLength: 200 }) },
          { additionalProperties: false },
        ),
        response: {
          201: ok(Type.Object({ user: UserSchema, apiKeys: Type.Array(KeyPairSchema), ...SessionTokens })),
          ...commonErrors,
        },
      },
    },
    async (request, reply) => {
      const asked = deliveryOf(request);
      const r = await register(kit, request.body, asked);
      setSessionCookies(reply, config, r.accessToken, kit.tokens.ttlSeconds, r.session.refreshToken);
      return reply.code(201).send({
        success: true as const,
        data: {
          user: userView(r.profile),
          apiKeys: r.merchant.keys,
          ...tokenFields(r.tokenDelivery, asked, r.accessToken, kit.tokens.ttlSeconds),
        },
      });
    },
  );

  app.post(
    "/api/v1/auth/login",
    {
      config: {
        tier: "auth",
        errors: ["INVALID_AUTH", "FORBIDDEN"],
        audit: { action: "auth.sign_in", failure: "auth.sign_in_failed", accountWide: true },
      },
      schema: {
        summary: "Sign in (sets the session cookies); `totp` is required once 2FA is enabled",
        description:
          "Failed sign-ins are throttled per (e-mail, client IP) and per client IP, never per account: a throttled attempt is answered 429 with `Retry-After` before the password is checked.",
        tags: ["Dashboard auth"],
        headers: TokenDeliveryHeaders,
        body: Type.Object(
          { email: Email, password: Password, totp: Type.Optional(Type.String({ maxLength: 16 })) },
          { additionalProperties: false },
        ),
        response: { 200: ok(Type.Object({ user: UserSchema, ...SessionTokens })), ...commonErrors },
      },
    },
    async (request, reply) => {
      const asked = deliveryOf(request);
      const r = await login(kit, request.body, throttleClient(request), asked, auditTrail(request));
      setSessionCookies(reply, config, r.accessToken, kit.tokens.ttlSeconds, r.session.refreshToken);
      return {
        success: true as const,
        data: {
          user: userView(r.profile),
          ...tokenFields(r.tokenDelivery, asked, r.accessToken, kit.tokens.ttlSeconds),
        },
      };
    },
  );

  app.post(
    "/api/v1/auth/refresh",
    {
      config: { tier: "dashboard", errors: ["INVALID_AUTH", "FORBIDDEN"] },
      schema: {
        summary: "Rotate the refresh token (cookie) and get a new access token",
        description:
          "Presenting an already rotated refresh token ends the whole session (reuse detection). The new access token is in the body only with `X-Token-Delivery: bearer` and only for a session signed in with it.",
        tags: ["Dashboard auth"],
        headers: TokenDeliveryHeaders,
        response: { 200: ok(Type.Object(SessionTokens)), ...commonErrors },
      },
    },
    async (request, reply) => {
      assertWriteOrigin(request, origins, false);
      const token = refreshCookie(request);
      if (!token) throw AppError.invalidAuth("Missing refresh token.");
      const r = await refreshSession(kit, token);
      if (r.kind !== "rotated") {
        clearSessionCookies(reply, config);
        if (r.kind === "reuse")
          request.log.warn({ sessionId: r.sessionId }, "refresh token reuse: session revoked");
        throw AppError.invalidAuth("Invalid or expired refresh token; sign in again.");
      }
      setSessionCookies(reply, config, r.accessToken, kit.tokens.ttlSeconds, r.refreshToken);
      return {
        success: true as const,
        data: tokenFields(r.tokenDelivery, deliveryOf(request), r.accessToken, kit.tokens.ttlSeconds),
      };
    },
  );

  app.post(
    "/api/v1/auth/logout",
    {
      config: { tier: "dashboard", errors: ["INVALID_AUTH", "FORBIDDEN"] },
      schema: {
        summary: "Sign out: ends the session (refresh cookie or access token) and clears the cookies",
        tags: ["Dashboard auth"],
        response: { 200: ok(Done), ...commonErrors },
      },
    },
    async (request, reply) => {
      assertWriteOrigin(request, origins, false);
      const authorization = request.headers.authorization;
      const accessToken = authorization?.startsWith("Bearer ")
        ? authorization.slice(7).trim()
        : request.cookies?.sg_access;
      await logout(kit, { refreshToken: refreshCookie(request), accessToken });
      clearSessionCookies(reply, config);
      return { success: true as const, data: { message: "Signed out." } };
    },
  );

  app.get(
    "/api/v1/auth/me",
    {
      config: { auth: "dashboard", audience: "account", tier: "dashboard" },
      schema: {
        summary: "The signed-in user and the environment the dashboard is looking at",
        tags: ["Dashboard auth"],
        response: {
          200: ok(
            Type.Object({
              user: UserSchema,
              environment: Type.Union([Type.Literal("production"), Type.Literal("sandbox")]),
              permissions: Type.Array(PermissionSchema, {
                description:
                  "What the member's role allows in this environment (the dashboard hides the rest); empty for a platform admin",
              }),
            }),
          ),
          ...commonErrors,
        },
      },
    },
    async (request) => {
      const p = dashboardPrincipal(request);
      return {
        success: true as const,
        data: {
          user: userView(await currentUser(kit, p.userId)),
          environment: p.environment,
          permissions: p.memberRole ? permissionsOf(p.memberRole, p.environment) : [],
        },
      };
    },
  );

  app.post(
    "/api/v1/auth/password/forgot",
    {
      config: { tier: "auth", errors: ["FORBIDDEN"] },
      schema: {
        summary: "E-mail a single-use password-reset token (same answer whether or not the account exists)",
        tags: ["Dashboard auth"],
        body: Type.Object({ email: Email }, { additionalProperties: false }),
        response: { 200: ok(Done), ...commonErrors },
      },
    },
    async (request) => {
      const app0 = config.corsOrigins[0] ?? config.http.productionBaseUrl;
      // The token rides in the fragment: browsers never send it to a server (no access log, no
      // Referer); the page reads it and posts it in the body.
      await forgotPassword(
        kit,
        request.body.email,
        (t) => `${app0}/reset-password#token=${encodeURIComponent(t)}`,
      );
      return {
        success: true as const,
        data: { message: "If an account exists for this e-mail, a reset link is on its way." },
      };
    },
  );

  app.post(
    "/api/v1/auth/password/reset",
    {
      config: {
        tier: "auth",
        errors: ["FORBIDDEN"],
        audit: { action: "auth.password_reset", accountWide: true },
      },
      schema: {
        summary:
          "Set a new password with an e-mailed reset token (ends every session and every other reset token)",
        tags: ["Dashboard auth"],
        body: Type.Object(
          { token: Type.String({ minLength: 1, maxLength: 200 }), newPassword: Password },
          { additionalProperties: false },
        ),
        response: { 200: ok(Done), ...commonErrors },
      },
    },
    async (request) => {
      await resetPassword(kit, request.body.token, request.body.newPassword, auditTrail(request));
      return {
        success: true as const,
        data: { message: "Password changed; sign in with the new password." },
      };
    },
  );

  app.post(
    "/api/v1/auth/otp",
    {
      config: { auth: "dashboard", audience: "account", tier: "auth" },
      schema: {
        summary: "E-mail a 6-digit one-time code for a purpose (payout, password_change, sensitive)",
        description:
          "`sensitive` is the step-up code of production writes: key pair create and rotate, settings, webhook URL and secret rotate through the dashboard, team changes, 2FA enable and disable ([Step-up for production changes](/docs/guides/authentication#step-up-for-production-changes)). A code works only in the session that requested it (the same access or refresh token family), once, for 10 minutes; requesting a new code of a purpose retires the open one.",
        tags: ["Dashboard auth"],
        body: Type.Object(
          { purpose: Type.Union(OTP_PURPOSES.map((p) => Type.Literal(p))) },
          { additionalProperties: false },
        ),
        response: {
          200: ok(Type.Object({ purpose: Type.String(), expiresAt: Type.String({ format: "date-time" }) })),
          ...commonErrors,
        },
      },
    },
    async (request) => {
      const p = dashboardPrincipal(request);
      // The code works only in this session (issue #34).
      const holder = { userId: p.userId, sessionId: dashboardSession(request).sessionId };
      const { expiresAt } = await requestOtp(kit, holder, request.body.purpose);
      return {
        success: true as const,
        data: { purpose: request.body.purpose, expiresAt: expiresAt.toISOString() },
      };
    },
  );

  app.post(
    "/api/v1/auth/password/change",
    {
      config: {
        auth: "dashboard",
        audience: "account",
        tier: "auth",
        audit: { action: "auth.password_change", accountWide: true },
      },
      schema: {
        summary: "Change the password: current password + an OTP of purpose password_change",
        description: "Every other session of the user ends, and every outstanding password-reset token.",
        tags: ["Dashboard auth"],
        body: Type.Object(
          {
            currentPassword: Password,
            newPassword: Password,
            otp: Type.String({ minLength: 1, maxLength: 16 }),
          },
          { additionalProperties: false },
        ),
        response: { 200: ok(Done), ...commonErrors },
      },
    },
    async (request) => {
      const p = dashboardPrincipal(request);
      await changePassword(
        kit,
        p.userId,
        dashboardSession(request).sessionId,
        request.body,
        throttleClient(request),
        auditTrail(request),
      );
      return { success: true as const, data: { message: "Password changed." } };
    },
  );
}
