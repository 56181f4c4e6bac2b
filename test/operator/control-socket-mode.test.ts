import { mkdtempSync } from "node:fs";
import { lstat, readdir, rm } from "node:fs/promises";
import http from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { Worker } from "node:worker_threads";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../src/db/database.js";
import { systemClock } from "../../src/lib/clock.js";
import { startControlServer } from "../../src/operator/control-server.js";
import { openTestDatabase } from "../support/db.js";

// Issue #34 ("also seen in the code"): the control socket was bound at its final path and chmod'ed
// to 0600 afterwards, so between bind(2) and chmod(2) it had the mode the umask left
// (0777 & ~umask: 0777 under umask 000) and any local user could connect and run operator commands
// (create a merchant or an admin). Created private from the start, the socket never exists at its
// path with a mode other than 0600.
//
// A watcher thread lstat()s the path in a tight loop while the server starts and stops again and
// again (under umask 000, the worst an embedding process can have): on the old code it sees the
// socket with mode 0777 (the window is an event-loop turn and a thread-pool round trip long); on
// the new code it must never see anything but 0600.

const log = pino({ level: "silent" });
let db: Database;
let dir: string;
let oldUmask: number;

beforeAll(async () => {
  db = await openTestDatabase();
  dir = mkdtempSync(path.join(tmpdir(), "sg-sock-"));
  oldUmask = process.umask(0);
});
afterAll(async () => {
  process.umask(oldUmask);
  await db?.close();
  await rm(dir, { recursive: true, force: true });
});

/** `POST /commands/ledger.verify` over the socket, as the CLI's control client sends it. */
function ledgerVerifyOverSocket(socketPath: string): Promise<{ ok: boolean }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath, method: "POST", path: "/commands/ledger.verify" }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => {
        text += c;
      });
      res.on("end", () => resolve(JSON.parse(text) as { ok: boolean }));
    });
    req.on("error", reject);
    req.end("{}");
  });
}

describe("the control socket is private from the moment it exists", () => {
  it("a thread polling its path never sees it with a mode other than 0600 (umask 000, 30 starts)", async () => {
    const socket = path.join(dir, "control.sock");
    const flag = new SharedArrayBuffer(4);
    const worker = new Worker(
      `
      const { parentPort, workerData } = require("node:worker_threads");
      const { lstatSync } = require("node:fs");
      const seen = new Set();
      const shared = new Int32Array(workerData.flag);
      let n = 0;
      while (Atomics.load(shared, 0) === 0) {
        try {
          const s = lstatSync(workerData.file);
          seen.add((s.isSocket() ? "socket " : "other ") + (s.mode & 0o777).toString(8));
        } catch {}
        n++;
      }
      parentPort.postMessage({ seen: [...seen], n });
      `,
      { eval: true, workerData: { file: socket, flag } },
    );
    const done = new Promise<{ seen: string[]; n: number }>((resolve) => worker.once("message", resolve));
    const ctx = {
      db: db.db,
      clock: systemClock,
      chains: () => ({}) as never,
      addresses: () => Promise.reject(new Error("no addresses in this test")),
    };
    try {
      for (let i = 0; i < 30; i++) {
        const server = await startControlServer(socket, ctx, log);
        expect((await lstat(socket)).mode & 0o777).toBe(0o600);
        // It works: an operator command over the socket.
        const answer = await ledgerVerifyOverSocket(socket);
        expect(answer.ok).toBe(true);
        await server.close();
      }
    } finally {
      Atomics.store(new Int32Array(flag), 0, 1);
    }
    const { seen, n } = await done;
    await worker.terminate();
    expect(n).toBeGreaterThan(1000);
    expect(seen).toEqual(["socket 600"]);
    // Nothing left behind in the folder (no temporary entries).
    expect(await readdir(dir)).toEqual([]);
  });
});
