#!/usr/bin/env bash
# The issue's "task_throughput with the dashboard open in a browser stays within 5% of the figure
# without it": a tessera-scheduler (dashboard on) with two worker processes, and
# build/benchmarks/task_throughput --scheduler ADDRESS --tasks N --repeat 3 run against it RUNS
# times with /status open in headless Chromium (kept open by --remote-debugging-port, getting
# its server-sent events in real time) and RUNS times without, alternated. Prints one line per
# run (with/without, tasks/s) and the medians.
#
#   bash benchmarks/dashboard_throughput.sh [RUNS (3)] [TASKS (100000)]
#
# $TESSERA_BUILD_DIR picks the build (default build); ?poll=1 in $PAGE_QUERY makes the page poll.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${TESSERA_BUILD_DIR:-build}"
[[ "$BUILD" = /* ]] || BUILD="$ROOT/$BUILD"
RUNS="${1:-3}"
TASKS="${2:-100000}"
CHROMIUM="$(command -v chromium || command -v chromium-browser || true)"
[ -n "$CHROMIUM" ] || { echo "chromium is not installed" >&2; exit 1; }
for b in "$BUILD/bin/tessera-scheduler" "$BUILD/benchmarks/task_throughput"; do
  [ -x "$b" ] || { echo "$b is not built" >&2; exit 1; }
done

TMP="$(mktemp -d)"
PIDS=()
BROWSER=""
cleanup() {
  [ -n "$BROWSER" ] && kill -KILL -- "-$BROWSER" 2>/dev/null || true
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT

"$BUILD/bin/tessera-scheduler" --port 0 --scheduler-file "$TMP/s.json" --dashboard-address 127.0.0.1:0 \
  --log-level warning &
PIDS+=($!)
for _ in $(seq 100); do [ -s "$TMP/s.json" ] && break; sleep 0.1; done
ADDRESS="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["address"])' "$TMP/s.json")"
PORT="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["services"]["dashboard"])' "$TMP/s.json")"
# The workers are task_throughput itself in worker mode (tessera/init.hpp), so they know its
# "noop"; one thread each, as task_throughput's own LocalCluster.
for i in 0 1; do
  "$BUILD/benchmarks/task_throughput" --tessera-worker "$ADDRESS" --nthreads 1 --name "bench-$i" --log-level warning &
  PIDS+=($!)
done
sleep 2

run() {
  "$BUILD/benchmarks/task_throughput" --scheduler "$ADDRESS" --tasks "$TASKS" --repeat 3 |
    python3 -c 'import json,sys; print(round(json.loads(sys.stdin.readline())["tasks_per_s"]))'
}
WITH=()
WITHOUT=()
for r in $(seq "$RUNS"); do
  WITHOUT+=("$(run)")
  echo "run $r without the page: ${WITHOUT[-1]} tasks/s"
  # Its own process group, so that every process of the browser goes with it.
  setsid "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
    --disable-extensions --user-data-dir="$TMP/profile" --remote-debugging-port=0 \
    "http://127.0.0.1:$PORT/status${PAGE_QUERY:-}" >/dev/null 2>&1 &
  BROWSER=$!
  sleep 8  # loaded and listening: the browser's start-up (several processes) is not measured
  WITH+=("$(run)")
  echo "run $r with the page open: ${WITH[-1]} tasks/s"
  kill -KILL -- "-$BROWSER" 2>/dev/null || true
  wait "$BROWSER" 2>/dev/null || true
  BROWSER=""
  sleep 2
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
echo "median without: $(median "${WITHOUT[@]}") tasks/s (${WITHOUT[*]})"
echo "median with the page: $(median "${WITH[@]}") tasks/s (${WITH[*]})"
