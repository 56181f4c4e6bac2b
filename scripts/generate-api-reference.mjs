#!/usr/bin/env node
/**
 * Writes docs/api-reference.md from the published OpenAPI document (packages/sdk/openapi.json),
 * so that the repository's own documents can link to one stable place per operation and topic.
 *
 *   node scripts/generate-api-reference.mjs           write docs/api-reference.md
 *   node scripts/generate-api-reference.mjs --check   exit 1 when docs/api-reference.md differs from
 *                                                     what it would write (CI)
 *   node scripts/generate-api-reference.mjs --stdout  print it instead of writing
 *
 * Everything is read from the document (run `npm run api:generate` first when the routes changed);
 * the only fixed text is the headings and the links to the merchant guides. Output is deterministic:
 * tags in the document's order, operations in path order (then method), schemas and codes sorted.
 *
 * Stable anchors, for links such as `docs/api-reference.md#createcheckoutsession`:
 *   #<operationid lowercased>   every operation and webhook (e.g. #createcheckoutsession, #depositwebhook)
 *   #<tag slug>                 every tag (e.g. #deposits, #dashboard-auth, #hosted-payment-page)
 *   #environments #authentication #envelope #errors #pagination #rate-limits #idempotency
 *   #headers #currency-types #amounts #webhook-deliveries #schemas
 *   #error-<code>               every error code (e.g. #error-validation-error)
 *   #schema-<name lowercased>   every named schema (e.g. #schema-checkoutsession)
 * Plain Node (no dependency).
 */
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), "..");
const DOCUMENT = path.join(root, "packages/sdk/openapi.json");
const OUTPUT = path.join(root, "docs/api-reference.md");
const METHODS = ["get", "put", "post", "patch", "delete", "head", "options", "trace"];
/** Response headers every answer carries: described once under #headers, not per operation. */
const COMMON_HEADERS = new Set([
  "X-Request-Id",
  "RateLimit-Limit",
  "RateLimit-Remaining",
  "RateLimit-Reset",
  "RateLimit-Policy",
]);

// ---------------------------------------------------------------------------------------------
// Small helpers

export const slug = (text) =>
  String(text)
    .toLowerCase()
    .replace(/[^a-z0-9 _-]/g, "")
    .trim()
    .replace(/[ _]+/g, "-");
export const operationAnchor = (operationId) => String(operationId).toLowerCase();
export const errorAnchor = (code) => `error-${slug(code)}`;
export const schemaAnchor = (name) => `schema-${String(name).toLowerCase()}`;

/** Text for a table cell: one line, pipes escaped. */
const cell = (text) =>
  text === undefined || text === null || text === ""
    ? ""
    : String(text)
        .replace(/\r?\n+/g, " ")
        .replace(/\|/g, "\\|")
        .trim();
const code = (value) => `\`${String(value).replace(/`/g, "'")}\``;
const refName = (ref) => decodeURIComponent(String(ref).split("/").pop());

function table(header, rows) {
  if (rows.length === 0) return "";
  const lines = [`| ${header.join(" | ")} |`, `|${header.map(() => "---").join("|")}|`];
  for (const row of rows) lines.push(`| ${row.map(cell).join(" | ")} |`);
  return `${lines.join("\n")}\n`;
}

// ---------------------------------------------------------------------------------------------
// The document

class Reference {
  constructor(doc) {
    this.doc = doc;
    this.schemas = doc.components?.schemas ?? {};
    this.operations = [];
    for (const p of Object.keys(doc.paths ?? {}).sort()) {
      const item = doc.paths[p];
      for (const method of METHODS) {
        const op = item[method];
        if (!op) continue;
        const parameters = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((x) => this.deref(x));
        this.operations.push({ method, path: p, op, parameters });
      }
    }
  }

  /** Resolves a local `$ref` (any depth); anything else as is. */
  deref(node, seen = new Set()) {
    if (!node || typeof node !== "object" || typeof node.$ref !== "string") return node;
    if (seen.has(node.$ref) || !node.$ref.startsWith("#/")) return node;
    seen.add(node.$ref);
    let target = this.doc;
    for (const part of node.$ref.slice(2).split("/")) target = target?.[decodeURIComponent(part)];
    return target === undefined ? node : this.deref(target, seen);
  }

  /** A schema's type in words, with links to named schemas. */
  typeOf(schema, depth = 0) {
    if (!schema || typeof schema !== "object") return "any";
    if (schema.$ref) {
      const name = refName(schema.$ref);
      return `[${name}](#${schemaAnchor(name)})`;
    }
    if (schema.const !== undefined) return code(JSON.stringify(schema.const));
    const union = schema.anyOf ?? schema.oneOf;
    if (Array.isArray(union)) {
      const literals = union.map((s) => this.literalsOf(s));
      if (literals.every((l) => l))
        return `one of ${literals
          .flat()
          .map((v) => code(v))
          .join(", ")}`;
      return [...new Set(union.map((s) => this.typeOf(s, depth + 1)))].join(" or ");
    }
    if (Array.isArray(schema.allOf)) return schema.allOf.map((s) => this.typeOf(s, depth + 1)).join(" and ");
    if (Array.isArray(schema.enum)) {
      if (schema.enum.length === 1 && typeof schema.enum[0] === "boolean") return code(schema.enum[0]);
      return `one of ${schema.enum.map((v) => code(v)).join(", ")}`;
    }
    const types = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
    if (types.includes("array")) return `array of ${this.typeOf(schema.items, depth + 1)}`;
    if (types.length === 0) return schema.properties ? "object" : "any";
    return types.map((t) => (t === "string" && schema.format ? `string (${schema.format})` : t)).join(" or ");
  }

  literalsOf(schema) {
    if (!schema || typeof schema !== "object" || schema.$ref) return null;
    if (schema.const !== undefined) return [schema.const];
    if (Array.isArray(schema.enum) && schema.enum.every((v) => typeof v === "string")) return schema.enum;
    return null;
  }

  /** The constraints of a schema, in words. */
  constraintsOf(schema) {
    if (!schema || typeof schema !== "object" || schema.$ref) return "";
    const out = [];
    const pick = (key, word) => schema[key] !== undefined && out.push(`${word} ${schema[key]}`);
    pick("minimum", "≥");
    pick("exclusiveMinimum", ">");
    pick("maximum", "≤");
    pick("exclusiveMaximum", "<");
    pick("minLength", "min length");
    pick("maxLength", "max length");
    pick("minItems", "min items");
    pick("maxItems", "max items");
    if (schema.pattern !== undefined) out.push(`pattern ${code(schema.pattern)}`);
    if (schema.default !== undefined) out.push(`default ${code(JSON.stringify(schema.default))}`);
    for (const branch of schema.anyOf ?? schema.oneOf ?? []) {
      const inner = this.constraintsOf(branch);
      if (inner) out.push(`(${this.typeOf(branch)}: ${inner})`);
    }
    return out.join(", ");
  }

  /**
   * The fields of an object schema as table rows: name (nested objects dotted), type, required,
   * constraints, description. A named schema is linked, not expanded.
   */
  fieldRows(schema, prefix = "", depth = 0) {
    const s = schema?.$ref ? null : schema;
    if (!s || typeof s !== "object") return [];
    const rows = [];
    const required = new Set(s.required ?? []);
    for (const name of Object.keys(s.properties ?? {})) {
      const prop = s.properties[name];
      const full = `${prefix}${name}`;
      const described = prop?.$ref ? this.deref(prop) : prop;
      rows.push([
        code(full),
        this.typeOf(prop),
        required.has(name) ? "yes" : "no",
        this.constraintsOf(prop),
        prop?.description ?? (prop?.$ref ? "" : described?.description) ?? "",
      ]);
      if (!prop?.$ref && depth < 3) {
        if (prop?.properties) rows.push(...this.fieldRows(prop, `${full}.`, depth + 1));
        if (prop?.type === "array" && prop.items && !prop.items.$ref && prop.items.properties)
          rows.push(...this.fieldRows(prop.items, `${full}[].`, depth + 1));
      }
    }
    const extra = s.additionalProperties;
    if (extra && typeof extra === "object" && Object.keys(extra).length > 0)
      rows.push([code(`${prefix}*`), this.typeOf(extra), "no", "", "any other key"]);
    return rows;
  }

  fieldsTable(schema) {
    return table(["Field", "Type", "Required", "Constraints", "Description"], this.fieldRows(schema));
  }

  /** The error codes an error response's schema allows. */
  errorCodesOf(schema) {
    const s = this.deref(schema);
    if (!s || typeof s !== "object") return [];
    const branches = s.anyOf ?? s.oneOf;
    if (Array.isArray(branches)) return branches.flatMap((b) => this.errorCodesOf(b));
    const codeSchema = this.deref(s.properties?.error)?.properties?.code;
    return this.literalsOf(this.deref(codeSchema)) ?? [];
  }

  /** Every error code of the document: named error schemas, and the statuses operations give it. */
  errorCatalogue() {
    const codes = new Map();
    for (const [name, schema] of Object.entries(this.schemas)) {
      for (const c of this.errorCodesOf(schema)) {
        const entry = codes.get(c) ?? { schema: name, statuses: new Set(), operations: [] };
        entry.schema ??= name;
        codes.set(c, entry);
      }
    }
    for (const { op } of [...this.operations, ...this.webhookOperations()]) {
      for (const [status, response] of Object.entries(op.responses ?? {})) {
        for (const media of Object.values(this.deref(response).content ?? {})) {
          for (const c of this.errorCodesOf(media.schema)) {
            const entry = codes.get(c) ?? { schema: undefined, statuses: new Set(), operations: [] };
            entry.statuses.add(status);
            if (!entry.operations.includes(op.operationId)) entry.operations.push(op.operationId);
            codes.set(c, entry);
          }
        }
      }
    }
    return [...codes.entries()]
      .map(([c, e]) => ({ code: c, ...e, statuses: [...e.statuses].sort() }))
      .sort(
        (a, b) => (a.statuses[0] ?? "").localeCompare(b.statuses[0] ?? "") || a.code.localeCompare(b.code),
      );
  }

  webhookOperations() {
    const out = [];
    for (const name of Object.keys(this.doc.webhooks ?? {})) {
      const item = this.doc.webhooks[name];
      for (const method of METHODS) if (item[method]) out.push({ name, method, op: item[method] });
    }
    return out;
  }

  securityText(security) {
    const reqs = security ?? this.doc.security ?? [];
    if (reqs.length === 0) return "none";
    const schemes = this.doc.components?.securitySchemes ?? {};
    const word = (name) => {
      const s = schemes[name];
      if (!s) return code(name);
      if (s.type === "apiKey") return `${code(s.in === "header" ? s.name : `${s.name}`)} ${s.in}`;
      if (s.type === "http")
        return `${code(`Authorization: ${s.scheme === "bearer" ? "Bearer" : s.scheme}`)}`;
      return code(name);
    };
    return reqs
      .map((req) => {
        const names = Object.keys(req);
        return names.length === 0 ? "none" : names.map(word).join(" + ");
      })
      .join(", or ");
  }
}

// ---------------------------------------------------------------------------------------------
// Sections

function intro(ref) {
  const { doc } = ref;
  const out = [];
  out.push(
    "<!-- Generated by `node scripts/generate-api-reference.mjs` from packages/sdk/openapi.json. Do not edit by hand. -->\n",
  );
  out.push(`# ${doc.info?.title ?? "API"} reference\n`);
  if (doc.info?.description) out.push(`${doc.info.description}\n`);
  out.push(
    `Generated from the OpenAPI ${doc.openapi} document (API version ${doc.info?.version}), ` +
      "`packages/sdk/openapi.json`; a running gateway serves the same document at `/docs/openapi.json` " +
      "and an interactive reference at `/docs`. The merchant guides ([docs/merchants](merchants/README.md)) " +
      "explain the flows; this page lists every operation.\n",
  );
  out.push("## Contents\n");
  const topics = [
    ["environments", "Environments and base URLs"],
    ["authentication", "Authentication"],
    ["envelope", "Response envelope"],
    ["errors", "Errors"],
    ["pagination", "Pagination"],
    ["rate-limits", "Rate limits"],
    ["idempotency", "Idempotency"],
    ["headers", "Response headers"],
    ["currency-types", "Currency types"],
    ["amounts", "Amounts"],
  ];
  for (const [anchor, title] of topics) out.push(`- [${title}](#${anchor})`);
  for (const tag of tagsInOrder(ref)) {
    out.push(`- [${tag.name}](#${slug(tag.name)})`);
  }
  out.push("- [Webhook deliveries](#webhook-deliveries)");
  out.push("- [Schemas](#schemas)\n");

  out.push('<a id="environments"></a>\n');
  out.push("## Environments and base URLs\n");
  out.push(
    table(
      ["Base URL", "Environment"],
      (doc.servers ?? []).map((s) => [code(s.url), s.description ?? ""]),
    ),
  );
  out.push(
    "The base URLs above are examples; your operator gives you the real ones. The environment of a " +
      "request is the base URL that received it, and every record belongs to one environment: see " +
      "[Authentication and environments](merchants/authentication.md#two-environments-two-base-urls).\n",
  );

  out.push('<a id="authentication"></a>\n');
  out.push("## Authentication\n");
  const schemes = doc.components?.securitySchemes ?? {};
  out.push(
    table(
      ["Scheme", "Sent as", "Description"],
      Object.keys(schemes).map((name) => {
        const s = schemes[name];
        const where =
          s.type === "apiKey"
            ? `${s.in} ${code(s.name)}`
            : s.type === "http"
              ? `${code("Authorization")} header, ${s.scheme}${s.bearerFormat ? ` (${s.bearerFormat})` : ""}`
              : s.type;
        return [code(name), where, s.description ?? ""];
      }),
    ),
  );
  out.push(
    "Each operation below lists the credentials it accepts (alternatives separated by “or”). Where " +
      "the API secret is required, and what is refused: " +
      "[Authentication and environments](merchants/authentication.md#where-the-secret-is-required). " +
      "Dashboard operations also name the permission a member's role needs " +
      "(`x-stablegate-permission`; the matrix: [Roles and permissions](permissions.md)).\n",
  );

  out.push('<a id="envelope"></a>\n');
  out.push("## Response envelope\n");
  const pagination = ref.schemas.Pagination;
  out.push(
    'A success: `{ "success": true, "data": … }`. ' +
      `${pagination ? 'A list adds `pagination` (a [Pagination](#pagination) object): `{ "success": true, "data": [ … ], "pagination": { … } }`. ' : ""}` +
      'An error: `{ "success": false, "error": { … } }`, whose fields are:\n',
  );
  const sample =
    ref.schemas.ValidationError ?? Object.values(ref.schemas).find((s) => ref.errorCodesOf(s).length);
  if (sample) {
    const errorObject = ref.deref(sample.properties?.error);
    const rows = ref
      .fieldRows(errorObject, "error.", 3) // top level only: `details` differs per code
      .map((row) =>
        row[0] === code("error.code")
          ? [row[0], "string: one of the [error codes](#errors)", row[2], "", "Stable: branch on it"]
          : row[0] === code("error.details")
            ? [row[0], "object", row[2], "", "Per code (e.g. `fields` of `VALIDATION_ERROR`); may be empty"]
            : row,
      );
    out.push(table(["Field", "Type", "Required", "Constraints", "Description"], rows));
  }
  out.push("More in the [Errors guide](merchants/errors.md#the-envelope).\n");
  return out.join("\n");
}

function errorsSection(ref) {
  const out = ['<a id="errors"></a>\n', "## Errors\n"];
  out.push(
    "Every error code of the document with its HTTP status. Branch on `error.code`, never on the " +
      "message. What to do about each: [Errors guide](merchants/errors.md#codes).\n",
  );
  const rows = ref
    .errorCatalogue()
    .map((e) => [
      `<a id="${errorAnchor(e.code)}"></a>${code(e.code)}`,
      e.statuses.join(", "),
      ref.schemas[e.schema]?.description ?? "",
      e.schema ? `[${e.schema}](#${schemaAnchor(e.schema)})` : "",
    ]);
  out.push(table(["Code", "HTTP status", "Meaning", "Body"], rows));
  return out.join("\n");
}

function paginationSection(ref) {
  const out = ['<a id="pagination"></a>\n', "## Pagination\n"];
  const pagination = ref.schemas.Pagination;
  if (pagination) {
    out.push("A list answer carries `pagination`:\n");
    out.push(ref.fieldsTable(pagination));
  }
  const listOps = ref.operations.filter(({ op }) => {
    const ok = Object.entries(op.responses ?? {}).find(([s]) => s.startsWith("2"));
    const schema = ref.deref(ok && ref.deref(ok[1]).content?.["application/json"]?.schema);
    return Boolean(schema?.properties?.pagination);
  });
  const params = new Map();
  for (const { parameters } of listOps) {
    for (const p of parameters) {
      if (p.in === "query" && ["page", "limit", "sortBy", "order"].includes(p.name) && !params.has(p.name))
        params.set(p.name, p);
    }
  }
  if (params.size) {
    out.push("The paging parameters, in the query of every list:\n");
    out.push(
      table(
        ["Parameter", "Type", "Constraints", "Description"],
        ["page", "limit", "sortBy", "order"]
          .filter((n) => params.has(n))
          .map((n) => {
            const p = params.get(n);
            return [code(n), ref.typeOf(p.schema), ref.constraintsOf(p.schema), p.description ?? ""];
          }),
      ),
    );
  }
  out.push(
    // Behaviour of src/domain/list.ts that the document cannot express (no `maximum` on `limit`).
    "A `limit` above 100 is served as 100 (the largest page), not refused; a `sortBy` other than " +
      "`createdAt`, `updatedAt`, `amount`, `status` or `confirmedAt` sorts by `createdAt`; `order` " +
      "defaults to `desc`.\n",
  );
  out.push(
    `Paginated operations: ${listOps.map(({ op }) => `[${op.operationId}](#${operationAnchor(op.operationId)})`).join(", ")}.\n`,
  );
  return out.join("\n");
}

function rateLimitSection(ref) {
  const out = ['<a id="rate-limits"></a>\n', "## Rate limits\n"];
  const headers = ref.doc.components?.headers ?? {};
  out.push(
    "Requests are counted per client address in tiers over a sliding window; the tiers and their " +
      "limits are in [Authentication and environments](merchants/authentication.md#rate-limits). " +
      "Every answer says where you stand:\n",
  );
  out.push(
    table(
      ["Header", "Description"],
      Object.keys(headers)
        .filter((h) => /^RateLimit-|^Retry-After$/.test(h))
        .map((h) => [code(h), headers[h].description ?? ""]),
    ),
  );
  const limited = ref.errorCatalogue().find((e) => e.code === "RATE_LIMITED");
  if (limited) {
    out.push(
      `Over the limit: ${limited.statuses.join(", ")} [${code("RATE_LIMITED")}](#${errorAnchor("RATE_LIMITED")}) ` +
        `with \`Retry-After\` (body: [${limited.schema}](#${schemaAnchor(limited.schema)}); ` +
        "[what to do](merchants/errors.md#429-rate-limited)).\n",
    );
  }
  return out.join("\n");
}

function idempotencySection(ref) {
  const out = ['<a id="idempotency"></a>\n', "## Idempotency\n"];
  const ops = ref.operations.filter(({ parameters }) =>
    parameters.some((p) => p.in === "header" && p.name.toLowerCase() === "idempotency-key"),
  );
  const described = ops
    .flatMap(({ parameters }) => parameters)
    .find((p) => p.in === "header" && p.name.toLowerCase() === "idempotency-key" && p.description);
  out.push(
    `Creating requests accept an \`Idempotency-Key\` header${described ? `: ${described.description.replace(/\.?$/, ".")}` : "."} ` +
      "The rules (key format, retention, replays): [Idempotency guide](merchants/idempotency.md).\n",
  );
  const replay = ref.doc.components?.headers?.["Idempotent-Replayed"];
  if (replay) out.push(`A replayed answer carries \`Idempotent-Replayed\`: ${replay.description}\n`);
  const codes = ref.errorCatalogue().filter((e) => e.code.startsWith("IDEMPOTENCY_"));
  if (codes.length)
    out.push(
      `Errors: ${codes.map((e) => `${e.statuses.join("/")} [${code(e.code)}](#${errorAnchor(e.code)})`).join(", ")}.\n`,
    );
  out.push(
    `Operations that accept it: ${ops.map(({ op }) => `[${op.operationId}](#${operationAnchor(op.operationId)})`).join(", ")}.\n`,
  );
  return out.join("\n");
}

function headersSection(ref) {
  const headers = ref.doc.components?.headers ?? {};
  const out = ['<a id="headers"></a>\n', "## Response headers\n"];
  out.push("Every answer carries `X-Request-Id` and the `RateLimit-*` headers; the others where noted.\n");
  out.push(
    table(
      ["Header", "Type", "Description"],
      Object.keys(headers).map((h) => [code(h), ref.typeOf(headers[h].schema), headers[h].description ?? ""]),
    ),
  );
  return out.join("\n");
}

function currencySection(ref) {
  const schema = ref.schemas.CurrencyType;
  const out = ['<a id="currency-types"></a>\n', "## Currency types\n"];
  if (schema) {
    out.push(`${schema.description ?? ""}\n`);
    out.push(
      `Values: ${(schema.enum ?? []).map((v) => code(v)).join(", ")} ([CurrencyType](#${schemaAnchor("CurrencyType")})).\n`,
    );
  }
  out.push("The networks, their confirmations and addresses: [Chains](chains.md).\n");
  out.push('<a id="amounts"></a>\n');
  out.push("### Amounts\n");
  // The rule as the document states it on request bodies' `amount` fields.
  const amount = ref.operations
    .map(
      ({ op }) =>
        ref.deref(ref.deref(op.requestBody)?.content?.["application/json"]?.schema)?.properties?.amount,
    )
    .find((a) => a?.description);
  out.push(
    `Amounts are JSON numbers in the token's unit; a numeric string is accepted too${amount ? ` (request \`amount\` fields: ${ref.typeOf(amount)}, ${amount.description})` : ""}. ` +
      "`netAmount` is `amount` minus `fee`; the fee schedule of the account is in [Settings](#schema-settings).\n",
  );
  return out.join("\n");
}

function tagsInOrder(ref) {
  const declared = ref.doc.tags ?? [];
  const names = new Set(declared.map((t) => t.name));
  const used = new Set(ref.operations.flatMap(({ op }) => op.tags ?? ["Other"]));
  const extra = [...used]
    .filter((t) => !names.has(t))
    .sort()
    .map((name) => ({ name }));
  return [...declared, ...extra].filter((t) => used.has(t.name));
}

function operationSection(ref, { method, path: p, op, parameters }, heading = "###") {
  const out = [];
  out.push(`<a id="${operationAnchor(op.operationId)}"></a>\n`);
  out.push(`${heading} ${op.summary ?? op.operationId}\n`);
  out.push(
    `\`${method.toUpperCase()} ${p}\` · operationId \`${op.operationId}\`${op.deprecated ? " · **deprecated**" : ""}\n`,
  );
  if (op.description && op.description !== op.summary) out.push(`${op.description}\n`);
  const facts = [`- Auth: ${ref.securityText(op.security)}`];
  if (op["x-stablegate-permission"])
    facts.push(`- Permission: \`${op["x-stablegate-permission"]}\` ([roles](permissions.md))`);
  out.push(`${facts.join("\n")}\n`);

  if (parameters.length) {
    out.push("**Parameters**\n");
    out.push(
      table(
        ["Name", "In", "Type", "Required", "Constraints", "Description"],
        parameters.map((x) => [
          code(x.name),
          x.in,
          ref.typeOf(x.schema),
          x.required ? "yes" : "no",
          ref.constraintsOf(x.schema),
          x.description ?? "",
        ]),
      ),
    );
  }

  const body = ref.deref(op.requestBody);
  if (body?.content) {
    for (const media of Object.keys(body.content).sort()) {
      const schema = body.content[media].schema;
      out.push(`**Request body** (\`${media}\`${body.required ? "" : ", optional"})\n`);
      if (schema?.$ref) out.push(`A ${ref.typeOf(schema)} object.\n`);
      if (body.description) out.push(`${body.description}\n`);
      const rows = ref.fieldRows(ref.deref(schema));
      if (rows.length) out.push(table(["Field", "Type", "Required", "Constraints", "Description"], rows));
      else if (!schema?.$ref) out.push(`${ref.typeOf(schema)}\n`);
    }
  }

  const responses = op.responses ?? {};
  const statuses = Object.keys(responses).sort();
  const ok = statuses.filter((s) => !/^[45]/.test(s));
  if (ok.length) {
    out.push("**Responses**\n");
    for (const status of ok) {
      const response = ref.deref(responses[status]);
      const lines = [`- **${status}**: ${cell(response.description ?? "")}`];
      for (const media of Object.keys(response.content ?? {}).sort()) {
        const schema = response.content[media].schema;
        const resolved = ref.deref(schema);
        if (media === "application/json" && resolved?.properties?.data) {
          const data = resolved.properties.data;
          lines.push(
            `  \`data\`: ${ref.typeOf(data)}${resolved.properties.pagination ? ", with `pagination` ([paging](#pagination))" : ""}.`,
          );
        } else if (schema) {
          lines.push(`  \`${media}\`: ${ref.typeOf(schema)}.`);
        } else {
          lines.push(`  \`${media}\`.`);
        }
      }
      const special = Object.keys(response.headers ?? {}).filter((h) => !COMMON_HEADERS.has(h));
      if (special.length)
        lines.push(`  Headers: ${special.map((h) => `[${code(h)}](#headers)`).join(", ")}.`);
      out.push(`${lines.join("\n")}\n`);
      for (const media of Object.keys(response.content ?? {}).sort()) {
        const resolved = ref.deref(response.content[media].schema);
        const data = resolved?.properties?.data;
        if (data && !data.$ref && (data.properties || data.items?.properties)) {
          out.push(ref.fieldsTable(data.properties ? data : data.items));
        }
      }
    }
  }

  const errors = statuses.filter((s) => /^[45]/.test(s));
  if (errors.length) {
    out.push("**Errors**\n");
    out.push(
      table(
        ["Status", "Code", "When"],
        errors.map((s) => {
          const response = ref.deref(responses[s]);
          const codes = Object.values(response.content ?? {}).flatMap((m) => ref.errorCodesOf(m.schema));
          const unique = [...new Set(codes)];
          return [
            s,
            unique.map((c) => `[${code(c)}](#${errorAnchor(c)})`).join(", "),
            (response.description ?? "").replace(/`[A-Z_]+`: /g, ""),
          ];
        }),
      ),
    );
  }
  return out.join("\n");
}

function tagSections(ref) {
  const out = [];
  for (const tag of tagsInOrder(ref)) {
    out.push(`<a id="${slug(tag.name)}"></a>\n`);
    out.push(`## ${tag.name}\n`);
    if (tag.description) out.push(`${tag.description}\n`);
    const ops = ref.operations.filter(({ op }) => (op.tags ?? ["Other"])[0] === tag.name);
    out.push(
      table(
        ["Operation", "Method and path"],
        ops.map(({ method, path: p, op }) => [
          `[${op.summary ?? op.operationId}](#${operationAnchor(op.operationId)})`,
          code(`${method.toUpperCase()} ${p}`),
        ]),
      ),
    );
    for (const entry of ops) out.push(operationSection(ref, entry));
  }
  return out.join("\n");
}

function webhookSection(ref) {
  const out = ['<a id="webhook-deliveries"></a>\n', "## Webhook deliveries\n"];
  out.push(
    "What the gateway POSTs to your webhook URL (the document's `webhooks`). Verifying signatures, " +
      "retries and deduplication: [Webhooks guide](merchants/webhooks.md).\n",
  );
  for (const { name, method, op } of ref.webhookOperations()) {
    out.push(`<a id="${operationAnchor(op.operationId ?? `${name}-webhook`)}"></a>\n`);
    out.push(`### ${op.summary ?? name}\n`);
    out.push(
      `Event \`${name}\` · \`${method.toUpperCase()}\` to your URL · operationId \`${op.operationId}\`\n`,
    );
    if (op.description) out.push(`${op.description}\n`);
    const parameters = (op.parameters ?? []).map((x) => ref.deref(x));
    if (parameters.length) {
      out.push("**Headers**\n");
      out.push(
        table(
          ["Name", "Type", "Required", "Constraints", "Description"],
          parameters.map((x) => [
            code(x.name),
            ref.typeOf(x.schema),
            x.required ? "yes" : "no",
            ref.constraintsOf(x.schema),
            x.description ?? "",
          ]),
        ),
      );
    }
    const body = ref.deref(op.requestBody);
    for (const media of Object.keys(body?.content ?? {}).sort()) {
      const schema = body.content[media].schema;
      out.push(`**Body** (\`${media}\`): ${ref.typeOf(schema)}\n`);
    }
    const answers = Object.keys(op.responses ?? {}).sort();
    if (answers.length)
      out.push(
        `**Your answer**: ${answers.map((s) => `${s} (${cell(ref.deref(op.responses[s]).description ?? "")})`).join("; ")}\n`,
      );
  }
  return out.join("\n");
}

function schemaSection(ref) {
  const out = ['<a id="schemas"></a>\n', "## Schemas\n"];
  out.push(
    "The named objects of the document. Response wrappers (`…Response`: `{ success, data }`) and " +
      "error bodies (see [Errors](#errors)) are listed by name only.\n",
  );
  const names = Object.keys(ref.schemas).sort();
  const wrappers = [];
  for (const name of names) {
    const schema = ref.schemas[name];
    const isWrapper = /Response$/.test(name) && schema.properties?.data;
    const isError = ref.errorCodesOf(schema).length > 0;
    if (isWrapper || isError) {
      wrappers.push(name);
    }
  }
  for (const name of names) {
    const schema = ref.schemas[name];
    out.push(`<a id="${schemaAnchor(name)}"></a>\n`);
    out.push(`### ${name}\n`);
    if (schema.description) out.push(`${schema.description}\n`);
    if (wrappers.includes(name)) {
      if (schema.properties?.data)
        out.push(
          `\`{ success: true, data: ${ref.typeOf(schema.properties.data)}${schema.properties.pagination ? ", pagination" : ""} }\`\n`,
        );
      else
        out.push(
          `Error body: ${ref
            .errorCodesOf(schema)
            .map((c) => `[${code(c)}](#${errorAnchor(c)})`)
            .join(", ")}.\n`,
        );
      continue;
    }
    const rows = ref.fieldRows(schema);
    if (rows.length) out.push(table(["Field", "Type", "Required", "Constraints", "Description"], rows));
    else {
      const constraints = ref.constraintsOf(schema);
      out.push(`${ref.typeOf(schema)}${constraints ? ` (${constraints})` : ""}\n`);
    }
  }
  return out.join("\n");
}

export function render(doc) {
  const ref = new Reference(doc);
  const text = [
    intro(ref),
    errorsSection(ref),
    paginationSection(ref),
    rateLimitSection(ref),
    idempotencySection(ref),
    headersSection(ref),
    currencySection(ref),
    tagSections(ref),
    webhookSection(ref),
    schemaSection(ref),
  ].join("\n");
  return `${text
    .replace(/\n{3,}/g, "\n\n")
    .replace(/[ \t]+$/gm, "")
    .trimEnd()}\n`;
}

async function main() {
  const args = new Set(process.argv.slice(2));
  const doc = JSON.parse(await readFile(DOCUMENT, "utf8"));
  const text = render(doc);
  if (args.has("--stdout")) {
    process.stdout.write(text);
    return;
  }
  const relative = path.relative(root, OUTPUT);
  if (args.has("--check")) {
    const current = await readFile(OUTPUT, "utf8").catch(() => null);
    if (current !== text) {
      console.error(
        `${relative} is out of date with packages/sdk/openapi.json: run \`node scripts/generate-api-reference.mjs\``,
      );
      process.exit(1);
    }
    console.log(`${relative} is up to date`);
    return;
  }
  await writeFile(OUTPUT, text);
  console.log(`wrote ${relative} (${text.length} characters)`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
