import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Environment } from "../domain/environment.js";
import type { App } from "./app-types.js";
import { LISTENER_ENV, type RawWithListener } from "./context.js";

export interface Listeners {
  production: http.Server;
  sandbox: http.Server;
  ports: Record<Environment, number>;
  /** Stops accepting, waits for in-flight requests (up to `timeoutMs`), then drops what is left. */
  close(timeoutMs: number): Promise<void>;
}

/**
 * Two listeners of one application (CONTRACT §1): the environment of a request is the base URL
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
    return server;
  };
  const production = make("production");
  const sandbox = make("sandbox");
  const start = (server: http.Server, port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, () => {
        server.off("error", reject);
        resolve((server.address() as AddressInfo).port);
      });
    });
  const prodPort = await start(production, ports.production);
  let sandboxPort: number;
  try {
    sandboxPort = await start(sandbox, ports.sandbox);
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
