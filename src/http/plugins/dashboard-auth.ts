import cookie from "@fastify/cookie";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { type AuthKit, findActiveSession, REFRESH_TOKEN_TTL_SECONDS } from "../../auth/index.js";
import type { Config } from "../../config/config.js";
import type { Environment } from "../../domain/environment.js";
import { AppError } from "../../domain/errors.js";
import { assertRoleAllows } from "../../domain/permissions.js";
import type { Principal } from "../context.js";
import { allowedOrigins, assertWriteOrigin, isSafeMethod } from "./cors.js";

/**
 * The dashboard channel (docs/decisions/dashboard.md#dashboard-channel): a short-lived access JWT from the httpOnly
 * cookie or `Authorization: Bearer`, checked against its live session (so logout, reuse detection
 * and password changes end it at once). The environment is `X-Environment` when sent, else the
 * base URL that received the request. Which accounts a route serves is its `config.audience`
 * (http/context.ts): admins are read-only and confined to `admin` routes (plus their own
 * `account` routes); merchants never reach an `admin` route.
 */

export const ACCESS_COOKIE = "sg_access";
export const REFRESH_COOKIE = "sg_refresh";
/** The refresh cookie is sent only to the auth routes (refresh, logout), never to the API. */
export const REFRESH_COOKIE_PATH = "/api/v1/auth";

export interface DashboardSession {
  sessionId: string;
  userId: string;
  email: string;
  via: "cookie" | "bearer";
}

const sessions = new WeakMap<FastifyRequest, DashboardSession>();

/** The session behind a dashboard-authenticated request (set by `authenticateDashboard`). */
export function dashboardSession(request: FastifyRequest): DashboardSession {
  const s = sessions.get(request);
  if (!s) throw new Error("route is not on the dashboard channel");
  return s;
}

interface Verifier {
  kit: AuthKit;
  origins: ReadonlySet<string>;
}

declare module "fastify" {
  interface FastifyInstance {
    stablegateDashboard: Verifier | undefined;
  }
}

/** Registers cookie parsing and the verifier; call before `registerAuth`. */
export async function registerDashboardAuth(app: FastifyInstance, kit: AuthKit) {
  await app.register(cookie, { hook: "onRequest" });
  app.decorate("stablegateDashboard", { kit, origins: allowedOrigins(kit.config) });
  app.addHook("onClose", async () => kit.mailer.close());
}

export function readEnvironmentHeader(request: FastifyRequest): Environment {
  const raw = request.headers["x-environment"];
  if (raw === undefined) return request.environment;
  if (raw === "sandbox" || raw === "production") return raw;
  throw AppError.validation([{ field: "X-Environment", message: "must be sandbox or production" }]);
}

const invalid = () => AppError.invalidAuth("Missing or invalid dashboard session.");

/**
 * `apiKeyAccepted`: the route also takes a key pair (`auth: "merchant"`), so a request with no
 * credentials at all is told about the `apikey` header first (integrations meet this route with
 * a key; "invalid dashboard session" sent them the wrong way).
 */
export async function authenticateDashboard(
  request: FastifyRequest,
  options: { apiKeyAccepted?: boolean } = {},
): Promise<Principal> {
  const verifier = request.server.stablegateDashboard;
  const hasSession =
    typeof request.headers.authorization === "string" || request.cookies?.[ACCESS_COOKIE] !== undefined;
  if (options.apiKeyAccepted && !hasSession) {
    throw AppError.invalidAuth(
      "Missing API key: send it in the apikey header (with x-api-secret where the route asks for it), or sign in to the dashboard.",
    );
  }
  if (!verifier) throw invalid();
  const { kit } = verifier;

  const authorization = request.headers.authorization;
  let token: string | undefined;
  let via: DashboardSession["via"] = "bearer";
  if (typeof authorization === "string" && authorization.startsWith("Bearer ")) {
    token = authorization.slice(7).trim();
  } else {
    token = request.cookies?.[ACCESS_COOKIE];
    via = "cookie";
  }
  if (!token) throw invalid();
  const claims = await kit.tokens.verify(token);
  if (!claims) throw invalid();
  const session = await findActiveSession(kit.db, claims.sessionId, kit.now());
  if (!session || session.userId !== claims.userId) throw invalid();
  if (via === "cookie") assertWriteOrigin(request, verifier.origins, true);

  // Who may call this route is the matched route's own declaration, never the URL text.
  const audience = request.routeOptions.config?.audience ?? "merchant";
  if (session.role === "admin") {
    if (audience === "merchant")
      throw AppError.forbidden("Admin accounts use the read-only /api/v1/admin/* views.");
    if (audience === "admin" && !isSafeMethod(request.method))
      throw AppError.forbidden("Admin access is read-only.");
  } else {
    if (audience === "admin") throw AppError.forbidden("Admin views need an admin account.");
    if (session.merchantStatus !== "active") throw AppError.forbidden("This merchant account is suspended.");
  }
  const environment = readEnvironmentHeader(request);
  if (session.role !== "admin" && audience === "merchant") {
    // The member's role against the matched route's own permission (issue #21): the one check of
    // both channels. A route without one cannot be registered (registerPermissions); failing
    // closed here covers it anyway.
    assertRoleAllows(
      { via: "session", role: session.memberRole },
      request.routeOptions.config?.permission,
      environment,
    );
  }
  sessions.set(request, { sessionId: session.sessionId, userId: session.userId, email: session.email, via });
  return {
    channel: "dashboard",
    // Admins belong to no merchant; merchant-scoped routes refuse them above.
    merchantId: session.merchantId ?? "",
    environment,
    userId: session.userId,
    role: session.role,
    memberRole: session.memberRole,
  };
}

/**
 * Start-up check: every route a merchant's dashboard session or an API key pair can reach declares
 * its permission (issue #21: "a new route without a declared permission fails"; issue #34: the
 * API-key channel acts for a member too).
 */
export function registerPermissions(app: FastifyInstance) {
  app.addHook("onRoute", (route) => {
    const c = route.config;
    if (c?.auth === "apiKey") {
      if (!c.permission)
        throw new Error(`${route.method} ${route.url}: an API-key route declares config.permission`);
      return;
    }
    if (c?.auth !== "dashboard" && c?.auth !== "merchant") return;
    if ((c.audience ?? "merchant") !== "merchant") return;
    if (!c.permission)
      throw new Error(`${route.method} ${route.url}: a dashboard route declares config.permission`);
  });
}

/** The dashboard principal of a route declared with `auth: "dashboard"`. */
export function dashboardPrincipal(request: FastifyRequest): Extract<Principal, { channel: "dashboard" }> {
  const p = request.principal;
  if (p?.channel !== "dashboard") throw new Error("route is not on the dashboard channel");
  return p;
}

/**
 * The admin principal of an `audience: "admin"` route. The verifier already refused everyone else;
 * each admin handler asks again, so a route registered without its audience still leaks nothing.
 */
export function adminPrincipal(request: FastifyRequest): Extract<Principal, { channel: "dashboard" }> {
  const p = request.principal;
  if (p?.channel !== "dashboard" || p.role !== "admin")
    throw AppError.forbidden("Admin views need an admin account.");
  return p;
}

function cookieBase(config: Config) {
  // Production mode: Secure + SameSite=Strict (docs/decisions/dashboard.md#dashboard-channel). Locally (plain http) Secure would drop them.
  return config.production
    ? ({ httpOnly: true, secure: true, sameSite: "strict" } as const)
    : ({ httpOnly: true, secure: false, sameSite: "lax" } as const);
}

export function setSessionCookies(
  reply: FastifyReply,
  config: Config,
  accessToken: string,
  accessTtlSeconds: number,
  refreshToken?: string,
) {
  const base = cookieBase(config);
  reply.setCookie(ACCESS_COOKIE, accessToken, { ...base, path: "/", maxAge: accessTtlSeconds });
  if (refreshToken) {
    reply.setCookie(REFRESH_COOKIE, refreshToken, {
      ...base,
      path: REFRESH_COOKIE_PATH,
      maxAge: REFRESH_TOKEN_TTL_SECONDS,
    });
  }
}

export function clearSessionCookies(reply: FastifyReply, config: Config) {
  const base = cookieBase(config);
  reply.clearCookie(ACCESS_COOKIE, { ...base, path: "/" });
  reply.clearCookie(REFRESH_COOKIE, { ...base, path: REFRESH_COOKIE_PATH });
}
