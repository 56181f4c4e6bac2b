import Ajv, { type ErrorObject, type ValidateFunction } from "ajv";
import addFormats from "ajv-formats";
import type { FastifySchemaCompiler } from "fastify";

/**
 * Request validation. Bodies are validated strictly (a string is never coerced into a number,
 * money parsing decides that); query strings, path parameters and headers arrive as text and
 * are coerced to the declared types.
 *
 * Before the schema, every part is checked for text PostgreSQL cannot store: a NUL character
 * (refused by `text` and `jsonb` alike) or an unpaired UTF-16 surrogate (refused by `jsonb`,
 * silently replaced in `text`). Such input is a 400 on the field that holds it, never a database
 * error later.
 */
export function validatorCompiler(): FastifySchemaCompiler<unknown> {
  const common = { allErrors: true, useDefaults: true, removeAdditional: false, strict: false } as const;
  const body = new Ajv.default({ ...common, coerceTypes: false });
  const text = new Ajv.default({ ...common, coerceTypes: "array" });
  addFormats.default(body);
  addFormats.default(text);
  return ({ schema, httpPart }) =>
    withStorableText((httpPart === "body" ? body : text).compile(schema as object));
}

type Validate = ValidateFunction & ((data: unknown, ctx?: unknown) => boolean);

/** Wraps a compiled validator (keeping what Fastify reads from it: `errors`, `schemaEnv`). */
function withStorableText(validate: ValidateFunction): Validate {
  const wrapped = ((data: unknown, ctx?: unknown) => {
    const path = unstorableText(data, "");
    if (path !== undefined) {
      wrapped.errors = [
        {
          instancePath: path,
          schemaPath: "#/storableText",
          keyword: "storableText",
          params: {},
          message: "must not contain NUL characters or unpaired surrogates",
        } satisfies ErrorObject,
      ];
      return false;
    }
    const ok = (validate as Validate)(data, ctx);
    wrapped.errors = validate.errors;
    return ok;
  }) as Validate;
  Object.assign(wrapped, { schema: validate.schema, schemaEnv: validate.schemaEnv });
  return wrapped;
}

/**
 * The JSON pointer of the first string (value or key) PostgreSQL cannot store, if any. Iterative:
 * a body nested thousands deep must not overflow the stack here.
 */
function unstorableText(value: unknown, path = ""): string | undefined {
  const stack: [unknown, string][] = [[value, path]];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const [v, at] = item;
    if (typeof v === "string") {
      if (!storable(v)) return at;
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], `${at}/${i}`]);
    } else if (typeof v === "object" && v !== null) {
      for (const [key, child] of Object.entries(v).reverse()) {
        const childAt = `${at}/${key.replace(/~/g, "~0").replace(/\//g, "~1")}`;
        if (!storable(key)) return childAt;
        stack.push([child, childAt]);
      }
    }
  }
  return undefined;
}

function storable(s: string): boolean {
  return !s.includes("\0") && s.isWellFormed();
}
