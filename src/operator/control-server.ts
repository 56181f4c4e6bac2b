import { chmod, mkdtemp, rename, rm } from "node:fs/promises";
import http from "node:http";
import path from "node:path";
import type { Logger } from "pino";
import { AppError } from "../domain/errors.js";
import { type OperatorContext, runOperatorCommand } from "./commands.js";

const MAX_BODY = 64 * 1024;

/**
 * The operator control socket of a process that holds the embedded database: a Unix socket in
 * DATA_DIR, mode 0600, so only the operating-system user running stablegate can reach it (the
 * same user who could read the data folder anyway). It accepts `POST /commands/<name>` with JSON
 * arguments and answers `{ ok, result }` or `{ ok: false, error }`.
 *
 * Private from the moment it exists at its path (issue #34): bind(2) gives a socket the mode
 * 0777 & ~umask, so a socket bound at its final path and chmod'ed afterwards is reachable by any
 * local user in between whenever the umask is loose (an embedding process, a test runner). It is
 * bound instead inside a fresh folder `mkdtemp` creates 0700 (a mode the umask can only narrow),
 * where nobody else can reach it whatever its own mode, made 0600 there, and then moved to its
 * path with rename(2), which is atomic within DATA_DIR: the path never names a socket with another
 * mode. (A restrictive umask around listen() would be process-wide: it would race with every file
 * other threads create meanwhile, and `process.umask(mask)` throws in worker threads.) The staging
 * folder's name is shorter than `control.sock`, so a path that fits the 107-byte limit of a Unix
 * socket's address fits while staged too.
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
  const staging = await mkdtemp(path.join(path.dirname(socketPath), ".s"));
  try {
    const staged = path.join(staging, "s");
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(staged, () => resolve());
    });
    try {
      await chmod(staged, 0o600);
      await rename(staged, socketPath);
    } catch (err) {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      throw err;
    }
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
  return {
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(socketPath, { force: true });
    },
  };
}
