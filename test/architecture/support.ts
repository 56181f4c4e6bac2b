import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll } from "vitest";

const run = promisify(execFile);

/**
 * Runs a lint script of scripts/ on a source root: its exit code and what it printed (stdout when
 * it passes, stderr when it fails).
 */
export async function runLint(script: string, root: string): Promise<{ code: number; out: string }> {
  try {
    const { stdout } = await run(process.execPath, [path.resolve("scripts", script), root]);
    return { code: 0, out: stdout };
  } catch (err) {
    const e = err as { code: number; stderr: string };
    return { code: e.code, out: e.stderr };
  }
}

const roots: string[] = [];
afterAll(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

/** A temporary source root holding `files` (path below the root → text), removed after the file's tests. */
export function fixtureRoot(prefix: string, files: Record<string, string>): string {
  const root = mkdtempSync(path.join(tmpdir(), prefix));
  roots.push(root);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
    writeFileSync(path.join(root, name), text);
  }
  return root;
}
