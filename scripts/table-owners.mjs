#!/usr/bin/env node
// Tables and their owners (ARCHITECTURE.md "Tables and their owners", issue #36): every table has ONE
// folder of src/ that holds SQL against it (src/db/table-owners.json, "owners"); other folders reach
// the table through that folder's index.ts. The only other SQL allowed is a READ named in "readers"
// (table → folder → why): where going through the owner would make an import run back up (the
// audit log sits below the accounts it names), each reviewed. Fails (exit 1) on SQL against a table
// outside its owner (any write; a read not named in "readers"), and on a table the list lacks.
//
// What counts as SQL against a table, read with the TypeScript parser (a regex over the text would
// match comments and miss aliases):
//   Kysely:  .selectFrom("t") / .insertInto / .updateTable / .deleteFrom / .mergeInto /
//            .innerJoin("t as x") / .leftJoin / .rightJoin / .fullJoin / .using
//   sql``:   a table name after from, join, into, update, table, using, references or "lock table"
//            in the text of a `sql` template (and in string arguments of sql.raw / sql.table / sql.id)
//
//   node scripts/table-owners.mjs [root] [--check|--write ARCHITECTURE.md]
// root defaults to src; with --check/--write, the owners table of the file (between
// `<!-- tables:begin -->` and `<!-- tables:end -->`) is compared with (or rewritten from) the list.
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";

const args = process.argv.slice(2);
const modeAt = args.findIndex((a) => a === "--check" || a === "--write");
const mode = modeAt >= 0 ? args[modeAt] : null;
const docFile = modeAt >= 0 ? args[modeAt + 1] : null;
const positional = args.filter((a, i) => !a.startsWith("--") && (modeAt < 0 || i !== modeAt + 1));
const root = path.resolve(positional[0] ?? "src");
const list = JSON.parse(readFileSync(path.join(root, "db", "table-owners.json"), "utf8"));
const owners = list.owners;
const readers = list.readers ?? {};
/** Kysely's methods naming a table, and whether they write it. */
const TABLE_METHODS = new Map([
  ["selectFrom", false],
  ["innerJoin", false],
  ["leftJoin", false],
  ["rightJoin", false],
  ["fullJoin", false],
  ["using", false],
  ["insertInto", true],
  ["updateTable", true],
  ["deleteFrom", true],
  ["mergeInto", true],
]);
// In SQL text: the keyword before a table name says whether it is written (`delete from` counts as
// a write: its "from" is preceded by "delete").
const SQL_TABLE =
  /\b(delete\s+from|from|join|into|update|table|using|references)\s+(?:only\s+)?"?([a-z_][a-z0-9_]*)/gi;
const WRITES = /^(delete\s+from|into|update|table)$/i;

function* walk(dir) {
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) yield* walk(full);
    else if (name.endsWith(".ts") && !name.endsWith(".d.ts")) yield full;
  }
}

/** The folder a file belongs to: the first segment under src/ (a file at the root: its name). */
function folderOf(file) {
  const rel = path.relative(root, file).split(path.sep);
  return rel.length > 1 ? rel[0] : rel[0].replace(/\.ts$/, "");
}

/** The text of a `sql` template, with `${…}` as a placeholder. */
function templateText(tpl) {
  if (ts.isNoSubstitutionTemplateLiteral(tpl)) return tpl.text;
  return tpl.head.text + tpl.templateSpans.map((s) => ` $ ${s.literal.text}`).join("");
}

const isSqlTag = (e) =>
  (ts.isIdentifier(e) && e.text === "sql") ||
  (ts.isPropertyAccessExpression(e) && ts.isIdentifier(e.expression) && e.expression.text === "sql");

export function tablesOf(file) {
  const text = readFileSync(file, "utf8");
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found = [];
  const add = (node, table, writes) => {
    const { line } = source.getLineAndCharacterOfPosition(node.getStart());
    found.push({ table, line: line + 1, writes });
  };
  const fromSqlText = (node, sqlText) => {
    for (const m of sqlText.matchAll(SQL_TABLE)) {
      const name = m[2].toLowerCase();
      if (name in owners) add(node, name, WRITES.test(m[1]));
    }
  };
  const visit = (node) => {
    // `x.selectFrom("t")`, and the destructured `({ selectFrom }) => selectFrom("t")`
    const callee = ts.isCallExpression(node) ? node.expression : null;
    const named =
      callee &&
      (ts.isPropertyAccessExpression(callee) ? callee.name : ts.isIdentifier(callee) ? callee : null);
    if (named) {
      const method = named.text;
      const first = node.arguments[0];
      if (TABLE_METHODS.has(method) && first) {
        const literals = ts.isArrayLiteralExpression(first) ? first.elements : [first];
        for (const lit of literals) {
          if (ts.isStringLiteralLike(lit)) {
            const name = lit.text.trim().split(/\s+/)[0];
            if (name in owners || method !== "using") add(node, name, TABLE_METHODS.get(method));
          }
        }
      }
      // sql.raw("…"), sql.table("t"), sql.id("t") (a named table: counted as a write, the strict side)
      if (
        ts.isPropertyAccessExpression(callee) &&
        isSqlTag(callee) &&
        first &&
        ts.isStringLiteralLike(first)
      ) {
        if (method === "raw") fromSqlText(node, first.text);
        else if (first.text in owners) add(node, first.text, true);
      }
    }
    if (ts.isTaggedTemplateExpression(node) && isSqlTag(node.tag))
      fromSqlText(node, templateText(node.template));
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

const problems = [];
let files = 0;
let uses = 0;
for (const file of walk(root)) {
  files += 1;
  const folder = folderOf(file);
  for (const { table, line, writes } of tablesOf(file)) {
    uses += 1;
    const where = `${path.relative(process.cwd(), file)}:${line}`;
    const owner = owners[table];
    if (owner === undefined) {
      problems.push(`${where}: table ${table} has no owner in src/db/table-owners.json`);
    } else if (owner !== folder && (writes || !readers[table]?.[folder])) {
      problems.push(
        `${where}: SQL ${writes ? "writing" : "reading"} ${table} in ${folder}/; its owner is ${owner}/ ` +
          `(go through ${owner}/index.ts)`,
      );
    }
  }
}
for (const [table, by] of Object.entries(readers)) {
  for (const folder of Object.keys(by)) {
    if (!(table in owners))
      problems.push(`src/db/table-owners.json: readers name ${table}, which has no owner`);
    else if (owners[table] === folder)
      problems.push(`src/db/table-owners.json: ${folder}/ owns ${table}: not a reader`);
  }
}
/** The owners table of ARCHITECTURE.md: each folder, the tables it owns, the reads others may make. */
function ownersTable() {
  const byFolder = new Map();
  for (const [table, folder] of Object.entries(owners)) {
    if (!byFolder.has(folder)) byFolder.set(folder, []);
    byFolder.get(folder).push(table);
  }
  const rows = [...byFolder.keys()].sort().map((folder) => {
    const tables = byFolder.get(folder).sort();
    const read = tables
      .flatMap((t) => Object.keys(readers[t] ?? {}).map((r) => `\`${t}\` by \`${r}/\``))
      .join(", ");
    return `| \`${folder}/\` | ${tables.map((t) => `\`${t}\``).join(", ")} | ${read || "—"} |`;
  });
  return [
    "| Owner | Tables (src/db/table-owners.json, checked by `npm run lint:deps`) | Read elsewhere (named, with the reason, in the list) |",
    "| --- | --- | --- |",
    ...rows,
  ].join("\n");
}
if (mode) {
  const text = readFileSync(docFile, "utf8");
  const re = /(<!-- tables:begin -->\n)([\s\S]*?)(\n?<!-- tables:end -->)/;
  const m = re.exec(text);
  const table = ownersTable();
  if (!m) problems.push(`${docFile}: no <!-- tables:begin --> … <!-- tables:end --> markers`);
  else if (mode === "--write") writeFileSync(docFile, text.replace(re, `$1${table}\n<!-- tables:end -->`));
  else if (m[2].trim() !== table.trim()) {
    problems.push(
      `${docFile}: the owners table differs from src/db/table-owners.json; run \`npm run lint:deps -- --write\``,
    );
  }
}
for (const p of problems) console.error(p);
if (problems.length > 0) {
  console.error(
    `table owners: ${problems.length} quer(ies) outside the table's owner (ARCHITECTURE.md "Tables and their owners")`,
  );
  process.exit(1);
}
console.log(`table owners: ${uses} table uses in ${files} files, each in its table's owner`);
