import { Type } from "@sinclair/typebox";
import type { TokenDelivery, UserProfile } from "../../auth/index.js";
import { MEMBER_ROLES, PERMISSIONS } from "../../domain/permissions.js";
import { Nullable } from "./common.js";

/** Request and response shapes of `/api/v1/auth/*` (`routes/auth.ts`), and their presenters. */

export const UserSchema = Type.Object(
  {
    id: Type.String(),
    email: Type.String(),
    role: Type.Union([Type.Literal("merchant"), Type.Literal("admin")]),
    memberRole: Nullable(
      Type.Union(
        MEMBER_ROLES.map((r) => Type.Literal(r)),
        { description: "The login's role in its merchant (team accounts); null for a platform admin" },
      ),
    ),
    merchantId: Nullable(Type.String()),
    companyName: Nullable(Type.String()),
    totpEnabled: Type.Boolean(),
    createdAt: Type.String({ format: "date-time" }),
  },
  { title: "User" },
);

export const SessionTokens = {
  accessToken: Type.Optional(
    Type.String({
      description:
        "Only with `X-Token-Delivery: bearer` (and on refresh only for a session signed in that way); send as `Authorization: Bearer`. Browsers use the httpOnly cookie.",
    }),
  ),
  expiresIn: Type.Integer({ description: "Seconds until the access token expires; refresh before" }),
};

/**
 * The access token is in the JSON body only for a client that asks (security issue 18): a header,
 * so that refresh (no body) asks the same way, and one a cross-origin page cannot send (it is not
 * in the CORS allowed headers). Browsers keep to the httpOnly cookie, out of reach of script.
 */
export const TokenDeliveryHeaders = Type.Object({
  "x-token-delivery": Type.Optional(
    Type.Union([Type.Literal("cookie"), Type.Literal("bearer")], {
      description:
        "`bearer`: also return the access token in the body (non-browser clients). Default `cookie`: the httpOnly cookie only.",
    }),
  ),
});

/** The body's token fields: the access token only for a session that asked for bearer delivery. */
export function tokenFields(
  delivery: TokenDelivery,
  asked: TokenDelivery,
  accessToken: string,
  expiresIn: number,
) {
  return delivery === "bearer" && asked === "bearer" ? { accessToken, expiresIn } : { expiresIn };
}

export function userView({ user, companyName }: UserProfile) {
  return {
    id: user.id,
    email: user.email,
    role: user.role,
    memberRole: user.member_role,
    merchantId: user.merchant_id,
    companyName,
    totpEnabled: user.totp_enabled,
    createdAt: new Date(user.created_at).toISOString(),
  };
}

export const PermissionSchema = Type.Union(
  PERMISSIONS.map((p) => Type.Literal(p)),
  { title: "Permission", description: "What a member's role allows (docs/permissions.md)" },
);

export const KeyPairSchema = Type.Object({
  id: Type.String(),
  environment: Type.Union([Type.Literal("production"), Type.Literal("sandbox")]),
  apiKey: Type.String(),
  apiSecret: Type.String({ description: "Shown only in this response" }),
});

export const Email = Type.String({ minLength: 3, maxLength: 254 });
export const Password = Type.String({ minLength: 1, maxLength: 256 });
export const Done = Type.Object({ message: Type.String() });
export const Code = Type.Object(
  { code: Type.String({ minLength: 1, maxLength: 16 }) },
  { additionalProperties: false },
);
