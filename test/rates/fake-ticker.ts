import http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A local stand-in for a public ticker (a real `node:http` server): answers each request with what
 * the test set — a provider's real JSON shape, or something malformed, slow or hostile.
 */
export type TickerAnswer =
  | { kind: "json"; body: unknown; status?: number }
  | { kind: "raw"; text: string; status?: number; contentType?: string }
  | { kind: "slow"; ms: number; body: unknown }
  | { kind: "huge"; bytes: number }
  | { kind: "redirect"; location: string };

export interface FakeTicker {
  url: string;
  /** Request paths with their queries, in order. */
  requests: string[];
  answer(a: TickerAnswer | ((path: string) => TickerAnswer)): void;
  close(): Promise<void>;
}

export async function startFakeTicker(): Promise<FakeTicker> {
  let current: TickerAnswer | ((path: string) => TickerAnswer) = { kind: "json", body: {} };
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    const path = req.url ?? "/";
    requests.push(path);
    const a = typeof current === "function" ? current(path) : current;
    switch (a.kind) {
      case "json":
        res.writeHead(a.status ?? 200, { "content-type": "application/json" });
        res.end(JSON.stringify(a.body));
        return;
      case "raw":
        res.writeHead(a.status ?? 200, { "content-type": a.contentType ?? "application/json" });
        res.end(a.text);
        return;
      case "slow": {
        const timer = setTimeout(() => {
          res.writeHead(200, { "content-type": "application/json" });
          res.end(JSON.stringify(a.body));
        }, a.ms);
        res.on("close", () => clearTimeout(timer));
        return;
      }
      case "huge": {
        res.writeHead(200, { "content-type": "application/json" });
        const chunk = `"${"x".repeat(16_384)}",`;
        res.write('{"data":[');
        let sent = 0;
        const pump = () => {
          while (sent < a.bytes) {
            sent += chunk.length;
            if (!res.write(chunk)) return void res.once("drain", pump);
          }
          res.end('""]}');
        };
        res.on("error", () => undefined);
        pump();
        return;
      }
      case "redirect":
        res.writeHead(302, { location: a.location });
        res.end();
        return;
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    answer(a) {
      current = a;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Coinbase's answer to `GET /v2/exchange-rates?currency=<token>` (its documented shape). */
export function coinbaseRates(token: string, rates: Record<string, string>) {
  return { data: { currency: token, rates } };
}

/** Kraken's answer to `GET /0/public/Ticker?pair=<pair>` (its documented shape), last trade `last`. */
export function krakenTicker(pairKey: string, last: string) {
  return {
    error: [],
    result: {
      [pairKey]: {
        a: [last, "19186", "19186.000"],
        b: [last, "1000", "1000.000"],
        c: [last, "51.62000000"],
        v: ["1234567.1", "2345678.2"],
        p: [last, last],
        t: [1234, 5678],
        l: [last, last],
        h: [last, last],
        o: last,
      },
    },
  };
}
