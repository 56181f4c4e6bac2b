#!/usr/bin/env bash
# The layering rule of src/ (ARCHITECTURE.md "Layers"): dependency-cruiser's rules
# (.dependency-cruiser.cjs), no folder cycles, and ARCHITECTURE.md's imports table equal to the
# code; one route shape (scripts/route-shape.mjs: a route builds no service); tables and their
# owners (scripts/table-owners.mjs: SQL against a table only in its owner, src/db/table-owners.json). `npm run lint:deps --
# --write` rewrites that table from the code.
set -uo pipefail
json=$(mktemp)
trap 'rm -f "$json"' EXIT
status=0
depcruise src --config .dependency-cruiser.cjs --output-type err || status=1
depcruise src --config .dependency-cruiser.cjs --output-type json >"$json" || true
node scripts/folder-cycles.mjs <"$json" || status=1
node scripts/folder-imports.mjs "${1:---check}" ARCHITECTURE.md <"$json" || status=1
node scripts/route-shape.mjs || status=1
node scripts/table-owners.mjs src "${1:---check}" ARCHITECTURE.md || status=1
exit $status
