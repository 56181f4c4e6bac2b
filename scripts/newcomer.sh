#!/usr/bin/env bash
# The newcomer's first hour, replayed on a fresh clone (issue #35, "Must show"): install, start on
# embedded defaults, the README's tour with every command as written, the SDK installed from the gateway into an empty ESM
# and an empty CommonJS project, then `stablegate-dev listen` + `trigger` with the delivery verified
# by the SDK in a local endpoint. Only what the README and docs/merchants/ say to run; no network
# beyond the npm registry (offline once installed). Prints each step's time, and the minutes from
# sandbox keys to a verified local webhook.
#
#   bash scripts/newcomer.sh            # clones this checkout's HEAD into a temporary folder
#
# Ports: 8080/8081 as the README says when they are free, else two free ones (PORT, SANDBOX_PORT).
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d -t sg-newcomer-XXXXXX)"
server_pid=""
listen_pid=""
endpoint_pid=""
# Each background process runs in its own session (setsid), so stopping it stops what it started
# (npm → node, npx → the CLI): the whole process group is signalled.
cleanup() {
  for pid in "$listen_pid" "$endpoint_pid" "$server_pid"; do
    [ -n "$pid" ] && kill -TERM -- "-$pid" 2>/dev/null || true
  done
  for pid in "$listen_pid" "$endpoint_pid" "$server_pid"; do
    [ -n "$pid" ] || continue
    for _ in $(seq 1 40); do kill -0 -- "-$pid" 2>/dev/null || break; sleep 0.25; done
    kill -KILL -- "-$pid" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

t0=$(date +%s)
last=$t0
step() { # step <what>: the time of the step that just ended
  local now; now=$(date +%s)
  printf '  %-62s %4d s  (total %d s)\n' "$1" $((now - last)) $((now - t0))
  last=$now
}
fail() { echo "newcomer: $*" >&2; [ -f "$work/server.log" ] && tail -20 "$work/server.log" >&2; exit 1; }
json() { node -e 'let s="";process.stdin.on("data",c=>s+=c).on("end",()=>{const v=JSON.parse(s);const p=process.argv[1].split(".");let x=v;for(const k of p)x=x?.[/^\d+$/.test(k)?Number(k):k];process.stdout.write(String(x??""))})' "$1"; }
free_port() { node -e 'const s=require("net").createServer();s.listen(Number(process.argv[1])||0,"127.0.0.1",()=>{const p=s.address().port;s.close(()=>console.log(p))}).on("error",()=>{const t=require("net").createServer();t.listen(0,"127.0.0.1",()=>{const p=t.address().port;t.close(()=>console.log(p))})})' "$1"; }

echo "newcomer replay in $work"
git clone -q "$repo" "$work/stablegate"
cd "$work/stablegate"
step "fresh clone"

# README, command 1: install and start (METRICS_TOKEN set when starting, as the tour says, for
# /readyz's detail and /metrics).
npm ci --no-audit --no-fund --loglevel error >"$work/install.log" 2>&1 || fail "npm ci failed (see above)"
step "npm ci"

PORT=$(free_port 8080)
SANDBOX_PORT=$(free_port 8081)
[ "$PORT" = "$SANDBOX_PORT" ] && SANDBOX_PORT=$(free_port 0)
export PORT SANDBOX_PORT DATA_DIR="$work/data" METRICS_TOKEN=newcomer-metrics-token-0123456789
P="http://localhost:$PORT"
S="http://localhost:$SANDBOX_PORT"
if [ "$PORT" != 8080 ] || [ "$SANDBOX_PORT" != 8081 ]; then
  export PRODUCTION_BASE_URL="$P" SANDBOX_BASE_URL="$S"
fi
setsid npm start >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 600); do
  grep -q '"stablegate listening"' "$work/server.log" 2>/dev/null && break
  kill -0 "$server_pid" 2>/dev/null || fail "npm start exited"
  sleep 0.5
done
grep -q '"stablegate listening"' "$work/server.log" || fail "npm start did not listen within 5 min"
step "npm start (first start: config check, build, listen)"

# The README's tour, every command as written (scripts/replay-readme.mjs says what it fills in and
# what it checks): a merchant and its keys, reads, a checkout paid by the simulator, funds and a
# pending withdrawal approved, `stablegate-dev listen` from the gateway, the dashboard channel,
# health and metrics, the step-up example.
node scripts/replay-readme.mjs --out "$work/tour.json" || fail "the README tour (above)"
KEY=$(json KEY <"$work/tour.json")
SECRET=$(json SECRET <"$work/tour.json")
keys_at=$(json KEYS_AT <"$work/tour.json")
step "README tour: every command as written"

# The SDK, installed from the gateway as docs/merchants/README.md says, in two empty projects.
for kind in module commonjs; do
  mkdir -p "$work/shop-$kind"
  (
    cd "$work/shop-$kind"
    printf '{"name":"shop-%s","private":true,"type":"%s"}\n' "$kind" "$kind" >package.json
    npm install --no-audit --no-fund --loglevel error "$S/downloads/stablegate-sdk.tgz" >/dev/null
  )
done
cat >"$work/shop-module/check.mjs" <<'EOF'
import { Stablegate } from "@stablegate/sdk";
const sg = new Stablegate({ apiKey: process.env.KEY, apiSecret: process.env.SECRET, baseUrl: process.env.S });
console.log((await sg.account.get()).environment);
EOF
cat >"$work/shop-commonjs/check.js" <<'EOF'
const { Stablegate } = require("@stablegate/sdk");
const sg = new Stablegate({ apiKey: process.env.KEY, apiSecret: process.env.SECRET, baseUrl: process.env.S });
sg.account.get().then((a) => console.log(a.environment));
EOF
[ "$(cd "$work/shop-module" && KEY=$KEY SECRET=$SECRET S=$S node check.mjs)" = sandbox ] || fail "SDK in an ESM project"
[ "$(cd "$work/shop-commonjs" && KEY=$KEY SECRET=$SECRET S=$S node check.js)" = sandbox ] || fail "SDK in a CommonJS project"
step "SDK from $S/downloads: import (ESM) and require (CommonJS)"

# A local endpoint that verifies every delivery with the SDK, the secret from a rotation (the
# only read of it in full), and stablegate-dev listen forwarding to it.
WEBHOOK_SECRET=$(curl -fsS -X POST "$S/api/v1/webhook/secret/rotate" -H "apikey: $KEY" -H "x-api-secret: $SECRET" \
  -H 'content-type: application/json' -d '{}' | json data.webhookSecret)
case "$WEBHOOK_SECRET" in whsec_*) ;; *) fail "no webhook secret from the rotation" ;; esac
HOOK_PORT=$(free_port 0)
cat >"$work/shop-module/endpoint.mjs" <<'EOF'
import http from "node:http";
import { verifyWebhook } from "@stablegate/sdk";
http
  .createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    try {
      const event = await verifyWebhook(Buffer.concat(chunks), req.headers, process.env.WEBHOOK_SECRET);
      console.log(`verified ${event.data.type}.${event.data.status} ${event.data.id}`);
      res.writeHead(200).end("ok");
    } catch (err) {
      console.log(`refused: ${err.message}`);
      res.writeHead(400).end("bad signature");
    }
  })
  .listen(Number(process.env.HOOK_PORT), "127.0.0.1");
EOF
(cd "$work/shop-module" && WEBHOOK_SECRET=$WEBHOOK_SECRET HOOK_PORT=$HOOK_PORT exec setsid node endpoint.mjs >"$work/endpoint.log" 2>&1) &
endpoint_pid=$!
export STABLEGATE_API_KEY=$KEY STABLEGATE_API_SECRET=$SECRET STABLEGATE_BASE_URL=$S
(cd "$work/shop-module" && exec setsid npx stablegate-dev listen --forward-to "http://127.0.0.1:$HOOK_PORT/hooks" >"$work/listen.log" 2>&1) &
listen_pid=$!
for _ in $(seq 1 120); do grep -q "^Ready" "$work/listen.log" 2>/dev/null && break; sleep 0.5; done
grep -q "^Ready" "$work/listen.log" || fail "listen did not connect: $(cat "$work/listen.log")"
(cd "$work/shop-module" && npx stablegate-dev trigger deposit.confirmed >"$work/trigger.log" 2>&1) ||
  fail "trigger: $(cat "$work/trigger.log")"
for _ in $(seq 1 60); do grep -q "^verified" "$work/endpoint.log" 2>/dev/null && break; sleep 0.5; done
grep -q "^verified" "$work/endpoint.log" || fail "no verified delivery: endpoint said $(cat "$work/endpoint.log")"
if grep -q "^refused" "$work/endpoint.log"; then fail "a delivery failed verification: $(cat "$work/endpoint.log")"; fi
verified_at=$(date +%s)
step "listen + trigger deposit.confirmed, verified by the SDK"

echo "  endpoint: $(grep '^verified' "$work/endpoint.log" | head -3 | tr '\n' ' ')"
echo "newcomer replay: OK in $((verified_at - t0)) s; from sandbox keys to a verified local webhook:" \
  "$(node -e 'console.log((Number(process.argv[1]) / 60).toFixed(1))' $((verified_at - keys_at))) min"
