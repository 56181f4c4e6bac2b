#!/usr/bin/env bash
# Lints the published OpenAPI document (packages/sdk/openapi.json, written by `npm run api:generate`
# from the route schemas) with two tools nobody here wrote, as a merchant's generator would see it:
#   redocly lint  (the `recommended` rules, .redocly.yaml; reviewed exceptions in .redocly.lint-ignore.yaml)
#   spectral lint (the `spectral:oas` ruleset, .spectral.yaml)
# Exits non-zero on any error of either; warnings are printed (there are none today: keep it so).
set -euo pipefail
cd "$(dirname "$0")/.."
doc="${1:-packages/sdk/openapi.json}"
# Offline and private: no usage telemetry, no update check (CI reaches only the npm registry).
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true REDOCLY_SUPPRESS_NOTIFICATIONS=true

npx --no-install redocly lint "$doc" --config .redocly.yaml --max-problems 500
npx --no-install spectral lint "$doc" --ruleset .spectral.yaml --fail-severity error
