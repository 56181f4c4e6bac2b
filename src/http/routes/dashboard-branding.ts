import { Type } from "@sinclair/typebox";
import { audited } from "../../audit/index.js";
import { MAX_DISPLAY_NAME_CHARS, MAX_LOGO_BYTES } from "../../domain/branding.js";
import { AppError } from "../../domain/errors.js";
import { getBranding, type MerchantBranding, updateBranding } from "../../merchants/index.js";
import type { App, RouteDeps } from "../app-types.js";
import { auditTrail } from "../plugins/audit.js";
import { dashboardPrincipal } from "../plugins/dashboard-auth.js";
import { commonErrors, Nullable, ok } from "../schemas/common.js";

/**
 * The largest upload body: the base64 of a logo a good deal over the 256 KiB limit, so an oversized
 * file is refused by the use case with its own message ("at most 256 KiB") rather than by the body
 * limit; anything larger still is 400 `body` "must be at most … bytes".
 */
const UPLOAD_BODY_LIMIT = 1024 * 1024;

const BrandingSchema = Type.Object(
  {
    displayName: Nullable(
      Type.String({ description: "The name the hosted payment page shows; null: the company name" }),
    ),
    companyName: Type.String({
      description: "Given at registration; the page's name when no display name is set",
    }),
    logo: Nullable(
      Type.Object(
        {
          url: Type.String({
            description:
              "Path on this service: `/pay/logo/{sha256}` (cached for ever: a new logo is a new path)",
          }),
          contentType: Type.Union([
            Type.Literal("image/png"),
            Type.Literal("image/jpeg"),
            Type.Literal("image/webp"),
          ]),
          width: Type.Integer(),
          height: Type.Integer(),
          bytes: Type.Integer(),
          sha256: Type.String(),
        },
        { title: "BrandingLogo" },
      ),
    ),
    updatedAt: Nullable(Type.String({ format: "date-time" })),
  },
  { title: "Branding" },
);

function view(b: MerchantBranding) {
  return {
    displayName: b.displayName,
    companyName: b.companyName,
    logo: b.logo
      ? {
          url: b.logo.path,
          contentType: b.logo.contentType,
          width: b.logo.width,
          height: b.logo.height,
          bytes: b.logo.bytes,
          sha256: b.logo.sha256,
        }
      : null,
    updatedAt: b.updatedAt ? b.updatedAt.toISOString() : null,
  };
}

/** Strict standard base64 (no whitespace, no URL alphabet): Node's decoder would skip what it does not know. */
function decodeBase64(text: string): Uint8Array {
  if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text))
    throw AppError.validation([{ field: "logo", message: "must be the file's bytes in standard base64" }]);
  return Buffer.from(text, "base64");
}

/**
 * `/api/v1/dashboard/settings/branding` (issue #41): the hosted payment page's display name and logo,
 * one per merchant (the page in both environments shows the same shop). Reading needs
 * `settings:read`, changing `settings:write`; no step-up (it moves no money and weakens no control,
 * docs/decisions/deposits-page.md "Branding"), but every change is in the audit log. The logo is
 * sent as base64 in the JSON body (one body parser, one schema; the file is small), checked by its
 * own bytes, and served from our origin at `logo.url`.
 */
export function dashboardBrandingRoutes(app: App, deps: RouteDeps) {
  const db = deps.database.db;
  const cfg = { auth: "dashboard", tier: "dashboard" } as const;

  app.get(
    "/api/v1/dashboard/settings/branding",
    {
      config: { ...cfg, permission: "settings:read" },
      schema: {
        summary: "Checkout page branding",
        description:
          "The display name and logo of the hosted payment page (per merchant, both environments).",
        tags: ["Dashboard"],
        response: { 200: ok(BrandingSchema), ...commonErrors },
      },
    },
    async (request) => {
      const p = dashboardPrincipal(request);
      return { success: true as const, data: view(await getBranding(db, p.merchantId)) };
    },
  );

  app.patch(
    "/api/v1/dashboard/settings/branding",
    {
      bodyLimit: UPLOAD_BODY_LIMIT,
      config: {
        ...cfg,
        permission: "settings:write",
        audit: { action: "settings.branding_update", target: "branding" },
      },
      schema: {
        summary: "Change the checkout page branding (fields not sent stay as they are)",
        description:
          `\`displayName\`: trimmed, 1–${MAX_DISPLAY_NAME_CHARS} characters, no control characters; null shows the company name. ` +
          `\`logo\`: the file's bytes in base64 — PNG, JPEG or WebP (decided by the bytes, not by any declared type; SVG is refused), ` +
          `at most ${MAX_LOGO_BYTES / 1024} KiB and 2048 × 2048 px; null removes it. Applies to both environments; no step-up.`,
        tags: ["Dashboard"],
        body: Type.Object(
          {
            displayName: Type.Optional(Nullable(Type.String({ maxLength: 1000 }))),
            logo: Type.Optional(
              Nullable(
                Type.String({
                  maxLength: UPLOAD_BODY_LIMIT,
                  description: "The image file, standard base64",
                }),
              ),
            ),
          },
          { additionalProperties: false },
        ),
        response: { 200: ok(BrandingSchema), ...commonErrors },
      },
    },
    async (request) => {
      const p = dashboardPrincipal(request);
      const { displayName, logo } = request.body;
      const patch = {
        ...(displayName !== undefined ? { displayName } : {}),
        ...(logo !== undefined ? { logo: logo === null ? null : decodeBase64(logo) } : {}),
      };
      const brief = (b: MerchantBranding) => ({
        displayName: b.displayName,
        logoSha256: b.logo?.sha256 ?? null,
      });
      const { after } = await audited(
        db,
        auditTrail(request),
        async (trx) => {
          const before = await getBranding(trx, p.merchantId);
          const changed = await updateBranding(trx, p.merchantId, patch, new Date(deps.clock.now()));
          return { before, after: changed };
        },
        ({ before, after: changed }) => ({
          targetId: p.merchantId,
          details: { fields: Object.keys(patch), before: brief(before), after: brief(changed) },
        }),
      );
      return { success: true as const, data: view(after) };
    },
  );
}
