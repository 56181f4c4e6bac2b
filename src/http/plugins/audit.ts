import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { recordAudit, recordFailedSignIn } from "../../audit/index.js";
import type { AuditAction, AuditActor, AuditEntry } from "../../domain/audit.js";
import type { RouteDeps } from "../app-types.js";
import { clientIp } from "../client-ip.js";
import { dashboardSession } from "./dashboard-auth.js";

/**
 * The audit log's HTTP side (issue #21). A route that changes who can do what, or moves money,
 * declares its record in its own config (`config.audit`); this hook writes it once the route
 * answered 2xx — never for an `Idempotency-Key` replay (the action ran once, on the first
 * request) — with the actor from the route's authenticated principal, the client IP the rate
 * limiter and the allowlist use, the user agent and the request id. A route whose `failure` is set
 * (the sign-in) also records a refusal (401/403) as that action. What only the handler knows (the
 * target of a create, before/after of a settings change, the signed-in user) it adds with
 * `auditDetails`.
 *
 * Written after the action's own transaction committed and before the answer is sent: if that
 * write fails, the answer stays the action's (it happened; a 500 would invite a repeat), the
 * failure is logged at error level with the request id, and that record is missing. Writing it
 * inside each use case's transaction would close that gap; see docs/decisions/team-accounts.md.
 */

export interface AuditSpec {
  action: AuditAction;
  /** What the action is on (`api_key`, `withdrawal_request`, …); its id from `auditDetails`, else the `:id` parameter. */
  target?: string;
  /** Account-wide actions (sign-in, password, 2FA) are recorded without an environment. */
  accountWide?: boolean;
  /** The action a refused request (401/403) of this route records (failed sign-ins). */
  failure?: AuditAction;
  /** Fields of the validated body or query copied into the record's details (never secrets or codes). */
  fields?: { from: "body" | "query"; names: readonly string[] };
}

declare module "fastify" {
  interface FastifyContextConfig {
    /** The audit record this route writes (see `http/plugins/audit.ts`). */
    audit?: AuditSpec;
  }
}

interface HandlerFacts {
  targetId?: string | null;
  details?: Record<string, unknown>;
  /** The actor when the route has no principal (sign-in, password reset by token). */
  actor?: AuditActor & { merchantId: string | null };
}

const facts = new WeakMap<FastifyRequest, HandlerFacts>();

/** What the handler adds to the route's audit record (merged with what it added before). */
export function auditDetails(request: FastifyRequest, add: HandlerFacts): void {
  const had = facts.get(request) ?? {};
  facts.set(request, { ...had, ...add, details: { ...had.details, ...add.details } });
}

/**
 * A key pair acts for a member (issue #34, CONTRACT §6): its records name that person too, so two
 * approvals through pairs read as the people they counted as.
 */
function actingFor(request: FastifyRequest): Record<string, unknown> {
  const p = request.principal;
  if (p?.channel !== "apiKey") return {};
  return {
    actingFor: { userId: p.member?.userId ?? null, email: p.member?.email ?? null, role: p.memberRole },
  };
}

function actorOf(
  request: FastifyRequest,
  known: HandlerFacts,
): { actor: AuditActor; merchantId: string | null } | null {
  const p = request.principal;
  if (p?.channel === "apiKey")
    return { actor: { type: "api_key", id: p.apiKeyId }, merchantId: p.merchantId };
  if (p?.channel === "dashboard") {
    const admin = p.role === "admin";
    return {
      // The member's role when it acted (a platform admin: "platform_admin").
      actor: {
        type: "user",
        id: p.userId,
        email: dashboardSession(request).email,
        role: admin ? "platform_admin" : p.memberRole,
      },
      merchantId: admin ? null : p.merchantId,
    };
  }
  if (known.actor) {
    const { merchantId, ...actor } = known.actor;
    return { actor, merchantId };
  }
  return null;
}

/** The target's id: the route's `:id`, else the `data.id` of the JSON answer (a create). */
function targetIdOf(request: FastifyRequest, payload: unknown): string | null {
  const params = request.params as Record<string, unknown> | undefined;
  if (typeof params?.id === "string") return params.id;
  if (typeof payload !== "string") return null;
  try {
    const id = (JSON.parse(payload) as { data?: { id?: unknown } }).data?.id;
    return typeof id === "string" ? id : null;
  } catch {
    return null;
  }
}

function copiedFields(request: FastifyRequest, spec: AuditSpec): Record<string, unknown> {
  if (!spec.fields) return {};
  const source = (spec.fields.from === "body" ? request.body : request.query) as
    | Record<string, unknown>
    | undefined;
  const out: Record<string, unknown> = {};
  for (const name of spec.fields.names) if (source?.[name] !== undefined) out[name] = source[name];
  return out;
}

function header(request: FastifyRequest, name: string): string | null {
  const v = request.headers[name];
  return typeof v === "string" ? v : null;
}

export function registerAudit(
  app: FastifyInstance,
  deps: Pick<RouteDeps, "database" | "logger" | "authKit">,
) {
  const db = deps.database.db;
  // A security-relevant record's notices (CONTRACT §6) are mailed before the answer (audit/notifications.ts).
  const notify = {
    mailer: { send: (mail: { to: string; subject: string; text: string }) => deps.authKit.mailer.send(mail) },
    clock: deps.authKit.clock,
    logger: deps.logger,
  };

  async function write(request: FastifyRequest, reply: FastifyReply, spec: AuditSpec, payload: unknown) {
    const status = reply.statusCode;
    const base = {
      environment: spec.accountWide ? null : (request.principal?.environment ?? request.environment),
      clientIp: clientIp(request),
      userAgent: header(request, "user-agent"),
      requestId: request.id,
    };
    const known = facts.get(request) ?? {};
    if (status >= 200 && status < 300) {
      if (reply.getHeader("idempotent-replayed") === "true") return;
      const who = actorOf(request, known);
      if (!who) throw new Error(`audit ${spec.action}: no actor (route without principal or auditDetails)`);
      const entry: AuditEntry = {
        ...base,
        merchantId: who.merchantId,
        actor: who.actor,
        action: spec.action,
        target: spec.target
          ? { type: spec.target, id: known.targetId ?? targetIdOf(request, payload) }
          : undefined,
        details: { ...copiedFields(request, spec), ...actingFor(request), ...known.details },
      };
      await recordAudit(db, entry, notify);
      return;
    }
    if (spec.failure && (status === 401 || status === 403)) {
      const body = request.body as { email?: unknown } | undefined;
      const email = typeof body?.email === "string" ? body.email : "";
      await recordFailedSignIn(db, email, {
        ...base,
        actor: { type: "user", id: null, email, role: null },
        action: spec.failure,
        details: { status },
      });
    }
  }

  const onSend = async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const spec = request.routeOptions.config?.audit;
    if (!spec) return payload;
    try {
      await write(request, reply, spec, payload);
    } catch (error) {
      deps.logger.error({ err: error, reqId: request.id, action: spec.action }, "audit record not written");
    }
    return payload;
  };
  // Only the routes that declare a record get the hook: the hot paths (reads, checkout) pay nothing.
  app.addHook("onRoute", (route) => {
    if (!route.config?.audit) return;
    const own = route.onSend;
    route.onSend = own === undefined ? [onSend] : [...(Array.isArray(own) ? own : [own]), onSend];
  });
}
