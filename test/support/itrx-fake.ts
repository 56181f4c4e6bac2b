import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";

/**
 * A local fake of itrx.io's energy-rental API (develop.itrx.io), in the shapes its documentation
 * shows: `GET /api/v1/frontend/order/price` → `{period, energy_amount, price, total_price, addition}`,
 * `POST /api/v1/frontend/order` (signed: `API-KEY`, `TIMESTAMP`, `SIGNATURE` = hex HMAC-SHA256 of
 * `<TIMESTAMP>&<body with sorted keys>`) → `{errno: 0, serial, amount, balance}`, refusals as
 * `{errno, message}`. An order calls `deliver` (a test delegates the energy on the emulator there).
 */
export interface ItrxFake {
  url: string;
  apiKey: string;
  apiSecret: string;
  /** Sun per energy unit of the 1-hour term. */
  price: number;
  /** The prepaid balance (sun). */
  balance: bigint;
  /** How the next answers misbehave (tests of the adapter's distrust). */
  mode: "normal" | "server-error" | "garbage" | "wrong-energy" | "negative-amount" | "hang";
  orders: { receiver: string; energy: number; reference: string; paid: bigint }[];
  /** Requests refused for their signature or key. */
  refused: string[];
  /** Every request received, answered or not (`GET price`, `POST order`). */
  requests: string[];
  stop(): Promise<void>;
}

export async function startItrxFake(
  /** Delivers an order; false: the receiver has no account (the provider refuses, as itrx does). */
  deliver: (receiver: string, energy: number) => unknown = () => undefined,
): Promise<ItrxFake> {
  const fake: Omit<ItrxFake, "url" | "stop"> = {
    apiKey: "FAKEKEY0123456789",
    apiSecret: "fakesecret".repeat(6),
    price: 60,
    balance: 1_000_000_000n,
    mode: "normal",
    orders: [],
    refused: [],
    requests: [],
  };
  let serial = 0;
  const body = (req: IncomingMessage) =>
    new Promise<string>((resolve) => {
      let s = "";
      req.on("data", (c) => {
        s += c;
      });
      req.on("end", () => resolve(s));
    });
  const server: Server = createServer(async (req, res) => {
    const send = (status: number, payload: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(typeof payload === "string" ? payload : JSON.stringify(payload));
    };
    const text = await body(req);
    fake.requests.push(
      `${req.method} ${req.url?.startsWith("/api/v1/frontend/order/price") ? "price" : "order"}`,
    );
    if (fake.mode === "hang") return; // never answers
    if (fake.mode === "server-error") return send(502, "<html>bad gateway</html>");
    if (fake.mode === "garbage") return send(200, "not json");
    const url = new URL(req.url ?? "/", "http://fake");
    if (req.headers["api-key"] !== fake.apiKey) {
      fake.refused.push(`${req.method} ${url.pathname}: key`);
      return send(200, { errno: 10001, message: "invalid API-KEY" });
    }
    const total = (energy: number) => BigInt(energy) * BigInt(fake.price);
    if (req.method === "GET" && url.pathname === "/api/v1/frontend/order/price") {
      const energy = Number(url.searchParams.get("energy_amount"));
      if (!Number.isSafeInteger(energy) || energy < 10_000)
        return send(200, { errno: 20001, message: "energy_amount at least 10000" });
      return send(200, {
        period: url.searchParams.get("period"),
        energy_amount: fake.mode === "wrong-energy" ? energy + 1 : energy,
        price: fake.price,
        total_price: Number(total(energy)),
        addition: 0,
      });
    }
    if (req.method === "POST" && url.pathname === "/api/v1/frontend/order") {
      const timestamp = String(req.headers.timestamp ?? "");
      const expected = createHmac("sha256", fake.apiSecret).update(`${timestamp}&${text}`).digest();
      const given = Buffer.from(String(req.headers.signature ?? ""), "hex");
      let params: Record<string, unknown>;
      try {
        params = JSON.parse(text);
      } catch {
        return send(200, { errno: 20002, message: "bad body" });
      }
      const sorted = JSON.stringify(
        Object.fromEntries(Object.entries(params).sort(([a], [b]) => (a < b ? -1 : 1))),
      );
      const fresh = Math.abs(Number(timestamp) - Date.now() / 1_000) <= 60;
      if (
        !fresh ||
        given.length !== expected.length ||
        !timingSafeEqual(given, expected) ||
        sorted !== text
      ) {
        fake.refused.push(`POST order: signature`);
        return send(200, { errno: 10002, message: "signature error" });
      }
      const energy = Number(params.energy_amount);
      const paid = total(energy);
      if (paid > fake.balance) return send(200, { errno: 30001, message: "balance not enough" });
      if ((await deliver(String(params.receive_address), energy)) === false)
        return send(200, { errno: 40001, message: "receive_address is not activated" });
      fake.balance -= paid;
      fake.orders.push({
        receiver: String(params.receive_address),
        energy,
        reference: String(params.out_trade_no),
        paid,
      });
      return send(200, {
        errno: 0,
        serial: `fake${++serial}`,
        amount: fake.mode === "negative-amount" ? -1 : Number(paid),
        balance: Number(fake.balance),
      });
    }
    return send(404, { errno: 404, message: "no such path" });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return Object.assign(fake, {
    url: `http://127.0.0.1:${port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  }) as ItrxFake;
}
