import type { SwaggerOptions } from "@fastify/swagger";
import type { FastifyContextConfig, FastifySchema } from "fastify";
import type { Config } from "../../config/config.js";
import type { ErrorCode } from "../../domain/errors.js";
import { ERROR_MEANINGS, errorBodySchema } from "./error-schemas.js";
import { headersOf, RESPONSE_HEADERS } from "./headers.js";
import { SchemaHoister } from "./hoist.js";
import { operationIdOf, securityOf, TAGS } from "./operations.js";
import { isIdempotent, routeErrorsByStatus } from "./route-errors.js";
import { webhooksSection } from "./webhooks.js";

/**
 * The OpenAPI 3.1 document, built by @fastify/swagger from the route schemas and finished here in
 * one place, from each route's own config (what the plugins enforce), so no route repeats it:
 *  - `transform` (per route): `operationId`, `security` (from `config.auth` / `requireSecret`), and
 *    the facts the rest needs: the error codes by status, rate limited or not, idempotent or not;
 *  - `transformObject` (the whole document): the error responses with their exact shapes, the
 *    response headers, success descriptions, optional bodies, named component schemas (hoisted by
 *    `title`), the tags and the `webhooks` section.
 */

const META = "x-stablegate-route";
/** What a dashboard session's role must allow (issue #21): the route's `config.permission`. */
export const PERMISSION_EXTENSION = "x-stablegate-permission";

/**
 * The operation's `x-stablegate-permission`, for every route a dashboard session or an API key
 * pair can reach: the permission the member's role needs (a key pair's: the member it acts for), `account` (any signed-in login, for its own account) or
 * `platform_admin` (the operator's read-only views). Published so that clients and the role × route
 * matrix test read what the server enforces.
 */
function permissionOf(config: FastifyContextConfig): Record<string, string> {
  // The API-key channel acts for a member too (issue #34): its routes name their permission.
  if (config.auth === "apiKey") return config.permission ? { [PERMISSION_EXTENSION]: config.permission } : {};
  if (config.auth !== "dashboard" && config.auth !== "merchant") return {};
  const audience = config.audience ?? "merchant";
  if (audience === "account") return { [PERMISSION_EXTENSION]: "account" };
  if (audience === "admin") return { [PERMISSION_EXTENSION]: "platform_admin" };
  return config.permission ? { [PERMISSION_EXTENSION]: config.permission } : {};
}

interface RouteFacts {
  errors: [number, ErrorCode[]][];
  rateLimited: boolean;
  idempotent: boolean;
}

// biome-ignore lint/suspicious/noExplicitAny: the generated document is walked as plain JSON
type Json = Record<string, any>;

export function swaggerOptions(config: Config): SwaggerOptions {
  return {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "stablegate API",
        version: "1.0.0",
        description:
          "Stablecoin payment gateway: checkout sessions, deposit addresses, withdrawals, payouts, signed webhooks.\n\n" +
          "Every response is JSON in an envelope: `{ success: true, data }` (lists add `pagination`) or " +
          "`{ success: false, error: { code, message, details, requestId } }` — branch on `error.code`; " +
          "quote `requestId` (also the `X-Request-Id` header) to the operator. Amounts are " +
          "JSON numbers in USDT. The sandbox base URL takes sandbox keys, the production one production keys.",
        license: { name: "MIT", identifier: "MIT" },
        contact: { name: "The operator of this gateway" },
      },
      servers: [
        { url: config.http.productionBaseUrl, description: "production (production API keys)" },
        { url: config.http.sandboxBaseUrl, description: "sandbox (sandbox API keys, simulated chains)" },
      ],
      tags: TAGS,
      components: {
        securitySchemes: {
          apiKey: {
            type: "apiKey",
            in: "header",
            name: "apikey",
            description: "Your API key of the environment (sandbox or production), from the dashboard",
          },
          apiSecret: {
            type: "apiKey",
            in: "header",
            name: "x-api-secret",
            description:
              "The API secret of the key pair: required where money leaves or secrets are read; optional (checked when sent) elsewhere",
          },
          dashboardBearer: {
            type: "http",
            scheme: "bearer",
            bearerFormat: "JWT",
            description: "Dashboard session access token (sign in with `x-token-delivery: bearer`)",
          },
          dashboardCookie: {
            type: "apiKey",
            in: "cookie",
            name: "sg_access",
            description: "Dashboard session cookie, set by sign-in",
          },
        },
      },
    },
    transform: ({ schema, url, route }) => {
      if (!schema || schema.hide) return { schema, url };
      const method = String(Array.isArray(route.method) ? route.method[0] : route.method).toLowerCase();
      const path = url.replace(/:([A-Za-z0-9_]+)/g, "{$1}");
      const config = route.config ?? {};
      const facts: RouteFacts = {
        errors: routeErrorsByStatus(config, schema),
        rateLimited: config.tier !== false,
        idempotent: isIdempotent(schema),
      };
      const described: FastifySchema & Record<string, unknown> = {
        ...schema,
        operationId: schema.operationId ?? operationIdOf(method, path),
        security: schema.security ?? securityOf(config),
        ...permissionOf(config),
        [META]: facts,
      };
      return { schema: described, url };
    },
    transformObject: (documentObject) => {
      if (!("openapiObject" in documentObject)) throw new Error("expected an OpenAPI 3 document");
      return finishDocument(documentObject.openapiObject as Json);
    },
  };
}

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

/** A response the route declared with the loose error envelope (replaced by the exact shapes). */
function isEnvelopeError(response: Json): boolean {
  const success = response.content?.["application/json"]?.schema?.properties?.success;
  return success?.const === false || (success?.enum?.length === 1 && success.enum[0] === false);
}

function errorDescription(codes: readonly ErrorCode[]): string {
  return codes.map((c) => `\`${c}\`: ${ERROR_MEANINGS[c]}`).join("\n\n");
}

const words = (title: string) =>
  title
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .toLowerCase()
    .replace(/\bapi\b/g, "API");
const plural = (noun: string) => (noun.endsWith("s") ? noun : `${noun}s`);

/** What a success response holds, in a sentence (unless the route wrote its own). */
function successDescription(status: number, schema: Json | undefined, summary: string | undefined): string {
  const data = schema?.properties?.data as Json | undefined;
  const itemTitle = data?.type === "array" ? data.items?.title : undefined;
  if (schema?.properties?.pagination && typeof itemTitle === "string") {
    return `One page of ${plural(words(itemTitle))} in \`data\`, and \`pagination\`.`;
  }
  if (typeof itemTitle === "string") return `The ${plural(words(itemTitle))}, in \`data\`.`;
  if (typeof data?.title === "string") {
    const noun = words(data.title);
    if (status === 201) return `Created: the new ${noun}, in \`data\`.`;
    if (status === 202) return `Accepted: the ${noun}, in \`data\`.`;
    return `The ${noun}, in \`data\`.`;
  }
  return summary ? `Done: ${summary[0]?.toLowerCase()}${summary.slice(1)}.` : "Done.";
}

/** Section references of the internal specification mean nothing to a merchant. */
function scrub(text: string): string {
  return text
    .replace(/\s*\((?:CONTRACT|SPEC) §[^)]*\)/g, "")
    .replace(/(?:CONTRACT|SPEC) §[\d.]+/g, "the API contract");
}

function finishOperation(op: Json, hoister: SchemaHoister) {
  const facts = op[META] as RouteFacts | undefined;
  delete op[META];
  if (typeof op.summary === "string") op.summary = scrub(op.summary);
  if (typeof op.description === "string") op.description = scrub(op.description);
  else if (typeof op.summary === "string") op.description = op.summary;
  const responses = (op.responses ?? {}) as Record<string, Json>;
  if (facts) {
    for (const [status, response] of Object.entries(responses)) {
      if (Number(status) >= 400 && isEnvelopeError(response)) delete responses[status];
    }
    for (const [status, codes] of facts.errors) {
      if (responses[status]) continue; // the route's own answer (a page in HTML, readiness)
      responses[status] = {
        description: errorDescription(codes),
        content: { "application/json": { schema: clone(errorBodySchema(codes)) } },
        [META]: true,
      };
    }
  }
  const ordered: Record<string, Json> = {};
  for (const status of Object.keys(responses).sort()) {
    const response = responses[status] as Json;
    const ours = response[META] === true;
    delete response[META];
    const code = Number(status);
    if (code >= 200 && code < 300 && response.description === "Default Response") {
      response.description = successDescription(
        code,
        response.content?.["application/json"]?.schema,
        op.summary,
      );
    }
    response.description = scrub(String(response.description));
    if (facts) {
      const headers = headersOf(code, facts);
      // Retry-After comes with our 429 and 503 errors, not with a route's own 503 (readiness).
      if (code === 503 && !ours) delete headers["Retry-After"];
      response.headers = { ...headers, ...response.headers };
    }
    for (const media of Object.values((response.content ?? {}) as Record<string, Json>)) {
      if (media.schema) media.schema = hoister.hoist(media.schema);
    }
    ordered[status] = response;
  }
  op.responses = ordered;
  for (const parameter of (op.parameters ?? []) as Json[]) {
    if (typeof parameter.description === "string") parameter.description = scrub(parameter.description);
    // The root stays inline: swagger moves its description to the parameter, so it is not the component.
    if (parameter.schema) parameter.schema = hoister.hoist(parameter.schema, true);
  }
  const body = op.requestBody as Json | undefined;
  if (body) {
    for (const media of Object.values((body.content ?? {}) as Record<string, Json>)) {
      const schema = media.schema as Json | undefined;
      // Every field optional: the body may be left out (an absent body is `{}`).
      if (schema?.type === "object" && !(schema.required as unknown[] | undefined)?.length)
        body.required = false;
      // The body's own properties stay inline (tools and tests read them); its parts are named.
      if (schema) media.schema = hoister.hoist(schema, true);
    }
  }
}

/** Scrubs internal section references from every `description` in a schema tree. */
function scrubTree(node: unknown): void {
  if (Array.isArray(node)) node.forEach(scrubTree);
  else if (node && typeof node === "object") {
    for (const [key, value] of Object.entries(node as Json)) {
      if (key === "description" && typeof value === "string") (node as Json)[key] = scrub(value);
      else scrubTree(value);
    }
  }
}

export function finishDocument(doc: Json): Json {
  const hoister = new SchemaHoister();
  const operationIds = new Map<string, string>();
  const tags = new Set<string>();
  for (const [path, item] of Object.entries((doc.paths ?? {}) as Record<string, Json>)) {
    for (const method of METHODS) {
      const op = item[method] as Json | undefined;
      if (!op) continue;
      finishOperation(op, hoister);
      const where = `${method.toUpperCase()} ${path}`;
      const seen = operationIds.get(op.operationId);
      if (seen) throw new Error(`OpenAPI: ${where} and ${seen} share the operationId ${op.operationId}`);
      operationIds.set(op.operationId, where);
      for (const tag of (op.tags ?? []) as string[]) tags.add(tag);
    }
  }
  doc.webhooks = webhooksSection(hoister);
  const known = new Set(TAGS.map((t) => t.name));
  doc.tags = [...TAGS, ...[...tags].filter((t) => !known.has(t)).map((name) => ({ name }))];
  const schemas = { ...(doc.components?.schemas ?? {}), ...hoister.schemas } as Json;
  scrubTree(schemas);
  doc.components = {
    ...doc.components,
    schemas: Object.fromEntries(
      Object.keys(schemas)
        .sort()
        .map((k) => [k, schemas[k]]),
    ),
    headers: clone(RESPONSE_HEADERS),
  };
  scrubTree(doc.paths);
  // A stable key order for the committed copy: openapi, info, servers, tags, paths, webhooks, components.
  const { openapi, info, servers, tags: _tags, paths, webhooks, components, ...rest } = doc;
  return { openapi, info, servers, tags: doc.tags, paths, webhooks, components, ...rest };
}
