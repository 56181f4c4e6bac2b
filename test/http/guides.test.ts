import { readdirSync, readFileSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GUIDES_ROOT } from "../../src/http/routes/guides.js";
import { markdownToHtml } from "../../src/lib/markdown-html.js";
import { call, startTestService, type TestService } from "../support/harness.js";

// The merchant guides at /docs/guides: behind the API reference's basic auth, 404 without docs
// credentials, rendered without any way for the source (or the URL) to inject markup or reach files.

let svc: TestService;
const AUTH = { authorization: `Basic ${Buffer.from("docs:s3cret-docs").toString("base64")}` };

beforeAll(async () => {
  svc = await startTestService({ env: { DOCS_USER: "docs", DOCS_PASSWORD: "s3cret-docs" } });
});
afterAll(() => svc?.close());

/** A request with the path sent exactly as written (fetch would normalise `..` and `%2f`). */
function rawGet(base: string, rawPath: string, headers: Record<string, string> = AUTH) {
  return new Promise<{ status: number; text: string }>((resolve, reject) => {
    const url = new URL(base);
    const req = http.request(
      { host: url.hostname, port: url.port, path: rawPath, method: "GET", headers },
      (res) => {
        let text = "";
        res.on("data", (c) => {
          text += c;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

const guideNames = readdirSync(GUIDES_ROOT)
  .filter((f) => f.endsWith(".md"))
  .map((f) => f.slice(0, -3));

describe("/docs/guides", () => {
  it("serves the index and every guide as HTML with credentials, on both listeners", async () => {
    expect(guideNames).toEqual(
      expect.arrayContaining(["README", "quick-start", "webhooks", "errors", "sandbox", "local-development"]),
    );
    for (const base of [svc.urls.production, svc.urls.sandbox]) {
      const index = await call(base, "/docs/guides", { headers: AUTH });
      expect(index.status).toBe(200);
      expect(index.headers.get("content-type")).toMatch(/^text\/html/);
      expect(index.headers.get("content-security-policy")).toContain("default-src 'none'");
      expect(index.text).toContain('<a href="/docs/guides/quick-start">Quick start</a>');
    }
    for (const name of guideNames.filter((n) => n !== "README")) {
      const r = await call(svc.urls.sandbox, `/docs/guides/${name}`, { headers: AUTH });
      expect(r.status, name).toBe(200);
      expect(r.text).toMatch(/<h1 id="[a-z0-9-]+">/);
      expect(r.text).not.toMatch(/<script/i);
    }
    const webhooks = await call(svc.urls.sandbox, "/docs/guides/webhooks", { headers: AUTH });
    expect(webhooks.text).toContain('<h2 id="signatures">Signatures</h2>');
    expect(webhooks.text).toContain("<table>");
    expect(webhooks.text).toContain('<pre><code class="language-go">');
  });

  it("serves the Markdown source with .md", async () => {
    const r = await call(svc.urls.sandbox, "/docs/guides/webhooks.md", { headers: AUTH });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toMatch(/^text\/markdown/);
    expect(r.text).toBe(readFileSync(path.join(GUIDES_ROOT, "webhooks.md"), "utf8"));
  });

  it("401 without or with wrong credentials, with a Basic challenge", async () => {
    const attempts: Record<string, string>[] = [
      {},
      { authorization: `Basic ${Buffer.from("docs:nope").toString("base64")}` },
    ];
    for (const headers of attempts) {
      const r = await call(svc.urls.production, "/docs/guides/webhooks", { headers });
      expect(r.status).toBe(401);
      expect(r.body.error.code).toBe("INVALID_AUTH");
      expect(r.headers.get("www-authenticate")).toMatch(/^Basic /);
      expect(r.text).not.toContain("Signatures");
    }
  });

  it("unknown names and traversal attempts are 404, never a file", async () => {
    for (const p of [
      "/docs/guides/nope",
      "/docs/guides/..%2f..%2fpackage.json",
      "/docs/guides/..%2f..%2fpackage",
      "/docs/guides/%2e%2e%2fREADME",
      "/docs/guides/../../package.json",
      "/docs/guides/..%5c..%5cpackage.json",
      "/docs/guides/%2fetc%2fpasswd",
      "/docs/guides/Webhooks",
    ]) {
      const r = await rawGet(svc.urls.sandbox, p);
      expect(r.status, p).toBe(404);
      expect(r.text, p).not.toContain('"name": "stablegate"');
      expect(r.text, p).not.toContain("root:");
    }
    // A NUL is refused before any lookup (text PostgreSQL cannot store is a 400 everywhere).
    const nul = await rawGet(svc.urls.sandbox, "/docs/guides/webhooks.md%00");
    expect(nul.status).toBe(400);
    expect(JSON.parse(nul.text).error.code).toBe("VALIDATION_ERROR");
  });

  it("404 when the docs credentials are not configured", async () => {
    const s = await startTestService();
    try {
      for (const p of ["/docs/guides", "/docs/guides/webhooks", "/docs/guides/webhooks.md"]) {
        const r = await call(s.urls.production, p, { headers: AUTH });
        expect(r.status, p).toBe(404);
        expect(r.body.error.code).toBe("NOT_FOUND");
      }
    } finally {
      await s.close();
    }
  });
});

describe("the Markdown rendering is safe whatever the source", () => {
  const render = (md: string) => markdownToHtml(md, (name) => `/docs/guides/${name}`);

  it("escapes raw HTML in text, code, tables and headings", () => {
    const html = render(
      [
        "# <img src=x onerror=alert(1)>",
        "",
        "<script>alert(1)</script> **<b>x</b>** `<i>`",
        "",
        "| a | b |",
        "|---|---|",
        "| <svg onload=1> | `\"'` |",
        "",
        "```html",
        "</code></pre><script>alert(1)</script>",
        "```",
      ].join("\n"),
    );
    expect(html).not.toMatch(/<(script|img|svg|b|i)[\s>]/);
    expect(html).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(html).toContain("<strong>&lt;b&gt;x&lt;/b&gt;</strong>");
    expect(html).toContain("&lt;/code&gt;&lt;/pre&gt;&lt;script&gt;");
  });

  it("links only to http(s), anchors and sibling guides", () => {
    const html = render(
      "[a](javascript:alert(1)) [b](https://example.com/x?a=1&b=2) [c](errors.md#codes) [d](#top) " +
        '[e](data:text/html,x) [f](../secret.md) [g](https://x" onmouseover="1)',
    );
    expect(html).not.toContain('href="javascript');
    expect(html).not.toContain('href="data');
    expect(html).not.toContain('href="../');
    expect(html).not.toContain('onmouseover="1');
    expect(html).toContain('<a href="https://example.com/x?a=1&amp;b=2">b</a>');
    expect(html).toContain('<a href="/docs/guides/errors#codes">c</a>');
    expect(html).toContain('<a href="#top">d</a>');
  });
});
