import http from "node:http";

export class RemoteCommandError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/** Sends an operator command to the running process that holds the embedded database. */
export function sendControlCommand(
  socketPath: string,
  name: string,
  args: Record<string, unknown>,
): Promise<unknown> {
  const body = JSON.stringify(args);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        socketPath,
        path: `/commands/${name}`,
        method: "POST",
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
        timeout: 30_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          try {
            const parsed = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
              ok: boolean;
              result?: unknown;
              error?: { code: string; message: string; details?: Record<string, unknown> };
            };
            if (parsed.ok) resolve(parsed.result);
            else
              reject(
                new RemoteCommandError(
                  parsed.error?.code ?? "INTERNAL_ERROR",
                  parsed.error?.message ?? "failed",
                  parsed.error?.details,
                ),
              );
          } catch (err) {
            reject(err);
          }
        });
      },
    );
    req.on("timeout", () =>
      req.destroy(new Error("the running service did not answer the operator command")),
    );
    req.on("error", reject);
    req.end(body);
  });
}
