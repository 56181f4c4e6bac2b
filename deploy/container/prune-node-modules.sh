#!/bin/sh
# Trims the image's production dependencies (Containerfile, stage `deps`;
# docs/decisions/deployment.md#image-size). Usage:
#
#   prune-node-modules <app folder: package.json, package-lock.json, node_modules, dist>
#
# Only what no code path of the server loads is removed. Each removal that rests on how the server
# and its dependencies import each other is checked first, so the build fails (naming the reason)
# the day it stops holding, rather than the image failing at run time; at the end every module of
# the server is loaded against what is left.
set -eu
cd "$1"
dist=dist
size() { du -sk node_modules | cut -f1; }
before=$(size)
fail() {
  echo "prune-node-modules: $*" >&2
  exit 1
}
# JavaScript files below $1 (excluding the folder names given after it) that load package $2 by a
# bare specifier: `from "p"`, `import("p")`, `require("p")`, subpaths included.
loaders() {
  where=$1
  name=$2
  shift 2
  excludes=""
  for e in "$@"; do excludes="$excludes --exclude-dir=$e"; done
  # shellcheck disable=SC2086
  grep -rlE --include='*.js' --include='*.cjs' --include='*.mjs' $excludes \
    "(from |import\(|require\()[[:space:]]*['\"]$name(/[^'\"]*)?['\"]" "$where" || true
}

# 1. The dashboard's packages. Vite bundled them into dist/web at build time; the server imports
#    none of them. npm removes them and whatever only they needed.
for p in react react-dom react-router-dom @tanstack/react-query; do
  [ -z "$(loaders "$dist" "$p" web downloads)" ] ||
    fail "the server imports $p: take it off the dashboard-only list"
  npm pkg delete "dependencies.$p"
done
npm prune --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=warn
# The SDK workspace's link (its package is packed into dist/downloads, the server never loads it).
rm -rf node_modules/@stablegate

# 2. typescript: an optional peer dependency of viem, abitype and ox, for their types only
#    (npm installs optional peers); no JavaScript loads it.
[ -z "$(loaders node_modules typescript typescript)" ] || fail "a dependency loads typescript: keep it"
rm -rf node_modules/typescript

# 3. CommonJS and browser builds of packages that only ESM code imports (the server, and these
#    packages' own ESM builds): Node resolves their "import" condition, never these files. Each
#    entry is package:path (a folder, or a file pattern); a consumer's entry comes before those of
#    the packages it loads, whose check then no longer sees it.
for entry in tronweb:lib/commonjs tronweb:dist ethers:lib.commonjs ethers:dist viem:_cjs ox:_cjs \
  abitype:dist/cjs @fastify/type-provider-typebox:dist/cjs @sinclair/typebox:build/cjs \
  kysely:dist/cjs nodemailer:dist/cjs '@electric-sql/pglite:*.cjs'; do
  pkg=${entry%%:*}
  what=${entry#*:}
  [ -d "node_modules/$pkg" ] || continue
  users=$(grep -rlE --include='*.js' --include='*.cjs' --include='*.mjs' \
    "require\([[:space:]]*['\"]$pkg(/[^'\"]*)?['\"]" node_modules "$dist" | grep -v "^node_modules/$pkg/" || true)
  [ -z "$users" ] || fail "$pkg is loaded with require() by: $users (keep its $what)"
  case $what in
  \**) find "node_modules/$pkg" -type f -name "$what" -delete ;;
  *) rm -rf "node_modules/$pkg/$what" ;;
  esac
done

# 4. Files no program loads: source maps, type declarations, TypeScript sources, Markdown, the C
#    sources of prebuilt native add-ons.
find node_modules -type f \( -name '*.map' -o -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' \
  -o -name '*.ts' -o -name '*.mts' -o -name '*.cts' -o -name '*.tsx' -o -iname '*.md' \
  -o -iname '*.markdown' -o -name '*.c' -o -name '*.cc' -o -name '*.h' -o -name '*.gyp' \) -delete

# 5. Tests, benchmarks, examples and CI files at a package's root (a folder beside a package.json
#    with a "name": not a build's `{"type": …}` marker, so viem's actions/test stays).
find node_modules -type d \( -name test -o -name tests -o -name __tests__ -o -name benchmark \
  -o -name benchmarks -o -name example -o -name examples -o -name .github \) -prune -print |
  while read -r d; do
    if grep -qs '"name"' "$(dirname "$d")/package.json"; then rm -rf "$d"; fi
  done

# 6. Prebuilt native binaries for other systems: a loader (node-gyp-build) only ever looks in
#    prebuilds/<platform>-<arch> of the system it runs on; `.bare` add-ons load in the Bare
#    runtime only, never in Node.
here="$(node -p 'process.platform + "-" + process.arch')"
find node_modules -type d -name prebuilds -prune | while read -r d; do
  for p in "$d"/*; do
    [ "$(basename "$p")" = "$here" ] || rm -rf "$p"
  done
done
find node_modules -type f -name '*.bare' -delete

# 7. Identical files (licences, the same package version at two places in the tree) are stored
#    once: hard links, which the image's layer keeps (util-linux `hardlink`; nothing writes there).
hardlink -c -q node_modules

# 8. Every module of the server loads against what is left (importing them runs no role).
node --input-type=module -e '
import { readdirSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
const root = path.resolve("dist");
const files = [];
const walk = (dir) => {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) {
      if (dir !== root || (e.name !== "web" && e.name !== "downloads")) walk(p);
    } else if (e.name.endsWith(".js") && p !== path.join(root, "main.js")) files.push(p);
  }
};
walk(root);
let failed = 0;
for (const f of files) {
  try {
    await import(pathToFileURL(f).href);
  } catch (err) {
    failed++;
    console.error(`prune-node-modules: ${path.relative(root, f)} does not load: ${err.message}`);
  }
}
console.log(`prune-node-modules: all ${files.length} server modules load`);
process.exit(failed > 0 ? 1 : 0);
'

echo "prune-node-modules: node_modules $((before / 1024)) MB -> $(($(size) / 1024)) MB"
