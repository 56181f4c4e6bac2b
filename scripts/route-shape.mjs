#!/usr/bin/env node
// One route shape (ARCHITECTURE.md "One route shape", issue #36): a route file parses, calls one
// use case and presents; it never BUILDS one. The use-case objects are composed once per process by
// runtime.ts and reach the routes on `RouteDeps.useCases`.
//
// Fails (exit 1) when a file under <root>/http/routes/ builds something it imported from the rest
// of src/: `new X(…)` of such an import anywhere (errors excepted: `new AppError(…)` is a value,
// not a service), or ANY call of a feature's import (not domain/ or lib/: pure helpers) while the
// routes are being registered (at module level or directly in a `…Routes` function, outside its
// handlers): what is computed once per process from a feature is composition, and belongs to
// runtime.ts. Handlers call use cases freely. Imports
// from http/ itself and from packages are not counted (a `PassThrough` per response is the
// response, not a service). The TypeScript parser reads the files: a regex would miss `new (X)(…)`
// and match comments.
//
//   node scripts/route-shape.mjs [root]      root defaults to src
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";

const root = path.resolve(process.argv[2] ?? "src");
const routesDir = path.join(root, "http", "routes");
const httpDir = path.join(root, "http");

/** The value imports of a file that resolve into src/ outside http/: local name → module path. */
function featureImports(file, source, withTypes = false) {
  const out = new Map();
  for (const stmt of source.statements) {
    if (!ts.isImportDeclaration(stmt) || (stmt.importClause?.isTypeOnly && !withTypes)) continue;
    const spec = stmt.moduleSpecifier.text;
    if (!spec.startsWith(".")) continue;
    const target = path.resolve(path.dirname(file), spec);
    if (!target.startsWith(root + path.sep) || target.startsWith(httpDir + path.sep)) continue;
    const clause = stmt.importClause;
    if (clause?.name) out.set(clause.name.text, spec);
    const named = clause?.namedBindings;
    if (named && ts.isNamedImports(named)) {
      for (const el of named.elements) if (withTypes || !el.isTypeOnly) out.set(el.name.text, spec);
    } else if (named && ts.isNamespaceImport(named)) {
      out.set(named.name.text, `${spec}#namespace`);
    }
  }
  return out;
}

/**
 * The imported binding an expression calls or constructs: `X`, `(X)`, or `ns.X` of a namespace
 * import `ns` (a method of an imported value, `LIST.map(…)`, is not the import itself).
 */
function calleeName(expr, imports) {
  let e = expr;
  while (ts.isParenthesizedExpression(e)) e = e.expression;
  if (ts.isIdentifier(e)) return imports.has(e.text) ? { local: e.text, name: e.text } : null;
  if (ts.isPropertyAccessExpression(e) && ts.isIdentifier(e.expression)) {
    const local = e.expression.text;
    if (imports.get(local)?.endsWith("#namespace")) return { local, name: e.name.text };
  }
  return null;
}

export function checkRouteFile(file) {
  const text = readFileSync(file, "utf8");
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const imports = featureImports(file, source);
  const types = featureImports(file, source, true);
  const problems = [];
  const report = (node, what, from) => {
    const { line } = source.getLineAndCharacterOfPosition(node.getStart());
    problems.push(
      `${path.relative(process.cwd(), file)}:${line + 1}: a route builds ${what} (from ${from}): ` +
        "compose it once in runtime.ts and take it from RouteDeps.useCases",
    );
  };
  // registering: the node runs when the routes are registered (module level, or directly in a
  // `…Routes` function, not inside one of its handlers or helpers).
  const visit = (node, registering) => {
    const isNew = ts.isNewExpression(node);
    if (isNew || ts.isCallExpression(node)) {
      const callee = calleeName(node.expression, imports);
      if (callee) {
        const pure = /^\.\.\/\.\.\/(domain|lib)\//.test(imports.get(callee.local));
        const builds = isNew ? !callee.name.endsWith("Error") : registering && !pure;
        if (builds) report(node, `${isNew ? "new " : ""}${callee.name}`, imports.get(callee.local));
      }
    }
    // `const desk: PayoutDesk = { … }` while registering: a feature's dependency object assembled here.
    if (registering && ts.isVariableDeclaration(node) && node.type && ts.isTypeReferenceNode(node.type)) {
      const name = ts.isIdentifier(node.type.typeName) ? node.type.typeName.text : null;
      if (name && types.has(name) && node.initializer) report(node, `a ${name}`, types.get(name));
    }
    let inner = registering;
    if (ts.isFunctionLike(node)) {
      inner =
        ts.isFunctionDeclaration(node) && node.parent === source && /Routes$/.test(node.name?.text ?? "");
    }
    ts.forEachChild(node, (child) => visit(child, inner));
  };
  visit(source, true);
  return problems;
}

const files = readdirSync(routesDir)
  .filter((f) => f.endsWith(".ts"))
  .map((f) => path.join(routesDir, f));
const problems = files.flatMap(checkRouteFile);
for (const p of problems) console.error(p);
if (problems.length > 0) {
  console.error(
    `route shape: ${problems.length} route(s) build a service (ARCHITECTURE.md "One route shape")`,
  );
  process.exit(1);
}
console.log(`route shape: ${files.length} route files build no service`);
