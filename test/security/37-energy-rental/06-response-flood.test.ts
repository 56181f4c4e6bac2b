import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ItrxRental } from "../../../src/energy/itrx-rental.js";

// Attack: a hostile provider (or whoever answers at TRC20_RENTAL_URL) answers the price query with
// an endless body. The adapter reads the whole body into one string (`response.text()`) with no
// size limit, for as long as its 10 s timeout lets it: hundreds of MB held by the worker per quote
// (and the quote runs inside the sweeper's database transaction). A JSON answer of a few hundred
// bytes is expected; anything beyond a small limit should be cut off.
// Now refused: at most 64 KB of an answer is read; more is unavailability.

let server: Server;
let url = "";
let sent = 0;
const LIMIT = 300 * (1 << 20); // stop at 300 MB whatever happens
beforeAll(async () => {
  server = createServer((req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.write('{"energy_amount":70000,"total_price":1,"pad":"');
    const chunk = Buffer.alloc(1 << 20, 0x61);
    const write = () => {
      while (sent < LIMIT) {
        sent += chunk.length;
        if (!res.write(chunk)) return void res.once("drain", write);
      }
      res.end('"}');
    };
    res.on("error", () => {});
    req.socket.on("error", () => {});
    write();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe("attack: an endless price answer", () => {
  it("the adapter stops reading after a small limit (not hundreds of MB)", async () => {
    const rental = new ItrxRental({ url, apiKey: "k", apiSecret: "s", maxSunPerEnergy: 80 }); // default 10 s timeout
    const before = process.memoryUsage().rss;
    let peak = before;
    const t = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 20);
    const started = Date.now();
    const outcome = await rental.quote(70_000).then(
      (v) => `quote ${v}`,
      (e) => `error ${(e as Error).message}`,
    );
    clearInterval(t);
    const mb = (n: number) => Math.round(n / (1 << 20));
    expect(
      sent,
      `${outcome} after ${Date.now() - started} ms; provider sent ${mb(sent)} MB; worker RSS grew ${mb(peak - before)} MB`,
    ).toBeLessThan(10 * (1 << 20));
  }, 60_000);
});
