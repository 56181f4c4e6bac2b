import Ajv from "ajv";
import addFormats from "ajv-formats";
import type { FastifySchemaCompiler } from "fastify";

/**
 * Request validation. Bodies are validated strictly (a string is never coerced into a number,
 * money parsing decides that); query strings, path parameters and headers arrive as text and
 * are coerced to the declared types.
 */
export function validatorCompiler(): FastifySchemaCompiler<unknown> {
  const common = { allErrors: true, useDefaults: true, removeAdditional: false, strict: false } as const;
  const body = new Ajv.default({ ...common, coerceTypes: false });
  const text = new Ajv.default({ ...common, coerceTypes: "array" });
  addFormats.default(body);
  addFormats.default(text);
  return ({ schema, httpPart }) => (httpPart === "body" ? body : text).compile(schema as object);
}
