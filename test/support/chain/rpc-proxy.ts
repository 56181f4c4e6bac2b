/**
 * A switchable HTTP proxy in front of a chain endpoint (anvil or the TRON emulator): `pass`
 * forwards, `hang` accepts the request and never answers, `error` answers 503. Counts the requests
 * it forwards (the benchmark's RPC-call figures; JSON-RPC batches count as their length).
 * `rewrite` changes each forwarded JSON request first, `rewriteResponse` each JSON answer (a
 * misbehaving provider).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export type ProxyMode = "pass" | "hang" | "error";

export interface RpcProxy {
  url: string;
  mode: ProxyMode;
  /** Requests forwarded since the last `resetCount` (a JSON-RPC batch counts each call). */
  count: number;
  resetCount(): void;
  /** Applied to each parsed JSON request before it is forwarded. */
  rewrite: ((request: unknown) => unknown) | undefined;
  /** Applied to each parsed JSON answer before it is returned (with the parsed request it answers). */
  rewriteResponse: ((response: unknown, request: unknown) => unknown) | undefined;
  stop(): Promise<void>;
}

export async function startRpcProxy(target: string): Promise<RpcProxy> {
  const hanging = new Set<http.ServerResponse>();
  const state = {
    mode: "pass" as ProxyMode,
    count: 0,
    rewrite: undefined as ((request: unknown) => unknown) | undefined,
    rewriteResponse: undefined as ((response: unknown, request: unknown) => unknown) | undefined,
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      if (state.mode === "hang") {
        hanging.add(res);
        res.on("close", () => hanging.delete(res));
        return;
      }
      if (state.mode === "error") {
        res.writeHead(503, { "content-type": "text/plain" }).end("unavailable");
        return;
      }
      let body = Buffer.concat(chunks);
      let request: unknown = null;
      try {
        const parsed = body.length > 0 ? (JSON.parse(body.toString()) as unknown) : null;
        request = parsed;
        state.count += Array.isArray(parsed) ? parsed.length : 1;
        if (state.rewrite && parsed !== null) body = Buffer.from(JSON.stringify(state.rewrite(parsed)));
      } catch {
        state.count += 1;
      }
      try {
        const upstream = await fetch(new URL(req.url ?? "/", target), {
          method: req.method ?? "POST",
          headers: { "content-type": req.headers["content-type"] ?? "application/json" },
          ...(req.method === "GET" || req.method === "HEAD" ? {} : { body }),
        });
        let text = Buffer.from(await upstream.arrayBuffer());
        if (state.rewriteResponse) {
          try {
            text = Buffer.from(JSON.stringify(state.rewriteResponse(JSON.parse(text.toString()), request)));
          } catch {
            // not JSON: passed as is
          }
        }
        res.writeHead(upstream.status, {
          "content-type": upstream.headers.get("content-type") ?? "application/json",
        });
        res.end(text);
      } catch {
        res.writeHead(502).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    get mode() {
      return state.mode;
    },
    set mode(m: ProxyMode) {
      state.mode = m;
    },
    get count() {
      return state.count;
    },
    resetCount() {
      state.count = 0;
    },
    get rewrite() {
      return state.rewrite;
    },
    set rewrite(f: ((request: unknown) => unknown) | undefined) {
      state.rewrite = f;
    },
    get rewriteResponse() {
      return state.rewriteResponse;
    },
    set rewriteResponse(f: ((response: unknown, request: unknown) => unknown) | undefined) {
      state.rewriteResponse = f;
    },
    async stop() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
