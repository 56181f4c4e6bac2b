import type { FastifyInstance } from "fastify";
import { parse } from "lossless-json";

/**
 * JSON bodies are parsed losslessly: a number whose shortest double spelling denotes exactly the
 * same decimal as its source text becomes a JS number; any other (`999999999.9999999`, 16+
 * significant digits, huge integers) is kept as its exact source text, so money parsing sees what
 * the client sent instead of a rounded double. Written on `lossless-json` because `JSON.parse` on
 * Node 20 cannot expose a number's source text (and `isSafeNumber` of that library accepts some
 * rounding, so exactness is checked here).
 *
 * An empty body, with or without `Content-Type: application/json`, is `{}` (see below).
 */
export function registerLosslessJson(app: FastifyInstance) {
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (_request, body, done) => {
    const text = body as string;
    // An empty body is `{}` (clients often set `Content-Type: application/json` on every request,
    // a bodiless POST included): a route whose fields are all optional accepts it, a route with a
    // required field answers 400 VALIDATION_ERROR naming each missing field (its schema does).
    if (text.trim() === "") {
      done(null, {});
      return;
    }
    let value: unknown;
    try {
      value = parse(text, null, exactNumber);
    } catch {
      done(clientError("FST_ERR_CTP_INVALID_JSON_BODY", "invalid JSON"), undefined);
      return;
    }
    // Prototype-pollution guard, as Fastify's default parser (secure-json-parse) does.
    if (hasForbiddenKey(value)) {
      done(clientError("FST_ERR_CTP_INVALID_JSON_BODY", "forbidden key in JSON"), undefined);
      return;
    }
    done(null, value);
  });
  // The same for a bodiless request without any Content-Type (`curl -X POST …/approve`): Fastify
  // leaves its body `undefined`, which a body schema would refuse as "must be object" without
  // naming the missing fields. Registered before the routes, so it applies to every one of them.
  app.addHook("preValidation", async (request) => {
    if (request.body === undefined && request.routeOptions.schema?.body !== undefined) request.body = {};
  });
}

function clientError(code: string, message: string) {
  return Object.assign(new Error(message), { statusCode: 400, code });
}

/** The JS number for a JSON numeric literal when it is exact, else the literal itself. */
export function exactNumber(literal: string): number | string {
  const n = Number(literal);
  return Number.isFinite(n) && canonicalDecimal(String(n)) === canonicalDecimal(literal) ? n : literal;
}

/** Canonical spelling of a decimal literal: sign, digits without leading/trailing zeros, exponent. */
function canonicalDecimal(literal: string): string {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(literal);
  if (!m) return literal;
  const [, sign = "", int = "", frac = "", exp = "0"] = m;
  const digits = (int + frac).replace(/^0+/, "");
  if (digits === "") return "0";
  const stripped = digits.replace(/0+$/, "");
  // Value = 0.<digits> × 10^(pointPosition)
  const leadingZeros = (int + frac).length - (int + frac).replace(/^0+/, "").length;
  const point = int.length - leadingZeros + Number(exp);
  return `${sign}0.${stripped}e${point}`;
}

function hasForbiddenKey(value: unknown): boolean {
  if (value === null || typeof value !== "object") return false;
  if (Array.isArray(value)) return value.some(hasForbiddenKey);
  for (const key of Object.keys(value)) {
    if (key === "__proto__") return true;
    const child = (value as Record<string, unknown>)[key];
    if (key === "constructor" && child !== null && typeof child === "object" && "prototype" in child)
      return true;
    if (hasForbiddenKey(child)) return true;
  }
  return false;
}
