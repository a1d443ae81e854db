#!/usr/bin/env bash
# Runs Tessera's distributed benchmark binaries and their Dask distributed counterparts
# (benchmarks/dask/distributed_bench.py) side by side, and prints each side's JSON line plus a
# ratio line per benchmark (above 1 means Tessera is better):
#   throughput   build/benchmarks/task_throughput --tasks N     tasks_per_s  tessera / dask
#   latency      build/benchmarks/latency --round-trips N       median_us    dask / tessera
#   large_graph  build/benchmarks/large_graph --tasks N         tasks_per_s  tessera / dask
#   transfer     build/benchmarks/transfer --megabytes M        gb_per_s     tessera / dask
#   seed         build/benchmarks/seed_array --scheduler distributed --n N --chunk C
#                                                               seconds      dask / tessera
#
#   bash benchmarks/compare_distributed.sh [BENCHMARK...] [--workers 2] [--threads 1]
#        [--tasks 20000] [--round-trips 1000] [--large-tasks 100000] [--megabytes 256]
#        [--n 20000] [--chunk 2000] [--repeat R] [--dask-only | --tessera-only]
#
# With no BENCHMARK all five run, e.g. `compare_distributed.sh latency seed` runs two. Both
# sides get --workers/--threads (2 and 1: LocalCluster(n_workers=2, threads_per_worker=1,
# processes=True) on the Dask side); --repeat goes to the Dask side only (its default: 1,
# seed and transfer 3; the best run is reported). A Tessera binary that is not built is
# skipped with a message; one that fails is reported and makes the exit status 1.
# Dask comes from PyPI in a virtual environment (.venv-dask, or $TESSERA_DASK_VENV), made on
# first use, as in compare_dask.sh; $TESSERA_BUILD_DIR picks Tessera's build (default build).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

ALL=(throughput latency large_graph transfer seed)
SELECTED=()
WORKERS=2
THREADS=1
TASKS=20000
ROUND_TRIPS=1000
LARGE_TASKS=100000
MEGABYTES=256
N=20000
CHUNK=2000
REPEAT=""
RUN_DASK=1
RUN_TESSERA=1
usage() { sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
need() { [[ $# -ge 2 && -n "$2" ]] || { echo "compare_distributed: $1 needs a value" >&2; exit 2; }; }
while (($#)); do
  case "$1" in
    --workers) need "$@"; WORKERS="$2"; shift 2 ;;
    --threads) need "$@"; THREADS="$2"; shift 2 ;;
    --tasks) need "$@"; TASKS="$2"; shift 2 ;;
    --round-trips) need "$@"; ROUND_TRIPS="$2"; shift 2 ;;
    --large-tasks) need "$@"; LARGE_TASKS="$2"; shift 2 ;;
    --megabytes) need "$@"; MEGABYTES="$2"; shift 2 ;;
    --n) need "$@"; N="$2"; shift 2 ;;
    --chunk) need "$@"; CHUNK="$2"; shift 2 ;;
    --repeat) need "$@"; REPEAT="$2"; shift 2 ;;
    --*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}" ;;
    --dask-only) RUN_TESSERA=0; shift ;;
    --tessera-only) RUN_DASK=0; shift ;;
    -h|--help) usage; exit 0 ;;
    throughput|latency|large_graph|transfer|seed) SELECTED+=("$1"); shift ;;
    large-graph) SELECTED+=(large_graph); shift ;;
    *) echo "compare_distributed: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
done
((${#SELECTED[@]})) || SELECTED=("${ALL[@]}")

BUILD_DIR="${TESSERA_BUILD_DIR:-build}"
VENV="${TESSERA_DASK_VENV:-$ROOT/.venv-dask}"
log() { echo "compare_distributed: $*" >&2; }

source "$ROOT/benchmarks/dask/find_python.sh"

# The ratio lines are computed with Python: the Dask one where there is one, else python3.
PY=python3
if ((RUN_DASK)); then
  PY="$(find_dask_python)"
  log "Dask: $PY ($("$PY" -c 'import dask; print(dask.__version__)'))"
fi

# Prints the last JSON object line of stdin that has the key $1 (nothing when there is none).
json_with() {
  "$PY" -c '
import json, sys
found = None
for line in sys.stdin:
    line = line.strip()
    if not line.startswith("{"):
        continue
    try:
        obj = json.loads(line)
    except ValueError:
        continue
    if isinstance(obj, dict) and sys.argv[1] in obj:
        found = line
if found:
    print(found)
' "$1"
}

STATUS=0

# run_dask SUBCOMMAND FIGURE ARGS... -> the Dask JSON line in $RESULT (empty on failure).
# (Results go through a variable, not stdout, so that STATUS is set in this shell.)
RESULT=""
run_dask() {
  local sub="$1" figure="$2"; shift 2
  RESULT=""
  ((RUN_DASK)) || return 0
  local extra=(--workers "$WORKERS" --threads "$THREADS")
  [[ -z "$REPEAT" ]] || extra+=(--repeat "$REPEAT")
  local out
  if ! out="$("$PY" benchmarks/dask/distributed_bench.py "$sub" "$@" "${extra[@]}")"; then
    log "dask $sub failed"; STATUS=1; return 0
  fi
  out="$(json_with "$figure" <<<"$out")"
  [[ -n "$out" ]] || { log "dask $sub printed no JSON line with \"$figure\""; STATUS=1; }
  RESULT="$out"
}

# run_tessera BINARY FIGURE ARGS... -> the Tessera JSON line in $RESULT (empty when skipped).
run_tessera() {
  local name="$1" figure="$2"; shift 2
  RESULT=""
  ((RUN_TESSERA)) || return 0
  local bin="$BUILD_DIR/benchmarks/$name"
  if [[ ! -x "$bin" ]]; then
    log "$bin is not built (yet): skipping Tessera's side of this benchmark"
    return 0
  fi
  local out rc=0
  out="$("$bin" "$@" --workers "$WORKERS" --threads "$THREADS" 2>&1)" || rc=$?
  local line
  line="$(json_with "$figure" <<<"$out")"
  if ((rc != 0)) || [[ -z "$line" ]]; then
    log "$bin $* --workers $WORKERS --threads $THREADS failed (exit $rc) or printed no JSON line with \"$figure\"; it printed:"
    echo "$out" | tail -n 20 >&2
    STATUS=1
    return 0
  fi
  if grep -q '"correct": *false' <<<"$line"; then
    log "$bin reported a wrong result (\"correct\": false)"; STATUS=1
  fi
  RESULT="$line"
}

# ratio NAME FIGURE HOW TESSERA_JSON DASK_JSON: HOW is tessera/dask or dask/tessera.
ratio() {
  local name="$1" figure="$2" how="$3" t="$4" d="$5"
  if [[ -z "$t" || -z "$d" ]]; then
    log "$name: no ratio (a side is missing)"
    return 0
  fi
  "$PY" - "$name" "$figure" "$how" "$t" "$d" <<'PYEOF'
import json, sys
name, figure, how = sys.argv[1:4]
t, d = json.loads(sys.argv[4]), json.loads(sys.argv[5])
tv, dv = float(t[figure]), float(d[figure])
num, den = (tv, dv) if how == "tessera/dask" else (dv, tv)
out = {
    "benchmark": name + "_ratio", "figure": figure, "ratio_is": how,
    "tessera_" + figure: tv, "dask_" + figure: dv,
    "ratio": round(num / den, 3) if den > 0 else None,
}
# large_graph: the scheduler's memory per task too, where both sides report it.
key = "scheduler_bytes_per_task"
tm = t.get(key, t.get("scheduler_peak_rss_bytes_per_task"))
dm = d.get(key, d.get("scheduler_peak_rss_bytes_per_task"))
if tm is not None and dm is not None:
    out["tessera_" + key], out["dask_" + key] = tm, dm
    out["memory_ratio"] = round(float(dm) / float(tm), 3) if float(tm) > 0 else None
    out["memory_ratio_is"] = "dask/tessera"
for side, obj in (("tessera", t), ("dask", d)):
    if obj.get("correct") is False:
        out[side + "_correct"] = False
print(json.dumps(out))
PYEOF
}

for b in "${SELECTED[@]}"; do
  case "$b" in
    throughput)
      run_tessera task_throughput tasks_per_s --tasks "$TASKS"; T="$RESULT"
      run_dask throughput tasks_per_s --tasks "$TASKS"; D="$RESULT"
      name=task_throughput figure=tasks_per_s how=tessera/dask ;;
    latency)
      run_tessera latency median_us --round-trips "$ROUND_TRIPS"; T="$RESULT"
      run_dask latency median_us --round-trips "$ROUND_TRIPS"; D="$RESULT"
      name=latency figure=median_us how=dask/tessera ;;
    large_graph)
      run_tessera large_graph tasks_per_s --tasks "$LARGE_TASKS"; T="$RESULT"
      run_dask large_graph tasks_per_s --tasks "$LARGE_TASKS"; D="$RESULT"
      name=large_graph figure=tasks_per_s how=tessera/dask ;;
    transfer)
      run_tessera transfer gb_per_s --megabytes "$MEGABYTES"; T="$RESULT"
      run_dask transfer gb_per_s --megabytes "$MEGABYTES"; D="$RESULT"
      name=transfer figure=gb_per_s how=tessera/dask ;;
    seed)
      run_tessera seed_array seconds --scheduler distributed --n "$N" --chunk "$CHUNK"; T="$RESULT"
      run_dask seed seconds --n "$N" --chunk "$CHUNK"; D="$RESULT"
      name=seed_array_distributed figure=seconds how=dask/tessera ;;
  esac
  [[ -z "$D" ]] || echo "$D"
  [[ -z "$T" ]] || echo "$T"
  ratio "$name" "$figure" "$how" "$T" "$D"
done
exit "$STATUS"
