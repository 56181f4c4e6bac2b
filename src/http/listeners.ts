import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import type { Environment } from "../domain/environment.js";
import { AppError } from "../domain/errors.js";
import { newId } from "../domain/ids.js";
import type { App } from "./app-types.js";
import { LISTENER_ENV, type RawWithListener } from "./context.js";
import { codeToStatus, errorBody } from "./errors.js";

export interface Listeners {
  production: http.Server;
  sandbox: http.Server;
  ports: Record<Environment, number>;
  /** Stops accepting, waits for in-flight requests (up to `timeoutMs`), then drops what is left. */
  close(timeoutMs: number): Promise<void>;
}

/** A listener's port is taken (or not ours to take): the operator fixes it, one line, no stack. */
export class ListenPortError extends Error {
  override name = "ListenPortError";
}

const PORT_VARIABLE: Record<Environment, string> = { production: "PORT", sandbox: "SANDBOX_PORT" };

/**
 * Two listeners of one application (docs/merchants/authentication.md#two-environments-two-base-urls): the environment of a request is the base URL
 * (listener) that received it. One Fastify instance routes both through `app.routing`.
 */
export async function listen(app: App, host: string, ports: Record<Environment, number>): Promise<Listeners> {
  const make = (env: Environment) => {
    const server = http.createServer((req, res) => {
      (req as RawWithListener)[LISTENER_ENV] = env;
      app.routing(req, res);
    });
    server.keepAliveTimeout = 72_000; // longer than common load balancers' idle timeout
    server.headersTimeout = 75_000;
    server.requestTimeout = 30_000;
    server.on("clientError", answerClientError);
    return server;
  };
  const production = make("production");
  const sandbox = make("sandbox");
  const start = (server: http.Server, port: number, env: Environment) =>
    new Promise<number>((resolve, reject) => {
      server.once("error", (err: NodeJS.ErrnoException) => {
        const why =
          err.code === "EADDRINUSE"
            ? "is in use by another process"
            : err.code === "EACCES"
              ? "needs privileges this process does not have"
              : null;
        reject(
          why
            ? new ListenPortError(
                `port ${port} on ${host} (the ${env} listener) ${why}: stop it, or set ${PORT_VARIABLE[env]} to a free port`,
                { cause: err },
              )
            : err,
        );
      });
      server.listen(port, host, () => {
        server.off("error", reject);
        resolve((server.address() as AddressInfo).port);
      });
    });
  const prodPort = await start(production, ports.production, "production");
  let sandboxPort: number;
  try {
    sandboxPort = await start(sandbox, ports.sandbox, "sandbox");
  } catch (err) {
    production.close();
    throw err;
  }
  return {
    production,
    sandbox,
    ports: { production: prodPort, sandbox: sandboxPort },
    async close(timeoutMs: number) {
      const servers = [production, sandbox];
      const closing = servers.map(
        (s) =>
          new Promise<void>((resolve) => {
            if (!s.listening) return resolve();
            s.close(() => resolve());
          }),
      );
      // Keep-alive connections become idle as their last response is written; close each one
      // then, so draining takes as long as the slowest in-flight request, not the idle timeout.
      const sweep = setInterval(() => {
        for (const s of servers) s.closeIdleConnections();
      }, 25);
      for (const s of servers) s.closeIdleConnections();
      const force = setTimeout(() => {
        for (const s of servers) s.closeAllConnections();
      }, timeoutMs);
      await Promise.all(closing);
      clearInterval(sweep);
      clearTimeout(force);
    },
  };
}

/**
 * Requests Node's HTTP parser refuses before Fastify sees them (malformed request line or
 * headers, headers over Node's 16 KiB limit): answered in the contract's envelope as a 400
 * `VALIDATION_ERROR`, as the app answers other unreadable requests (decision 9). A timed-out
 * request keeps Node's plain 408. Nothing is written once a response on the connection has begun.
 */
function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === "ECONNRESET" || !socket.writable) {
    socket.destroy();
    return;
  }
  // A pipelined request's answer may still be on its way: the error follows it, never cuts in.
  const inFlight = (socket as Duplex & { _httpMessage?: http.ServerResponse })._httpMessage;
  if (inFlight?.headersSent && !inFlight.writableFinished) {
    socket.destroy();
    return;
  }
  if (inFlight && !inFlight.writableFinished) {
    inFlight.once("finish", () => answerClientError(err, socket));
    inFlight.once("close", () => socket.destroy());
    return;
  }
  if (err.code === "ERR_HTTP_REQUEST_TIMEOUT") {
    socket.end("HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
    return;
  }
  const refused =
    err.code === "HPE_HEADER_OVERFLOW"
      ? AppError.validation([{ field: "headers", message: "are too large" }], "Request headers too large.")
      : AppError.validation([{ field: "request", message: "is malformed" }], "Malformed HTTP request.");
  // Refused before it was a request: no id was given, this one names the refusal in the logs' stead.
  const requestId = newId("req");
  const body = JSON.stringify(errorBody(refused, requestId));
  socket.end(
    `HTTP/1.1 ${codeToStatus(refused.code)} Bad Request\r\nConnection: close\r\n` +
      "Content-Type: application/json; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\n" +
      `X-Request-Id: ${requestId}\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}
