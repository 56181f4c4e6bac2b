import { Writable } from "node:stream";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createLogger } from "../../src/observability/logger.js";
import { call, keysOf, startTestService, type TestService } from "../support/harness.js";

let svc: TestService;
let out = "";
beforeAll(async () => {
  const sink = new Writable({
    write(chunk, _enc, cb) {
      out += chunk.toString();
      cb();
    },
  });
  svc = await startTestService({ logDestination: sink });
});
afterAll(() => svc?.close());

it("never writes credentials to the log", async () => {
  const k = keysOf(await svc.createMerchant(), "sandbox");
  const secrets = {
    apikey: k.apiKey,
    "x-api-secret": k.apiSecret,
    authorization: "Bearer eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LWp3dA.sig-ABCDEF",
    cookie: "sg_access=cookie-secret-123; sg_refresh=refresh-secret-456",
  };
  const ok = await call(svc.urls.sandbox, "/api/v1/public/account", { headers: secrets });
  expect(ok.status).toBe(200);
  // A rejected request logs too (the error path), with a wrong secret and a body full of secrets.
  const bad = await call(svc.urls.sandbox, "/api/v1/public/account", {
    headers: { ...secrets, "x-api-secret": "sk_test_guessing-secret-789" },
  });
  expect(bad.status).toBe(401);
  await call(svc.urls.sandbox, "/api/v1/public/nope", {
    headers: secrets,
    json: { password: "hunter2-password", otp: "123456", webhookSecret: "whsec_zzz" },
  });
  await new Promise((r) => setTimeout(r, 50));

  expect(out).toContain("request completed"); // the log did capture these requests
  expect(out).toContain("/api/v1/public/account");
  for (const needle of [
    k.apiKey,
    k.apiSecret,
    "sk_test_guessing-secret-789",
    "c2VjcmV0LWp3dA",
    "cookie-secret-123",
    "refresh-secret-456",
    "hunter2-password",
    "whsec_zzz",
  ]) {
    expect(out).not.toContain(needle);
  }
});

it("writes one line per request, when it is answered: status, time, request id", async () => {
  const id = "req-logged-once-42";
  const r = await call(svc.urls.sandbox, "/api/v1/public/account", { headers: { "x-request-id": id } });
  expect(r.status).toBe(401);
  await new Promise((res) => setTimeout(res, 50));
  const lines = out.split("\n").filter((l) => l.includes(id));
  expect(lines, lines.join("\n")).toHaveLength(1);
  const line = JSON.parse(lines[0] as string);
  expect(line).toMatchObject({
    msg: "request completed",
    reqId: id,
    req: { method: "GET", url: "/api/v1/public/account" },
    res: { statusCode: 401 },
    rejected: { code: "INVALID_AUTH", message: expect.stringMatching(/^Missing API key/) },
  });
  expect(typeof line.responseTime).toBe("number");
});

it("cuts every URL in a logged error to its host: an RPC key in the path or the userinfo never reaches the log (outside review)", async () => {
  const lines: string[] = [];
  const logger = createLogger("info", { write: (s: string) => void lines.push(s) });
  const cause = new Error(
    "HTTP request failed.\n\nURL: https://rpcuser:RPCPASSWORD@mainnet.example.io/v3/RPCSECRETKEY123?apikey=QSECRET\nRequest body: {}",
  );
  const err = Object.assign(new Error("eth_getLogs failed on wss://node.example.io/ws/WSSECRET"), { cause });
  logger.error({ err, job: "watch:USDT-ERC20" }, "job failed");
  logger.warn({ err: "fetch failed: http://127.0.0.1:28599/v3/STRINGSECRET" }, "chain endpoint failed");
  const text = lines.join("\n");
  for (const secret of ["RPCSECRETKEY123", "RPCPASSWORD", "rpcuser", "QSECRET", "WSSECRET", "STRINGSECRET"])
    expect(text).not.toContain(secret);
  expect(text).toContain("https://mainnet.example.io/[redacted]");
  expect(text).toContain("wss://node.example.io/[redacted]");
  expect(text).toContain("http://127.0.0.1:28599/[redacted]");
  // What is not a URL stays readable.
  expect(text).toContain("eth_getLogs failed on");
  expect(text).toContain("job failed");
});
