import { type ChildProcess, spawn } from "node:child_process";
import net from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { run } from "../../packages/sdk/src/cli/run.js";
import type { Database } from "../../src/db/database.js";
import type { CreatedMerchant } from "../../src/merchants/index.js";
import { openTestDatabase } from "../support/db.js";
import { call, keysOf, startTestService, type TestService } from "../support/harness.js";
import { type Receiver, startReceiver, verifyLegacy, verifyStandard, waitFor } from "../webhooks/support.js";

// `stablegate-dev listen` and `trigger` end to end, as a merchant runs them: the CLI as real
// processes (node + tsx, the package's own entry), a real service, a real local receiver. Every
// event the triggers cause reaches the receiver once, signed, in the stream's order — also across
// a forced reconnect (the network drops the stream while the service is restarted on the same
// database and events are created meanwhile).

const ROOT = path.resolve(import.meta.dirname, "../..");
const CLI = path.join(ROOT, "packages", "sdk", "src", "cli", "main.ts");

/** Hex secrets shared by both service instances (they must open each other's sealed webhook secrets). */
const SHARED_ENV = {
  SSRF_ALLOW_CIDRS: "127.0.0.0/8",
  RATE_LIMIT_ENABLED: "false",
  CHECKOUT_MIN_EXPIRY_SECONDS: "1",
  SECRET_ENCRYPTION_KEY: "ab".repeat(32),
  JWT_SECRET: "j".repeat(40),
  INTERNAL_SHARED_SECRET: "i".repeat(40),
};

/** The CLI as a process; collects stdout lines and stderr. */
class Cli {
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  stdout = "";
  stderr = "";
  constructor(args: string[], env: Record<string, string>) {
    this.child = spawn(process.execPath, ["--import", "tsx", CLI, ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.exited = new Promise((resolve) => this.child.once("close", (code) => resolve(code)));
    this.child.stdout?.on("data", (c: Buffer) => {
      this.stdout += c.toString("utf8");
    });
    this.child.stderr?.on("data", (c: Buffer) => {
      this.stderr += c.toString("utf8");
    });
  }
  lines(): string[] {
    return this.stdout.split("\n").filter(Boolean);
  }
  async stop(): Promise<number | null> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGINT");
    return this.exited;
  }
}

async function runCli(args: string[], env: Record<string, string>, timeoutMs = 90_000) {
  const p = new Cli(args, env);
  const timer = setTimeout(() => p.child.kill("SIGKILL"), timeoutMs);
  const code = await p.exited;
  clearTimeout(timer);
  return { code, stdout: p.stdout, stderr: p.stderr };
}

/**
 * A TCP hop between the CLI and the service, as a network path: `drop()` cuts every connection
 * and refuses new ones (the stream dies mid-flight), `restore(port)` lets connections through again
 * (to a restarted service's port).
 */
async function startProxy(targetPort: number) {
  let target = targetPort;
  let blocked = false;
  const open = new Set<net.Socket>();
  const server = net.createServer((client) => {
    if (blocked) {
      client.destroy();
      return;
    }
    const upstream = net.connect(target, "127.0.0.1");
    for (const s of [client, upstream]) {
      open.add(s);
      s.on("close", () => open.delete(s));
      s.on("error", () => {});
    }
    client.pipe(upstream).pipe(client);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    drop() {
      blocked = true;
      for (const s of open) s.destroy();
    },
    restore(port: number) {
      target = port;
      blocked = false;
    },
    close: () =>
      new Promise<void>((r) => {
        for (const s of open) s.destroy();
        server.close(() => r());
      }),
  };
}

describe("stablegate-dev command line", () => {
  const io = () => {
    const out: string[] = [];
    const err: string[] = [];
    return {
      out,
      err,
      io: {
        env: {},
        signal: new AbortController().signal,
        out: (l: string) => out.push(l),
        err: (l: string) => err.push(l),
      },
    };
  };
  it.each([
    [[], /a command is required/],
    [["serve"], /unknown command "serve"/],
    [["listen", "--nope"], /Unknown option '--nope'/],
    [["listen"], /--forward-to/],
    [["listen", "--forward-to", "ftp://x"], /http or https/],
    [["listen", "--forward-to", "http://localhost:3000/hooks"], /API key is required/],
    [["listen", "--forward-to", "http://x", "--api-key", "ak_test_1"], /API secret is required/],
    [["listen", "--forward-to", "http://x", "--api-key", "k", "--api-secret", "s"], /names no environment/],
    [
      [
        "listen",
        "--forward-to",
        "http://x",
        "--api-key",
        "ak_test_1",
        "--api-secret",
        "s",
        "--environment",
        "production",
      ],
      /does not match/,
    ],
    [["trigger"], /needs an event/],
    [["trigger", "payout.completed"], /unknown event "payout.completed"/],
    [
      ["trigger", "deposit.confirmed", "--api-key", "ak_live_1", "--api-secret", "s"],
      /only against the sandbox/,
    ],
    [
      ["trigger", "deposit.confirmed", "--amount", "abc", "--api-key", "ak_test_1", "--api-secret", "s"],
      /--amount must be a positive number/,
    ],
    [["trigger", "deposit.confirmed", "--expires-in-minutes", "2"], /deposit.failed only/],
    [["trigger", "deposit.confirmed", "--currency", "BTC"], /--currency must be/],
  ])("%j → one line on stderr, exit 2", async (argv, message) => {
    const c = io();
    expect(await run(argv as string[], c.io)).toBe(2);
    expect(c.err).toHaveLength(1);
    expect(c.err[0]).toMatch(/^stablegate-dev: /);
    expect(c.err[0]).toMatch(message);
    expect(c.out).toEqual([]);
  });

  it("listen against a gateway it never reached gives up with one line naming the URL (not a silent retry forever)", {
    timeout: 30_000,
  }, async () => {
    // A port nobody listens on: bound, then closed.
    const closed = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, "127.0.0.1", () => {
        const port = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(port));
      });
    });
    const c = io();
    const argv = ["listen", "--forward-to", "http://127.0.0.1:9/hooks", "--api-key", "ak_test_1"];
    argv.push("--api-secret", "s", "--base-url", `http://127.0.0.1:${closed}`);
    expect(await run(argv, c.io)).toBe(1);
    const last = c.err.at(-1) ?? "";
    expect(last).toMatch(
      new RegExp(`cannot reach the gateway at http://127.0.0.1:${closed} .*after 4 attempts`),
    );
    expect(c.err.filter((l) => /reconnecting/.test(l))).toHaveLength(3);
  });

  it.each([["--help"], ["listen", "--help"], ["trigger", "-h"]])(
    "%j prints its usage, exit 0",
    async (...argv) => {
      const c = io();
      expect(await run(argv, c.io)).toBe(0);
      expect(c.out.join("\n")).toMatch(
        /^(stablegate-dev: local development|Usage: stablegate-dev (listen|trigger))/,
      );
      expect(c.err).toEqual([]);
    },
  );

  it("the entry runs as a process (shebang file through node), --help exit 0 and bad usage exit 2", async () => {
    const help = await runCli(["listen", "--help"], {});
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("--forward-to <url>");
    const bad = await runCli(["trigger", "withdrawal.lost"], {});
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim().split("\n")).toHaveLength(1);
  });
});

describe("listen + trigger end to end", () => {
  let database: Database;
  let first: TestService | undefined;
  let second: TestService | undefined;
  let receiver: Receiver;
  let proxy: Awaited<ReturnType<typeof startProxy>>;
  let listener: Cli | undefined;
  let m: CreatedMerchant;
  let env: Record<string, string>;
  let secret: string;

  beforeAll(async () => {
    database = await openTestDatabase();
    first = await startTestService({ env: SHARED_ENV, database });
    receiver = await startReceiver({ kind: "status", status: 200, body: "ok" });
    proxy = await startProxy(Number(new URL(first.urls.sandbox).port));
    m = await first.createMerchant();
    const k = keysOf(m, "sandbox");
    // The merchant's laptop: no webhook URL is set at all; listen is how it receives.
    env = { STABLEGATE_API_KEY: k.apiKey, STABLEGATE_API_SECRET: k.apiSecret };
    const rotated = await call(first.urls.sandbox, "/api/v1/webhook/secret/rotate", {
      method: "POST",
      headers: { apikey: k.apiKey, "x-api-secret": k.apiSecret },
    });
    expect(rotated.status, rotated.text).toBe(200);
    secret = rotated.body.data.webhookSecret;
  }, 60_000);
  afterAll(async () => {
    await listener?.stop();
    await proxy?.close();
    await receiver?.close();
    await first?.close();
    await second?.close();
    await database?.close();
  });

  const triggerOn = async (svc: TestService, event: string, extra: string[] = []) => {
    const r = await runCli(["trigger", event, "--base-url", svc.urls.sandbox, ...extra], env);
    expect(r.code, `${event}: ${r.stderr}\n${r.stdout}`).toBe(0);
    return r.stdout;
  };

  it("the receiver gets every triggered event once, signed, in order, across a dropped stream and a service restart", async () => {
    listener = new Cli(["listen", "--forward-to", receiver.url("/hooks"), "--base-url", proxy.url], env);
    await waitFor(() => listener!.stderr.includes("Ready: forwarding sandbox webhooks"), 20_000);

    // Before the reconnect: three triggers (25 USDT deposited pay for both withdrawals of 10).
    const out1 = await triggerOn(first!, "deposit.confirmed");
    expect(out1).toMatch(/deposit tx_\w+ confirmed: deposit.confirmed sent/);
    await triggerOn(first!, "withdrawal.completed");
    const out3 = await triggerOn(first!, "withdrawal.failed");
    expect(out3).toContain("the sandbox failure address");
    await waitFor(() => receiver.received.length >= 3, 20_000).catch((err: Error) => {
      throw new Error(
        `${err.message}: ${receiver.received.length} received\n${listener!.stderr}\n${listener!.stdout}`,
      );
    });

    // Forced reconnect: the network drops the stream, the service restarts on the same
    // database (new ports), and events are created while the listener is cut off.
    proxy.drop();
    await first!.proc.stop();
    second = await startTestService({ env: SHARED_ENV, database });
    const countAtDrop = receiver.received.length;
    await triggerOn(second, "withdrawal.pending");
    await triggerOn(second, "withdrawal.rejected");
    await waitFor(() => listener!.stderr.includes("stream lost"), 10_000);
    expect(receiver.received.length).toBe(countAtDrop); // nothing came through meanwhile
    proxy.restore(Number(new URL(second.urls.sandbox).port));
    await waitFor(() => listener!.stderr.includes("reconnected after whe_"), 30_000);

    // After it: deposit.failed (a session of 3 s paid in part, left to expire).
    const out6 = await triggerOn(second, "deposit.failed", [
      "--expires-in-minutes",
      "0.05",
      "--amount",
      "20",
    ]);
    expect(out6).toMatch(/paid 10 \(a partial payment\); deposit.failed follows when it expires/);

    // Every event the database holds for the merchant, in stream order.
    const events = await database.db
      .selectFrom("webhook_events")
      .select(["id", "type", "transaction_status", "body", "transaction_id"])
      .where("merchant_id", "=", m.id)
      .where("environment", "=", "sandbox")
      .orderBy("created_at")
      .orderBy("id")
      .execute();
    // The withdrawals of 1001 find the balance short: trigger funds it first (a deposit each).
    expect(events.map((e) => `${e.type}.${e.transaction_status}`)).toEqual([
      "deposit.confirmed",
      "withdrawal.completed",
      "withdrawal.failed",
      "deposit.confirmed", // funding
      "withdrawal.pending",
      "deposit.confirmed", // funding
      "withdrawal.pending",
      "withdrawal.rejected",
      "deposit.failed",
    ]);
    await waitFor(() => receiver.received.length >= events.length, 20_000);
    await new Promise((r) => setTimeout(r, 1_500)); // nothing more arrives (no duplicates)
    const got = receiver.received;
    expect(got.map((r) => r.headers["webhook-id"])).toEqual(events.map((e) => e.id));
    for (const [i, r] of got.entries()) {
      const e = events[i]!;
      expect(r.path).toBe("/hooks");
      expect(r.raw.equals(Buffer.from(e.body, "utf8")), `body of ${e.id}`).toBe(true);
      expect(verifyLegacy(secret, r.raw, r.headers["x-webhook-signature"] as string), e.id).toBe(true);
      expect(verifyStandard(secret, r.raw, r.headers), e.id).toBe(true);
      expect(r.headers["x-webhook-source"]).toBe("stablegate");
      expect(r.headers["x-transaction-id"]).toBe(e.transaction_id);
      expect(r.headers["content-type"]).toBe("application/json");
    }
    // One line per event: name, transaction id, the local answer, latency, event id.
    const lines = listener.lines();
    expect(lines).toHaveLength(events.length);
    for (const [i, line] of lines.entries()) {
      const e = events[i]!;
      expect(line).toMatch(
        new RegExp(
          `${e.type}\\.${e.transaction_status}\\s+${e.transaction_id}  -> 200  \\d+ ms  \\[${e.id}\\]$`,
        ),
      );
    }
    expect(await listener.stop()).toBe(0);
  }, 240_000);

  it("trigger reports a refused call in one line: the call, status, code and the refused field (exit 1)", async () => {
    const svc = (second ?? first)!;
    const r = await runCli(
      ["trigger", "deposit.confirmed", "--base-url", svc.urls.sandbox, "--amount", "0.0000001"],
      env,
    );
    expect(r.code, r.stdout).toBe(1);
    const lines = r.stderr.trim().split("\n");
    expect(lines, r.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(/POST \S*\/checkout\/session: 400 VALIDATION_ERROR/);
    expect(lines[0]).toMatch(/amount/);
  }, 60_000);
});
