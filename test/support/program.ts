import { randomBytes } from "node:crypto";
import { readFile, rm } from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { build, type Plugin } from "esbuild";

const ROOT = path.resolve(import.meta.dirname, "../..");
/** Inside the project, so that the bundle's package imports resolve from its node_modules. */
const OUT_DIR = path.join(ROOT, "node_modules", ".cache", "stablegate-test-programs");

/**
 * Each module keeps its own `import.meta.url` / `dirname` / `filename` in the bundle: the paths it
 * builds from them (migrations/, dist/web, `createRequire`) stay the source tree's.
 */
const ownImportMeta: Plugin = {
  name: "own-import-meta",
  setup(b) {
    b.onLoad({ filter: /\.[cm]?ts$/ }, async (args) => {
      if (args.path.includes(`${path.sep}node_modules${path.sep}`)) return undefined;
      const text = await readFile(args.path, "utf8");
      if (!text.includes("import.meta")) return { contents: text, loader: "ts" };
      return {
        contents: text
          .replaceAll("import.meta.url", JSON.stringify(pathToFileURL(args.path).href))
          .replaceAll("import.meta.dirname", JSON.stringify(path.dirname(args.path)))
          .replaceAll("import.meta.filename", JSON.stringify(args.path)),
        loader: "ts",
      };
    });
  },
};

export interface BundledProgram {
  /** The arguments of `node` that run it: `spawn(process.execPath, [...program.args, ...own])`. */
  args: string[];
  remove(): Promise<void>;
}

/**
 * A TypeScript program that tests start as OS processes (the CLI, src/main.ts; a child that a test
 * SIGKILLs at every step), bundled once into ES modules that plain `node` runs: the same code as
 * `node --import tsx <entry>`, without compiling and resolving its few hundred modules through
 * tsx's loader at every start (≈ 2 s of CPU for a role, measured). Packages stay outside the bundle
 * (imported as usual), every `import.meta` path stays the source's (ownImportMeta), and what the
 * program loads with `await import(…)` stays a chunk of its own, loaded only then.
 */
export async function bundleProgram(entry: string): Promise<BundledProgram> {
  // TEST_PROGRAMS_TSX=1: the source through tsx's loader instead (to compare, or to debug a child).
  if (process.env.TEST_PROGRAMS_TSX === "1")
    return { args: ["--import", "tsx", entry], remove: async () => {} };
  const dir = path.join(OUT_DIR, randomBytes(6).toString("hex"));
  const name = path.basename(entry).replace(/\.[cm]?ts$/, "");
  await build({
    entryPoints: { [name]: entry },
    outdir: dir,
    outExtension: { ".js": ".mjs" },
    // What the program imports only with `await import(…)` stays out of its start (as under tsx):
    // `stablegate --help` loads the command line's modules, not the service's.
    splitting: true,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    sourcemap: true,
    logLevel: "warning",
    plugins: [ownImportMeta],
  });
  return {
    args: ["--enable-source-maps", path.join(dir, `${name}.mjs`)],
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}
