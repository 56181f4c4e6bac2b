import pino from "pino";
import { expect, it } from "vitest";
import { JobRunner } from "../../src/worker/runner.js";

it("stop() lets the running job finish, then calls each job's stop hook once", async () => {
  const events: string[] = [];
  let started!: () => void;
  const running = new Promise<void>((r) => {
    started = r;
  });
  const runner = new JobRunner(
    [
      {
        name: "long",
        everyMs: 10,
        async run(signal) {
          events.push("run");
          started();
          await new Promise<void>((r) => signal.addEventListener("abort", () => r()));
          await new Promise((r) => setTimeout(r, 20));
          events.push("run finished");
        },
        async stop() {
          events.push("stop hook");
        },
      },
      { name: "plain", everyMs: 10, async run() {} },
    ],
    pino({ level: "silent" }),
  );
  runner.start();
  await running;
  await runner.stop();
  expect(events).toEqual(["run", "run finished", "stop hook"]);
});
