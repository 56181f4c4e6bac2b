import { randomUUID } from "node:crypto";
import type { Connection } from "./options.js";

/** An answer of the gateway that is not a success, with the contract's error code when it has one. */
export class ApiError extends Error {
  override name = "ApiError";
  constructor(
    readonly status: number,
    readonly code: string | undefined,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/**
 * The few calls `trigger` makes, over plain `fetch` (the CLI works without the generated client;
 * creating POSTs carry an `Idempotency-Key`, so a retried call never creates twice).
 */
export class Api {
  constructor(
    private readonly c: Connection,
    private readonly fetchImpl: typeof fetch = fetch,
  ) {}

  async request<T>(method: "GET" | "POST", path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = {
      apikey: this.c.apiKey,
      "x-api-secret": this.c.apiSecret,
      accept: "application/json",
    };
    if (body !== undefined) headers["content-type"] = "application/json";
    if (method === "POST") headers["idempotency-key"] = randomUUID();
    let res: Response;
    try {
      res = await this.fetchImpl(`${this.c.baseUrl}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      });
    } catch (err) {
      throw new ApiError(0, undefined, `${method} ${path}: ${describe(err)}`);
    }
    const text = await res.text();
    let parsed: {
      success?: boolean;
      data?: T;
      message?: string;
      error?: { code?: string; message?: string; details?: Record<string, unknown> };
    } = {};
    try {
      parsed = text ? JSON.parse(text) : {};
    } catch {
      // not JSON: reported below with the status
    }
    if (res.ok && parsed.success === true) return parsed.data as T;
    const e = parsed.error;
    const fields = (e?.details?.fields as { field: string; message: string }[] | undefined)
      ?.map((f) => `${f.field} ${f.message}`)
      .join("; ");
    const message = e?.message ?? parsed.message ?? (text.slice(0, 200) || res.statusText);
    throw new ApiError(
      res.status,
      e?.code,
      `${method} ${path}: ${res.status}${e?.code ? ` ${e.code}` : ""}: ${message}${fields ? ` (${fields})` : ""}`,
      e?.details,
    );
  }
}

export function describe(err: unknown): string {
  const e = err as { message?: string; cause?: { code?: string; message?: string } };
  if (e.cause?.code) return `${e.cause.code}${e.cause.message ? ` (${e.cause.message})` : ""}`;
  return e.message ?? String(err);
}
