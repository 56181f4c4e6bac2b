import { ConnectionError, type StablegateError, TimeoutError, ValidationError } from "../errors.js";

/** A failed local or network call in one short phrase: the system's code (ECONNREFUSED) when it has one. */
export function describe(err: unknown): string {
  const e = err as { message?: string; cause?: { code?: string; message?: string } };
  if (e.cause?.code) return `${e.cause.code}${e.cause.message ? ` (${e.cause.message})` : ""}`;
  return e.message ?? String(err);
}

/**
 * One line for an SDK error of the call `what` (e.g. `POST /checkout/session`): the status, the
 * contract's error code and message, and which fields were refused —
 * `POST /checkout/session: 400 VALIDATION_ERROR: Invalid request (amount must be > 0)`.
 */
export function describeApiError(what: string, err: StablegateError): string {
  if (err instanceof TimeoutError) return `${what}: ${err.message}`;
  // fetch's own error says only "fetch failed"; its cause carries the system's code.
  if (err instanceof ConnectionError) return `${what}: ${describe(err.cause ?? err)}`;
  const fields =
    err instanceof ValidationError ? err.fields.map((f) => `${f.field} ${f.message}`).join("; ") : "";
  return `${what}: ${err.status ?? "no answer"} ${err.code}: ${err.message}${fields ? ` (${fields})` : ""}`;
}
