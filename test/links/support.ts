import { expect } from "vitest";
import { call, type TestService } from "../support/harness.js";
import { callOperation, dataOf, type RequestBody } from "../support/operation.js";

/** A payment link through the route's own request and response types. */
export async function createLink(
  svc: TestService,
  headers: Record<string, string>,
  body: RequestBody<"createPaymentLink">,
  base = svc.urls.sandbox,
) {
  return dataOf(await callOperation(base, "createPaymentLink", { headers, json: body }), 201);
}

/** The payer's form post on `/l/{id}` (redirects not followed: the 303 is the answer). */
export async function payerPost(
  base: string,
  linkId: string,
  fields: Record<string, string>,
  headers: Record<string, string> = {},
) {
  const res = await fetch(`${base}/l/${encodeURIComponent(linkId)}`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(fields).toString(),
  });
  return {
    status: res.status,
    location: res.headers.get("location"),
    text: await res.text(),
    headers: res.headers,
  };
}

/** The session id of a 303 to `/pay/{id}`. */
export function sessionIdOf(r: { status: number; location: string | null; text: string }): string {
  expect(r.status, r.text).toBe(303);
  const m = /^\/pay\/(tx_[0-9A-Za-z]+)$/.exec(r.location ?? "");
  expect(m, r.location ?? "").not.toBeNull();
  return (m as RegExpExecArray)[1] as string;
}

export async function sessionOf(svc: TestService, headers: Record<string, string>, id: string) {
  return dataOf(
    await callOperation(svc.urls.sandbox, "getCheckoutSession", { headers, params: { id } }),
    200,
  );
}

export async function sandboxPay(svc: TestService, headers: Record<string, string>, sessionId: string) {
  const r = await call(svc.urls.sandbox, `/api/v1/sandbox/checkout/${sessionId}/pay`, { headers, json: {} });
  expect(r.status, r.text).toBe(202);
}
