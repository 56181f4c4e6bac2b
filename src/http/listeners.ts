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
      const closing = [production, sandbox].map(
        (s) =>
          new Promise<void>((resolve) => {
            if (!s.listening) return resolve();
            s.close(() => resolve());
            s.closeIdleConnections();
          }),
      );
      const timer = setTimeout(() => {
        production.closeAllConnections();
        sandbox.closeAllConnections();
      }, timeoutMs);
      await Promise.all(closing);
      clearTimeout(timer);
    },
  };
}
