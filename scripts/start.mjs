// `npm start`: check the configuration first (a bad variable is one line in under a second, not
// after minutes of building), build only the parts whose sources changed since the last build,
// then run `stablegate serve` (extra arguments go to it: `npm start -- --help`).
//
// A part is rebuilt when the fingerprint of its inputs (every file's path, size and modification
// time) differs from the one recorded after its last successful build in dist/.build-state.json,
// or when its output is missing. Written by hand: the three builds are three different tools
// (tsc, Vite, npm pack), and what is needed is only "has any input changed".
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const root = path.resolve(import.meta.dirname, "..");
const stateFile = path.join(root, "dist", ".build-state.json");
const args = process.argv.slice(2);

/** Each part: its inputs (files or folders), what shows it was built, and how to build it. */
const PARTS = [
  {
    name: "server",
    inputs: ["src", "tsconfig.json", "tsconfig.build.json", "package-lock.json"],
    output: "dist/main.js",
    build: [path.join(root, "node_modules", ".bin", "tsc"), ["-p", "tsconfig.build.json"]],
  },
  {
    name: "dashboard",
    inputs: ["web", "vite.config.ts", "tsconfig.web.json", "package-lock.json"],
    output: "dist/web/index.html",
    build: [path.join(root, "node_modules", ".bin", "vite"), ["build", "--logLevel", "warn"]],
  },
  {
    name: "SDK",
    inputs: [
      "packages/sdk/src",
      "packages/sdk/package.json",
      "packages/sdk/tsconfig.json",
      "packages/sdk/tsconfig.cjs.json",
      "packages/sdk/README.md",
      "packages/sdk/openapi.json",
    ],
    output: "dist/downloads/stablegate-sdk.tgz",
    build: [process.execPath, [path.join("scripts", "pack-sdk.mjs")]],
  },
];

function files(entry) {
  const full = path.join(root, entry);
  if (!existsSync(full)) return [];
  const info = lstatSync(full); // a symbolic link is an input as itself, never followed (no loops)
  if (!info.isDirectory()) return [[entry, info]];
  return readdirSync(full, { withFileTypes: true }).flatMap((d) => files(path.join(entry, d.name)));
}

function fingerprint(part) {
  const hash = createHash("sha256");
  for (const [file, info] of part.inputs.flatMap(files).sort(([a], [b]) => (a < b ? -1 : 1)))
    hash.update(`${file}\0${info.size}\0${info.mtimeMs}\n`);
  return hash.digest("hex");
}

function readState() {
  try {
    return JSON.parse(readFileSync(stateFile, "utf8"));
  } catch {
    return {};
  }
}

function run(command, commandArgs) {
  const r = spawnSync(command, commandArgs, { cwd: root, stdio: "inherit" });
  return r.status ?? 1;
}

// 1. The configuration, as `serve` reads it: from the build when it is current, else from the
//    sources (tsx compiles only what the check imports).
const state = readState();
const stale = PARTS.filter((p) => !existsSync(path.join(root, p.output)) || state[p.name] !== fingerprint(p));
const serverStale = stale.some((p) => p.name === "server");
const check = serverStale
  ? run(process.execPath, ["--import", "tsx", path.join("src", "main.ts"), "config", "check"])
  : run(process.execPath, [path.join("dist", "main.js"), "config", "check"]);
if (check !== 0) process.exit(check);

// 2. Only what changed.
for (const part of stale) {
  const started = Date.now();
  process.stdout.write(`building the ${part.name} (its sources changed)…\n`);
  const fp = fingerprint(part); // before building: a file edited meanwhile rebuilds next time
  const status = run(part.build[0], part.build[1]);
  if (status !== 0) {
    process.stderr.write(`npm start: building the ${part.name} failed (exit ${status})\n`);
    process.exit(status);
  }
  mkdirSync(path.dirname(stateFile), { recursive: true });
  writeFileSync(stateFile, `${JSON.stringify({ ...readState(), [part.name]: fp }, null, 2)}\n`);
  process.stdout.write(`built the ${part.name} in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
}
if (stale.length === 0) process.stdout.write("the build is current: nothing to build\n");

// 3. The service, in this very process (its signal handling and exit code are the service's own):
//    dist/main.js reads its arguments from process.argv.
process.argv = [process.execPath, path.join(root, "dist", "main.js"), "serve", ...args];
await import(pathToFileURL(process.argv[1]).href);
