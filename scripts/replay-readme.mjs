#!/usr/bin/env node
/**
 * Runs the README's tour as written: every command of the `sh` blocks under "A five-minute tour"
 * (the tour and the step-up example), in order, against a running `npm start` (issue #35, item 6:
 * "every command of the tour runs as written"). Called by scripts/newcomer.sh on a fresh clone.
 *
 * What it adds to the text, and nothing more:
 * - A placeholder assignment (`KEY=ak_test_...`, `SESSION=tx_...`, `ADDRESS=T...`) takes the value
 *   a reader would copy: the newest earlier output holding a word with that prefix.
 * - The step-up example's `"otp":"123456"` becomes the code the previous command e-mailed, read
 *   with the documented `stablegate mail list`.
 * - `localhost:8080`/`8081` become `PORT`/`SANDBOX_PORT` when those are set to other ports (and
 *   `stablegate-dev` gets STABLEGATE_BASE_URL, as docs/merchants/local-development.md says).
 * - `stablegate-dev listen` ("in a third terminal") runs in the background until it says Ready.
 * What it checks: every command exits 0; no HTTP answer is a 5xx (curl's status line, written to
 * stderr by a `.curlrc` in CURL_HOME, the command itself untouched); the `"name":value` pairs of a
 * command's expected output (a `# {…}` line after it, or its own trailing comment; `…` elides)
 * appear in what it printed — retried every 3 s for 90 s when the comment says "later".
 *
 *   node scripts/replay-readme.mjs [--readme README.md] [--out vars.json]
 * Environment: PORT, SANDBOX_PORT, METRICS_TOKEN, DATA_DIR as given to `npm start`.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

const { values: args } = parseArgs({
  options: { readme: { type: "string", default: "README.md" }, out: { type: "string" } },
});

/** The `sh` blocks of the section whose heading is `heading`. */
function blocksOf(markdown, heading) {
  const lines = markdown.split("\n");
  const start = lines.findIndex((l) => l.trim() === heading);
  if (start < 0) throw new Error(`no section "${heading}" in ${args.readme}`);
  const blocks = [];
  let current = null;
  for (const line of lines.slice(start + 1)) {
    if (current === null && /^## /.test(line)) break;
    if (current === null && line.trim() === "```sh") current = [];
    else if (current !== null && line.trim() === "```") {
      blocks.push(current);
      current = null;
    } else if (current !== null) current.push(line);
  }
  return blocks;
}

/** Commands (continuation lines joined), each with the comments that say what it prints. */
function commandsOf(block) {
  const commands = [];
  let pending = null;
  let attached = false; // the previous line was a command or what it prints
  for (const line of block) {
    const trimmed = line.trim();
    if (pending !== null) {
      pending += `\n${line}`;
      if (!line.endsWith("\\")) {
        commands.push({ text: pending, expect: inlineComment(pending) });
        pending = null;
        attached = true;
      }
      continue;
    }
    if (trimmed === "") {
      attached = false;
      continue;
    }
    if (trimmed.startsWith("#")) {
      const last = commands.at(-1);
      // "# {…}" right under a command (or continuing its trailing comment): what it prints.
      attached &&= trimmed.startsWith("# {") || (last.expect !== undefined && /^\s{8,}#/.test(line));
      if (attached) last.expect = `${last.expect ?? ""} ${trimmed.slice(1)}`;
      continue;
    }
    if (line.endsWith("\\")) pending = line;
    else {
      commands.push({ text: line, expect: inlineComment(line) });
      attached = true;
    }
  }
  return commands;
}

function inlineComment(text) {
  const m = /\s{2,}#\s(.*)$/.exec(text.split("\n").at(-1));
  return m ? m[1] : undefined;
}

/** The `"name":value` pairs an expectation states (values holding `…` are elided, not checked). */
function pairsOf(expect) {
  if (!expect) return [];
  return [
    ...expect.matchAll(/"[A-Za-z0-9_]+":(?:"[^"…]*"|true|false|null|-?\d+(?:\.\d+)?)(?=[,}\s]|$)/g),
  ].map((m) => m[0]);
}

function run(command, env, cwd, { background } = {}) {
  return new Promise((resolve) => {
    const child = spawn("bash", ["-o", "pipefail", "-c", command], { env, cwd, detached: true });
    let stdout = "";
    let stderr = "";
    const ready = () => /^Ready/m.test(stdout + stderr);
    child.stdout.on("data", (c) => {
      stdout += c;
      if (background && ready()) stop();
    });
    child.stderr.on("data", (c) => {
      stderr += c;
      if (background && ready()) stop();
    });
    const stop = () => {
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {}
    };
    const timer = setTimeout(stop, background ? 180_000 : 120_000);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ ok: background ? ready() : code === 0, code: code ?? signal, stdout, stderr });
    });
  });
}

function portsRewritten(text) {
  const { PORT, SANDBOX_PORT } = process.env;
  let out = text;
  if (PORT && PORT !== "8080") out = out.replaceAll("localhost:8080", `localhost:${PORT}`);
  if (SANDBOX_PORT && SANDBOX_PORT !== "8081")
    out = out.replaceAll("localhost:8081", `localhost:${SANDBOX_PORT}`);
  return out;
}

const readme = readFileSync(args.readme, "utf8");
const commands = blocksOf(readme, "## A five-minute tour").flatMap(commandsOf);
if (commands.length < 20) throw new Error(`the tour has ${commands.length} commands: was it moved?`);

const curlHome = mkdtempSync(join(tmpdir(), "sg-tour-curl-"));
writeFileSync(join(curlHome, ".curlrc"), 'write-out = "%{stderr}HTTP %{http_code}\\n"\n');
const vars = {};
const outputs = [];
// On other ports, `stablegate-dev` is told the sandbox URL the documented way (its default is 8081).
const baseUrl = process.env.SANDBOX_PORT
  ? { STABLEGATE_BASE_URL: `http://localhost:${process.env.SANDBOX_PORT}` }
  : {};
const env = () => ({ ...process.env, ...baseUrl, ...vars, CURL_HOME: curlHome });
const t0 = Date.now();
let failed = false;
let keysAt; // when the sandbox key was in hand (seconds), for the newcomer's "minutes to a webhook"

function fail(command, why, result) {
  console.error(`\nREADME tour: ${why}\n$ ${command}`);
  if (result) console.error(`stdout:\n${result.stdout}\nstderr:\n${result.stderr}`);
  failed = true;
}

for (const { text, expect } of commands) {
  const started = Date.now();
  let command = portsRewritten(text);
  const placeholders = [...command.matchAll(/\b([A-Z_]+)=(\S*?)\.\.\.(?=\s|$)/g)];
  if (placeholders.length > 0 && command.replace(/\b[A-Z_]+=\S*?\.\.\.(?=\s|$)/g, "").trim() === "") {
    for (const [, name, prefix] of placeholders) {
      const word = new RegExp(`(?<![A-Za-z0-9_])${prefix}[A-Za-z0-9_-]{8,}`);
      const value = outputs.map((o) => word.exec(o)?.[0]).findLast(Boolean);
      if (!value) {
        fail(command, `no earlier output holds a ${prefix}… value for ${name}`);
        break;
      }
      vars[name] = value;
    }
    if (failed) break;
    if (vars.KEY && keysAt === undefined) keysAt = Math.floor(Date.now() / 1000);
    console.log(
      `  ${placeholders.map(([, n]) => `${n}=${vars[n]}`).join(" ")}   (copied from the output above)`,
    );
    continue;
  }
  if (command.includes('"otp":"123456"')) {
    const mail = await run("npm run --silent stablegate -- mail list", env(), process.cwd());
    // The newest mail comes first; its body follows the blank line after its headers.
    const newest = mail.stdout.split(/\n-{72}\n/)[1] ?? "";
    const code = /\b(\d{6})\b/.exec(newest.slice(newest.indexOf("\n\n")))?.[1];
    if (!code) {
      fail(command, "no e-mailed code in `stablegate mail list`", mail);
      break;
    }
    command = command.replace('"otp":"123456"', `"otp":"${code}"`);
  }
  const background = /stablegate-dev listen/.test(command);
  const pairs = pairsOf(expect);
  const patient = /\blater\b/.test(expect ?? "");
  let result;
  let missing = [];
  for (;;) {
    result = await run(command, env(), process.cwd(), { background });
    missing = pairs.filter((p) => !result.stdout.includes(p));
    if (!result.ok || missing.length === 0 || !patient || Date.now() - started > 90_000) break;
    await new Promise((r) => setTimeout(r, 3000)); // as a reader would: a request every few seconds
  }
  const statuses = [...result.stderr.matchAll(/^HTTP (\d{3})$/gm)].map((m) => Number(m[1]));
  const shown = command.split("\n")[0].slice(0, 96);
  console.log(
    `  ${((Date.now() - started) / 1000).toFixed(1).padStart(5)} s  ${statuses.join(",").padEnd(3)}  ${shown}`,
  );
  if (!result.ok) fail(command, `exit ${result.code}${background ? " (no Ready line)" : ""}`, result);
  else if (statuses.some((s) => s >= 500)) fail(command, `an HTTP ${statuses.join(",")} answer`, result);
  else if (command.includes("curl") && statuses.length === 0)
    fail(command, "curl wrote no status line", result);
  else if (missing.length > 0)
    fail(command, `the output lacks ${missing.join(", ")} (README says: ${expect})`, result);
  if (failed) break;
  outputs.push(result.stdout);
}
rmSync(curlHome, { recursive: true, force: true });
if (failed) process.exit(1);
if (args.out) writeFileSync(args.out, `${JSON.stringify({ ...vars, KEYS_AT: keysAt })}\n`);
console.log(
  `README tour: ${commands.length} commands as written, in ${Math.round((Date.now() - t0) / 1000)} s`,
);
