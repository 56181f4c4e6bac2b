/**
 * Which test files can be told apart by the PostgreSQL + Redis pass of CI (vitest.pg.config.ts).
 *
 * A test file learns which database it runs on only through the test environment: TEST_DATABASE_URL
 * and TEST_REDIS_URL (test/support/db.ts reads them; some tests read them or `onPostgres` too) and
 * the global setup's template (`inject("templateDatabase")` / `"pgliteTemplate"`). A file none of whose modules — its own imports, theirs,
 * and the programs it starts (a string literal naming a `.ts` file, e.g. `fault-child.ts`) — ever
 * mentions one of those runs the very same code on both passes: the second pass would only repeat
 * it. Such files are "database-free" and the PostgreSQL pass leaves them out.
 *
 * The walk is static and conservative: a module it cannot read counts as using the database, and
 * so does a relative import it cannot resolve. Bare imports (packages, node:*) are not followed:
 * no package reads the test environment.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import ts from "typescript";

/** What makes a module depend on the pass it runs in. */
const MARKERS = /TEST_DATABASE_URL|TEST_REDIS_URL|\bonPostgres\b|templateDatabase|pgliteTemplate/;
/** The string literals of a module that name a TypeScript file (a child process's entry point). */
function programNames(file: string, text: string): string[] {
  const names: string[] = [];
  const visit = (node: ts.Node): void => {
    if (
      (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) &&
      /\.(c|m)?ts$/.test(node.text)
    )
      names.push(node.text);
    ts.forEachChild(node, visit);
  };
  visit(ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false));
  return names;
}

function resolveModule(from: string, specifier: string): string | undefined {
  const base = path.resolve(path.dirname(from), specifier);
  const candidates = [
    base.replace(/\.js$/, ".ts"),
    base.replace(/\.mjs$/, ".mts"),
    base,
    `${base}.ts`,
    path.join(base, "index.ts"),
  ];
  return candidates.find((c) => existsSync(c) && statSync(c).isFile());
}

/** Whether a file is code whose imports are followed (JSON and other data are leaves). */
const CODE = /\.(c|m)?[jt]sx?$/;

/**
 * The files `file` brings in: relative imports (static or dynamic) and programs named by path; an
 * import that resolves to no file is returned as a name instead.
 */
function edges(root: string, file: string, text: string): { found: string[]; unresolved: string[] } {
  const found: string[] = [];
  const unresolved: string[] = [];
  if (!CODE.test(file)) return { found, unresolved };
  for (const imported of ts.preProcessFile(text, true, true).importedFiles) {
    if (!imported.fileName.startsWith(".")) continue;
    const resolved = resolveModule(file, imported.fileName);
    if (resolved) found.push(resolved);
    else unresolved.push(imported.fileName);
  }
  // Programs a test starts (`join(here, "fault-child.ts")`): string literals of test/ modules that
  // name a `.ts` file beside the module or below the root. src/ starts no test module, and no
  // module of src/ reads the test environment (test/architecture/database-use.test.ts checks that).
  if (file.startsWith(path.join(root, "test") + path.sep)) {
    for (const name of programNames(file, text)) {
      for (const dir of [path.dirname(file), root]) {
        const candidate = path.resolve(dir, name);
        if (existsSync(candidate) && statSync(candidate).isFile()) found.push(candidate);
      }
    }
  }
  return { found, unresolved };
}

export interface DatabaseUse {
  /** Test files (relative to the root, `/`-separated) whose modules never mention the test database. */
  free: string[];
  /** Test files that do, each with the first module found that does (for the report). */
  using: Map<string, string>;
}

/** Every `*.test.ts` below `root/test`, classified. */
export function classifyTestFiles(root: string): DatabaseUse {
  root = path.resolve(root);
  const testDir = path.join(root, "test");
  const tests = (readdirSync(testDir, { recursive: true }) as string[])
    .filter((f) => f.endsWith(".test.ts"))
    .map((f) => path.join(testDir, f))
    .sort();
  // Every module reachable from a test file, with what it brings in; then "uses the database"
  // spreads from the marked modules back through their importers.
  const imports = new Map<string, string[]>();
  const marked = new Map<string, string>();
  const queue = [...tests];
  for (const f of queue) imports.set(f, []);
  while (queue.length > 0) {
    const file = queue.pop() as string;
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch {
      marked.set(file, `${file} (unreadable)`);
      continue;
    }
    if (CODE.test(file) && MARKERS.test(text)) marked.set(file, file);
    const { found, unresolved } = edges(root, file, text);
    if (unresolved.length > 0) marked.set(file, `${file} (cannot resolve ${unresolved.join(", ")})`);
    imports.set(file, found);
    for (const next of found) {
      if (imports.has(next)) continue;
      imports.set(next, []);
      queue.push(next);
    }
  }
  const importers = new Map<string, string[]>();
  for (const [file, found] of imports)
    for (const next of found) importers.set(next, [...(importers.get(next) ?? []), file]);
  const spread = [...marked.keys()];
  while (spread.length > 0) {
    const file = spread.pop() as string;
    for (const importer of importers.get(file) ?? []) {
      if (marked.has(importer)) continue;
      marked.set(importer, marked.get(file) as string);
      spread.push(importer);
    }
  }
  const marker = (test: string) => marked.get(test);
  const rel = (f: string) => path.relative(root, f).split(path.sep).join("/");
  const free: string[] = [];
  const using = new Map<string, string>();
  for (const test of tests) {
    const hit = marker(test);
    if (hit === undefined) free.push(rel(test));
    else using.set(rel(test), hit.startsWith(root) ? rel(hit) : hit);
  }
  return { free, using };
}
