import { readFileSync } from "node:fs";
import path from "node:path";
import { expect } from "vitest";
import type { operations } from "../../packages/sdk/src/generated/api.js";
import { type Call, call } from "./harness.js";

// Routes and their tests share the request and response types (issue #36): the route's schemas
// generate the OpenAPI document and its types (`npm run api:generate`); `callOperation` takes an
// operation's id, its path parameters and a body of the type its route accepts, and `dataOf` gives
// the `data` of its success answer typed as the route presents it. A test that sends what the
// route would not accept, or reads a field the route does not answer, fails the typecheck.
// (Hostile-input tests keep `call`: they send what no type allows, on purpose.)

export type OperationId = keyof operations;
type Op<O extends OperationId> = operations[O];

type JsonOf<T> = T extends { content: { "application/json": infer B } } ? B : never;
/** The JSON body the operation's route accepts. */
export type RequestBody<O extends OperationId> =
  Op<O> extends { requestBody: infer R }
    ? JsonOf<R>
    : Op<O> extends { requestBody?: infer R }
      ? JsonOf<NonNullable<R>>
      : never;
type PathParams<O extends OperationId> =
  Op<O> extends { parameters: { path: infer P } } ? (P extends Record<string, unknown> ? P : never) : never;
type QueryParams<O extends OperationId> =
  Op<O> extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;
type SuccessStatus = 200 | 201;
/** The success answer's envelope of the operation, as its route presents it. */
export type SuccessBody<O extends OperationId> = {
  [S in SuccessStatus]: Op<O> extends { responses: { [K in S]: infer R } } ? JsonOf<R> : never;
}[SuccessStatus];

interface OperationCall<O extends OperationId> extends Call {
  operationId: O;
}

const DOCUMENT = JSON.parse(
  readFileSync(path.join(import.meta.dirname, "../../packages/sdk/openapi.json"), "utf8"),
) as { paths: Record<string, Record<string, { operationId?: string }>> };

/** The method and path template of an operation, read from the published document. */
function routeOf(operationId: string): { method: string; template: string } {
  for (const [template, methods] of Object.entries(DOCUMENT.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      if (op.operationId === operationId) return { method: method.toUpperCase(), template };
    }
  }
  throw new Error(`no operation ${operationId} in packages/sdk/openapi.json`);
}

/** Calls an operation by its id with a body of the type its route accepts. */
export async function callOperation<O extends OperationId>(
  base: string,
  operationId: O,
  init: {
    params?: PathParams<O>;
    query?: QueryParams<O>;
    json?: RequestBody<O>;
    headers?: Record<string, string>;
  } = {},
): Promise<OperationCall<O>> {
  const { method, template } = routeOf(operationId);
  const params = (init.params ?? {}) as Record<string, string>;
  let pathname = template.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`${operationId}: path parameter ${name} missing`);
    return encodeURIComponent(value);
  });
  const query = new URLSearchParams(
    Object.entries((init.query ?? {}) as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]): [string, string] => [k, String(v)]),
  ).toString();
  if (query) pathname += `?${query}`;
  const r = await call(base, pathname, {
    method,
    ...(init.headers ? { headers: init.headers } : {}),
    ...(init.json !== undefined ? { json: init.json } : {}),
  });
  return { ...r, operationId };
}

/** Asserts the answer's status and returns its `data`, typed as the operation's route presents it. */
export function dataOf<O extends OperationId>(
  r: OperationCall<O>,
  status: SuccessStatus,
): SuccessBody<O> extends { data: infer D } ? D : never {
  expect(r.status, r.text).toBe(status);
  return (r.body as { data: never }).data;
}
