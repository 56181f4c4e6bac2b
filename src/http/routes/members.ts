import { Type } from "@sinclair/typebox";
import {
  acceptInvitation,
  changeMemberRole,
  inviteMember,
  listInvitations,
  listMembers,
  type MemberActor,
  removeMember,
  revokeInvitation,
  transferOwnership,
} from "../../auth/index.js";
import { AppError } from "../../domain/errors.js";
import { ASSIGNABLE_ROLES, MEMBER_ROLES } from "../../domain/permissions.js";
import type { App, RouteDeps } from "../app-types.js";
import { ListQuerySchema, listParams, pagination } from "../list.js";
import { auditTrail } from "../plugins/audit.js";
import { dashboardPrincipal, setSessionCookies } from "../plugins/dashboard-auth.js";
import { StepUpBody, StepUpFields } from "../plugins/step-up.js";
import {
  Email,
  Password,
  SessionTokens,
  TokenDeliveryHeaders,
  tokenFields,
  UserSchema,
  userView,
} from "../schemas/auth.js";
import { commonErrors, list, ok } from "../schemas/common.js";

/**
 * Team accounts (issue #21): the merchant's members and invitations on the dashboard, and the
 * invitee's accept. Granting access (invite, role change, ownership) is a sensitive account-wide
 * write: step-up in every environment (docs/merchants/authentication.md#step-up-for-production-changes, target `account`); removing a member takes
 * access away and needs none.
 */

const RoleSchema = Type.Union(
  MEMBER_ROLES.map((r) => Type.Literal(r)),
  { title: "MemberRole" },
);
const AssignableRoleSchema = Type.Union(
  ASSIGNABLE_ROLES.map((r) => Type.Literal(r)),
  { description: "Any role but owner: ownership moves by transfer" },
);

const MemberSchema = Type.Object(
  {
    id: Type.String(),
    email: Type.String(),
    role: RoleSchema,
    twoFactorEnabled: Type.Boolean(),
    createdAt: Type.String({ format: "date-time" }),
  },
  { title: "Member" },
);

const InvitationSchema = Type.Object(
  {
    id: Type.String(),
    email: Type.String(),
    role: AssignableRoleSchema,
    status: Type.Union([
      Type.Literal("pending"),
      Type.Literal("accepted"),
      Type.Literal("revoked"),
      Type.Literal("expired"),
    ]),
    invitedBy: Type.String({ description: "The member who invited" }),
    expiresAt: Type.String({ format: "date-time" }),
    createdAt: Type.String({ format: "date-time" }),
  },
  { title: "Invitation" },
);

const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });
const account = () => "account" as const;

export function memberRoutes(app: App, deps: RouteDeps) {
  const { authKit: kit, config } = deps;
  const tags = ["Team"];
  const cfg = { auth: "dashboard", tier: "dashboard" } as const;

  function actor(request: Parameters<typeof dashboardPrincipal>[0]): MemberActor {
    const p = dashboardPrincipal(request);
    if (p.memberRole === null) throw AppError.forbidden("Only a merchant's members manage its team.");
    return { userId: p.userId, merchantId: p.merchantId, role: p.memberRole };
  }

  app.get(
    "/api/v1/dashboard/members",
    {
      config: { ...cfg, permission: "members:read" },
      schema: {
        summary: "The merchant's members and their roles",
        tags,
        querystring: ListQuerySchema,
        response: { 200: list(MemberSchema), ...commonErrors },
      },
    },
    async (request) => {
      const params = listParams(request.query);
      const { rows, total } = await listMembers(kit.db, actor(request).merchantId, params);
      return { success: true as const, data: rows, pagination: pagination(params, total) };
    },
  );

  app.patch(
    "/api/v1/dashboard/members/:id",
    {
      config: {
        ...cfg,
        permission: "members:write",
        stepUp: { target: account },
        errors: ["NOT_FOUND"],
        audit: { action: "member.role_change", target: "member", accountWide: true },
      },
      schema: {
        summary: "Give a member another role (applies from its next request)",
        tags,
        params: IdParams,
        body: Type.Object({ role: AssignableRoleSchema, ...StepUpFields }, { additionalProperties: false }),
        response: { 200: ok(MemberSchema), ...commonErrors },
      },
    },
    async (request) => {
      const r = await changeMemberRole(
        kit,
        actor(request),
        request.params.id,
        request.body.role,
        auditTrail(request),
      );
      return { success: true as const, data: r.member };
    },
  );

  app.delete(
    "/api/v1/dashboard/members/:id",
    {
      config: {
        ...cfg,
        permission: "members:write",
        errors: ["NOT_FOUND"],
        audit: { action: "member.remove", target: "member", accountWide: true },
      },
      schema: {
        summary: "Remove a member: its sessions end at once and it can no longer sign in",
        tags,
        params: IdParams,
        response: { 200: ok(MemberSchema), ...commonErrors },
      },
    },
    async (request) => {
      const removed = await removeMember(kit, actor(request), request.params.id, auditTrail(request));
      return { success: true as const, data: removed };
    },
  );

  app.post(
    "/api/v1/dashboard/members/:id/transfer-ownership",
    {
      config: {
        ...cfg,
        permission: "ownership:transfer",
        stepUp: { target: account },
        errors: ["NOT_FOUND"],
        audit: { action: "ownership.transfer", target: "member", accountWide: true },
      },
      schema: {
        summary: "Make another member the owner; the current owner becomes admin",
        tags,
        params: IdParams,
        body: StepUpBody,
        response: {
          200: ok(Type.Object({ newOwner: MemberSchema, formerOwner: MemberSchema })),
          ...commonErrors,
        },
      },
    },
    async (request) => {
      const r = await transferOwnership(kit, actor(request), request.params.id, auditTrail(request));
      return { success: true as const, data: r };
    },
  );

  app.get(
    "/api/v1/dashboard/invitations",
    {
      config: { ...cfg, permission: "members:read" },
      schema: {
        summary: "The merchant's invitations, newest first, whatever their status",
        tags,
        querystring: ListQuerySchema,
        response: { 200: list(InvitationSchema), ...commonErrors },
      },
    },
    async (request) => {
      const params = listParams(request.query);
      const { rows, total } = await listInvitations(kit, actor(request).merchantId, params);
      return { success: true as const, data: rows, pagination: pagination(params, total) };
    },
  );

  app.post(
    "/api/v1/dashboard/invitations",
    {
      config: {
        ...cfg,
        permission: "members:write",
        stepUp: { target: account },
        audit: {
          action: "member.invite",
          target: "invitation",
          accountWide: true,
          fields: { from: "body", names: ["email", "role"] },
        },
      },
      schema: {
        summary: "Invite someone by e-mail with a role (a single-use link, valid 7 days)",
        description:
          "The link is mailed to the address, never returned. Inviting the same address again revokes the pending invitation.",
        tags,
        body: Type.Object(
          { email: Email, role: AssignableRoleSchema, ...StepUpFields },
          { additionalProperties: false },
        ),
        response: { 201: ok(InvitationSchema), ...commonErrors },
      },
    },
    async (request, reply) => {
      const origin = config.corsOrigins[0] ?? config.http.productionBaseUrl;
      // The token rides in the fragment: browsers never send it to a server (see password reset).
      const invitation = await inviteMember(
        kit,
        actor(request),
        { email: request.body.email, role: request.body.role },
        (t) => `${origin}/accept-invite#token=${encodeURIComponent(t)}`,
        auditTrail(request),
      );
      return reply.code(201).send({ success: true as const, data: invitation });
    },
  );

  app.delete(
    "/api/v1/dashboard/invitations/:id",
    {
      config: {
        ...cfg,
        permission: "members:write",
        errors: ["NOT_FOUND", "INVALID_STATE"],
        audit: { action: "member.invitation_revoke", target: "invitation", accountWide: true },
      },
      schema: {
        summary: "Revoke a pending invitation (its link stops working)",
        tags,
        params: IdParams,
        response: { 200: ok(InvitationSchema), ...commonErrors },
      },
    },
    async (request) => {
      return {
        success: true as const,
        data: await revokeInvitation(kit, actor(request), request.params.id, auditTrail(request)),
      };
    },
  );

  app.post(
    "/api/v1/auth/invitations/accept",
    {
      config: {
        tier: "auth",
        errors: ["FORBIDDEN"],
        audit: { action: "member.join", target: "invitation", accountWide: true },
      },
      schema: {
        summary: "Accept an invitation: choose a password, join the merchant, and sign in",
        tags: ["Dashboard auth"],
        headers: TokenDeliveryHeaders,
        body: Type.Object(
          { token: Type.String({ minLength: 1, maxLength: 200 }), password: Password },
          { additionalProperties: false },
        ),
        response: { 200: ok(Type.Object({ user: UserSchema, ...SessionTokens })), ...commonErrors },
      },
    },
    async (request, reply) => {
      const asked = request.headers["x-token-delivery"] === "bearer" ? "bearer" : "cookie";
      const r = await acceptInvitation(kit, request.body, asked, auditTrail(request));
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
}
