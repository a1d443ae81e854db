#!/usr/bin/env bash
# The issue's "task_throughput with the dashboard open in a browser stays within 5% of the figure
# without it" (docs/benchmarks.md, "The dashboard open in a browser"): a tessera-scheduler
# (dashboard on) with two worker processes, and
# build/benchmarks/task_throughput --scheduler ADDRESS --tasks N --repeat 3 (best of 3) run
# against it RUNS times with /status open in headless Chromium (--headless=new, kept open by
# --remote-debugging-port, its page getting the server-sent events in real time) and RUNS
# times without, alternated (odd pairs start without the page, even ones with it, so neither
# side always runs second). The measured processes run at nice 0; the browser too (it is what
# is measured against).
#
#   bash benchmarks/dashboard_overhead.sh [RUNS (3)] [TASKS (100000)]
#
# Prints JSON lines: one per run ({"run", "page": "open"|"closed", "tasks_per_s", "load1" at its
# end, "dashboard_connections": TCP connections to the dashboard as it started, the open page's
# event stream among them, "wall_s" of the 3 repeats, "scheduler_cpu_s" and "browser_cpu_s":
# the CPU seconds they used meanwhile (/proc, user + system)}),
# then a summary ({"median_closed", "median_open", "difference_percent", the ranges, the
# scheduler's CPU per task with and without the page, the browser's cores while open, the load
# averages before and after, "cpus"}). $TESSERA_BUILD_DIR picks the build (default build);
# ?poll=1 in $PAGE_QUERY makes the page poll instead of taking events.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${TESSERA_BUILD_DIR:-build}"
[[ "$BUILD" = /* ]] || BUILD="$ROOT/$BUILD"
RUNS="${1:-3}"
TASKS="${2:-100000}"
CHROMIUM="$(command -v chromium || command -v chromium-browser || true)"
[ -n "$CHROMIUM" ] || { echo "chromium is not installed (apt-get install chromium)" >&2; exit 1; }
for b in "$BUILD/bin/tessera-scheduler" "$BUILD/benchmarks/task_throughput"; do
  [ -x "$b" ] || { echo "$b is not built" >&2; exit 1; }
done

TMP="$(mktemp -d)"
PIDS=()
BROWSER=""
close_browser() {
  if [ -n "$BROWSER" ]; then
    kill -KILL -- "-$BROWSER" 2>/dev/null || true  # its own process group: every process of it
    wait "$BROWSER" 2>/dev/null || true
    BROWSER=""
  fi
}
cleanup() {
  close_browser
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT
load1() { cut -d' ' -f1 /proc/loadavg; }
LOAD_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg)"

nice -n 0 "$BUILD/bin/tessera-scheduler" --port 0 --scheduler-file "$TMP/s.json" --dashboard-address 127.0.0.1:0 \
  --log-level warning &
SCHEDULER=$!
PIDS+=($SCHEDULER)
for _ in $(seq 100); do [ -s "$TMP/s.json" ] && break; sleep 0.1; done
ADDRESS="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["address"])' "$TMP/s.json")"
PORT="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["services"]["dashboard"])' "$TMP/s.json")"
# The workers are task_throughput itself in worker mode (tessera/init.hpp), so they know its
# "noop"; one thread each, as task_throughput's own LocalCluster.
for i in 0 1; do
  nice -n 0 "$BUILD/benchmarks/task_throughput" --tessera-worker "$ADDRESS" --nthreads 1 --name "bench-$i" \
    --log-level warning &
  PIDS+=($!)
done
sleep 2

open_browser() {
  rm -rf "$TMP/profile"
  setsid nice -n 0 "$CHROMIUM" --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
    --disable-extensions --user-data-dir="$TMP/profile" --remote-debugging-port=0 \
    "http://127.0.0.1:$PORT/status${PAGE_QUERY:-}" >/dev/null 2>&1 &
  BROWSER=$!
  # Open when its DevTools list the page by its title; then 8 s more for its processes to
  # settle, so the browser's start-up is not what is measured.
  local devtools=""
  for _ in $(seq 200); do
    if [ -s "$TMP/profile/DevToolsActivePort" ]; then
      devtools="$(head -1 "$TMP/profile/DevToolsActivePort")"
      curl -fs "http://127.0.0.1:$devtools/json/list" 2>/dev/null | grep -q "/status" && break
    fi
    sleep 0.1
  done
  curl -fs "http://127.0.0.1:${devtools:-0}/json/list" 2>/dev/null | grep -q "/status" ||
    { echo "the browser did not open /status" >&2; exit 1; }
  sleep 8
}

# Connections to the dashboard now: the open page holds its event stream (one at least).
dashboard_connections() { ss -Htn state established "( sport = :$PORT )" 2>/dev/null | wc -l; }
# CPU seconds (user + system) of the scheduler so far, and of the browser's processes alive now
# (its own session, setsid): what each costs during a run, less sensitive to the machine's other
# load than the throughput is.
cpu_s() {  # $1: a pid, or s:SESSION for every process of that session
  python3 - "$1" <<'PY'
import os, sys
want, total = sys.argv[1], 0
for p in filter(str.isdigit, os.listdir("/proc")):
    try:
        st = open(f"/proc/{p}/stat").read()
    except OSError:
        continue
    f = st[st.rfind(")") + 2:].split()  # f[3]: session, f[11] and f[12]: utime and stime
    if p == want or (want.startswith("s:") and f[3] == want[2:]):
        total += int(f[11]) + int(f[12])
print(total / os.sysconf("SC_CLK_TCK"))
PY
}
browser_cpu_s() { if [ -n "$BROWSER" ]; then cpu_s "s:$BROWSER"; else echo 0; fi; }
run() {  # $1: the run's number, $2: open|closed
  local tps connections s0 b0 t0
  connections="$(dashboard_connections)"
  s0="$(cpu_s "$SCHEDULER")"; b0="$(browser_cpu_s)"; t0="$(date +%s.%N)"
  tps="$(nice -n 0 "$BUILD/benchmarks/task_throughput" --scheduler "$ADDRESS" --tasks "$TASKS" --repeat 3 |
    python3 -c 'import json,sys; print(round(json.loads(sys.stdin.readline())["tasks_per_s"]))')"
  local wall sched browser
  wall="$(echo "$(date +%s.%N) - $t0" | bc)"
  sched="$(echo "$(cpu_s "$SCHEDULER") - $s0" | bc)"
  browser="$(echo "$(browser_cpu_s) - $b0" | bc)"
  printf '{"run": %d, "page": "%s", "tasks": %d, "tasks_per_s": %d, "load1": %s, "dashboard_connections": %d, "wall_s": %.2f, "scheduler_cpu_s": %.2f, "browser_cpu_s": %.2f}\n' \
    "$1" "$2" "$TASKS" "$tps" "$(load1)" "$connections" "$wall" "$sched" "$browser"
  echo "$2 $tps $sched $browser $wall" >>"$TMP/results"
}
for r in $(seq "$RUNS"); do
  if ((r % 2)); then
    run "$r" closed
    open_browser
    run "$r" open
    close_browser
  else
    open_browser
    run "$r" open
    close_browser
    sleep 2
    run "$r" closed
  fi
  sleep 2
done
python3 - "$TMP/results" "$LOAD_BEFORE" "$(cut -d' ' -f1-3 /proc/loadavg)" "$(nproc)" "$TASKS" <<'PY'
import json, statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
tasks = 3 * int(sys.argv[5])  # three repeats a run
def med(side, f):
    return statistics.median(f(r) for r in rows if r[0] == side)
tps = {k: [int(r[1]) for r in rows if r[0] == k] for k in ("closed", "open")}
m = {k: statistics.median(v) for k, v in tps.items()}
print(json.dumps({
    "median_closed": m["closed"], "median_open": m["open"],
    "difference_percent": round(100 * (m["open"] - m["closed"]) / m["closed"], 1),
    "range_closed": [min(tps["closed"]), max(tps["closed"])],
    "range_open": [min(tps["open"]), max(tps["open"])],
    "runs_each": len(tps["closed"]),
    # The scheduler's CPU per task (us) with and without the page, and the browser's CPU over
    # the runs with the page (cores: CPU seconds per second).
    "scheduler_us_per_task_closed": round(med("closed", lambda r: float(r[2])) / tasks * 1e6, 2),
    "scheduler_us_per_task_open": round(med("open", lambda r: float(r[2])) / tasks * 1e6, 2),
    "browser_cores_open": round(med("open", lambda r: float(r[3]) / float(r[4])), 3),
    "load_before": sys.argv[2], "load_after": sys.argv[3], "cpus": int(sys.argv[4])}))
PY
