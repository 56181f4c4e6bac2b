import { createHmac, timingSafeEqual } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";

/** One request as a real local receiver saw it: raw body bytes, headers, arrival time. */
export interface Received {
  at: number;
  path: string;
  headers: http.IncomingHttpHeaders;
  raw: Buffer;
}

export type Behaviour =
  | { kind: "status"; status: number; body?: string; headers?: Record<string, string>; delayMs?: number }
  | { kind: "sleep"; ms: number };

/** A real HTTP server on 127.0.0.1 whose answer tests can change while it runs. */
export async function startReceiver(initial: Behaviour = { kind: "status", status: 200, body: "ok" }) {
  const received: Received[] = [];
  let behaviour: Behaviour | ((r: Received) => Behaviour) = initial;
  const sockets = new Set<import("node:net").Socket>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const r: Received = {
        at: Date.now(),
        path: req.url ?? "/",
        headers: req.headers,
        raw: Buffer.concat(chunks),
      };
      received.push(r);
      const b = typeof behaviour === "function" ? behaviour(r) : behaviour;
      if (b.kind === "sleep") {
        const t = setTimeout(() => {
          if (!res.writableEnded) res.end("late");
        }, b.ms);
        res.on("close", () => clearTimeout(t));
        return;
      }
      const answer = () => {
        res.writeHead(b.status, { "content-type": "text/plain", ...b.headers });
        res.end(b.body ?? "");
      };
      if (b.delayMs) setTimeout(answer, b.delayMs);
      else answer();
    });
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: (path = "/hook") => `http://127.0.0.1:${port}${path}`,
    received,
    set(b: Behaviour | ((r: Received) => Behaviour)) {
      behaviour = b;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/** What a merchant's receiver does (docs/merchants/webhooks.md#signatures): HMAC-SHA256 over the raw bytes, constant-time compare. */
export function verifyLegacy(secret: string, raw: Buffer, header: string | undefined): boolean {
  if (!header?.startsWith("sha256=")) return false;
  const expected = Buffer.from(createHmac("sha256", secret).update(raw).digest("hex"));
  const got = Buffer.from(header.slice(7));
  return got.length === expected.length && timingSafeEqual(got, expected);
}

/**
 * The Standard Webhooks verification, written from the specification (not from our signer): key =
 * base64 after `whsec_`, content `${id}.${timestamp}.${body}`, any `v1,` signature may match,
 * timestamp within 5 minutes.
 */
export function verifyStandard(secret: string, raw: Buffer, headers: http.IncomingHttpHeaders): boolean {
  const id = headers["webhook-id"];
  const ts = headers["webhook-timestamp"];
  const sigs = headers["webhook-signature"];
  if (typeof id !== "string" || typeof ts !== "string" || typeof sigs !== "string") return false;
  if (Math.abs(Date.now() / 1000 - Number(ts)) > 300) return false;
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  const expected = createHmac("sha256", key)
    .update(Buffer.concat([Buffer.from(`${id}.${ts}.`), raw]))
    .digest();
  return sigs.split(" ").some((s) => {
    const [version, b64] = s.split(",");
    if (version !== "v1" || !b64) return false;
    const got = Buffer.from(b64, "base64");
    return got.length === expected.length && timingSafeEqual(got, expected);
  });
}

export async function waitFor<T>(
  fn: () => T | Promise<T>,
  timeoutMs = 10_000,
  stepMs = 20,
): Promise<NonNullable<T>> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() > end) throw new Error("waitFor: timed out");
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A transaction object (docs/api-reference.md#schema-transaction), as the ledger will format it. */
export function sampleTransaction(merchantId: string, transactionId: string, status = "confirmed") {
  return {
    type: "deposit",
    transactionId,
    clientId: merchantId,
    amount: 12.5,
    fee: 0,
    netAmount: 12.5,
    actualBalance: 12.5,
    currencyType: "USDT-TRC20",
    network: "USDT-TRC20",
    status,
    createdAt: "2026-01-01T00:00:00.000Z",
    confirmedAt: "2026-01-01T00:01:00.000Z",
    blockchainTxHash: "ab".repeat(32),
    walletAddress: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t",
  };
}
