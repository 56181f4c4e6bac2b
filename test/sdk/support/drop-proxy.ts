import net from "node:net";

/**
 * A real TCP proxy in front of a listener that can lose answers: armed with `dropNextResponses(n)`,
 * it forwards the next n requests to the server, waits for the server's answer, and then closes
 * the client's connection without passing a byte of it on. The server has processed the request;
 * the client sees a dropped connection — the network failure an idempotency key exists for.
 */
export async function startDropProxy(target: string) {
  const { hostname, port } = new URL(target);
  let armed = 0;
  let requests = 0;
  let dropped = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(port), hostname);
    sockets.add(client);
    sockets.add(upstream);
    let dropThis = false;
    client.on("data", (chunk) => {
      // A request line starts a new exchange on a kept-alive connection.
      if (/^(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) /.test(chunk.toString("latin1", 0, 8))) {
        requests++;
        if (armed > 0) {
          armed--;
          dropThis = true;
        }
      }
      upstream.write(chunk);
    });
    upstream.on("data", (chunk) => {
      if (dropThis) {
        dropped++;
        dropThis = false;
        client.destroy();
        upstream.destroy();
        return;
      }
      client.write(chunk);
    });
    const close = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on("close", close);
    upstream.on("close", close);
    client.on("error", close);
    upstream.on("error", close);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${address.port}`,
    dropNextResponses(n = 1) {
      armed = n;
    },
    get requests() {
      return requests;
    },
    get dropped() {
      return dropped;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
