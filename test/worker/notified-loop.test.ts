import { sql } from "kysely";
import pino from "pino";
import { afterAll, beforeAll, expect, it } from "vitest";
import { runNotifiedLoop } from "../../src/worker/notified-loop.js";
import { openTestDatabase } from "../support/db.js";

let database: Awaited<ReturnType<typeof openTestDatabase>>;
beforeAll(async () => {
  database = await openTestDatabase();
});
afterAll(async () => {
  await database.close();
});

function waitFor(cond: () => boolean, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  return new Promise((resolve, reject) => {
    const poll = () => {
      if (cond()) resolve();
      else if (Date.now() > until) reject(new Error("condition not met in time"));
      else setTimeout(poll, 10);
    };
    poll();
  });
}

it("a NOTIFY committed on the channel ends the sleep at once; abort ends the loop and UNLISTENs", async () => {
  const controller = new AbortController();
  let rounds = 0;
  const listening: boolean[] = [];
  const loop = runNotifiedLoop(controller.signal, {
    listen: database.listen?.bind(database),
    channel: "loop_test",
    logger: pino({ level: "silent" }),
    what: "test",
    retryMs: 60_000,
    async round(_signal, isListening) {
      rounds++;
      listening.push(isListening);
      return 60_000; // without a notification the next round would be a minute away
    },
  });
  await waitFor(() => rounds === 1);
  await sql`select pg_notify('loop_test', '')`.execute(database.db);
  await waitFor(() => rounds === 2);
  expect(listening).toEqual([true, true]);
  controller.abort();
  await loop;
  // After UNLISTEN a notification no longer runs a round.
  await sql`select pg_notify('loop_test', '')`.execute(database.db);
  await new Promise((r) => setTimeout(r, 100));
  expect(rounds).toBe(2);
});

it("a failed round is logged and retried after retryMs; a LISTEN that fails leaves the loop polling", async () => {
  const controller = new AbortController();
  const logged: string[] = [];
  const logger = pino({ level: "warn" }, { write: (line: string) => logged.push(JSON.parse(line).msg) });
  let rounds = 0;
  const loop = runNotifiedLoop(controller.signal, {
    listen: async () => {
      throw new Error("no LISTEN here");
    },
    channel: "loop_test_2",
    logger,
    what: "test rounds",
    retryMs: 5,
    async round(_signal, isListening) {
      rounds++;
      expect(isListening).toBe(false);
      if (rounds === 1) throw new Error("boom");
      return 5;
    },
  });
  await waitFor(() => rounds >= 3);
  controller.abort();
  await loop;
  expect(logged).toContain("test rounds: LISTEN unavailable; found by polling instead");
  expect(logged).toContain("test rounds: round failed");
});
