#!/usr/bin/env node
import { run } from "./run.js";

const controller = new AbortController();
let interrupted = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    if (interrupted) process.exit(130); // a second Ctrl-C: at once
    interrupted = true;
    controller.abort();
  });
}
process.exitCode = await run(process.argv.slice(2), {
  env: process.env,
  signal: controller.signal,
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
});
