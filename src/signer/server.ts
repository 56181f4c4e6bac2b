import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Clock } from "../lib/clock.js";
import type { Logger } from "../observability/logger.js";
import type { Registry } from "../observability/metrics.js";
import { InternalAuthVerifier } from "./hmac.js";
import { type Signer, SignerRejectedError, type SignRequest } from "./protocol.js";

/**
 * Largest accepted request body. A TRON transaction JSON is about 1 KB; an EVM batched sweep (issue
 * #39) at its gas budget's most (116 addresses, each authorised) about 25 KB: its `sweepMany` data
 * (64 bytes per address, as hex) and an authorisation request per address.
 */
const MAX_BODY_BYTES = 65_536;

export interface SignerServerOptions {
  signer: Signer;
  /** `INTERNAL_SHARED_SECRET`. */
  secret: string;
  host: string;
  port: number;
  clock: Clock;
  logger?: Logger;
  /** The signer's own metrics (the outflow cap), served at `GET /metrics`; none: 404. */
  registry?: Registry;
}

export interface RunningSignerServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

/**
 * The signer role's HTTP endpoint: `POST /v1/sign` (body: `{ requestId, request: SignRequest,
 * intentId }`, authenticated with `INTERNAL_SHARED_SECRET`, see `hmac.ts`), `GET /healthz` and
 * `GET /metrics` (the signer's outflow counters only: no secret, on the signer's private network).
 * Nothing else: no key export, no "sign bytes". Answers `401 {error}` for unsigned, stale, tampered
 * and replayed requests, `422 {error}` for requests the signer's policy refuses.
 */
export async function startSignerServer(options: SignerServerOptions): Promise<RunningSignerServer> {
  const verifier = new InternalAuthVerifier(options.secret, options.clock);
  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      options.logger?.error({ err }, "signer request failed");
      reply(res, 500, { error: "internal error" });
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method === "GET" && req.url === "/healthz") return reply(res, 200, { ok: true });
    if (req.method === "GET" && req.url === "/metrics" && options.registry) {
      const text = await options.registry.metrics();
      res.writeHead(200, { "content-type": options.registry.contentType });
      res.end(text);
      return;
    }
    if (req.method !== "POST" || req.url !== "/v1/sign") return reply(res, 404, { error: "not found" });
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const c of req) {
      size += (c as Buffer).length;
      if (size > MAX_BODY_BYTES) return reply(res, 413, { error: "body too large" });
      chunks.push(c as Buffer);
    }
    const body = Buffer.concat(chunks).toString("utf8");
    const failure = verifier.verify(req.headers, body);
    if (failure) {
      options.logger?.warn({ failure }, "signer refused an unauthenticated request");
      return reply(res, 401, { error: failure });
    }
    let parsed: { requestId?: unknown; request?: SignRequest; intentId?: unknown };
    try {
      parsed = JSON.parse(body) as typeof parsed;
    } catch {
      return reply(res, 400, { error: "invalid JSON" });
    }
    if (
      typeof parsed.requestId !== "string" ||
      !parsed.request ||
      (parsed.intentId !== undefined && typeof parsed.intentId !== "string")
    )
      return reply(res, 400, { error: "invalid body" });
    try {
      const signed = await options.signer.sign(
        parsed.request,
        typeof parsed.intentId === "string" ? { intentId: parsed.intentId } : {},
      );
      options.logger?.info(
        {
          network: parsed.request.network,
          environment: parsed.request.environment,
          index: parsed.request.index,
          intentId: parsed.intentId,
          hash: signed.hash,
        },
        "signed",
      );
      return reply(res, 200, signed);
    } catch (err) {
      if (err instanceof SignerRejectedError) return reply(res, 422, { error: err.message });
      throw err;
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  server.keepAliveTimeout = 65_000;
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${options.host.includes(":") ? `[${options.host}]` : options.host}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function reply(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}
