import { isDeepStrictEqual } from "node:util";
import { DOCUMENTED_AS } from "../schemas/common.js";

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** Keywords whose value is one subschema, a list of them, or a map of them (JSON Schema 2020-12). */
const ONE = ["items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames"];
const MANY = ["allOf", "anyOf", "oneOf", "prefixItems"];
const MAP = ["properties", "patternProperties", "$defs", "dependentSchemas"];

/**
 * Moves every schema that carries a `title` into `components.schemas[title]` and puts a `$ref` in
 * its place, children first. The route schemas stay as Fastify compiles them (a `title` is only
 * an annotation to Ajv and the serialiser, unlike a shared `$id`); only the document is rewritten,
 * so generated clients get named types (`CheckoutSession`, `ValidationError`) instead of anonymous
 * copies. Two different schemas with one title are a programming error: thrown at build.
 */
export class SchemaHoister {
  readonly schemas: Record<string, Json> = {};

  /** The schema with its titled parts (and itself, unless `keepRoot`) replaced by references. */
  hoist(schema: unknown, keepRoot = false): unknown {
    if (!isObject(schema)) return schema;
    const documented = schema[DOCUMENTED_AS];
    if (isObject(documented)) {
      // The document shows the stricter shape (schemas/common.ts `documentedAs`).
      const shown: Json = JSON.parse(JSON.stringify(documented));
      if (typeof schema.description === "string" && shown.title === undefined)
        shown.description = schema.description;
      return this.hoist(shown, keepRoot);
    }
    const out: Json = { ...schema };
    // As @fastify/swagger writes the route schemas: `const: x` as `enum: [x]` (one spelling, so a
    // schema inserted here compares equal to the same schema converted there).
    if ("const" in out) {
      out.enum = [out.const];
      delete out.const;
    }
    // … and a TypeBox record's catch-all `patternProperties` as `additionalProperties`.
    const pattern = out.patternProperties;
    if (isObject(pattern) && Object.keys(pattern).length === 1 && "^(.*)$" in pattern) {
      out.additionalProperties ??= pattern["^(.*)$"];
      delete out.patternProperties;
    }
    for (const key of ONE) if (isObject(out[key])) out[key] = this.hoist(out[key]);
    for (const key of MANY) {
      const value = out[key];
      if (Array.isArray(value)) out[key] = value.map((s) => this.hoist(s));
    }
    for (const key of MAP) {
      const value = out[key];
      if (isObject(value)) {
        out[key] = Object.fromEntries(Object.entries(value).map(([k, s]) => [k, this.hoist(s)]));
      }
    }
    const title = out.title;
    if (keepRoot || typeof title !== "string") return out;
    const existing = this.schemas[title];
    if (existing === undefined) this.schemas[title] = out;
    else if (!isDeepStrictEqual(existing, out)) {
      throw new Error(
        `OpenAPI: two different schemas are titled ${JSON.stringify(title)}: ${JSON.stringify(existing)} and ${JSON.stringify(out)}`,
      );
    }
    return { $ref: `#/components/schemas/${encodeURIComponent(title)}` };
  }
}
