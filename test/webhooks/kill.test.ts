import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../src/db/database.js";
import { SecretBox } from "../../src/lib/secret-box.js";
import { createMerchantWithKeys } from "../../src/merchants/index.js";
import { enqueueWebhookEvent } from "../../src/webhooks/outbox.js";
import { setWebhookUrl } from "../../src/webhooks/secrets.js";
import { onPostgres, openTestDatabase } from "../support/db.js";
import { mainArgs } from "../support/processes.js";
import { type Receiver, sampleTransaction, sleep, startReceiver, waitFor } from "./support.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const KEY = randomBytes(32).toString("hex");
const EVENTS = 2000;
const TIMEOUT_MS = 2000; // lease = timeout + 5 s

let database: Database & { url: string | undefined };
let receiver: Receiver;
let dataDir: string;
const children: ChildProcess[] = [];
let stderr = "";

function startWorker(name: string): ChildProcess {
  // `node` itself (not the tsx binary, which runs the program in a child process that a SIGKILL
  // of the parent would orphan): the signal must hit the worker itself.
  // A clean environment: only what a worker needs (see test/cli.test.ts).
  const child = spawn(process.execPath, [...mainArgs(), "worker"], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "/tmp",
      DATA_DIR: path.join(dataDir, name),
      DATABASE_URL: database.url as string,
      SECRET_ENCRYPTION_KEY: KEY,
      SSRF_ALLOW_CIDRS: "127.0.0.0/8",
      WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
      LOG_LEVEL: "warn",
      // Each worker has its own DATA_DIR, so without this each would generate another seed, and the
      // database refuses a process whose account keys differ from the ones it recorded (issue 25).
      MASTER_MNEMONIC: "test test test test test test test test test test test junk",
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  child.stderr?.on("data", (c: Buffer) => {
    stderr += c.toString();
  });
  children.push(child);
  return child;
}

describe.skipIf(!onPostgres)("kill test: SIGKILL a delivery worker in the middle of a burst", () => {
  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), "sg-webhook-kill-"));
    database = await openTestDatabase();
    receiver = await startReceiver({ kind: "status", status: 200, body: "ok" });
  });
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
    await receiver?.close();
    await database?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it(`delivers all ${EVENTS} events after a restart; duplicates (same webhook-id) are counted`, {
    timeout: 180_000,
  }, async () => {
    const db = database.db;
    const box = new SecretBox(KEY);
    const m = await createMerchantWithKeys(
      db,
      { email: `kill-${Date.now()}@example.com`, companyName: "Kill" },
      undefined,
      box,
    );
    await setWebhookUrl(db, box, m.id, "sandbox", receiver.url("/kill"));
    // Each answer takes 30 ms, so the worker dies with many attempts in flight.
    receiver.set({ kind: "status", status: 200, body: "ok", delayMs: 30 });

    const first = startWorker("w1");
    // The burst: 2,000 events committed in transactions of 50 while the worker delivers.
    const ids: string[] = [];
    const burst = (async () => {
      for (let b = 0; b < EVENTS / 50; b++) {
        await db.transaction().execute(async (trx) => {
          for (let i = 0; i < 50; i++) {
            const transactionId = `tx_kill_${b}_${i}`;
            const { webhookEventId } = await enqueueWebhookEvent(trx, {
              merchantId: m.id,
              environment: "sandbox",
              transactionId,
              type: "deposit",
              transactionStatus: "confirmed",
              data: sampleTransaction(m.id, transactionId),
            });
            ids.push(webhookEventId);
          }
        });
        await sleep(5);
      }
    })();

    // Kill it once it has delivered a good part of the burst, attempts in flight.
    await waitFor(() => receiver.received.length >= 400, 60_000, 5).catch((err: Error) => {
      throw new Error(`${err.message}; worker stderr: ${stderr.slice(-2000)}`);
    });
    first.kill("SIGKILL");
    const killedAt = receiver.received.length;
    await new Promise((r) => first.once("exit", r));
    const inFlightAtKill = await db
      .selectFrom("webhook_due")
      .select((eb) => eb.fn.countAll<string>().as("n"))
      .where("locked_by", "is not", null)
      .executeTakeFirstOrThrow();
    await burst;

    startWorker("w1-restarted");
    await waitFor(
      async () => {
        const row = await db
          .selectFrom("webhook_events")
          .select((eb) => eb.fn.countAll<string>().as("n"))
          .where("delivery_status", "=", "delivered")
          .executeTakeFirstOrThrow();
        return Number(row.n) === EVENTS;
      },
      120_000,
      200,
    );

    const perId = new Map<string, number>();
    for (const r of receiver.received) {
      const id = r.headers["webhook-id"] as string;
      perId.set(id, (perId.get(id) ?? 0) + 1);
    }
    const lost = ids.filter((id) => !perId.has(id));
    const duplicates = [...perId.values()].reduce((s, n) => s + (n - 1), 0);
    const report = {
      events: EVENTS,
      receivedBeforeKill: killedAt,
      leasedWhenKilled: Number(inFlightAtKill.n),
      requestsReceived: receiver.received.length,
      distinctDelivered: perId.size,
      lost: lost.length,
      duplicates,
    };
    console.log(`webhook kill test: ${JSON.stringify(report)}`);
    expect(ids).toHaveLength(EVENTS);
    expect(lost).toEqual([]);
    expect(perId.size).toBe(EVENTS);
    // Every duplicate is an attempt of the killed worker that the receiver got but the database never recorded.
    expect(duplicates).toBeLessThanOrEqual(Number(inFlightAtKill.n));
  });
});
