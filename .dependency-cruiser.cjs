/**
 * The layering rule of `src/` (ARCHITECTURE.md, "Layers"), enforced in CI by `npm run lint:deps`.
 *
 * Floors, bottom to top:
 *   domain, lib                   pure rules and generic helpers
 *   config, observability         the typed configuration; logs, metrics, readiness
 *   db, worker                    the query layer; the job mechanism (runner, heartbeat, notified loop)
 *   features                      one folder per concern, SQL included (FEATURES below)
 *   http                          the Fastify app: parses, calls one use case, presents
 *   runtime.ts, roles, operator, cli, main.ts   composition: builds and wires everything
 *
 * Type-only imports count too: a type is a dependency of the design.
 */
const FEATURES = [
  "backup",
  "auth",
  "chains",
  "deposits",
  "energy",
  "idempotency",
  "ledger",
  "mail",
  "merchants",
  "pay",
  "ratelimit",
  "rates",
  "screening",
  "sender",
  "signer",
  "sweep",
  "transactions",
  "wallet",
  "watcher",
  "webhooks",
  "withdrawals",
];
const features = `^src/(${FEATURES.join("|")})/`;
const composition = "^src/(runtime\\.ts|main\\.ts|roles/|operator/|cli/)";

module.exports = {
  forbidden: [
    {
      name: "domain-is-pure",
      comment: "domain/ holds pure rules: it imports nothing of the project's but itself.",
      severity: "error",
      from: { path: "^src/domain/" },
      to: { path: "^src/", pathNot: "^src/domain/" },
    },
    {
      name: "lib-is-generic",
      comment: "lib/ holds generic helpers: domain at most.",
      severity: "error",
      from: { path: "^src/lib/" },
      to: { path: "^src/", pathNot: "^src/(lib|domain)/" },
    },
    {
      name: "config-and-observability-below-features",
      comment:
        "config/ and observability/ sit under every feature: config reads each network's variables from the registry in domain/ (issue #37), never from chains/.",
      severity: "error",
      from: { path: "^src/(config|observability)/" },
      to: {
        path: "^src/",
        pathNot: "^src/(config|observability|domain|lib)/",
      },
    },
    {
      name: "db-and-worker-mechanism-import-no-feature",
      comment: "The query layer and the job mechanism know no feature (the job list lives with the roles).",
      severity: "error",
      from: { path: "^src/(db|worker)/" },
      to: { path: "^src/", pathNot: "^src/(db|worker|config|observability|domain|lib)/" },
    },
    {
      name: "features-not-up",
      comment: "A feature never imports http, the runtime, the roles, the operator commands or the CLI.",
      severity: "error",
      from: { path: features },
      to: { path: `^src/http/|${composition}` },
    },
    {
      name: "features-through-entry",
      comment:
        "Features reach each other only through the other's entry file (index.ts): what it exports is its public face, registration points included.",
      severity: "error",
      from: { path: "^src/([^/]+)/" },
      to: {
        path: features,
        pathNot: [`^src/$1/`, "^src/[^/]+/index\\.ts$"],
      },
    },
    {
      name: "http-no-database",
      comment:
        "Routes hold no SQL: http/ calls the features' use cases. Exceptions: app-types.ts names the Database of the deps; errors.ts classifies a transient database fault as 503.",
      severity: "error",
      from: { path: "^src/http/", pathNot: "^src/http/(app-types|errors)\\.ts$" },
      to: { path: "^src/db/|^kysely$|node_modules/kysely/" },
    },
    {
      name: "http-not-composition",
      comment: "http/ is composed by the roles, never the other way round.",
      severity: "error",
      from: { path: "^src/http/" },
      to: { path: composition },
    },
    {
      name: "no-folder-cycles",
      comment: "No circular imports, within or between folders.",
      severity: "error",
      from: { path: "^src/" },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default"],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
