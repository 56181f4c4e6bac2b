import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { registerProviderMetrics } from "../../src/chains/provider-status.js";
import { slug } from "../../src/lib/markdown-html.js";
import {
  createMetrics,
  registerScreeningMetrics,
  registerSignerOutflowMetrics,
} from "../../src/observability/metrics.js";
import { registerReserveMetrics } from "../../src/reserves/status.js";
import { registerSendingMetrics } from "../../src/sender/status.js";
import { registerWebhookMetrics } from "../../src/webhooks/status.js";

/**
 * deploy/monitoring/ against the code (docs/operations.md#monitoring): every metric and label the
 * alert rules and the Grafana dashboard query exists in the registry the code builds (a renamed
 * metric fails here), every rule has a severity and a runbook section that exists, and every alert
 * the code logs is in a rule or in the runbook's table of logged alerts.
 */

/** The data source of every panel: the dashboard's input (and variable) DS_PROMETHEUS. */
const DS_UID = `\${DS_PROMETHEUS}`;
const ROOT = path.resolve(import.meta.dirname, "../..");
const read = (rel: string) => readFileSync(path.join(ROOT, rel), "utf8");

// ---------------------------------------------------------------------------------------------
// The registry, as the runtime and the signer role build it

/** The registration functions of src/ this test calls (a new one must be added here). */
const REGISTERED = [
  "registerProviderMetrics",
  "registerReserveMetrics",
  "registerSendingMetrics",
  "registerWebhookMetrics",
  "registerScreeningMetrics",
  "registerSignerOutflowMetrics",
] as const;

/**
 * Registration only declares metrics; the database is read at scrape time, which this test never
 * does. What they are given instead of a database and a chain registry throws if touched.
 */
function untouchable<T>(what: string): T {
  return new Proxy({}, { get: (_t, p) => expect.fail(`registering metrics used ${what}.${String(p)}`) }) as T;
}

interface Family {
  type: string;
  labels: Set<string>;
}

/** Every series name a scrape can carry, with its labels (histograms: _bucket with le, _sum, _count). */
function exposedSeries(): Map<string, Family> {
  const metrics = createMetrics();
  registerProviderMetrics(metrics.registry, untouchable("db"), untouchable("clock"));
  registerReserveMetrics(metrics.registry, untouchable("db"));
  registerSendingMetrics(metrics, untouchable("chains"), untouchable("db"));
  registerWebhookMetrics(metrics, untouchable("db"));
  registerScreeningMetrics(metrics.registry);
  registerSignerOutflowMetrics(metrics.registry, () => []);
  const out = new Map<string, Family>();
  for (const m of metrics.registry.getMetricsAsArray()) {
    const labels = new Set((m as unknown as { labelNames?: readonly string[] }).labelNames ?? []);
    const type = String(m.type);
    if (type === "histogram") {
      out.set(`${m.name}_bucket`, { type, labels: new Set([...labels, "le"]) });
      out.set(`${m.name}_sum`, { type, labels });
      out.set(`${m.name}_count`, { type, labels });
    } else if (type === "summary") {
      out.set(m.name, { type, labels: new Set([...labels, "quantile"]) });
      out.set(`${m.name}_sum`, { type, labels });
      out.set(`${m.name}_count`, { type, labels });
    } else out.set(m.name, { type, labels });
  }
  return out;
}

const SERIES = exposedSeries();
/** Labels Prometheus adds to every scraped series. */
const TARGET_LABELS = ["job", "instance"];
/** Series Prometheus makes itself, with their labels. */
const SYNTHETIC = new Map([["up", new Set(TARGET_LABELS)]]);

// ---------------------------------------------------------------------------------------------
// PromQL, read as far as these files need: selectors with their matchers, and grouping labels

const KEYWORDS = new Set(["and", "or", "unless", "bool", "offset", "atan2"]);
/** Aggregations may put `by (…)` between their name and their parenthesis. */
const AGGREGATIONS = new Set([
  "sum",
  "min",
  "max",
  "avg",
  "group",
  "stddev",
  "stdvar",
  "count",
  "count_values",
  "bottomk",
  "topk",
  "quantile",
]);
const GROUPING = new Set(["by", "without", "on", "ignoring", "group_left", "group_right"]);

/** What carries no metric or label: space, strings, ranges ($__rate_interval), numbers, Grafana variables, operators. */
const SKIPPED = [
  /^\s+/,
  /^"(?:[^"\\]|\\.)*"|^'(?:[^'\\]|\\.)*'/,
  /^\[[^\]]*\]/,
  /^(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+|[smhdwy]+)?/i,
  /^\$\w+/,
  /^(?:==|!=|>=|<=|[-+*/%^(),<>])/,
];

interface Selector {
  metric: string;
  labels: string[];
}

/** The selectors and grouping labels of an expression; throws on what it cannot read. */
function readPromQL(expr: string): { selectors: Selector[]; grouping: string[] } {
  const selectors: Selector[] = [];
  const grouping: string[] = [];
  const matchers = (body: string) => {
    const labels: string[] = [];
    const rest = body.replace(
      /([a-zA-Z_]\w*)\s*(=~|!~|!=|=)\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')\s*,?/g,
      (_m, l) => {
        labels.push(l as string);
        return "";
      },
    );
    if (rest.trim() !== "") throw new Error(`unread label matchers {${body}} in: ${expr}`);
    return labels;
  };
  let i = 0;
  while (i < expr.length) {
    const rest = expr.slice(i);
    const word = /^([a-zA-Z_:][\w:]*)\s*(\{[^}]*\})?\s*(\()?/.exec(rest);
    if (word) {
      const [all, name, braces, paren] = word as unknown as [
        string,
        string,
        string | undefined,
        string | undefined,
      ];
      if (GROUPING.has(name) && paren) {
        const close = expr.indexOf(")", i + all.length);
        grouping.push(
          ...expr
            .slice(i + all.length, close)
            .split(",")
            .map((l) => l.trim())
            .filter((l) => l !== ""),
        );
        i = close + 1;
      } else if (GROUPING.has(name) || KEYWORDS.has(name) || AGGREGATIONS.has(name)) {
        i += all.length - (paren ? 1 : 0);
      } else if (paren && !braces) {
        i += all.length; // a function: its arguments are read on
      } else {
        selectors.push({ metric: name, labels: braces ? matchers(braces.slice(1, -1)) : [] });
        i += all.length - (paren ? 1 : 0);
      }
      continue;
    }
    if (rest.startsWith("{")) throw new Error(`a selector without a metric name in: ${expr}`);
    const skip = SKIPPED.map((re) => re.exec(rest)).find((m) => m !== null);
    if (!skip) throw new Error(`cannot read "${rest.slice(0, 20)}" in: ${expr}`);
    i += skip[0].length;
  }
  return { selectors, grouping };
}

/** What in an expression the code does not expose: unknown metrics, labels, grouping labels. */
function unknownIn(expr: string): string[] {
  const { selectors, grouping } = readPromQL(expr);
  const problems: string[] = [];
  const known = new Set<string>(TARGET_LABELS);
  if (selectors.length === 0) problems.push(`no metric in: ${expr}`);
  for (const s of selectors) {
    const labels = SERIES.get(s.metric)?.labels ?? SYNTHETIC.get(s.metric);
    if (!labels) {
      problems.push(`unknown metric ${s.metric}`);
      continue;
    }
    for (const l of labels) known.add(l);
    for (const l of s.labels)
      if (!labels.has(l) && !TARGET_LABELS.includes(l)) problems.push(`${s.metric} has no label ${l}`);
  }
  for (const l of grouping)
    if (!known.has(l)) problems.push(`no metric of the expression has the label ${l}`);
  return problems;
}

// ---------------------------------------------------------------------------------------------
// The files

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
const rulesFile = parse(read("deploy/monitoring/alerts.yaml")) as {
  groups: { name: string; rules: Rule[] }[];
};
const RULES = rulesFile.groups.flatMap((g) => g.rules);

interface Target {
  expr?: string;
  datasource?: { type?: string; uid?: string };
}
interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { type?: string; uid?: string };
  gridPos: { x: number; y: number; w: number; h: number };
  targets?: Target[];
  panels?: Panel[];
}
const dashboard = JSON.parse(read("deploy/monitoring/grafana-dashboard.json")) as {
  __inputs: { name: string; type: string; pluginId: string }[];
  schemaVersion: number;
  uid: string;
  panels: Panel[];
  templating: { list: { name: string; type: string; query?: unknown; definition?: string }[] };
};
const PANELS = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
const TARGETS = PANELS.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, ...t })));

const RUNBOOK = read("docs/operations.md");

/** The anchors of the runbook's headings, as GitHub makes them (fenced code skipped). */
function anchors(markdown: string): string[] {
  const out: string[] = [];
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (line.startsWith("```")) fenced = !fenced;
    const h = !fenced && /^#{1,6}\s+(.*?)\s*$/.exec(line);
    if (h) out.push(slug(h[1] as string));
  }
  return out;
}

/** The runbook's "Logged alerts" table: alert → the rule names of its last column (none: log only). */
function loggedAlertsTable(markdown: string): Map<string, string[]> {
  const section = /^### Logged alerts\n([\s\S]*?)(?=^#{1,3} )/m.exec(markdown)?.[1];
  if (!section) throw new Error("docs/operations.md has no section ### Logged alerts");
  const rows = new Map<string, string[]>();
  // The rows after the header's separator line.
  const lines = section.split("\n");
  for (const line of lines.slice(lines.findIndex((l) => /^\|\s*---/.test(l)) + 1)) {
    const cells = /^\|(.*)\|\s*$/.exec(line)?.[1]?.split("|");
    const name = cells && /^\s*`([a-z0-9_]+)`\s*$/.exec(cells[0] as string)?.[1];
    if (!cells || !name) continue;
    const last = (cells.at(-1) as string).trim();
    const rules = [...last.matchAll(/`(Stablegate\w+)`/g)].map((m) => m[1] as string);
    if (rules.length === 0 && last !== "log only") throw new Error(`${name}: last cell "${last}"`);
    rows.set(name, rules);
  }
  return rows;
}

const srcFiles = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? srcFiles(path.join(dir, e.name))
      : e.name.endsWith(".ts")
        ? [path.join(dir, e.name)]
        : [],
  );
const SRC = srcFiles(path.join(ROOT, "src")).map((f) => ({
  file: path.relative(ROOT, f),
  text: readFileSync(f, "utf8"),
}));

/** Every alert name the code logs: `alert: "name"` in a log call, `alert = "name"` on an error class. */
function loggedAlerts(): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const { file, text } of SRC)
    for (const m of text.matchAll(/\balert(?:\s*:|\s*=)\s*"([a-z0-9_]+)"/g))
      out.set(m[1] as string, [...(out.get(m[1] as string) ?? []), file]);
  return out;
}

const logAlertsOf = (r: Rule) =>
  (r.annotations?.log_alerts ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");

// ---------------------------------------------------------------------------------------------

describe("the registry the code builds", () => {
  it("is what every prom-client metric of src/ registers through", () => {
    // Files that construct prom-client metrics, and the register functions they export.
    const constructing = SRC.filter((s) => /\bnew (?:Counter|Gauge|Histogram|Summary)\b/.test(s.text));
    expect(constructing.map((s) => s.file).sort()).toEqual(
      [
        "src/chains/provider-status.ts",
        "src/observability/metrics.ts",
        "src/reserves/status.ts",
        "src/sender/status.ts",
        "src/webhooks/status.ts",
      ].sort(),
    );
    const exported = constructing.flatMap((s) =>
      [...s.text.matchAll(/export function (register\w*Metrics)\b/g)].map((m) => m[1] as string),
    );
    expect(exported.sort()).toEqual([...REGISTERED].sort());
  });

  it("holds the metrics the monitoring files are about", () => {
    for (const name of [
      "stablegate_http_requests_total",
      "stablegate_http_request_duration_seconds_bucket",
      "stablegate_process_cpu_seconds_total",
      "stablegate_reserve_shortfall",
      "stablegate_webhook_oldest_due_seconds",
      "stablegate_signer_outflow_cap_refusals_total",
    ])
      expect(SERIES.has(name), name).toBe(true);
    expect([...(SERIES.get("stablegate_chain_fees_month")?.labels ?? [])]).toEqual([
      "network",
      "environment",
      "purpose",
    ]);
  });
});

describe("the PromQL reader", () => {
  it("finds selectors, matchers and grouping labels, and reports what does not exist", () => {
    expect(
      readPromQL(
        'sum by (job) (rate(a_total{status_code=~"5..", x!="y"}[5m])) / on (job) group_left b > 0.05 and c{d="1"} offset 1h',
      ),
    ).toEqual({
      selectors: [
        { metric: "a_total", labels: ["status_code", "x"] },
        { metric: "b", labels: [] },
        { metric: "c", labels: ["d"] },
      ],
      grouping: ["job", "job"],
    });
    expect(unknownIn("stablegate_reserve_shortfal > 0")).toEqual([
      "unknown metric stablegate_reserve_shortfal",
    ]);
    expect(unknownIn('max by (network) (stablegate_reserve_shortfall{purpose="x"})')).toEqual([
      "stablegate_reserve_shortfall has no label purpose",
    ]);
    expect(unknownIn("max by (provider) (stablegate_reserve_shortfall)")).toEqual([
      "no metric of the expression has the label provider",
    ]);
    expect(unknownIn('up{job=~".*stablegate.*"} == 0')).toEqual([]);
    expect(() => readPromQL('{__name__=~"stablegate_.*"}')).toThrow(/without a metric name/);
  });
});

describe("deploy/monitoring/alerts.yaml", () => {
  const runbookAnchors = new Set(anchors(RUNBOOK));

  it("has rules, each with a unique name, an expression, a duration, a severity and a summary", () => {
    expect(RULES.length).toBeGreaterThanOrEqual(10);
    expect(new Set(RULES.map((r) => r.alert)).size).toBe(RULES.length);
    for (const r of RULES) {
      expect(r.alert, JSON.stringify(r)).toMatch(/^Stablegate[A-Z]\w+$/);
      expect(typeof r.expr, r.alert).toBe("string");
      expect(r.for, r.alert).toMatch(/^\d+[smh]$/);
      expect(["critical", "warning"], r.alert).toContain(r.labels?.severity);
      expect(r.annotations?.summary, r.alert).toBeTruthy();
    }
  });

  it("links every rule to its section of docs/operations.md", () => {
    for (const r of RULES) {
      expect(r.annotations?.runbook_url, r.alert).toBe(`docs/operations.md#${slug(r.alert)}`);
      expect(runbookAnchors.has(slug(r.alert)), `docs/operations.md has no section #### ${r.alert}`).toBe(
        true,
      );
    }
    // No section for a rule that is gone.
    const ruleSections = [...RUNBOOK.matchAll(/^#### (Stablegate\w+)$/gm)].map((m) => m[1]);
    expect(ruleSections.sort()).toEqual(RULES.map((r) => r.alert).sort());
  });

  it("queries only metrics and labels the code exposes", () => {
    for (const r of RULES) expect(unknownIn(r.expr), r.alert).toEqual([]);
  });

  it("is accepted by promtool, where it is installed", () => {
    const promtool =
      process.env.PROMTOOL ?? ["/usr/bin/promtool", "/usr/local/bin/promtool"].find((p) => existsSync(p));
    if (!promtool) return; // not installed here: the PromQL reader above is the check
    const out = execFileSync(promtool, ["check", "rules", path.join(ROOT, "deploy/monitoring/alerts.yaml")], {
      encoding: "utf8",
    });
    expect(out).toContain(`SUCCESS: ${RULES.length} rules found`);
  });
});

describe("deploy/monitoring/grafana-dashboard.json", () => {
  it("is an importable dashboard with a DS_PROMETHEUS input, its panels in rows", () => {
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(39);
    expect(dashboard.uid).toBe("stablegate-overview");
    expect(dashboard.__inputs).toContainEqual(
      expect.objectContaining({ name: "DS_PROMETHEUS", type: "datasource", pluginId: "prometheus" }),
    );
    expect(dashboard.templating.list).toContainEqual(
      expect.objectContaining({ name: "DS_PROMETHEUS", type: "datasource" }),
    );
    expect(dashboard.panels[0]?.type).toBe("row");
    expect(dashboard.panels.filter((p) => p.type === "row").length).toBeGreaterThanOrEqual(8);
    expect(new Set(PANELS.map((p) => p.id)).size).toBe(PANELS.length);
    for (const p of PANELS) {
      expect(p.gridPos.x + p.gridPos.w, p.title).toBeLessThanOrEqual(24);
      if (p.type === "row") continue;
      expect(p.datasource?.uid, p.title).toBe(DS_UID);
      expect(p.targets?.length, p.title).toBeGreaterThan(0);
      for (const t of p.targets ?? []) expect(t.datasource?.uid, p.title).toBe(DS_UID);
    }
  });

  it("queries only metrics and labels the code exposes, in its panels and its variables", () => {
    for (const t of TARGETS) expect(unknownIn(t.expr ?? ""), `${t.panel}: ${t.expr}`).toEqual([]);
    for (const v of dashboard.templating.list.filter((v) => v.type === "query")) {
      const m = /^label_values\((.+),\s*(\w+)\)$/.exec(v.definition ?? "");
      expect(m, v.name).not.toBeNull();
      const [, selector, label] = m as unknown as [string, string, string];
      expect(unknownIn(selector), v.name).toEqual([]);
      const metric = readPromQL(selector).selectors[0]?.metric as string;
      expect(SERIES.get(metric)?.labels.has(label) || TARGET_LABELS.includes(label), v.name).toBe(true);
      expect((v.query as { query?: string }).query, v.name).toBe(v.definition);
    }
  });

  it("shows every application metric the code exposes", () => {
    const queried = new Set(TARGETS.flatMap((t) => readPromQL(t.expr ?? "").selectors.map((s) => s.metric)));
    const application = [...SERIES.keys()].filter(
      (n) => !/^stablegate_(process|nodejs)_/.test(n) && !/_(sum|count)$/.test(n),
    );
    expect(application.filter((n) => !queried.has(n))).toEqual([]);
  });
});

describe("the alerts the code logs", () => {
  const logged = loggedAlerts();
  const table = loggedAlertsTable(RUNBOOK);
  const byRule = new Map(RULES.map((r) => [r.alert, logAlertsOf(r)]));

  it("are found in src/ (the scan works)", () => {
    for (const name of ["signer_outflow_cap", "exchange_rate_jump", "deposit_record_mismatch"])
      expect(logged.has(name), name).toBe(true);
    expect(logged.size).toBeGreaterThanOrEqual(15);
  });

  it("are each in a rule of alerts.yaml or in the runbook's table of logged alerts", () => {
    const covered = new Set([...table.keys(), ...[...byRule.values()].flat()]);
    const missing = [...logged.keys()].filter((n) => !covered.has(n));
    expect(missing, `logged alerts with no rule and no row in docs/operations.md#logged-alerts`).toEqual([]);
  });

  it("match the table and the rules both ways: no stale name, no rule claimed on one side only", () => {
    // The table lists exactly what the code logs.
    expect([...table.keys()].sort()).toEqual([...logged.keys()].sort());
    for (const [name, rules] of table)
      for (const rule of rules) expect(byRule.get(rule), `${name} → ${rule}`).toContain(name);
    for (const [rule, names] of byRule)
      for (const name of names) {
        expect(logged.has(name), `${rule}: log_alerts ${name} is not logged by src/`).toBe(true);
        expect(table.get(name), `${name}: the table does not name ${rule}`).toContain(rule);
      }
  });
});
