import { chmod, rm } from "node:fs/promises";
import http from "node:http";
import type { Logger } from "pino";
import { AppError } from "../domain/errors.js";
import { type OperatorContext, runOperatorCommand } from "./commands.js";

const MAX_BODY = 64 * 1024;

/**
 * The operator control socket of a process that holds the embedded database: a Unix socket in
 * DATA_DIR, mode 0600, so only the operating-system user running stablegate can reach it (the
 * same user who could read the data folder anyway). It accepts `POST /commands/<name>` with JSON
 * arguments and answers `{ ok, result }` or `{ ok: false, error }`.
 */
export async function startControlServer(
  socketPath: string,
  ctx: OperatorContext,
  log: Logger,
): Promise<{ close(): Promise<void> }> {
  await rm(socketPath, { force: true });
  const server = http.createServer((req, res) => {
    const reply = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body, (_k, v) => (typeof v === "bigint" ? v.toString() : v)));
    };
    const m = /^\/commands\/([a-z.]+)$/.exec(req.url ?? "");
    if (req.method !== "POST" || !m)
      return reply(404, { ok: false, error: { code: "NOT_FOUND", message: "unknown" } });
    let size = 0;
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) req.destroy();
      else chunks.push(c);
    });
    req.on("end", async () => {
      try {
        const args = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") as Record<string, unknown>;
        const result = await runOperatorCommand(ctx, m[1] as string, args);
        log.info({ command: m[1] }, "operator command");
        reply(200, { ok: true, result });
      } catch (err) {
        if (err instanceof AppError)
          return reply(400, {
            ok: false,
            error: { code: err.code, message: err.message, details: err.details },
          });
        log.error({ err, command: m[1] }, "operator command failed");
        reply(500, {
          ok: false,
          error: { code: "INTERNAL_ERROR", message: "operator command failed; see the service log" },
        });
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(socketPath, () => resolve());
  });
  await chmod(socketPath, 0o600);
  return {
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(socketPath, { force: true });
    },
  };
}
