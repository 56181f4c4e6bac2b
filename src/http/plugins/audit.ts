import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { type AuditFacts, AuditTrail, recordAudit, recordFailedSignIn } from "../../audit/index.js";
import type { AuditAction, AuditActor, AuditEntry } from "../../domain/audit.js";
import type { RouteDeps } from "../app-types.js";
import { clientIp } from "../client-ip.js";
import { dashboardSession } from "./dashboard-auth.js";

/**
 * The audit log's HTTP side (issues #21, #36). A route that changes who can do what, or moves
 * money, declares its record in its own config (`config.audit`). Before the handler, this plugin
 * gives the request an `AuditTrail` (`auditTrail(request)`) that knows the actor (the route's
 * authenticated principal), the client IP the rate limiter and the allowlist use, the user agent
 * and the request id. The handler hands the trail to its use case, which writes the record inside
 * the action's own transaction, adding what only it knows (the target of a create, before/after of
 * a settings change, the signed-in user): `audited(db, trail, trx => …)` for a use case that takes
 * the database, or the trail as its last argument for one that opens its transaction itself. So a
 * record that cannot be written rolls the action back and the request fails with 500. The notices
 * of a security-relevant record are mailed after the commit, before the answer. An
 * `Idempotency-Key` replay records nothing (the action ran once, on the first request).
 *
 * Only reads (`read: true`: an export) and refusals (`failure`: a failed sign-in, 401/403) are
 * recorded after the answer was made: they change nothing that could be rolled back. A route that
 * declares a record and answers 2xx without writing it in its transaction gets it written after
 * the commit, with an error logged: a defect of that route (`test/audit/audit-rollback.test.ts`).
 */

export interface AuditSpec {
  action: AuditAction;
  /** What the action is on (`api_key`, `withdrawal_request`, …); its id from the action, else the `:id` parameter. */
  target?: string;
  /** Account-wide actions (sign-in, password, 2FA) are recorded without an environment. */
  accountWide?: boolean;
  /** The action a refused request (401/403) of this route records (failed sign-ins). */
  failure?: AuditAction;
  /** Fields of the validated body or query copied into the record's details (never secrets or codes). */
  fields?: { from: "body" | "query"; names: readonly string[] };
  /** A read (an export): nothing to roll back, recorded once the answer is made. */
  read?: true;
}

declare module "fastify" {
  interface FastifyContextConfig {
    /** The audit record this route writes (see `http/plugins/audit.ts`). */
    audit?: AuditSpec;
  }
}

const trails = new WeakMap<FastifyRequest, AuditTrail>();

/** The error logged when a route left its record to after its action's commit (tests look for it). */
export const LATE_AUDIT_RECORD =
  "audit record written after its action's commit: the route does not record it in the action's transaction";

/** The audit record of this request's action, to write in the action's transaction (`audited`). */
export function auditTrail(request: FastifyRequest): AuditTrail {
  const trail = trails.get(request);
  if (!trail) throw new Error(`${request.routeOptions.url}: the route declares no audit record`);
  return trail;
}

/**
 * A key pair acts for a member (issue #34, docs/permissions.md): its records name that person too, so two
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
  known: AuditFacts,
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
  // A security-relevant record's notices (docs/merchants/authentication.md#security-notifications) are mailed before the answer (audit/notifications.ts).
  const notify = {
    mailer: { send: (mail: { to: string; subject: string; text: string }) => deps.authKit.mailer.send(mail) },
    clock: deps.authKit.clock,
    logger: deps.logger,
  };

  function baseOf(request: FastifyRequest, spec: AuditSpec) {
    return {
      environment: spec.accountWide ? null : (request.principal?.environment ?? request.environment),
      clientIp: clientIp(request),
      userAgent: header(request, "user-agent"),
      requestId: request.id,
    };
  }

  /** The record of the route's action: the principal and the request, with what the action `known`. */
  function entryOf(
    request: FastifyRequest,
    spec: AuditSpec,
    known: AuditFacts,
    payload?: unknown,
  ): AuditEntry {
    const who = actorOf(request, known);
    if (!who)
      throw new Error(`audit ${spec.action}: no actor (route without principal, action without an actor)`);
    return {
      ...baseOf(request, spec),
      merchantId: who.merchantId,
      actor: who.actor,
      action: spec.action,
      target: spec.target
        ? { type: spec.target, id: known.targetId ?? targetIdOf(request, payload) }
        : undefined,
      details: { ...copiedFields(request, spec), ...actingFor(request), ...known.details },
    };
  }

  async function write(request: FastifyRequest, reply: FastifyReply, spec: AuditSpec, payload: unknown) {
    const status = reply.statusCode;
    if (status >= 200 && status < 300) {
      if (reply.getHeader("idempotent-replayed") === "true") return;
      const trail = trails.get(request);
      if (trail?.written) return trail.sendNotices(db);
      if (!spec.read) {
        deps.logger.error(
          { reqId: request.id, action: spec.action, route: request.routeOptions.url },
          LATE_AUDIT_RECORD,
        );
      }
      await recordAudit(db, entryOf(request, spec, {}, payload), notify);
      return;
    }
    if (spec.failure && (status === 401 || status === 403)) {
      const body = request.body as { email?: unknown } | undefined;
      const email = typeof body?.email === "string" ? body.email : "";
      await recordFailedSignIn(db, email, {
        ...baseOf(request, spec),
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
  // Before the handler: the trail its action writes in its transaction.
  const preHandler = async (request: FastifyRequest) => {
    const spec = request.routeOptions.config?.audit;
    if (spec) trails.set(request, new AuditTrail((given) => entryOf(request, spec, given), notify));
  };
  // Only the routes that declare a record get the hooks: the hot paths (reads, checkout) pay nothing.
  app.addHook("onRoute", (route) => {
    if (!route.config?.audit) return;
    const own = route.onSend;
    route.onSend = own === undefined ? [onSend] : [...(Array.isArray(own) ? own : [own]), onSend];
    const pre = route.preHandler;
    route.preHandler = pre === undefined ? [preHandler] : [...(Array.isArray(pre) ? pre : [pre]), preHandler];
  });
}
