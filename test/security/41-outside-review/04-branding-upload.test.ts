import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jpegHeader, makePng, webpHeader } from "../../pay/images.js";
import { call, startTestService, type TestService } from "../../support/harness.js";
import { addMember, type Headers, registerOwner } from "../../team/support.js";

// Outside review of issue #41: the checkout page's branding. A hostile merchant (or a member with a
// low role) uploading a logo that is not an image, an image whose header claims a huge size, an
// HTML/PNG polyglot, a path traversal on `/pay/logo/{file}`, a display name that lies about itself.
let svc: TestService;
let owner: Awaited<ReturnType<typeof registerOwner>>;
let other: Awaited<ReturnType<typeof registerOwner>>;
let developer: Headers;

const BRANDING = "/api/v1/dashboard/settings/branding";
const b64 = (bytes: Uint8Array | string) => Buffer.from(bytes).toString("base64");

beforeAll(async () => {
  svc = await startTestService({ env: { RATE_LIMIT_ENABLED: "false" } });
  owner = await registerOwner(svc);
  other = await registerOwner(svc);
  developer = (await addMember(svc, owner.bearer, "developer")).bearer;
}, 60_000);
afterAll(async () => {
  await svc?.close();
});

function setBranding(json: Record<string, unknown>, headers: Headers = owner.bearer) {
  return call(svc.urls.sandbox, BRANDING, { method: "PATCH", headers, json });
}

function pngWithSize(width: number, height: number): Buffer {
  const png = Buffer.from(makePng(4, 4));
  png.writeUInt32BE(width >>> 0, 16);
  png.writeUInt32BE(height >>> 0, 20);
  return png;
}

function expectRefused(r: Awaited<ReturnType<typeof call>>, field: string) {
  expect(r.status, r.text).toBe(400);
  expect(r.body.error.code).toBe("VALIDATION_ERROR");
  const fields = (r.body.error.details?.fields ?? []) as { field: string }[];
  expect(fields.map((f) => f.field)).toContain(field);
}

describe("logo upload: only real PNG, JPEG or WebP within the limits", () => {
  const refused: [string, Uint8Array | string][] = [
    ["SVG with a script", `<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`],
    ["SVG behind an XML prolog", `<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"/>`],
    ["HTML", "<!doctype html><script>alert(1)</script>"],
    ["GIF", Buffer.concat([Buffer.from("GIF89a"), Buffer.alloc(40)])],
    ["PNG whose header claims 4294967295 × 1", pngWithSize(0xffffffff, 1)],
    ["PNG whose header claims 2049 × 10", pngWithSize(2049, 10)],
    ["PNG of 0 × 0", pngWithSize(0, 0)],
    ["PNG whose width reads negative as int32", pngWithSize(0x80000001, 10)],
    ["JPEG of 65535 × 65535", jpegHeader(65535, 65535)],
    ["JPEG of 0 height (defined later by DNL)", jpegHeader(100, 0)],
    ["WebP of 16383 × 16383", webpHeader(16383, 16383)],
    ["PNG signature only", Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])],
  ];
  for (const [name, bytes] of refused) {
    it(`refuses ${name}`, async () => {
      expectRefused(await setBranding({ logo: b64(bytes) }), "logo");
    });
  }

  it("refuses base64 that is not standard base64 (data: URL prefix, URL-safe alphabet, whitespace)", async () => {
    const png = b64(makePng(8, 8));
    for (const logo of [
      `data:image/png;base64,${png}`,
      png.replace(/\+/g, "-").replace(/\//g, "_") + "-_",
      ` ${png}`,
    ]) {
      const r = await setBranding({ logo });
      expect(r.status, r.text).toBe(400);
    }
  });

  it("refuses a file just over 256 KiB, and a body over 1 MiB before reading it", async () => {
    const big = Buffer.concat([makePng(8, 8), Buffer.alloc(256 * 1024)]);
    expectRefused(await setBranding({ logo: b64(big) }), "logo");
    const huge = await setBranding({ logo: "A".repeat(1_100_000) });
    expect([400, 413]).toContain(huge.status);
  });
});

describe("a PNG/HTML polyglot is served as an inert image", () => {
  it("the served file has the sniffed type, nosniff and a sandboxing CSP", async () => {
    const polyglot = Buffer.concat([
      makePng(16, 16),
      Buffer.from("<html><script>alert(document.domain)</script>"),
    ]);
    const r = await setBranding({ logo: b64(polyglot) });
    expect(r.status, r.text).toBe(200);
    const url = r.body.data.logo.url as string;
    const res = await fetch(`${svc.urls.sandbox}${url}`);
    await res.arrayBuffer();
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/png");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("sandbox");
  });

  it("/pay/logo/{file}: traversal, upper-case hex and other names are 404", async () => {
    const hash = "a".repeat(64);
    for (const p of [
      "/pay/logo/..%2f..%2fpackage.json",
      "/pay/logo/..%252f..%252fetc%252fpasswd",
      `/pay/logo/${hash.toUpperCase()}`,
      `/pay/logo/${hash}.html`,
      "/pay/logo/%00",
      "/pay/logo/' or 1=1 --",
    ]) {
      const res = await fetch(`${svc.urls.sandbox}${p}`);
      const text = await res.text();
      expect([400, 404], `${p}: ${text}`).toContain(res.status);
      expect(text).not.toContain('"name": "stablegate');
    }
  });
});

describe("who may brand whom", () => {
  it("a developer may not change the branding; the owner's branding is untouched by another merchant", async () => {
    const ok = await setBranding({ displayName: "Owner's Shop" });
    expect(ok.status, ok.text).toBe(200);
    expect((await setBranding({ displayName: "Developer's" }, developer)).status).toBe(403);
    expect((await setBranding({ logo: b64(makePng(4, 4)) }, developer)).status).toBe(403);
    const mine = await setBranding({ displayName: "Other Merchant" }, other.bearer);
    expect(mine.status, mine.text).toBe(200);
    const read = await call(svc.urls.sandbox, BRANDING, { headers: owner.bearer });
    expect(read.body.data.displayName).toBe("Owner's Shop");
  });

  it("an API key (machine channel) cannot reach the dashboard branding route", async () => {
    const r = await call(svc.urls.sandbox, BRANDING, {
      method: "PATCH",
      headers: owner.sandboxApi,
      json: { displayName: "via API key" },
    });
    expect(r.status, r.text).toBe(401);
  });
});

describe("display name: no control or invisible formatting characters", () => {
  // Every Unicode format character (General_Category Cf) is invisible or reorders text, as are the
  // line/paragraph separators; the docs promise none of them gets into the name a payer reads.
  const sneaky: [string, string][] = [
    ["U+061C ARABIC LETTER MARK (a bidi mark)", "Acme\u061cCoffee"],
    ["U+00AD SOFT HYPHEN (invisible)", "Ac\u00adme"],
    ["U+180E MONGOLIAN VOWEL SEPARATOR (invisible)", "Ac\u180eme"],
    ["U+2028 LINE SEPARATOR", "Acme\u2028Coffee"],
    ["U+FFF9 INTERLINEAR ANNOTATION ANCHOR", "Acme\ufff9Coffee"],
    ["U+E0041 TAG LATIN CAPITAL LETTER A (invisible tag)", "Acme\u{e0041}"],
    ["U+202E RIGHT-TO-LEFT OVERRIDE", "Acme\u202eeffoC"],
    ["U+200B ZERO WIDTH SPACE", "Ac\u200bme"],
  ];
  for (const [name, displayName] of sneaky) {
    it(`refuses ${name}`, async () => {
      expectRefused(await setBranding({ displayName }), "displayName");
    });
  }
});
