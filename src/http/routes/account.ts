import { Type } from "@sinclair/typebox";
import { AppError } from "../../domain/errors.js";
import { MEMBER_ROLES } from "../../domain/permissions.js";
import { findMerchantById } from "../../merchants/index.js";
import type { App, RouteDeps } from "../app-types.js";
import { apiKeyPrincipal } from "../plugins/auth.js";
import { commonErrors, ok } from "../schemas/common.js";

const Account = Type.Object(
  {
    clientId: Type.String({ description: "The merchant's identifier (clientId in webhooks)" }),
    companyName: Type.String(),
    email: Type.String(),
    environment: Type.Union([Type.Literal("production"), Type.Literal("sandbox")]),
    apiKeyId: Type.String({ description: "The key pair that authenticated this request" }),
    createdBy: Type.Union([Type.String(), Type.Null()], {
      description:
        "The member (user id) this key pair acts for (docs/permissions.md); null for a pair the operator issued to a merchant without members",
    }),
    role: Type.Union(
      MEMBER_ROLES.map((r) => Type.Literal(r)),
      { description: "That member's role now: the pair never does more than it allows in this environment" },
    ),
  },
  { title: "Account", description: "The merchant account and environment of the API key" },
);

/** `GET /api/v1/public/account`: who these credentials are — lets a merchant check a key pair. */
export function accountRoutes(app: App, { database }: RouteDeps) {
  app.get(
    "/api/v1/public/account",
    {
      config: { auth: "apiKey", tier: "standard", permission: "money:read" },
      schema: {
        summary: "The merchant account the API key belongs to",
        tags: ["Account"],
        response: { 200: ok(Account), ...commonErrors },
      },
    },
    async (request) => {
      const p = apiKeyPrincipal(request);
      const merchant = await findMerchantById(database.db, p.merchantId);
      if (!merchant) throw AppError.invalidAuth();
      return {
        success: true as const,
        data: {
          clientId: merchant.id,
          companyName: merchant.company_name,
          email: merchant.email,
          environment: p.environment,
          apiKeyId: p.apiKeyId,
          createdBy: p.member?.userId ?? null,
          role: p.memberRole,
        },
      };
    },
  );
}
