import { type ChildProcess, spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { createServer } from "node:net";
import path from "node:path";
import { inject } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../..");

/**
 * The arguments of `node` that run the CLI, src/main.ts: its bundle, made once per run by the global
 * setup (test/support/program.ts), so that a start loads one module instead of compiling a few
 * hundred through tsx's loader (≈ 2 s of CPU per role start, measured). `spawn(process.execPath, [...mainArgs(), role])`.
 */
export function mainArgs(): string[] {
  // Without the global setup (a config of one's own): the source through tsx's loader.
  return inject("mainProgram") ?? ["--import", "tsx", path.join(ROOT, "src", "main.ts")];
}

/**
 * `node <src/main.ts bundled> …` (mainArgs) as a real OS process with exactly `env` (never the
 * test runner's environment). Node itself, not the `tsx` binary: that one runs the program in a
 * child, so the pid would not be the role's and its environment could not be read back
 * (test/cli.test.ts has the signal reason too).
 */
export class RoleProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  private out = "";
  private readonly waiters: { test: (line: string) => boolean; resolve: (line: string) => void }[] = [];

  constructor(
    readonly name: string,
    args: string[],
    env: Record<string, string>,
  ) {
    this.child = spawn(process.execPath, [...mainArgs(), ...args], {
      cwd: ROOT,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.exited = new Promise((resolve) => this.child.once("close", (code) => resolve(code)));
    for (const stream of [this.child.stdout, this.child.stderr]) {
      let partial = "";
      stream?.on("data", (chunk: Buffer) => {
        const text = chunk.toString("utf8");
        this.out += text;
        const lines = (partial + text).split("\n");
        partial = lines.pop() ?? "";
        for (const line of lines) {
          for (const w of [...this.waiters]) {
            if (!w.test(line)) continue;
            this.waiters.splice(this.waiters.indexOf(w), 1);
            w.resolve(line);
          }
        }
      });
    }
  }

  /** Everything the process wrote (stdout and stderr, interleaved as it arrived). */
  log(): string {
    return this.out;
  }

  /** The JSON log lines whose `msg` is `msg`. */
  logged(msg: string): Record<string, unknown>[] {
    return this.out
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => {
        try {
          return JSON.parse(l) as Record<string, unknown>;
        } catch {
          return {};
        }
      })
      .filter((l) => l.msg === msg);
  }

  /** The first log line with `"msg":"<msg>"`, parsed; rejects when the process exits first. */
  waitForMsg(msg: string, timeoutMs: number): Promise<Record<string, unknown>> {
    const already = this.logged(msg)[0];
    if (already) return Promise.resolve(already);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${this.name}: no "${msg}" within ${timeoutMs} ms:\n${this.tail()}`)),
        timeoutMs,
      );
      this.waiters.push({
        test: (line) => line.includes(`"msg":${JSON.stringify(msg)}`),
        resolve: (line) => {
          clearTimeout(timer);
          resolve(JSON.parse(line) as Record<string, unknown>);
        },
      });
      void this.exited.then((code) => {
        clearTimeout(timer);
        reject(new Error(`${this.name} exited (${code}) before "${msg}":\n${this.tail()}`));
      });
    });
  }

  /** The environment the running process actually has (Linux: /proc/<pid>/environ). */
  async environment(): Promise<Record<string, string>> {
    const raw = await readFile(`/proc/${this.child.pid}/environ`, "utf8");
    return Object.fromEntries(
      raw
        .split("\0")
        .filter(Boolean)
        .map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]),
    );
  }

  tail(chars = 4000): string {
    return this.out.slice(-chars);
  }

  /** SIGTERM (a graceful stop), SIGKILL after 10 s. */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill("SIGTERM");
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 10_000);
    await this.exited;
    clearTimeout(timer);
  }
}

/**
 * Runs a command to its end: exit code and output. One still running after `timeoutMs` (a role
 * that should have refused to start but serves) is stopped, and its code is `null`.
 */
export async function runToEnd(
  name: string,
  args: string[],
  env: Record<string, string>,
  timeoutMs = 60_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const p = new RoleProcess(name, args, env);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    void p.stop();
  }, timeoutMs);
  let stdout = "";
  let stderr = "";
  p.child.stdout?.on("data", (c: Buffer) => {
    stdout += c.toString("utf8");
  });
  p.child.stderr?.on("data", (c: Buffer) => {
    stderr += c.toString("utf8");
  });
  const code = await p.exited;
  clearTimeout(timer);
  return { code: timedOut ? null : code, stdout, stderr };
}

/** A TCP port free right now (for SIGNER_PORT, which the worker's SIGNER_URL must know first). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
