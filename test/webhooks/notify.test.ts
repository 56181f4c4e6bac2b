import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../src/db/database.js";
import { SecretBox } from "../../src/lib/secret-box.js";
import { type CreatedMerchant, createMerchantWithKeys } from "../../src/merchants/index.js";
import { createLogger } from "../../src/observability/logger.js";
import type { Runtime } from "../../src/runtime.js";
import { webhookDeliveryJob } from "../../src/webhooks/job.js";
import { enqueueWebhookEvent } from "../../src/webhooks/outbox.js";
import { setWebhookUrl } from "../../src/webhooks/secrets.js";
import { onPostgres, openTestDatabase } from "../support/db.js";
import { type Receiver, sampleTransaction, startReceiver, waitFor } from "./support.js";

/**
 * The wake-up path: the outbox's pg_notify reaches idle workers at commit, so a new event leaves at
 * once even when the poll interval is a minute. Runs on PGlite and on PostgreSQL.
 */

const KEY = randomBytes(32).toString("hex");
const SLOW_POLL_MS = 60_000;

let database: Database & { url: string | undefined };
let receiver: Receiver;
let m: CreatedMerchant;

/** The part of a Runtime the delivery job reads. */
function runtimeFor(db: Database): Runtime {
  return {
    config: {
      webhooks: { retryScheduleSeconds: [0.2, 0.4], timeoutMs: 2_000, ssrfAllowCidrs: ["127.0.0.0/8"] },
    },
    secrets: { SECRET_ENCRYPTION_KEY: KEY },
    logger: createLogger("silent"),
    database: db,
  } as unknown as Runtime;
}

/** Starts the delivery job; returns its stop function. */
function startJob(db: Database, pollMs: number, name: string): () => Promise<void> {
  const job = webhookDeliveryJob(runtimeFor(db), name, { pollMs });
  const ac = new AbortController();
  const running = job.run(ac.signal);
  return async () => {
    ac.abort();
    await running;
  };
}

let seq = 0;
/** Commits one event; returns its id and the commit time. */
async function commitEvent(): Promise<{ id: string; committedAt: number }> {
  const transactionId = `tx_notify_${++seq}`;
  const { webhookEventId } = await database.db.transaction().execute((trx) =>
    enqueueWebhookEvent(trx, {
      merchantId: m.id,
      environment: "sandbox",
      transactionId,
      type: "deposit",
      transactionStatus: "confirmed",
      data: sampleTransaction(m.id, transactionId),
    }),
  );
  return { id: webhookEventId, committedAt: Date.now() };
}

function receivedAt(id: string): number | undefined {
  return receiver.received.find((r) => r.headers["webhook-id"] === id)?.at;
}

/** Commits events one by one, each after the previous arrived; returns commit → receipt times. */
async function latencies(n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const { id, committedAt } = await commitEvent();
    const at = await waitFor(() => receivedAt(id), 5_000, 2);
    out.push(at - committedAt);
  }
  return out;
}

beforeAll(async () => {
  database = await openTestDatabase();
  receiver = await startReceiver();
  const box = new SecretBox(KEY);
  m = await createMerchantWithKeys(
    database.db,
    { email: `notify-${Date.now()}@example.com`, companyName: "Notify" },
    undefined,
    box,
  );
  await setWebhookUrl(database.db, box, m.id, "sandbox", receiver.url("/notify"));
});
afterAll(async () => {
  await receiver?.close();
  await database?.close();
});

describe("wake-up on commit (LISTEN/NOTIFY)", () => {
  it("an idle worker polling once a minute delivers each new event within milliseconds of its commit", async () => {
    const stop = startJob(database, SLOW_POLL_MS, "notify-a");
    try {
      // The first event may be found by the job's first drain; every later one can only be
      // found through the notification (the next poll is a minute away).
      await latencies(1);
      const times = await latencies(8);
      expect(times).toHaveLength(8);
      for (const t of times) expect(t).toBeLessThan(1_000);
    } finally {
      await stop();
    }
  });

  it("a rolled-back enqueue delivers nothing; the next committed event still leaves at once", async () => {
    const stop = startJob(database, SLOW_POLL_MS, "notify-b");
    try {
      await latencies(1);
      const before = receiver.received.length;
      await expect(
        database.db.transaction().execute(async (trx) => {
          await enqueueWebhookEvent(trx, {
            merchantId: m.id,
            environment: "sandbox",
            transactionId: "tx_notify_rolled_back",
            type: "deposit",
            transactionStatus: "confirmed",
            data: sampleTransaction(m.id, "tx_notify_rolled_back"),
          });
          throw new Error("rolled back");
        }),
      ).rejects.toThrow("rolled back");
      // A committed event after it is delivered, and it is the only new request.
      const [t] = await latencies(1);
      expect(t).toBeLessThan(1_000);
      expect(receiver.received.length).toBe(before + 1);
      expect(receiver.received.some((r) => r.headers["x-transaction-id"] === "tx_notify_rolled_back")).toBe(
        false,
      );
    } finally {
      await stop();
    }
  });

  it("an idle worker polling once a minute makes a retry when it comes due, not at the next poll", async () => {
    const stop = startJob(database, SLOW_POLL_MS, "notify-retry");
    try {
      await latencies(1);
      // First attempt of the next event fails; its retry is due 0.2 s later (the schedule here).
      const failing = `tx_notify_${seq + 1}`;
      receiver.set((r) =>
        r.headers["x-transaction-id"] === failing &&
        receiver.received.filter((x) => x.headers["x-transaction-id"] === failing).length <= 1
          ? { kind: "status", status: 500 }
          : { kind: "status", status: 200, body: "ok" },
      );
      const { id } = await commitEvent();
      const attempts = () => receiver.received.filter((r) => r.headers["webhook-id"] === id);
      await waitFor(() => (attempts().length >= 2 ? true : undefined), 10_000, 5);
      const [first, second] = attempts();
      // Sleeping until the retry's due time: ~0.2 s after the first attempt (a minute without it).
      expect(second!.at - first!.at).toBeGreaterThanOrEqual(190);
      expect(second!.at - first!.at).toBeLessThan(5_000);
    } finally {
      receiver.set({ kind: "status", status: 200, body: "ok" });
      await stop();
    }
  });

  it("without LISTEN (a driver that cannot) polling still delivers", async () => {
    const { listen: _unused, ...withoutListen } = database;
    const stop = startJob(withoutListen, 50, "notify-c");
    try {
      const times = await latencies(3);
      for (const t of times) expect(t).toBeLessThan(2_000);
    } finally {
      await stop();
    }
  });

  it.skipIf(!onPostgres)(
    "re-opens a lost LISTEN connection and is woken again afterwards",
    { timeout: 20_000 },
    async () => {
      const stop = startJob(database, SLOW_POLL_MS, "notify-d");
      const admin = new pg.Client({ connectionString: database.url });
      await admin.connect();
      try {
        await latencies(1);
        const listener = () =>
          admin
            .query<{ pid: number }>(
              "select pid from pg_stat_activity where datname = current_database() and application_name = 'stablegate-listen'",
            )
            .then((r) => r.rows.map((x) => x.pid));
        const [old] = await waitFor(async () => ((await listener()).length === 1 ? listener() : null));
        await admin.query("select pg_terminate_backend($1)", [old]);
        await waitFor(
          async () => {
            const now = await listener();
            return now.length === 1 && now[0] !== old;
          },
          10_000,
          50,
        );
        const times = await latencies(3);
        for (const t of times) expect(t).toBeLessThan(1_000);
      } finally {
        await admin.end();
        await stop();
      }
    },
  );
});
