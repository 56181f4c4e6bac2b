#!/usr/bin/env bash
# Before/after of one bench across a change: runs `npm run bench:<name>` in an old tree and in this
# one, alternating (before, after, before, after, … BENCH_PAIRS pairs, default 2), each run's output
# kept in OUT (default /tmp/bench-before-after/<name>), so host drift lands on both sides alike.
#
#   git worktree add --detach /tmp/sg-before <old commit>
#   ln -s "$PWD/node_modules" /tmp/sg-before/node_modules   # same packages for the old code
#   bench/before-after.sh /tmp/sg-before webhooks
#
# Each bench already alternates what it compares inside a run (bench/support.ts); this script only
# puts two trees side by side. Read the headline lines of the logs (each bench prints its summary).
set -euo pipefail
before="${1:?usage: bench/before-after.sh <old tree> <bench name>}"
name="${2:?usage: bench/before-after.sh <old tree> <bench name>}"
after="$(cd "$(dirname "$0")/.." && pwd)"
pairs="${BENCH_PAIRS:-2}"
out="${OUT:-/tmp/bench-before-after/$name}"
mkdir -p "$out"
for i in $(seq 1 "$pairs"); do
  for side in before after; do
    dir="$before"; [ "$side" = after ] && dir="$after"
    echo "== $name, pair $i, $side ($dir)"
    (cd "$dir" && npm run --silent "bench:$name") >"$out/$side-$i.log" 2>&1 || {
      echo "bench:$name failed in $dir (see $out/$side-$i.log)" >&2; exit 1; }
    tail -n 15 "$out/$side-$i.log"
  done
done
