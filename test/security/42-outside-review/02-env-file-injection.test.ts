import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { networkVariableClasses, PLAIN_VARIABLES } from "../../../src/backup/configuration.js";
import { refusalOf, restore, Workspace } from "./support.js";

// `restore --env-file` writes the backup's config.json as NAME=value lines for the operator to load
// into the service (`set -a; . file`, or an orchestrator's env file). config.json is not
// authenticated in a plain backup, and the restore accepts any upper-case name in it: a forged
// backup makes the operator's service start with NODE_OPTIONS (code execution in every stablegate
// process started with the file), LD_PRELOAD, PATH … And a value holding a newline becomes a line
// of its own for line-based readers (docker/podman --env-file, systemd EnvironmentFile).
//
// EXPECTED TO FAIL until config.json's names are limited to the plain variables of
// backup/configuration.ts (a foreign name refused or dropped) and a value with a newline is refused.

const run = promisify(execFile);
let ws: Workspace;
let forged: string;
const allowed = new Set<string>([...PLAIN_VARIABLES, ...networkVariableClasses().plain]);
const PAYLOAD = "--require=/tmp/sg42-evil.cjs";

beforeAll(async () => {
  ws = await Workspace.create();
  const base = await ws.backup();
  forged = await ws.forge(base.file, ({ config, manifest }) => {
    config.variables.NODE_OPTIONS = PAYLOAD;
    config.variables.CORS_ORIGINS = `https://shop.example\nNODE_OPTIONS=${PAYLOAD}`;
    manifest.configuration.keys.push("NODE_OPTIONS", "CORS_ORIGINS");
  });
}, 120_000);
afterAll(async () => {
  await ws?.close();
});

describe("the environment file of a forged backup", { timeout: 120_000 }, () => {
  it("sets no variable that is not stablegate's configuration (NODE_OPTIONS) when sourced by a POSIX shell", async () => {
    const envFile = ws.file("restored.env");
    const refused = await refusalOf(restore(await ws.newTarget(), { input: forged, envFile }));
    if (refused) return; // refusing the forged configuration is a fix too
    const { stdout } = await run(
      "sh",
      ["-c", `set -a; . "$1"; printf %s "\${NODE_OPTIONS-unset}"`, "sh", envFile],
      {
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
      },
    );
    expect(stdout, "NODE_OPTIONS set by the environment file").toBe("unset");
  });

  it("holds no line a line-based env-file reader takes for another variable", async () => {
    const envFile = ws.file("restored.env");
    const refused = await refusalOf(restore(await ws.newTarget(), { input: forged, envFile }));
    if (refused) return;
    const lines = (await readFile(envFile, "utf8")).split("\n").filter((l) => l !== "" && !l.startsWith("#"));
    const names = lines.map((l) => /^([A-Za-z_][A-Za-z0-9_]*)=/.exec(l)?.[1] ?? `(not a variable: ${l})`);
    expect(names.filter((n) => !allowed.has(n))).toEqual([]);
  });
});
