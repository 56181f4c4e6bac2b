import type { Db } from "../db/database.js";
import { inTransaction } from "../db/transaction.js";
import {
  checkLogo,
  isLogoHash,
  type LogoContentType,
  logoHash,
  logoPath,
  parseDisplayName,
  shownMerchantName,
} from "../domain/branding.js";
import { AppError, type FieldError } from "../domain/errors.js";

/**
 * A merchant's checkout-page branding (issue #41): the display name and logo of the hosted payment
 * page, one per merchant (both environments show the same shop). Written from the dashboard
 * (`settings:write`), read by the page (`pay/`) and served by the logo route. The logo is checked
 * by its own bytes (`domain/branding.ts`) and stored in `merchant_branding`; its public name is its
 * SHA-256, so a changed logo is a new URL and the old one can be cached for ever.
 */

export interface BrandingLogo {
  /** `/pay/logo/{sha256}` on our own origin. */
  path: string;
  contentType: LogoContentType;
  width: number;
  height: number;
  bytes: number;
  sha256: string;
}

export interface MerchantBranding {
  /** Null: the page shows the company name. */
  displayName: string | null;
  companyName: string;
  logo: BrandingLogo | null;
  updatedAt: Date | null;
}

/** What the dashboard sends: a field left out stays as it is; `null` clears it. `logo` is the file's bytes. */
export interface BrandingPatch {
  displayName?: string | null;
  logo?: Uint8Array | null;
}

function logoOf(row: {
  logo_type: LogoContentType | null;
  logo_sha256: string | null;
  logo_width: number | null;
  logo_height: number | null;
  logo_bytes: number | string | null;
}): BrandingLogo | null {
  if (!row.logo_type || !row.logo_sha256 || row.logo_width === null || row.logo_height === null) return null;
  return {
    path: logoPath(row.logo_sha256),
    contentType: row.logo_type,
    width: row.logo_width,
    height: row.logo_height,
    bytes: Number(row.logo_bytes ?? 0),
    sha256: row.logo_sha256,
  };
}

/** The branding of a merchant (the company name when nothing is set); 404 for an unknown merchant. */
export async function getBranding(db: Db, merchantId: string): Promise<MerchantBranding> {
  const row = await db
    .selectFrom("merchants as m")
    .leftJoin("merchant_branding as b", "b.merchant_id", "m.id")
    .select((eb) => [
      "m.company_name",
      "b.display_name",
      "b.logo_type",
      "b.logo_sha256",
      "b.logo_width",
      "b.logo_height",
      "b.updated_at",
      eb.fn<number | string | null>("octet_length", ["b.logo"]).as("logo_bytes"),
    ])
    .where("m.id", "=", merchantId)
    .executeTakeFirst();
  if (!row) throw AppError.notFound("No such merchant.");
  return {
    displayName: row.display_name ?? null,
    companyName: row.company_name,
    logo: logoOf(row),
    updatedAt: row.updated_at ?? null,
  };
}

/**
 * Changes the branding (fields not sent stay as they are). A display name is trimmed, 1–80
 * characters, no control or invisible formatting characters; a logo is a PNG, JPEG or WebP file of at
 * most 256 KiB and 2048 × 2048 px, decided by its bytes. Every field's error at once: 400
 * VALIDATION_ERROR. Joins the caller's transaction (its audit record).
 */
export async function updateBranding(
  db: Db,
  merchantId: string,
  patch: BrandingPatch,
  now: Date,
): Promise<MerchantBranding> {
  const errors: FieldError[] = [];
  const values: {
    display_name?: string | null;
    logo?: Buffer | null;
    logo_type?: LogoContentType | null;
    logo_sha256?: string | null;
    logo_width?: number | null;
    logo_height?: number | null;
  } = {};
  if (patch.displayName !== undefined) {
    if (patch.displayName === null) values.display_name = null;
    else {
      const parsed = parseDisplayName(patch.displayName);
      if ("error" in parsed) errors.push(parsed.error);
      else values.display_name = parsed.value;
    }
  }
  if (patch.logo !== undefined) {
    if (patch.logo === null) {
      Object.assign(values, {
        logo: null,
        logo_type: null,
        logo_sha256: null,
        logo_width: null,
        logo_height: null,
      });
    } else {
      const checked = checkLogo(patch.logo);
      if ("error" in checked) errors.push(checked.error);
      else
        Object.assign(values, {
          logo: Buffer.from(patch.logo),
          logo_type: checked.image.contentType,
          logo_sha256: logoHash(patch.logo),
          logo_width: checked.image.width,
          logo_height: checked.image.height,
        });
    }
  }
  if (errors.length > 0) throw AppError.validation(errors);
  return inTransaction(db, async (trx) => {
    await getBranding(trx, merchantId); // 404 for an unknown merchant, before the insert's foreign key
    if (Object.keys(values).length > 0) {
      await trx
        .insertInto("merchant_branding")
        .values({ merchant_id: merchantId, ...values, updated_at: now })
        .onConflict((oc) => oc.column("merchant_id").doUpdateSet({ ...values, updated_at: now }))
        .execute();
    }
    return getBranding(trx, merchantId);
  });
}

/** What the hosted page shows of the shop: its name and, when set, its logo. */
export interface PageBranding {
  name: string;
  logo: { path: string; width: number; height: number } | null;
}

/** The page's view of a merchant's branding (one indexed read); null for an unknown merchant. */
export async function findPageBranding(db: Db, merchantId: string): Promise<PageBranding | null> {
  const row = await db
    .selectFrom("merchants as m")
    .leftJoin("merchant_branding as b", "b.merchant_id", "m.id")
    .select(["m.company_name", "b.display_name", "b.logo_sha256", "b.logo_width", "b.logo_height"])
    .where("m.id", "=", merchantId)
    .executeTakeFirst();
  if (!row) return null;
  return {
    name: shownMerchantName({ displayName: row.display_name ?? null }, row.company_name),
    logo:
      row.logo_sha256 && row.logo_width && row.logo_height
        ? { path: logoPath(row.logo_sha256), width: row.logo_width, height: row.logo_height }
        : null,
  };
}

/** A logo file by its hash, for the public logo route; null when no merchant uses it (now). */
export async function findLogoByHash(
  db: Db,
  hash: string,
): Promise<{ bytes: Buffer; contentType: LogoContentType } | null> {
  if (!isLogoHash(hash)) return null;
  const row = await db
    .selectFrom("merchant_branding")
    .select(["logo", "logo_type"])
    .where("logo_sha256", "=", hash)
    .limit(1)
    .executeTakeFirst();
  if (!row?.logo || !row.logo_type) return null;
  return { bytes: Buffer.from(row.logo), contentType: row.logo_type };
}
