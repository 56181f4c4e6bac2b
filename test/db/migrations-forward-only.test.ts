import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { MIGRATIONS_DIR, readMigrations } from "../../src/db/migrate.js";

/**
 * Forward-only migrations (docs/operations.md#migration-safety):
 * - a released migration (listed with its SHA-256 in migrations/RELEASED) is never edited again;
 * - a migration numbered above the last released one must be safe to run while the previous
 *   release serves: no destructive statement (below) unless the statement carries the reviewed
 *   marker `-- migration-safety: reviewed <why it is safe>`.
 * The checks are plain functions of strings, tested on strings below; the tree is checked last.
 */

const RELEASED_FILE = path.join(MIGRATIONS_DIR, "RELEASED");

/** The marker that lets a reviewed destructive statement through; the reason is required. */
const REVIEWED_MARKER = /migration-safety:\s*reviewed\b[\s:—–-]*(\S.{9,})/;

interface Statement {
  /** The statement's code: comments removed, string literals emptied, whitespace collapsed, lower case. */
  code: string;
  /** The comments written between the previous statement's `;` and this one's. */
  comments: string[];
  /** 1-based line of the statement's first code character. */
  line: number;
}

/**
 * Splits SQL into statements the way PostgreSQL reads them: `--` and nested `/* *\/` comments,
 * '…' literals (E'…' with backslash escapes), "…" identifiers and $tag$…$tag$ bodies (lexed again:
 * a DO block's or a function's body is code too).
 */
function splitStatements(text: string): Statement[] {
  const out: Statement[] = [];
  let code = "";
  let comments: string[] = [];
  let line = 1;
  let startLine = 0;
  const flush = () => {
    const normal = code.replace(/\s+/g, " ").trim().toLowerCase();
    if (normal !== "") out.push({ code: normal, comments, line: startLine });
    code = "";
    comments = [];
    startLine = 0;
  };
  lex(text, {
    code(s, at) {
      if (startLine === 0 && /\S/.test(s)) startLine = at;
      code += s;
    },
    comment(s) {
      comments.push(s);
    },
    end: flush,
    line: () => line,
    newlines(n) {
      line += n;
    },
  });
  flush();
  return out;
}

interface Sink {
  code(s: string, line: number): void;
  comment(s: string): void;
  /** A top-level `;`; absent inside a body. */
  end?: () => void;
  line(): number;
  newlines(n: number): void;
}

function lex(text: string, sink: Sink): void {
  let i = 0;
  const count = (s: string) => sink.newlines((s.match(/\n/g) ?? []).length);
  while (i < text.length) {
    const c = text[i] as string;
    const next = text[i + 1];
    if (c === "-" && next === "-") {
      const end = text.indexOf("\n", i);
      const stop = end === -1 ? text.length : end;
      sink.comment(text.slice(i + 2, stop).trim());
      i = stop;
    } else if (c === "/" && next === "*") {
      let depth = 1;
      let j = i + 2;
      while (j < text.length && depth > 0) {
        if (text.startsWith("/*", j)) {
          depth++;
          j += 2;
        } else if (text.startsWith("*/", j)) {
          depth--;
          j += 2;
        } else j++;
      }
      const body = text.slice(i, j);
      sink.comment(body.slice(2, -2).trim());
      count(body);
      sink.code(" ", sink.line());
      i = j;
    } else if (c === "'") {
      const escapes = /[eE]$/.test(text.slice(Math.max(0, i - 1), i)) && !/\w/.test(text[i - 2] ?? "");
      let j = i + 1;
      for (;;) {
        if (j >= text.length) break;
        if (escapes && text[j] === "\\") j += 2;
        else if (text[j] === "'" && text[j + 1] === "'") j += 2;
        else if (text[j] === "'") break;
        else j++;
      }
      count(text.slice(i, j + 1));
      sink.code("''", sink.line());
      i = j + 1;
    } else if (c === '"') {
      let j = i + 1;
      while (j < text.length && !(text[j] === '"' && text[j + 1] !== '"')) j += text[j] === '"' ? 2 : 1;
      // A quoted identifier's words are not keywords.
      sink.code('"id"', sink.line());
      i = j + 1;
    } else if (c === "$" && !/[\w$]/.test(text[i - 1] ?? "")) {
      const tag = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(text.slice(i));
      if (!tag) {
        sink.code(c, sink.line());
        i++;
        continue;
      }
      const close = text.indexOf(tag[0], i + tag[0].length);
      const stop = close === -1 ? text.length : close;
      sink.code(" ", sink.line());
      // The body is code of its own (plpgsql or SQL): its comments and literals are lexed alike.
      lex(text.slice(i + tag[0].length, stop), { ...sink, end: undefined });
      sink.code(" ", sink.line());
      i = close === -1 ? text.length : close + tag[0].length;
    } else if (c === ";" && sink.end) {
      sink.end();
      i++;
    } else {
      if (c === "\n") sink.newlines(1);
      sink.code(c, sink.line());
      i++;
    }
  }
}

/** Splits an ALTER TABLE's actions at the commas outside parentheses. */
function alterTableActions(code: string): string[] {
  const m = /^alter table (?:if exists )?(?:only )?\S+ (.*)$/.exec(code);
  if (!m) return [];
  const actions: string[] = [];
  let depth = 0;
  let current = "";
  for (const ch of m[1] as string) {
    if (ch === "(") depth++;
    if (ch === ")") depth--;
    if (ch === "," && depth === 0) {
      actions.push(current.trim());
      current = "";
    } else current += ch;
  }
  actions.push(current.trim());
  return actions;
}

/** What a migration file creates itself: its own objects may be hardened or replaced freely. */
interface FileContext {
  /** Tables and functions the file creates (names without schema quoting, lower case). */
  created: Set<string>;
  /** CHECK constraints the file adds by name (a dropped one re-added: a replaced, widened list). */
  checksAdded: Set<string>;
}

function fileContext(statements: Statement[]): FileContext {
  const created = new Set<string>();
  const checksAdded = new Set<string>();
  for (const { code } of statements) {
    for (const m of code.matchAll(/\bcreate (?:or replace )?(?:function|table(?: if not exists)?) ([\w.]+)/g))
      created.add(m[1] as string);
    for (const m of code.matchAll(/\badd constraint ([\w.]+) check\b/g)) checksAdded.add(m[1] as string);
  }
  return { created, checksAdded };
}

/**
 * What the previous release may still need, and a statement would take away or refuse
 * (docs/operations.md#migration-safety). Each returns a reason, or null.
 */
const DESTRUCTIVE: ((code: string, file: FileContext) => string | null)[] = [
  // Every DROP (table, column, constraint, index, view, function, trigger, type, default, …) but
  // DROP NOT NULL, which only loosens, and a CHECK constraint the same file adds again under its
  // name (the way an allowed-values list is widened; narrowing one is the reviewer's to catch).
  (s, file) => {
    for (const m of s.matchAll(/\bdrop (?!not null\b)(?:constraint (?:if exists )?([\w.]+))?/g))
      if (!(m[1] && file.checksAdded.has(m[1]))) return "DROP";
    return null;
  },
  (s) => (/\brename\b/.test(s) ? "RENAME" : null),
  (s) => (/\balter (?:column )?\S+ (?:set data )?type\b/.test(s) ? "ALTER COLUMN … TYPE" : null),
  (s) => (/\bset not null\b/.test(s) && !/\bset default\b/.test(s) ? "SET NOT NULL without a default" : null),
  (s) => {
    for (const a of alterTableActions(s)) {
      if (!/^add (?!constraint\b|primary key\b|unique\b|check\b|foreign key\b|exclude\b)/.test(a)) continue;
      if (/\bnot null\b/.test(a) && !/\bdefault\b|\bgenerated\b/.test(a))
        return "ADD COLUMN … NOT NULL without a default";
    }
    return null;
  },
  // TRUNCATE the statement; `before truncate on` (a trigger's event) is not one.
  (s) => (/\btruncate (?!on\b)/.test(s) ? "TRUNCATE" : null),
  // REVOKE, except on a table or function the same file creates (hardening what is new).
  (s, file) => {
    const m = /\brevoke\b.*? on (?:table |function |all \w+ in schema )?([\w.]+)/.exec(s);
    if (!/\brevoke\b/.test(s)) return null;
    return m && file.created.has(m[1] as string) ? null : "REVOKE";
  },
];

interface Finding {
  line: number;
  kind: string;
  statement: string;
}

/** The destructive statements of one migration's text that carry no reviewed marker. */
function destructiveStatements(text: string): Finding[] {
  const findings: Finding[] = [];
  const statements = splitStatements(text);
  const file = fileContext(statements);
  for (const st of statements) {
    if (st.comments.some((c) => REVIEWED_MARKER.test(c))) continue;
    for (const rule of DESTRUCTIVE) {
      const kind = rule(st.code, file);
      if (kind) findings.push({ line: st.line, kind, statement: st.code.slice(0, 160) });
    }
  }
  return findings;
}

interface Released {
  /** File name → SHA-256 (hex) as released. */
  files: Map<string, string>;
  /** The highest released version. */
  baseline: number;
}

/** Reads migrations/RELEASED: `#` comments, blank lines, and `<sha256>  <NNNN_name.sql>` lines. */
function parseReleased(text: string): Released {
  const files = new Map<string, string>();
  text.split("\n").forEach((raw, i) => {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) return;
    const m = /^([0-9a-f]{64}) [ *]?(\d{4}_[a-z0-9_]+\.sql)$/.exec(line);
    if (!m) throw new Error(`migrations/RELEASED line ${i + 1}: not "<sha256>  <NNNN_name.sql>": ${line}`);
    if (files.has(m[2] as string)) throw new Error(`migrations/RELEASED lists ${m[2]} twice`);
    files.set(m[2] as string, m[1] as string);
  });
  const baseline = Math.max(0, ...[...files.keys()].map((f) => Number(f.slice(0, 4))));
  return { files, baseline };
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** What is wrong with the tree against the released record: edited, missing or unrecorded files. */
function releasedProblems(released: Released, tree: { file: string; sql: string }[]): string[] {
  const problems: string[] = [];
  const byFile = new Map(tree.map((t) => [t.file, t.sql]));
  for (const [file, hash] of released.files) {
    const sql = byFile.get(file);
    if (sql === undefined) problems.push(`${file} was released and is gone`);
    else if (sha256(sql) !== hash)
      problems.push(`${file} was released and has been edited (add a new migration instead)`);
  }
  for (const t of tree)
    if (Number(t.file.slice(0, 4)) <= released.baseline && !released.files.has(t.file))
      problems.push(
        `${t.file} is numbered at or below the last release (${released.baseline}) but was not released: renumber it`,
      );
  return problems;
}

const tree = async () =>
  (await readMigrations()).map((m) => ({
    file: `${String(m.version).padStart(4, "0")}_${m.name}.sql`,
    sql: m.sql,
  }));

describe("the destructive-statement check", () => {
  it("flags what the previous release may still read or write", () => {
    const cases: [string, string][] = [
      ["drop table payments;", "DROP"],
      ["DROP TABLE IF EXISTS old_things CASCADE;", "DROP"],
      ["alter table payments drop column legacy_ref;", "DROP"],
      ["alter table payments drop legacy_ref;", "DROP"],
      ["alter table payments drop constraint payments_amount_check;", "DROP"],
      ["alter table payments alter column status drop default;", "DROP"],
      ["drop index concurrently payments_by_time;", "DROP"],
      ["drop function ledger_post(text);", "DROP"],
      ["alter table payments rename column ref to reference;", "RENAME"],
      ["alter table payments rename to payments_old;", "RENAME"],
      ["alter table payments alter column amount type numeric(40,0);", "ALTER COLUMN … TYPE"],
      ["alter table payments alter amount set data type bigint;", "ALTER COLUMN … TYPE"],
      ["alter table payments alter column note set not null;", "SET NOT NULL without a default"],
      ["alter table payments add column kind text not null;", "ADD COLUMN … NOT NULL without a default"],
      [
        "alter table payments add kind text not null, add other int;",
        "ADD COLUMN … NOT NULL without a default",
      ],
      ["truncate webhook_attempts;", "TRUNCATE"],
      ["revoke select on payments from stablegate_api;", "REVOKE"],
      ["revoke all on function ledger_post(text) from public;", "REVOKE"],
      // A constraint dropped and not added again, or added again as something else than a CHECK.
      [
        "alter table t drop constraint t_kind_check; alter table t add constraint t_kind_check unique (kind);",
        "DROP",
      ],
      [
        "alter table t drop constraint t_kind_check; alter table t add constraint t_other check (x > 0);",
        "DROP",
      ],
      // Inside a DO block's body: still code.
      ["do $$ begin execute 'x'; drop table t; end $$;", "DROP"],
      ['alter table "Payments" drop column "Legacy Ref";', "DROP"],
    ];
    for (const [sql, kind] of cases) {
      expect(
        destructiveStatements(sql).map((f) => f.kind),
        sql,
      ).toContain(kind);
    }
  });

  it("lets additive statements through, and words in comments and literals", () => {
    const additive = [
      "create table links (id text primary key, note text);",
      "alter table payments add column note text;",
      "alter table payments add column kind text not null default 'x';",
      "alter table payments add column n int generated always as (1) stored not null;",
      "alter table payments add constraint payments_note_len check (length(note) < 100) not valid;",
      "alter table payments alter column note drop not null;",
      "alter table payments alter column note set default 'a', alter column note set not null;",
      "create index concurrently payments_note on payments (note);",
      "-- drop table payments later, rename it then\ncreate table x (id int);",
      "/* drop table a; /* nested: rename */ truncate */ create table y (id int);",
      "comment on table payments is 'we never drop or rename this; truncate neither';",
      "insert into settings (k, v) values (E'drop table \\' rename', 'revoke');",
      'create table "drop table" (id int);',
      "create function f() returns int language sql as $body$ select 1 $body$;",
      "select $1::text; create table dropped_at_times (dropped_at timestamptz, renamed boolean);",
      "grant select on payments to stablegate_api;",
      // An allowed-values list widened: the CHECK dropped and added again under its name.
      "alter table t drop constraint t_kind_check;\nalter table t add constraint t_kind_check check (kind in ('a', 'b', 'c'));",
      "alter table t drop constraint if exists t_kind_check, add constraint t_kind_check check (kind in ('a'));",
      // A trigger on TRUNCATE; hardening a function the file creates.
      "create trigger t_no_truncate before truncate on t for each statement execute function refuse();",
      "create function f(a text) returns int language sql as $$ select 1 $$;\nrevoke all on function f(text) from public;",
    ];
    for (const sql of additive) expect(destructiveStatements(sql), sql).toEqual([]);
  });

  it("accepts a destructive statement carrying the reviewed marker with a reason, and only that one", () => {
    const sql = [
      "-- migration-safety: reviewed the previous release (0041) no longer reads legacy_ref",
      "alter table payments drop column legacy_ref;",
      "alter table payments drop column other_ref;",
    ].join("\n");
    expect(destructiveStatements(sql)).toEqual([
      { line: 3, kind: "DROP", statement: "alter table payments drop column other_ref" },
    ]);
    // A marker without a reason is not one.
    expect(destructiveStatements("-- migration-safety: reviewed\ndrop table t;")).toHaveLength(1);
  });

  it("splits statements at top-level semicolons only, with their lines", () => {
    const st = splitStatements(
      "create table a (s text default ';');\n\ncreate function f() returns void as $$\nbegin\n  perform 1;\nend\n$$ language plpgsql;\n",
    );
    expect(st.map((s) => s.line)).toEqual([1, 3]);
    expect(st[1]?.code).toContain("perform 1;");
  });
});

describe("the released-migrations record", () => {
  const tiny = [{ file: "0001_a.sql", sql: "create table a (id int);\n" }];
  const record = `# comment\n${sha256(tiny[0]?.sql as string)}  0001_a.sql\n`;

  it("reports a released file that was edited, removed, or a new file numbered into the past", () => {
    const released = parseReleased(record);
    expect(released.baseline).toBe(1);
    expect(releasedProblems(released, tiny)).toEqual([]);
    expect(
      releasedProblems(released, [{ file: "0001_a.sql", sql: "create table a (id bigint);\n" }]),
    ).toEqual(["0001_a.sql was released and has been edited (add a new migration instead)"]);
    expect(releasedProblems(released, [])).toEqual(["0001_a.sql was released and is gone"]);
    expect(releasedProblems(released, [...tiny, { file: "0000_b.sql", sql: "" }])[0]).toMatch(
      /0000_b.sql is numbered at or below the last release/,
    );
  });

  it("refuses a malformed record", () => {
    expect(() => parseReleased("abc  0001_a.sql\n")).toThrow(/line 1/);
    expect(() => parseReleased(`${record}${record}`)).toThrow(/twice/);
  });
});

describe("migrations/ (this tree)", () => {
  const released = parseReleased(readFileSync(RELEASED_FILE, "utf8"));

  it("records the release of d97f285 (migrations 0001-0039) at least", () => {
    expect(released.baseline).toBeGreaterThanOrEqual(39);
    expect(released.files.size).toBeGreaterThanOrEqual(39);
  });

  it("has every released migration unchanged (the checksum migrate records)", async () => {
    const files = await readMigrations();
    for (const m of files) expect(m.checksum).toBe(sha256(m.sql));
    expect(releasedProblems(released, await tree())).toEqual([]);
  });

  it("has no unreviewed destructive statement in a migration newer than the last release", async () => {
    const unreleased = (await tree()).filter((t) => Number(t.file.slice(0, 4)) > released.baseline);
    const findings = unreleased.flatMap((t) =>
      destructiveStatements(t.sql).map((f) => `${t.file}:${f.line}: ${f.kind}: ${f.statement}`),
    );
    expect(findings).toEqual([]);
  });
});
