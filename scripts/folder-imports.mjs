// The "imports" column of ARCHITECTURE.md's folder table, read off the code: for each folder of
// src/, the folders its files import (type-only imports included). Reads `depcruise --output-type
// json` on stdin. `--check ARCHITECTURE.md` compares with the table between the markers
// `<!-- imports:begin -->` and `<!-- imports:end -->` and exits 1 on a difference; `--write` rewrites it.
import { readFileSync, writeFileSync } from "node:fs";

const [mode, file] = process.argv.slice(2);
const result = JSON.parse(readFileSync(0, "utf8"));
const folderOf = (p) => {
  const m = /^src\/([^/]+)\//.exec(p);
  return m ? `${m[1]}/` : /^src\/[^/]+\.ts$/.test(p) ? p.slice(4) : null;
};
const imports = new Map();
for (const mod of result.modules) {
  const from = folderOf(mod.source);
  if (!from) continue;
  if (!imports.has(from)) imports.set(from, new Set());
  for (const dep of mod.dependencies) {
    const to = folderOf(dep.resolved);
    if (to && to !== from) imports.get(from).add(to);
  }
}
const rows = [...imports.keys()].sort().map((f) => {
  const deps = [...imports.get(f)].sort().map((d) => `\`${d}\``);
  return `| \`${f}\` | ${deps.length ? deps.join(", ") : "—"} |`;
});
const table = [
  "| Folder | Imports (read off the code by `npm run lint:deps`) |",
  "| --- | --- |",
  ...rows,
].join("\n");

if (!mode) {
  console.log(table);
} else {
  const text = readFileSync(file, "utf8");
  const re = /(<!-- imports:begin -->\n)([\s\S]*?)(\n<!-- imports:end -->)/;
  const m = re.exec(text);
  if (!m) {
    console.error(`${file}: no <!-- imports:begin --> … <!-- imports:end --> markers`);
    process.exit(1);
  }
  const normalize = (s) =>
    s
      .split("\n")
      .map((l) => l.replace(/\s+/g, " ").replace(/-{3,}/g, "---").trim())
      .join("\n")
      .trim();
  if (mode === "--write") {
    writeFileSync(file, text.replace(re, `$1${table}$3`));
    console.log(`${file}: imports table written`);
  } else if (normalize(m[2]) !== normalize(table)) {
    console.error(
      `${file}: the imports table differs from the code; run \`npm run lint:deps -- --write\`? Expected:\n${table}`,
    );
    process.exit(1);
  } else {
    console.log(`${file}: the imports table matches the code (${rows.length} folders)`);
  }
}
