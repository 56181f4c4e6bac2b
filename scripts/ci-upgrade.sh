#!/usr/bin/env bash
# The upgrade check (issue #42, docs/decisions/upgrades.md): this tree's migrations run while the
# previous release serves, as the README's "Upgrading" says an operator does it — and not one of the
# previous release's requests fails.
#
#   1. the previous release (deploy/previous-release) checked out in a git worktree, `npm ci` there;
#   2. a fresh PostgreSQL database: the previous release's `migrate`, `db roles` and
#      `merchant create --json`, then its `api` role (production mode, its own database login);
#   3. a load against that api (scripts/ci-upgrade-load.mjs: account, balance, transactions, checkout
#      sessions with an Idempotency-Key and their replay, the session, its hosted page and live
#      status) before, WHILE this tree's `migrate` runs, and after;
#   4. this tree's `api` on the same database beside the old one, and the previous release's `api`
#      started again (as a rollback would): the load goes on across the three (created on one, read
#      on another); a session from before the upgrade and one priced in fiat by the new api answer
#      the same on each.
# Every request must get its expected answer (no 5xx, no error of any kind). Prints the migrations
# applied, the requests per phase and each phase's time. The worktree, the processes this script
# started and the database (and its login roles) are removed on exit, failed or not.
#
#   bash scripts/ci-upgrade.sh               # PostgreSQL on 127.0.0.1:5432, user postgres (trust)
#   PREVIOUS_RELEASE=<commit> bash scripts/ci-upgrade.sh     # another previous release
#   UPGRADE_PG_URL=postgres://user@host:port/postgres bash scripts/ci-upgrade.sh
#   UPGRADE_LOG_DIR=<dir> bash scripts/ci-upgrade.sh         # keep the logs and load.json there
#
# Needs this tree's node_modules (`npm ci`), git history back to the previous release (a shallow
# clone is unshallowed), psql, and free local ports.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
PG_ADMIN_URL="${UPGRADE_PG_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
LOAD_WORKERS="${UPGRADE_LOAD_WORKERS:-3}"
SETTLE_SECONDS="${UPGRADE_SETTLE_SECONDS:-5}" # the load before and after the migration, and across the releases

work="$(mktemp -d -t sg-upgrade-XXXXXX)"
db="sg_upgrade_$(date +%s)_$$"
old="$work/old"
declare -A api_pids=()
pids=() # only processes this script started, each the leader of its own session (setsid)
worktree_added=""
db_created=""

t0=$(date +%s%N)
last=$t0
timings=()
step() { # step <what>: the time of the step that just ended
  local now
  now=$(date +%s%N)
  timings+=("$(printf '  %-66s %6.1f s' "$1" "$(awk "BEGIN{print ($now-$last)/1e9}")")")
  printf '== %-66s %6.1f s\n' "$1" "$(awk "BEGIN{print ($now-$last)/1e9}")"
  last=$now
}

stop_pid() { # stop_pid <pid>: TERM to its process group, up to 15 s, then KILL
  local pid=$1
  kill -TERM -- "-$pid" 2>/dev/null || return 0
  for _ in $(seq 1 60); do kill -0 -- "-$pid" 2>/dev/null || return 0; sleep 0.25; done
  kill -KILL -- "-$pid" 2>/dev/null || true
}

cleanup() {
  local code=$?
  set +e
  for pid in "${pids[@]}"; do stop_pid "$pid"; done
  if [ -n "$db_created" ]; then
    psql_admin -c "drop database if exists \"$db\" with (force)" >/dev/null
    # `db roles` made cluster-wide login roles named after the database: theirs only.
    for role in api worker signer; do psql_admin -c "drop role if exists \"${db}_${role}_login\"" >/dev/null; done
  fi
  if [ -n "$worktree_added" ]; then
    git -C "$repo" worktree remove --force "$old" >/dev/null 2>&1
    git -C "$repo" worktree prune
  fi
  if [ -n "${UPGRADE_LOG_DIR:-}" ]; then
    mkdir -p "$UPGRADE_LOG_DIR" && cp "$work"/*.log "$work"/*.json "$work"/*.txt "$UPGRADE_LOG_DIR"/ 2>/dev/null
  fi
  rm -rf "$work"
  if [ "$code" -eq 0 ]; then
    echo "upgrade check: OK in $(awk "BEGIN{printf \"%.1f\", ($(date +%s%N)-$t0)/1e9}") s"
  else
    echo "upgrade check: FAILED (exit $code)" >&2
  fi
  exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
  echo "upgrade check: $*" >&2
  for log in "$work"/*.log; do
    [ -f "$log" ] || continue
    echo "--- last lines of $(basename "$log")" >&2
    tail -n 15 "$log" | cut -c 1-400 >&2
  done
  exit 1
}

psql_admin() { psql "$PG_ADMIN_URL" -X -q -v ON_ERROR_STOP=1 "$@"; }
psql_db() { psql "${PG_ADMIN_URL%/*}/$db" -X -q -At -v ON_ERROR_STOP=1 "$@"; }

free_ports() { # free_ports <n>: n distinct free local ports (all held open until every one is known)
  node -e 'const net=require("net");const n=Number(process.argv[1]);const ss=[];const next=()=>{if(ss.length===n){console.log(ss.map((s)=>s.address().port).join(" "));ss.forEach((s)=>s.close());return}const s=net.createServer();ss.push(s);s.listen(0,"127.0.0.1",next)};next()' "$1"
}

# Each stablegate process gets this environment and nothing of the caller's (a DATABASE_URL or
# MASTER_MNEMONIC of the CI job must not leak in). Production mode, as an operator runs it: the
# api derives addresses from MASTER_XPUBS and holds no mnemonic; both releases are given the same
# secrets, so either one reads what the other wrote (sessions, sealed secrets).
sg_env() { # the environment of every stablegate process of this check
  printf '%s\0' PATH="$PATH" HOME="$HOME" NODE_ENV=production LOG_FORMAT=json DATABASE_URL="$owner_url" \
    JWT_SECRET="$JWT_SECRET" SECRET_ENCRYPTION_KEY="$SECRET_ENCRYPTION_KEY" METRICS_TOKEN="$METRICS_TOKEN" \
    FIXED_RATES="EUR=1.08" RATE_LIMIT_STANDARD=1000000 RATE_LIMIT_FINANCIAL=1000000 \
    RATE_LIMIT_WALLET=1000000 RATE_LIMIT_PUBLIC_PAGE=1000000 RATE_LIMIT_DASHBOARD=1000000
  [ -z "${NODE_EXTRA_CA_CERTS:-}" ] || printf '%s\0' NODE_EXTRA_CA_CERTS="$NODE_EXTRA_CA_CERTS"
  [ -z "$MASTER_XPUBS" ] || printf '%s\0' MASTER_XPUBS="$MASTER_XPUBS"
}

sg() { # sg <tree> <data dir> [VAR=value...] -- <stablegate arguments>: one command, in the foreground
  local tree=$1 data=$2 vars=() base=()
  shift 2
  while [ "$1" != "--" ]; do vars+=("$1"); shift; done
  shift
  mapfile -d '' base < <(sg_env)
  (cd "$tree" && exec env -i "${base[@]}" DATA_DIR="$data" "${vars[@]}" node_modules/.bin/tsx src/main.ts "$@")
}

launch_api() { # launch_api <name> <tree> <port> <sandbox port>: the api role in the background
  local name=$1 tree=$2 port=$3 sandbox_port=$4 base=()
  mapfile -d '' base < <(sg_env)
  # Its own session (setsid: the pid stays the same), so stopping it stops tsx's child too.
  (cd "$tree" && exec setsid env -i "${base[@]}" DATA_DIR="$work/data-$name" DATABASE_URL="$api_url" \
    PORT="$port" SANDBOX_PORT="$sandbox_port" node_modules/.bin/tsx src/main.ts api) >"$work/api-$name.log" 2>&1 &
  api_pids[$name]=$!
  pids+=("$!")
}

wait_api() { # wait_api <name>: until it listens
  local name=$1
  for _ in $(seq 1 480); do
    grep -q '"stablegate listening"' "$work/api-$name.log" 2>/dev/null && return 0
    kill -0 "${api_pids[$name]}" 2>/dev/null || fail "the $name api exited while starting"
    sleep 0.25
  done
  fail "the $name api did not listen within 120 s"
}

set_phase() { # the load counts each request under the phase current when it started
  echo "$1" >"$PHASE_FILE.next" && mv "$PHASE_FILE.next" "$PHASE_FILE"
}

stop_load() { # the load's summary (per phase) on standard output; false when a request failed
  [ -n "${load_pid:-}" ] || return 0
  touch "$STOP_FILE"
  local ok=0
  wait "$load_pid" || ok=1
  load_pid=""
  echo "Requests (phase: count, failures, latency; per api; per operation):"
  cat "$work/load.out"
  return $ok
}

check_load() { # check_load <when>: stop at the first failed request
  [ -f "$OUT.failed" ] || return 0
  stop_load || true
  fail "a request failed $1 (above; every request in $OUT)"
}

schema_state() { # the applied migrations and function files, one per line
  psql_db -c "select lpad(version::text, 4, '0') || '_' || name from schema_migrations order by version"
  psql_db -c "select 'functions/' || name || ' (' || left(checksum, 12) || ')' from schema_functions order by name"
}

# --- the previous release -------------------------------------------------------------------------
command -v psql >/dev/null || fail "psql is needed (apt-get install postgresql-client)"
[ -x node_modules/.bin/tsx ] || fail "this tree's node_modules are missing: run npm ci first"
release_file="$repo/deploy/previous-release"
PREVIOUS_RELEASE="${PREVIOUS_RELEASE:-$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$release_file" | head -n 1 | tr -d '[:space:]')}"
[ -n "$PREVIOUS_RELEASE" ] || fail "no commit in $release_file"
if [ "$(git rev-parse --is-shallow-repository)" = true ]; then
  echo "a shallow clone: fetching the history back to the previous release"
  git fetch --quiet --unshallow ||
    fail "cannot unshallow this clone; clone with full history (the previous release $PREVIOUS_RELEASE is needed)"
fi
git cat-file -e "$PREVIOUS_RELEASE^{commit}" 2>/dev/null ||
  fail "the previous release $PREVIOUS_RELEASE ($release_file) is not in this clone's history"
previous_short=$(git rev-parse --short "$PREVIOUS_RELEASE")
changed=$(git diff --name-only "$PREVIOUS_RELEASE" HEAD -- migrations/ | tr '\n' ' ')
echo "previous release $previous_short ($(git log -1 --format=%cs "$PREVIOUS_RELEASE")); migrations/ changed since: ${changed:-none}"
[ -n "$changed" ] || echo "note: no migration differs from the previous release's: $release_file names an older release when the schema changed"

git worktree add --quiet --detach "$old" "$PREVIOUS_RELEASE"
worktree_added=1
step "worktree of the previous release $previous_short"

# The account keys' public half, derived the way the signer host prints it (`signer export-xpubs`),
# while the previous release installs: both releases' apis derive the same addresses from it.
JWT_SECRET=$(node -e 'console.log(require("crypto").randomBytes(32).toString("hex"))')
SECRET_ENCRYPTION_KEY=$(node -e 'console.log(require("crypto").randomBytes(32).toString("hex"))')
METRICS_TOKEN=upgrade-check-metrics-token
MASTER_XPUBS=""
owner_url="${PG_ADMIN_URL%/*}/$db"
sg "$repo" "$work/data-signer" \
  MASTER_MNEMONIC="test test test test test test test test test test test junk" NODE_ENV=development -- \
  signer export-xpubs >"$work/xpubs.out" 2>"$work/xpubs.log" &
xpubs_pid=$!
(cd "$old" && npm ci --no-audit --no-fund --prefer-offline --loglevel error) >"$work/npm-ci.log" 2>&1 ||
  fail "npm ci of the previous release failed"
wait "$xpubs_pid" || fail "signer export-xpubs failed"
MASTER_XPUBS=$(sed -n 's/^MASTER_XPUBS=//p' "$work/xpubs.out")
[ -n "$MASTER_XPUBS" ] || fail "signer export-xpubs printed no MASTER_XPUBS"
step "npm ci of the previous release (and the account xpubs)"

# --- its database, its merchant, its api ----------------------------------------------------------
pg_isready -q -d "$PG_ADMIN_URL" 2>/dev/null || fail "PostgreSQL does not answer at $PG_ADMIN_URL"
psql_admin -c "create database \"$db\""
db_created=1
sg "$old" "$work/data-cli" -- migrate >"$work/migrate-old.log" 2>&1 || fail "the previous release's migrate failed"
# The api's own login (least privilege, as in production: README "Production: database roles") and
# the merchant, side by side.
sg "$old" "$work/data-cli" -- db roles --json >"$work/roles.json" 2>"$work/roles.log" &
roles_pid=$!
sg "$old" "$work/data-cli" -- merchant create --json --email upgrade@example.com --company "Upgrade check" \
  >"$work/merchant.json" 2>"$work/merchant.log" || fail "the previous release's merchant create failed"
wait "$roles_pid" || fail "the previous release's db roles failed"
api_url=$(node -e 'const r=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8"));console.log(r.find((x)=>x.role==="api").url)' "$work/roles.json")
API_KEY=$(node -e 'const m=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8"));console.log(m.keys.find((k)=>k.environment==="sandbox").apiKey)' "$work/merchant.json")
schema_state >"$work/schema-before.txt"
echo "database $db"
step "fresh database: previous migrate, db roles, merchant create"

read -r old_port old_sandbox_port new_port new_sandbox_port back_port back_sandbox_port < <(free_ports 6)
launch_api old "$old" "$old_port" "$old_sandbox_port"
wait_api old
step "previous release's api up (production mode, its own login)"

# --- the load, and the migration under it ---------------------------------------------------------
# old: the previous release's api, up all along; new: this tree's; old-again: the previous release
# started after the migration (a rollback runs it on the new schema).
export TARGETS="[{\"name\":\"old\",\"base\":\"http://127.0.0.1:$old_sandbox_port\"},{\"name\":\"new\",\"base\":\"http://127.0.0.1:$new_sandbox_port\",\"from\":\"both-releases\"},{\"name\":\"old-again\",\"base\":\"http://127.0.0.1:$back_sandbox_port\",\"from\":\"both-releases\"}]"
export API_KEY PHASE_FILE="$work/phase" STOP_FILE="$work/stop" STATE_FILE="$work/state.json" \
  OUT="$work/load.json" WORKERS="$LOAD_WORKERS"
node scripts/ci-upgrade-load.mjs pre || fail "the previous release's api does not serve a session"
set_phase before-migrate
(exec setsid node scripts/ci-upgrade-load.mjs load) >"$work/load.out" 2>"$work/load.log" &
load_pid=$!
pids+=("$load_pid")
sleep "$SETTLE_SECONDS"
step "load on the previous release's api"
check_load "before the migration"

set_phase during-migrate
sg "$repo" "$work/data-cli" -- migrate >"$work/migrate-new.log" 2>&1 || fail "this tree's migrate failed"
set_phase after-migrate
step "this tree's migrate, under the load"
check_load "while this tree's migrate ran"
sleep "$SETTLE_SECONDS"
step "load on the previous release's api after the migration"
check_load "after the migration"

set_phase new-api-start
launch_api new "$repo" "$new_port" "$new_sandbox_port"
launch_api old-again "$old" "$back_port" "$back_sandbox_port"
wait_api new
wait_api old-again
step "this tree's api and the previous one restarted, beside the first"
check_load "while this tree's api started"
set_phase both-releases
sleep "$SETTLE_SECONDS"
load_ok=1
stop_load >"$work/load-summary.txt" || load_ok=""
step "load across both releases' apis"
[ -n "$load_ok" ] || { cat "$work/load-summary.txt"; fail "a request failed with both releases serving (above; every request in $OUT)"; }

node scripts/ci-upgrade-load.mjs post || fail "the apis do not answer the same sessions"
step "sessions from before and after the upgrade, read on every api"

# --- what happened --------------------------------------------------------------------------------
schema_state >"$work/schema-after.txt"
echo
echo "Applied by this tree's migrate (schema_migrations, schema_functions: after minus before):"
applied=$(comm -13 <(sort "$work/schema-before.txt") <(sort "$work/schema-after.txt") | sort)
if [ -n "$applied" ]; then sed 's/^/  /' <<<"$applied"; else echo "  nothing"; fi
# Each migration's transaction start (applied_at = now()): the span of the schema changes proper,
# within the migrate process's time below (most of which is starting it).
psql_db -c "select '  from the first migration''s transaction to the last one''s: ' ||
  coalesce(round(extract(epoch from max(applied_at) - min(applied_at)) * 1000)::text || ' ms', '-')
  from schema_migrations where version > $(sed -n 's/^\([0-9]\{4\}\)_.*/\1/p' "$work/schema-before.txt" | sort -n | tail -n 1 | sed 's/^0*//')"
echo
cat "$work/load-summary.txt"
errors=$(grep -hE '"level":(50|60)' "$work"/api-*.log || true)
echo
for name in old new old-again; do
  echo "the $name api logged $(grep -cE '"level":(50|60)' "$work/api-$name.log") errors," \
    "$(grep -c '"level":40' "$work/api-$name.log") warnings$(grep -h '"level":40' "$work/api-$name.log" |
      node -e 'let s="";process.stdin.on("data",c=>s+=c).on("end",()=>{const m=[...new Set(s.split("\n").filter(Boolean).map(l=>JSON.parse(l).msg))];process.stdout.write(m.length?": "+m.join("; ").slice(0,400):"")})')"
done
echo
echo "Phase times:"
printf '%s\n' "${timings[@]}"
[ -z "$errors" ] || fail "the apis logged errors: $(head -c 2000 <<<"$errors")"
