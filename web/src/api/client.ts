/**
 * The one way the dashboard talks to stablegate: same-origin fetch with the session cookies, the
 * chosen environment in `X-Environment`, the envelope of docs/merchants/errors.md#the-envelope unwrapped, and an expired
 * access token refreshed once (rotating refresh token) before the request is retried.
 */

import type { components } from "../../../packages/sdk/src/generated/api";

export type Environment = components["schemas"]["Account"]["environment"];

export interface Pagination {
  page: number;
  limit: number;
  total: number;
  totalPages: number;
}

export interface FieldError {
  field: string;
  message: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
    readonly requestId: string | null = null,
    readonly retryAfter: number | null = null,
  ) {
    super(message);
    this.name = "ApiError";
  }

  get fields(): FieldError[] {
    const f = this.details.fields;
    return Array.isArray(f) ? (f as FieldError[]) : [];
  }
}

let environment: Environment | null = null;
let onSessionEnded: (() => void) | null = null;

/** The environment every request is made for (the always-visible switch sets it). */
export function setApiEnvironment(env: Environment | null) {
  environment = env;
}

export function setSessionEndedHandler(handler: (() => void) | null) {
  onSessionEnded = handler;
}

type Query = Record<string, string | number | boolean | undefined | null>;

export interface RequestOptions {
  method?: "GET" | "POST" | "PATCH" | "DELETE";
  body?: unknown;
  query?: Query;
  /** Leave out the refresh-and-retry (the auth routes themselves). */
  noRefresh?: boolean;
}

export function withQuery(path: string, query?: Query): string {
  if (!query) return path;
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v !== undefined && v !== null && v !== "") params.set(k, String(v));
  }
  const s = params.toString();
  return s ? `${path}?${s}` : path;
}

async function send(path: string, options: RequestOptions): Promise<Response> {
  const headers: Record<string, string> = { accept: "application/json" };
  if (environment) headers["x-environment"] = environment;
  let body: string | undefined;
  if (options.body !== undefined) {
    headers["content-type"] = "application/json";
    body = JSON.stringify(options.body);
  }
  try {
    return await fetch(withQuery(path, options.query), {
      method: options.method ?? (body === undefined ? "GET" : "POST"),
      headers,
      body,
      credentials: "same-origin",
    });
  } catch {
    throw new ApiError(0, "NETWORK", "Could not reach stablegate.");
  }
}

let refreshing: Promise<boolean> | null = null;

/** One refresh at a time, shared by every request that found its access token expired. */
function refreshSession(): Promise<boolean> {
  refreshing ??= send("/api/v1/auth/refresh", { method: "POST", noRefresh: true })
    .then((r) => r.ok)
    .catch(() => false)
    .finally(() => {
      refreshing = null;
    });
  return refreshing;
}

async function parse<T>(res: Response): Promise<{ data: T; pagination?: Pagination }> {
  const requestId = res.headers.get("x-request-id");
  let json: unknown;
  try {
    json = await res.json();
  } catch {
    json = undefined;
  }
  const envelope = json as
    | { success: true; data: T; pagination?: Pagination }
    | { success: false; error?: { code: string; message: string; details?: Record<string, unknown> } }
    | { success: false; message: string }
    | undefined;
  if (res.ok && envelope?.success) return envelope;
  if (res.status === 429) {
    const retry = Number(res.headers.get("retry-after") ?? "60");
    throw new ApiError(429, "RATE_LIMITED", "Too many requests.", {}, requestId, retry);
  }
  if (envelope && !envelope.success && "error" in envelope && envelope.error) {
    const e = envelope.error;
    throw new ApiError(res.status, e.code, e.message, e.details ?? {}, requestId);
  }
  throw new ApiError(res.status, "INTERNAL_ERROR", `Unexpected answer (HTTP ${res.status}).`, {}, requestId);
}

/** The answer to `path`, with an expired access token refreshed once and the request retried. */
async function sendRefreshing(path: string, options: RequestOptions): Promise<Response> {
  let res = await send(path, options);
  if (res.status === 401 && !options.noRefresh && !path.startsWith("/api/v1/auth/login")) {
    if (await refreshSession()) res = await send(path, options);
    if (res.status === 401) {
      onSessionEnded?.();
    }
  }
  return res;
}

export async function request<T>(
  path: string,
  options: RequestOptions = {},
): Promise<{ data: T; pagination?: Pagination }> {
  return parse<T>(await sendRefreshing(path, options));
}

/**
 * A file the server sends (an export): its bytes and the name of its `Content-Disposition`; an
 * error answer is thrown as `ApiError`, like every other request.
 */
export async function getFile(path: string, query?: Query): Promise<{ blob: Blob; filename: string | null }> {
  const res = await sendRefreshing(path, { query });
  if (!res.ok) {
    await parse<never>(res); // throws the error envelope as ApiError
    throw new ApiError(res.status, "INTERNAL_ERROR", `Unexpected answer (HTTP ${res.status}).`);
  }
  const disposition = res.headers.get("content-disposition") ?? "";
  return { blob: await res.blob(), filename: /filename="([^"]+)"/.exec(disposition)?.[1] ?? null };
}

export async function get<T>(path: string, query?: Query): Promise<T> {
  return (await request<T>(path, { query })).data;
}

export async function getList<T>(
  path: string,
  query?: Query,
): Promise<{ data: T[]; pagination: Pagination }> {
  const r = await request<T[]>(path, { query });
  return {
    data: r.data,
    pagination: r.pagination ?? { page: 1, limit: r.data.length, total: r.data.length, totalPages: 1 },
  };
}

export async function post<T>(path: string, body?: unknown): Promise<T> {
  return (await request<T>(path, { method: "POST", body: body ?? {} })).data;
}

export async function patch<T>(path: string, body: unknown): Promise<T> {
  return (await request<T>(path, { method: "PATCH", body })).data;
}

export async function del<T>(path: string): Promise<T> {
  return (await request<T>(path, { method: "DELETE" })).data;
}

/** A route the server does not have (yet): the router's own 404, not a missing record. */
export function isMissingRoute(e: unknown): boolean {
  return e instanceof ApiError && e.code === "NOT_FOUND" && e.message.startsWith("No route ");
}
