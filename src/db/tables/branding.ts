import type { Timestamp } from "./common.js";

/** Tables of migration 0038 (merchant branding: the hosted page's name and logo, issue #41). */

export interface MerchantBrandingTable {
  merchant_id: string;
  display_name: string | null;
  logo: Buffer | Uint8Array | null;
  logo_type: "image/png" | "image/jpeg" | "image/webp" | null;
  /** SHA-256 of `logo`, hex: its public name (`/pay/logo/{logo_sha256}`). */
  logo_sha256: string | null;
  logo_width: number | null;
  logo_height: number | null;
  updated_at: Timestamp;
}

export interface BrandingTables {
  merchant_branding: MerchantBrandingTable;
}
