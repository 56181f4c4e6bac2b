// Packs @stablegate/sdk (its `prepack` builds it: ESM, CommonJS, types, the `stablegate-dev` CLI)
// into dist/downloads/stablegate-sdk.tgz: the tarball the gateway serves at
// /downloads/stablegate-sdk.tgz, so `npm install <gateway>/downloads/stablegate-sdk.tgz` works
// without this repository and before the package is on a registry (docs/merchants/sdk.md).
import { execFileSync } from "node:child_process";
import { mkdirSync, renameSync, rmSync } from "node:fs";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");
const dir = path.join(root, "dist", "downloads");
rmSync(dir, { recursive: true, force: true });
mkdirSync(dir, { recursive: true });
const out = execFileSync(
  "npm",
  ["pack", "--workspace", "@stablegate/sdk", "--pack-destination", dir, "--json", "--loglevel", "error"],
  { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] },
);
// Script output (the prepack's build) may precede the JSON: the JSON is the last top-level array.
const packed = JSON.parse(out.slice(out.indexOf("\n[") + 1 || out.indexOf("[")));
renameSync(path.join(dir, packed[0].filename), path.join(dir, "stablegate-sdk.tgz"));
