import { Type } from "@sinclair/typebox";
import { audited } from "../../audit/index.js";
import { reassignApiKey } from "../../auth/index.js";
import type { Environment } from "../../domain/environment.js";
import { AppError } from "../../domain/errors.js";
import {
  type ApiKeyRow,
  createApiKey,
  findOwnApiKey,
  listApiKeys,
  revokeOwnApiKey,
  rotateApiKey,
} from "../../merchants/index.js";
import type { App, RouteDeps } from "../app-types.js";
import { ListQuerySchema, listParams, pagination } from "../list.js";
import { auditTrail } from "../plugins/audit.js";
import { dashboardPrincipal } from "../plugins/dashboard-auth.js";
import { StepUpBody, StepUpFields } from "../plugins/step-up.js";
import { commonErrors, list, ok } from "../schemas/common.js";

const Env = Type.Union([Type.Literal("production"), Type.Literal("sandbox")]);

const CreatedBy = Type.Union([Type.String(), Type.Null()], {
  description:
    "The member (user id) the pair acts for, who holds its secret: its creator, or the owner or admin who took it " +
    "over (reassign, which issues a new secret). The pair " +
    "never does more than that member's role allows in its environment, and stops (403 `key_owner_removed`) " +
    "when that member is removed. Null only for a pair the operator issued to a merchant without members " +
    "(it acts with the owner's role).",
});

const ApiKeySchema = Type.Object(
  {
    id: Type.String(),
    environment: Env,
    apiKey: Type.String(),
    secretHint: Type.String({
      description: "Last 4 characters of the secret; the secret itself is never shown again",
    }),
    status: Type.Union([Type.Literal("active"), Type.Literal("revoked")]),
    revokedReason: Type.Union([Type.Literal("revoked"), Type.Literal("rotated"), Type.Null()]),
    replacedBy: Type.Union([Type.String(), Type.Null()]),
    createdAt: Type.String({ format: "date-time" }),
    revokedAt: Type.Union([Type.String({ format: "date-time" }), Type.Null()]),
    createdBy: CreatedBy,
  },
  { title: "ApiKey" },
);

const NewKeyPair = Type.Object(
  {
    id: Type.String(),
    apiKey: Type.String(),
    apiSecret: Type.String({
      description: "Shown only in this response; store it in your server's secret store",
    }),
    environment: Env,
    createdBy: CreatedBy,
  },
  { title: "NewApiKeyPair" },
);

function view(k: ApiKeyRow) {
  return {
    id: k.id,
    environment: k.environment,
    apiKey: k.api_key,
    secretHint: `…${k.secret_hint}`,
    status: k.status,
    revokedReason: k.revoked_reason,
    replacedBy: k.replaced_by,
    createdAt: new Date(k.created_at).toISOString(),
    revokedAt: k.revoked_at ? new Date(k.revoked_at).toISOString() : null,
    createdBy: k.created_by,
  };
}

const IdParams = Type.Object({ id: Type.String({ maxLength: 100 }) });

/** `/api/v1/dashboard/api-keys`: key pairs of the dashboard's environment (docs/api-reference.md#dashboardcreateapikey). */
export function dashboardApiKeyRoutes(app: App, { database, authKit: kit }: RouteDeps) {
  const db = database.db;
  const cfg = { auth: "dashboard", tier: "dashboard" } as const;
  const write = { ...cfg, permission: "api_keys:write" } as const;

  app.get(
    "/api/v1/dashboard/api-keys",
    {
      config: { ...cfg, permission: "api_keys:read" },
      schema: {
        summary: "List the API key pairs of the environment (never secrets)",
        tags: ["Dashboard"],
        querystring: ListQuerySchema,
        response: { 200: list(ApiKeySchema), ...commonErrors },
      },
    },
    async (request) => {
      const p = dashboardPrincipal(request);
      const params = listParams(request.query);
      const { rows, total } = await listApiKeys(db, p.merchantId, p.environment, params);
      return { success: true as const, data: rows.map(view), pagination: pagination(params, total) };
    },
  );

  app.post(
    "/api/v1/dashboard/api-keys",
    {
      // Step-up when the pair is for production, whichever environment the dashboard shows.
      config: {
        ...write,
        audit: {
          action: "api_key.create",
          target: "api_key",
          fields: { from: "body", names: ["environment"] },
        },
        stepUp: {
          target: (request) =>
            (request.body as { environment?: Environment }).environment ??
            dashboardPrincipal(request).environment,
        },
      },
      schema: {
        summary: "Create a key pair (the secret is shown once)",
        description:
          "`environment` defaults to the dashboard's environment (X-Environment or base URL). A production pair needs the step-up codes `otp` (and `totp` when 2FA is on). " +
          "The pair acts for the member creating it (`createdBy`): it can never do more than that member's role allows in its environment.",
        tags: ["Dashboard"],
        body: Type.Object(
          { environment: Type.Optional(Env), ...StepUpFields },
          { additionalProperties: false },
        ),
        response: { 201: ok(NewKeyPair), ...commonErrors },
      },
    },
    async (request, reply) => {
      const p = dashboardPrincipal(request);
      const environment = request.body.environment ?? p.environment;
      const pair = await audited(
        db,
        auditTrail(request),
        (trx) => createApiKey(trx, p.merchantId, environment, p.userId),
        (made) => ({ targetId: made.id }),
      );
      return reply.code(201).send({ success: true as const, data: pair });
    },
  );

  app.post(
    "/api/v1/dashboard/api-keys/:id/rotate",
    {
      // Step-up when the pair rotated is a production pair.
      config: {
        ...write,
        errors: ["INVALID_STATE"],
        audit: { action: "api_key.rotate", target: "api_key" },
        stepUp: {
          target: async (request) =>
            (
              await findOwnApiKey(
                db,
                dashboardPrincipal(request).merchantId,
                (request.params as { id: string }).id,
              )
            ).environment,
        },
      },
      schema: {
        summary: "Rotate a key pair: a new pair (shown once); the old pair stops working at once",
        description:
          "A production pair needs the step-up codes `otp` (and `totp` when 2FA is on). The new pair acts for the " +
          "member who rotated it (who receives its secret), with that member's role.",
        tags: ["Dashboard"],
        params: IdParams,
        body: StepUpBody,
        response: { 200: ok(NewKeyPair), 409: commonErrors[400], ...commonErrors },
      },
    },
    async (request) => {
      const p = dashboardPrincipal(request);
      return {
        success: true as const,
        data: await audited(db, auditTrail(request), (trx) =>
          rotateApiKey(trx, p.merchantId, request.params.id, p.userId),
        ),
      };
    },
  );

  app.delete(
    "/api/v1/dashboard/api-keys/:id",
    {
      config: { ...write, errors: ["INVALID_STATE"], audit: { action: "api_key.revoke", target: "api_key" } },
      schema: {
        summary: "Revoke a key pair",
        tags: ["Dashboard"],
        params: IdParams,
        response: { 200: ok(ApiKeySchema), 409: commonErrors[400], ...commonErrors },
      },
    },
    async (request) => {
      const p = dashboardPrincipal(request);
      return {
        success: true as const,
        data: view(
          await audited(db, auditTrail(request), (trx) =>
            revokeOwnApiKey(trx, p.merchantId, request.params.id),
          ),
        ),
      };
    },
  );
  app.post(
    "/api/v1/dashboard/api-keys/:id/reassign",
    {
      // It changes whom a credential acts for and issues its new secret: step-up when the pair is a
      // production pair. Only an owner or admin, only to itself (the use case: `mayReassignKey`).
      config: {
        ...write,
        errors: ["INVALID_STATE", "NOT_FOUND"],
        audit: {
          action: "api_key.reassign",
          target: "api_key",
          fields: { from: "body", names: ["memberId"] },
        },
        stepUp: {
          target: async (request) =>
            (
              await findOwnApiKey(
                db,
                dashboardPrincipal(request).merchantId,
                (request.params as { id: string }).id,
              )
            ).environment,
        },
      },
      schema: {
        summary: "Take over a key pair: it acts for you, with a new secret (shown once)",
        description:
          "A key pair acts for whoever holds its secret. Owner or admin only (an admin never takes the owner's pair), and " +
          "`memberId` must be your own user id (else 403: the other member should create their own pair). The pair " +
          "keeps its id and public key (a front-end that embeds the key keeps working) but gets a new secret, " +
          "returned once in this response; the old secret stops working at once. From its next request the pair acts " +
          "for you, with your role: how a pair whose member was removed (403 `key_owner_removed`) or lost a " +
          "permission (403 `key_owner_role`) works again. A revoked pair: 409. A production pair needs the step-up " +
          "codes `otp` (and `totp` when 2FA is on).",
        tags: ["Dashboard"],
        params: IdParams,
        body: Type.Object(
          {
            memberId: Type.String({
              minLength: 1,
              maxLength: 100,
              description: "Your own user id: the pair acts for whoever holds its secret, and you receive it",
            }),
            ...StepUpFields,
          },
          { additionalProperties: false },
        ),
        response: { 200: ok(NewKeyPair), 409: commonErrors[400], ...commonErrors },
      },
    },
    async (request) => {
      const p = dashboardPrincipal(request);
      if (p.memberRole === null)
        throw AppError.forbidden("Only a merchant's members reassign its key pairs.");
      const r = await reassignApiKey(
        kit,
        { userId: p.userId, merchantId: p.merchantId, role: p.memberRole },
        request.params.id,
        request.body.memberId,
        auditTrail(request),
      );
      return { success: true as const, data: r.pair };
    },
  );
}
