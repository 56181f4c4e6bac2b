#!/usr/bin/env node
/**
 * Rewrites references to documents outside the repository ("CONTRACT §4.1", "SPEC §2.2") into
 * references to the project's own documents (scripts/reference-map.json), so that a reader of the
 * repository can follow them.
 *
 *   node scripts/rewrite-references.mjs [root]           rewrite in place under root (default: this
 *                                                        repository) and print a summary
 *   node scripts/rewrite-references.mjs [root] --dry-run print what would change, write nothing
 *   node scripts/rewrite-references.mjs [root] --check   exit 1 if any reference remains (lint)
 *
 * Scope: src/, web/src/, packages/sdk/src/, migrations/, docs/, test/ and the top-level *.md files.
 * migrations/*.sql are never touched (an applied migration is checksummed): their references are
 * listed, and --check ignores them.
 *
 * How a reference is rendered:
 *   - in code and SQL comments: the path from the repository root, e.g. `(CONTRACT §7)` →
 *     `(docs/merchants/authentication.md#rate-limits)`;
 *   - in Markdown: a link relative to the file, labelled with the target's heading, e.g.
 *     `([Rate limits](merchants/authentication.md#rate-limits))`;
 *   - inside a string literal under src/http/ (route and schema descriptions are published in the
 *     OpenAPI document, read by merchants): a merchant guide becomes a link to the copy the gateway
 *     serves, `[Step-up for production changes](/docs/guides/authentication#step-up-…)`.
 * A group such as `(SPEC §5.2, CONTRACT §6)` or `CONTRACT §4.2, §6 and §9` becomes the distinct
 * targets joined by ", ". Which target a section gets can depend on the file and on the words
 * around it (the clause before it on its line and the 120 characters after it, then the two lines
 * before): see "$rules" in reference-map.json. Sentences about the external documents themselves
 * are rewritten by "$phrases" (exact text, per file).
 *
 * Idempotent: the output contains no "CONTRACT §"/"SPEC §", so a second run changes nothing.
 * Before writing anything, every target of the map is checked to exist (file and anchor).
 * Plain Node (no dependency).
 */
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const scriptDir = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.join(scriptDir, "..");
const MAP_PATH = path.join(scriptDir, "reference-map.json");

const SCOPE_DIRS = ["src", "web/src", "packages/sdk/src", "migrations", "docs", "test"];
const EXTENSIONS = new Set([
  ".ts",
  ".tsx",
  ".mts",
  ".cts",
  ".js",
  ".mjs",
  ".cjs",
  ".md",
  ".sql",
  ".sh",
  ".css",
  ".html",
]);
const SKIP_DIRS = new Set(["node_modules", "dist", ".git", "generated"]);

const NUM = String.raw`\d+(?:\.\d+)*`;
/** Between the document name and `§`: a space, or a line break inside a comment. */
const SEP = String.raw`(?: |[ \t]*\r?\n[ \t]*(?:\*|//|--|#)?[ \t]*)`;
/** Anything that still points outside the repository (the --check pattern). */
const LEFTOVER = new RegExp(String.raw`\b(?:CONTRACT|SPEC)${SEP}§`, "g");

// ---------------------------------------------------------------------------------------------

function parseArgs(argv) {
  const flags = new Set(argv.filter((a) => a.startsWith("--")));
  const positional = argv.filter((a) => !a.startsWith("--"));
  for (const f of flags) {
    if (!["--check", "--dry-run", "--verbose"].includes(f)) {
      console.error(`unknown option ${f}`);
      process.exit(2);
    }
  }
  return {
    root: path.resolve(positional[0] ?? repoRoot),
    check: flags.has("--check"),
    dryRun: flags.has("--dry-run"),
    verbose: flags.has("--verbose"),
  };
}

function listFiles(root) {
  const out = [];
  const walk = (dir) => {
    if (!existsSync(dir)) return;
    for (const name of readdirSync(dir).sort()) {
      const full = path.join(dir, name);
      const st = statSync(full);
      if (st.isDirectory()) {
        if (!SKIP_DIRS.has(name)) walk(full);
      } else if (EXTENSIONS.has(path.extname(name))) out.push(full);
    }
  };
  for (const d of SCOPE_DIRS) walk(path.join(root, d));
  if (existsSync(root)) {
    for (const name of readdirSync(root).sort()) {
      if (name.endsWith(".md") && statSync(path.join(root, name)).isFile()) out.push(path.join(root, name));
    }
  }
  return out.map((f) => path.relative(root, f).split(path.sep).join("/"));
}

const isFrozen = (rel) => /^migrations\/[^/]+\.sql$/.test(rel);
const isMarkdown = (rel) => rel.endsWith(".md");

// ---------------------------------------------------------------------------------------------
// Targets: existence, headings as labels

/** GitHub's heading slug (also what src/lib/markdown-html.ts gives the served guides). */
export function slugOf(heading) {
  return heading
    .trim()
    .toLowerCase()
    .replace(/<[^>]+>/g, "")
    .replace(/[^\p{L}\p{N} _-]/gu, "")
    .replace(/ /g, "-");
}

const docCache = new Map();
/** The anchors of a Markdown file (headings and explicit `<a id>`), each with a label. */
function anchorsOf(file) {
  if (docCache.has(file)) return docCache.get(file);
  const anchors = new Map();
  let title = path.basename(file);
  if (existsSync(file)) {
    const lines = readFileSync(file, "utf8").split("\n");
    let pendingId = null;
    let inFence = false;
    for (const line of lines) {
      if (/^```/.test(line)) inFence = !inFence;
      if (inFence) continue;
      const explicit = [...line.matchAll(/<a id="([^"]+)"><\/a>/g)].map((m) => m[1]);
      const h = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
      if (h) {
        const text = h[2].replace(/`/g, "");
        if (h[1].length === 1 && title === path.basename(file)) title = text;
        if (!anchors.has(slugOf(h[2]))) anchors.set(slugOf(h[2]), text);
        if (pendingId) anchors.set(pendingId, text);
        pendingId = null;
      }
      for (const id of explicit) {
        const rest = line.replace(/<a id="[^"]+"><\/a>/g, "").trim();
        if (rest) {
          // An anchor inside a table row: label it with the row's first code span.
          const codeSpan = /`([^`]+)`/.exec(rest);
          anchors.set(id, codeSpan ? codeSpan[1] : rest.slice(0, 60));
        } else pendingId = id;
      }
    }
  }
  const entry = { exists: existsSync(file), anchors, title };
  docCache.set(file, entry);
  return entry;
}

/** Where a target is looked up: the root being rewritten, else this repository (a partial copy). */
function resolveTargetFile(root, targetPath) {
  const inRoot = path.join(root, targetPath);
  return existsSync(inRoot) ? inRoot : path.join(repoRoot, targetPath);
}

function labelOf(root, target) {
  const [file, anchor] = target.split("#");
  const doc = anchorsOf(resolveTargetFile(root, file));
  if (!anchor) return doc.title;
  return doc.anchors.get(anchor) ?? doc.title;
}

function validateTargets(root, map) {
  const targets = new Set();
  for (const [k, v] of Object.entries(map)) if (!k.startsWith("$")) targets.add(v);
  for (const r of map.$rules ?? []) targets.add(r.target);
  for (const q of map.$qualifiers ?? []) if (q.target) targets.add(q.target);
  const problems = [];
  for (const t of [...targets].sort()) {
    const [file, anchor] = t.split("#");
    const doc = anchorsOf(resolveTargetFile(root, file));
    if (!doc.exists) problems.push(`${t}: no such file`);
    else if (anchor && !doc.anchors.has(anchor)) problems.push(`${t}: no such anchor in ${file}`);
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------
// Choosing and rendering targets

function compileRules(map) {
  return (map.$rules ?? []).map((r) => ({
    refs: new Set(r.refs),
    file: r.file ? new RegExp(r.file) : null,
    text: r.text ? new RegExp(r.text, "i") : null,
    target: r.target,
  }));
}

function chooseTarget(map, rules, ref, rel, line, before) {
  const candidates = rules.filter((r) => r.refs.has(ref) && (!r.file || r.file.test(rel)));
  for (const r of candidates) if (!r.text || r.text.test(line)) return r.target;
  for (const r of candidates) if (r.text?.test(before)) return r.target;
  if (typeof map[ref] === "string") return map[ref];
  // An unmapped subsection falls back to its section (§4.7 → §4).
  const parent = ref.replace(/\.\d+$/, "");
  return parent !== ref && typeof map[parent] === "string" ? map[parent] : null;
}

function render(root, rel, target, { published }) {
  const [file, anchor] = target.split("#");
  if (published) {
    const guide = /^docs\/merchants\/([a-z0-9-]+)\.md$/.exec(file);
    if (guide) return `[${labelOf(root, target)}](/docs/guides/${guide[1]}${anchor ? `#${anchor}` : ""})`;
    return target;
  }
  if (!isMarkdown(rel)) return target;
  let link = path.posix.relative(path.posix.dirname(rel), file);
  if (link === path.posix.basename(rel) && anchor) link = "";
  return `[${labelOf(root, target)}](${link}${anchor ? `#${anchor}` : ""})`;
}

/** Whether offset `at` of `text` is inside a "…" or `…` string on its line (code files only). */
function insideStringLiteral(text, at) {
  const lineStart = text.lastIndexOf("\n", at - 1) + 1;
  const prefix = text.slice(lineStart, at);
  if (/^\s*(\*|\/\/|\/\*)/.test(prefix)) return false;
  const quotes = (prefix.match(/(?<!\\)"/g) ?? []).length;
  const ticks = (prefix.match(/(?<!\\)`/g) ?? []).length;
  return quotes % 2 === 1 || ticks % 2 === 1;
}

// ---------------------------------------------------------------------------------------------
// Rewriting one file

function buildGroupRegex(bare) {
  const item = `(?:(?:CONTRACT|SPEC)${SEP})?§${NUM}`;
  const cont = String.raw`(?:\s*(?:,|;|and|–|-)\s*${item})*`;
  const head = bare ? `(?:(?:CONTRACT|SPEC)${SEP})?§${NUM}` : String.raw`\b(?:CONTRACT|SPEC)${SEP}§${NUM}`;
  return new RegExp(`${head}${cont}`, "g");
}

function rewriteText(root, rel, text, ctx) {
  const { map, rules } = ctx;
  const changes = [];
  const unmapped = [];
  let out = text;

  for (const p of map.$phrases ?? []) {
    if (p.file !== rel) continue;
    if (out.includes(p.from)) {
      out = out.split(p.from).join(p.to);
      changes.push({ from: p.from, to: p.to, phrase: true });
    }
  }

  const bare = (map.$bareFiles ?? []).includes(rel);
  const groupRe = buildGroupRegex(bare);
  const qualifiers = (map.$qualifiers ?? []).map((q) => ({
    refs: new Set(q.refs),
    re: new RegExp(`^${q.pattern ?? q.text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`),
    target: q.target,
  }));

  let result = "";
  let last = 0;
  for (const m of out.matchAll(groupRe)) {
    const start = m.index;
    let end = start + m[0].length;
    const groupText = m[0];
    // A bare § in a file of $bareFiles must not be some other document's (e.g. "BCP §4.14").
    if (
      bare &&
      !/^(CONTRACT|SPEC)/.test(groupText) &&
      /\b(BCP|RFC)\s*$/.test(out.slice(Math.max(0, start - 8), start))
    )
      continue;

    const refs = [];
    let doc = "CONTRACT";
    for (const part of groupText.matchAll(new RegExp(`(?:(CONTRACT|SPEC)${SEP})?§(${NUM})`, "g"))) {
      if (part[1]) doc = part[1];
      refs.push(`${doc} §${part[2]}`);
    }
    const lineStart = out.lastIndexOf("\n", start - 1) + 1;
    const lineEnd = out.indexOf("\n", end) === -1 ? out.length : out.indexOf("\n", end);
    // Context for $rules: first the words around the reference (the clause before it on its line
    // and the next 120 characters), then the two lines before it.
    const line = `${out.slice(Math.max(lineStart, start - 80), start)} ${out.slice(end, end + 120)}`;
    const before = out.slice(0, lineStart).split("\n").slice(-3).join("\n");

    // Words after the group that belonged to the old numbering.
    let forced = null;
    const rest = out.slice(end);
    for (const q of qualifiers) {
      if (!refs.some((r) => q.refs.has(r))) continue;
      const qm = q.re.exec(rest);
      if (qm) {
        end += qm[0].length;
        if (q.target) forced = q.target;
        break;
      }
    }

    const targets = [];
    let missing = false;
    for (const ref of refs) {
      const t = forced ?? chooseTarget(map, rules, ref, rel, line, before);
      if (!t) {
        missing = true;
        unmapped.push(`${rel}: ${ref} in: ${out.slice(lineStart, lineEnd).trim()}`);
      } else if (!targets.includes(t)) targets.push(t);
    }
    if (missing) continue;
    const published = rel.startsWith("src/http/") && !isMarkdown(rel) && insideStringLiteral(out, start);
    const replacement = targets.map((t) => render(root, rel, t, { published })).join(", ");
    result += out.slice(last, start) + replacement;
    last = end;
    changes.push({ from: out.slice(start, end), to: replacement, refs });
  }
  result += out.slice(last);
  return { text: result, changes, unmapped };
}

// ---------------------------------------------------------------------------------------------

function leftovers(text) {
  const found = [];
  for (const m of text.matchAll(LEFTOVER)) {
    const lineNo = text.slice(0, m.index).split("\n").length;
    const line = text.split("\n")[lineNo - 1];
    found.push({ lineNo, line: line.trim() });
  }
  return found;
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  const map = JSON.parse(readFileSync(MAP_PATH, "utf8"));
  const files = listFiles(args.root);

  if (args.check) {
    let count = 0;
    const frozen = [];
    for (const rel of files) {
      const found = leftovers(readFileSync(path.join(args.root, rel), "utf8"));
      for (const f of found) {
        if (isFrozen(rel)) frozen.push(`${rel}:${f.lineNo}`);
        else {
          count++;
          console.error(`${rel}:${f.lineNo}: ${f.line}`);
        }
      }
    }
    if (count) {
      console.error(
        `\n${count} reference(s) to documents outside the repository ("CONTRACT §"/"SPEC §"). ` +
          "Point them at the project's documents: node scripts/rewrite-references.mjs (map: scripts/reference-map.json).",
      );
      process.exit(1);
    }
    console.log(
      `no CONTRACT/SPEC references outside migrations/*.sql (${files.length} files checked; ${frozen.length} left in applied migrations)`,
    );
    return;
  }

  const problems = validateTargets(args.root, map);
  if (problems.length) {
    console.error(`reference-map.json has targets that do not exist:\n  ${problems.join("\n  ")}`);
    process.exit(1);
  }

  const ctx = { map, rules: compileRules(map) };
  let filesChanged = 0;
  let replacements = 0;
  let phrases = 0;
  const unmapped = [];
  const frozen = [];
  const byTarget = new Map();
  for (const rel of files) {
    const full = path.join(args.root, rel);
    const before = readFileSync(full, "utf8");
    if (isFrozen(rel)) {
      for (const f of leftovers(before)) frozen.push(`${rel}:${f.lineNo}: ${f.line}`);
      continue;
    }
    const { text, changes, unmapped: u } = rewriteText(args.root, rel, before, ctx);
    unmapped.push(...u);
    if (text === before) continue;
    filesChanged++;
    for (const c of changes) {
      if (c.phrase) phrases++;
      else replacements++;
      if (!c.phrase) byTarget.set(c.to, (byTarget.get(c.to) ?? 0) + 1);
      if (args.verbose || args.dryRun)
        console.log(`${rel}: ${JSON.stringify(c.from)} → ${JSON.stringify(c.to)}`);
    }
    if (!args.dryRun) writeFileSync(full, text);
  }

  console.log(
    `${args.dryRun ? "would rewrite" : "rewrote"} ${replacements} reference group(s) and ${phrases} phrase(s) in ${filesChanged} file(s) under ${args.root}`,
  );
  if (args.verbose) {
    for (const [t, n] of [...byTarget.entries()].sort((a, b) => b[1] - a[1]))
      console.log(`  ${String(n).padStart(3)}  ${t}`);
  }
  if (frozen.length) {
    console.log(`left as they are in applied migrations (checksummed), ${frozen.length}:`);
    for (const f of frozen) console.log(`  ${f}`);
  }
  if (unmapped.length) {
    console.error(`not rewritten (no target in scripts/reference-map.json), ${unmapped.length}:`);
    for (const u of unmapped) console.error(`  ${u}`);
    process.exitCode = 1;
  }
}

main();
