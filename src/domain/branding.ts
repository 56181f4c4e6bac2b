import { createHash } from "node:crypto";
import type { FieldError } from "./errors.js";

/**
 * A merchant's checkout-page branding (issue #41, docs/decisions/deposits-page.md "Branding"): the
 * name and logo the hosted payment page shows. Pure rules: what a display name may be, which image
 * files are a logo (decided by their bytes, never by the client's content type), and the public
 * path the logo is served at.
 */

/** Longest display name, in characters (code points). */
export const MAX_DISPLAY_NAME_CHARS = 80;
/** Largest logo file: 256 KiB. */
export const MAX_LOGO_BYTES = 256 * 1024;
/** Largest logo width and height in pixels (the page shows it at most 64 px high; 2× for dense screens is plenty). */
export const MAX_LOGO_DIMENSION = 2048;

export type LogoContentType = "image/png" | "image/jpeg" | "image/webp";

export interface LogoImage {
  contentType: LogoContentType;
  width: number;
  height: number;
}

// Controls, every format character (Cf: bidi overrides, isolates and marks, zero-width characters,
// the BOM, soft hyphen, tags), line and paragraph separators, private-use and unassigned code
// points: a payer must read the name as it is (the outside review of issue #41 found U+061C,
// U+00AD, U+180E, U+2028, U+FFF9 and the tag characters let through by a list of ranges).
const FORBIDDEN_NAME_CHARS = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cn}]/u;

/** The trimmed display name, or the field's error. `null`/empty-after-trim is refused (send `null` to clear). */
export function parseDisplayName(input: string): { value: string } | { error: FieldError } {
  const value = input.normalize("NFC").trim();
  const chars = [...value].length;
  if (chars === 0)
    return { error: { field: "displayName", message: "must not be empty (send null to clear it)" } };
  if (chars > MAX_DISPLAY_NAME_CHARS)
    return {
      error: { field: "displayName", message: `must be at most ${MAX_DISPLAY_NAME_CHARS} characters` },
    };
  if (FORBIDDEN_NAME_CHARS.test(value))
    return {
      error: { field: "displayName", message: "must not contain control or invisible formatting characters" },
    };
  return { value };
}

/** The name the page shows: the display name, else the company name given at registration. */
export function shownMerchantName(branding: { displayName: string | null }, companyName: string): string {
  return branding.displayName ?? companyName;
}

const u32be = (b: Uint8Array, i: number) =>
  (((b[i] ?? 0) << 24) | ((b[i + 1] ?? 0) << 16) | ((b[i + 2] ?? 0) << 8) | (b[i + 3] ?? 0)) >>> 0;
const u16be = (b: Uint8Array, i: number) => ((b[i] ?? 0) << 8) | (b[i + 1] ?? 0);
const u16le = (b: Uint8Array, i: number) => (b[i] ?? 0) | ((b[i + 1] ?? 0) << 8);
const u24le = (b: Uint8Array, i: number) => (b[i] ?? 0) | ((b[i + 1] ?? 0) << 8) | ((b[i + 2] ?? 0) << 16);
const ascii = (b: Uint8Array, from: number, to: number) => String.fromCharCode(...b.subarray(from, to));

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

function png(b: Uint8Array): LogoImage | null {
  if (b.length < 33 || !PNG_SIGNATURE.every((v, i) => b[i] === v)) return null;
  // The first chunk must be IHDR (length 13): width and height, big-endian.
  if (u32be(b, 8) !== 13 || ascii(b, 12, 16) !== "IHDR") return null;
  return { contentType: "image/png", width: u32be(b, 16), height: u32be(b, 20) };
}

// Start-of-frame markers that carry the image size (not DHT C4, JPG C8, DAC CC).
const SOF = new Set([0xc0, 0xc1, 0xc2, 0xc3, 0xc5, 0xc6, 0xc7, 0xc9, 0xca, 0xcb, 0xcd, 0xce, 0xcf]);

function jpeg(b: Uint8Array): LogoImage | null {
  if (b.length < 4 || b[0] !== 0xff || b[1] !== 0xd8 || b[2] !== 0xff) return null;
  let i = 2;
  while (i + 4 <= b.length) {
    if (b[i] !== 0xff) return null;
    const marker = b[i + 1] ?? 0;
    if (marker === 0xff) {
      i++; // fill byte
      continue;
    }
    if (marker === 0xd8 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      i += 2; // markers without a length
      continue;
    }
    if (marker === 0xd9 || marker === 0xda) return null; // end of image, or scan data before any frame header
    const length = u16be(b, i + 2);
    if (length < 2) return null;
    if (SOF.has(marker)) {
      if (i + 9 > b.length) return null;
      return { contentType: "image/jpeg", height: u16be(b, i + 5), width: u16be(b, i + 7) };
    }
    i += 2 + length;
  }
  return null;
}

function webp(b: Uint8Array): LogoImage | null {
  if (b.length < 30 || ascii(b, 0, 4) !== "RIFF" || ascii(b, 8, 12) !== "WEBP") return null;
  const chunk = ascii(b, 12, 16);
  if (chunk === "VP8 ") {
    // Key frame start code 9d 01 2a, then 14-bit width and height.
    if (b[23] !== 0x9d || b[24] !== 0x01 || b[25] !== 0x2a) return null;
    return { contentType: "image/webp", width: u16le(b, 26) & 0x3fff, height: u16le(b, 28) & 0x3fff };
  }
  if (chunk === "VP8L") {
    if (b[20] !== 0x2f) return null;
    const bits = (b[21] ?? 0) | ((b[22] ?? 0) << 8) | ((b[23] ?? 0) << 16) | ((b[24] ?? 0) << 24);
    return { contentType: "image/webp", width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
  }
  if (chunk === "VP8X") {
    return { contentType: "image/webp", width: u24le(b, 24) + 1, height: u24le(b, 27) + 1 };
  }
  return null;
}

/**
 * What image a file is, read from its own bytes (magic numbers and the header that holds its size):
 * PNG, JPEG or WebP; anything else (SVG, HTML, GIF, a renamed file) is null.
 */
export function sniffLogo(bytes: Uint8Array): LogoImage | null {
  return png(bytes) ?? jpeg(bytes) ?? webp(bytes);
}

/** A logo file checked: its type and size, or the field's error (the message says what is allowed). */
export function checkLogo(bytes: Uint8Array): { image: LogoImage } | { error: FieldError } {
  const field = "logo";
  if (bytes.length === 0) return { error: { field, message: "is empty" } };
  if (bytes.length > MAX_LOGO_BYTES)
    return {
      error: { field, message: `must be at most ${MAX_LOGO_BYTES / 1024} KiB (${MAX_LOGO_BYTES} bytes)` },
    };
  const image = sniffLogo(bytes);
  if (!image) return { error: { field, message: "must be a PNG, JPEG or WebP image (SVG is not accepted)" } };
  if (
    image.width < 1 ||
    image.height < 1 ||
    image.width > MAX_LOGO_DIMENSION ||
    image.height > MAX_LOGO_DIMENSION
  )
    return {
      error: { field, message: `must be between 1 and ${MAX_LOGO_DIMENSION} pixels wide and high` },
    };
  return { image };
}

/** The logo's content hash: SHA-256, hex. Names the file on the page, so a new logo is a new URL. */
export function logoHash(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** Public path of a logo: `/pay/logo/{sha256}` (no merchant id: the page never names one). */
export function logoPath(hash: string): string {
  return `/pay/logo/${hash}`;
}

/** Whether a path segment is a logo hash (64 lowercase hex digits). */
export function isLogoHash(text: string): boolean {
  return /^[0-9a-f]{64}$/.test(text);
}
