import { execFile } from "node:child_process";
import { mkdir, readdir, rm, stat } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

/**
 * The dashboard's Vite build for the tests: built once when `dist/web` is missing or older than any
 * source file (web/**, vite.config.ts, tsconfig.web.json). Test files in parallel forks share one
 * build through a lock directory (mkdir is atomic).
 */

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const WEB_DIST = path.join(ROOT, "dist/web");
export const MANIFEST = path.join(WEB_DIST, ".vite/manifest.json");
const LOCK = path.join(ROOT, "dist/.web-build.lock");

async function newestSource(): Promise<number> {
  let newest = 0;
  async function walk(dir: string) {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const p = path.join(dir, entry.name);
      if (entry.isDirectory()) await walk(p);
      else newest = Math.max(newest, (await stat(p)).mtimeMs);
    }
  }
  await walk(path.join(ROOT, "web"));
  for (const f of ["vite.config.ts", "tsconfig.web.json"])
    newest = Math.max(newest, (await stat(path.join(ROOT, f))).mtimeMs);
  return newest;
}

async function fresh(): Promise<boolean> {
  try {
    return (await stat(MANIFEST)).mtimeMs >= (await newestSource());
  } catch {
    return false;
  }
}

export async function ensureWebBuild(): Promise<void> {
  if (await fresh()) return;
  await mkdir(path.dirname(LOCK), { recursive: true });
  const started = Date.now();
  for (;;) {
    try {
      await mkdir(LOCK);
      break;
    } catch {
      // Another test file is building; a lock older than 3 minutes is a crashed build's.
      const age = await stat(LOCK).then(
        (s) => Date.now() - s.mtimeMs,
        () => 0,
      );
      if (age > 180_000) await rm(LOCK, { recursive: true, force: true });
      if (Date.now() - started > 180_000) throw new Error("timed out waiting for the web build lock");
      await new Promise((r) => setTimeout(r, 250));
      if (await fresh()) return;
    }
  }
  try {
    if (await fresh()) return;
    await promisify(execFile)(
      process.execPath,
      [path.join(ROOT, "node_modules/vite/bin/vite.js"), "build", "--logLevel", "error"],
      // Vitest sets NODE_ENV=test, which would make Vite bundle React's development build.
      { cwd: ROOT, timeout: 170_000, env: { ...process.env, NODE_ENV: "production" } },
    );
  } finally {
    await rm(LOCK, { recursive: true, force: true });
  }
}
