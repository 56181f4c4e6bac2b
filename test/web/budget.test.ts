import { readFile } from "node:fs/promises";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureWebBuild, MANIFEST, WEB_DIST } from "./build.js";

// Issue #10: "the built JS for the first screen under 250 KB gzipped" — the first screen is the
// sign-in page: the entry chunk, everything it imports statically, and the lazily loaded SignIn
// screen with its own static imports (what the browser must fetch before it can show the form).

interface Chunk {
  file: string;
  src?: string;
  isEntry?: boolean;
  imports?: string[];
  dynamicImports?: string[];
  css?: string[];
}

const BUDGET_BYTES = 250 * 1024;
let manifest: Record<string, Chunk>;

beforeAll(async () => {
  await ensureWebBuild();
  manifest = JSON.parse(await readFile(MANIFEST, "utf8"));
}, 180_000);

function closure(keys: string[]): Set<string> {
  const seen = new Set<string>();
  const visit = (key: string) => {
    if (seen.has(key)) return;
    seen.add(key);
    for (const i of manifest[key]?.imports ?? []) visit(i);
  };
  for (const k of keys) visit(k);
  return seen;
}

async function gzipped(keys: Iterable<string>): Promise<number> {
  let total = 0;
  for (const k of keys) {
    const chunk = manifest[k];
    if (!chunk) throw new Error(`no chunk ${k}`);
    total += gzipSync(await readFile(path.join(WEB_DIST, chunk.file)), { level: 9 }).length;
  }
  return total;
}

describe("JS budget of the first screen", () => {
  it("entry + sign-in screen (with their static imports) are under 250 KB gzipped", async () => {
    const entry = Object.entries(manifest).find(([, c]) => c.isEntry)?.[0];
    expect(entry).toBe("index.html"); // the HTML entry; its chunk is src/main.tsx bundled
    const signIn = "src/screens/SignIn.tsx";
    expect(manifest[entry as string]?.dynamicImports).toContain(signIn);
    const firstScreen = closure([entry as string, signIn]);
    const bytes = await gzipped(firstScreen);
    console.log(
      `first-screen JS: ${(bytes / 1024).toFixed(1)} KB gzipped in ${firstScreen.size} chunks (budget 250 KB)`,
    );
    expect(bytes).toBeGreaterThan(10 * 1024); // sanity: React is in there
    expect(bytes).toBeLessThan(BUDGET_BYTES);
  });

  it("screens are code-split: no other screen is part of the first load", () => {
    const firstScreen = closure(["index.html", "src/screens/SignIn.tsx"]);
    const screens = Object.keys(manifest).filter((k) => k.startsWith("src/screens/"));
    expect(screens.length).toBeGreaterThanOrEqual(12);
    for (const s of screens) {
      if (s === "src/screens/SignIn.tsx") continue;
      expect(firstScreen.has(s), s).toBe(false);
    }
  });
});
