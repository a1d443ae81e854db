#!/usr/bin/env bash
# Runs the seed workload, (x + 1)[::2, ::2].sum() over normal(10, 1) data in chunks, with Dask
# and with Tessera in the same run, and prints one JSON line for each plus a speedup line:
#   {"benchmark":"seed_array","impl":"dask",...,"seconds":..,"value":..,"expected":..}
#   {"benchmark":"seed_array",...}                              (build/benchmarks/seed_array)
#   {"benchmark":"seed_array_speedup","tessera_seconds":..,"dask_seconds":..,"speedup":..}
#
#   bash benchmarks/compare_dask.sh [--n 20000] [--chunk 2000] [--scheduler threads|sync]
#
# Dask comes from PyPI in a virtual environment (.venv-dask, or $TESSERA_DASK_VENV), made on
# first use; where pip cannot install it, Debian's python3-dask is used instead.
# Tessera must be built first (bash scripts/build.sh); $TESSERA_BUILD_DIR picks the build.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

N=20000
CHUNK=2000
SCHEDULER=threads
usage() { sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
while (($#)); do
  case "$1" in
    --n) N="$2"; shift 2 ;;
    --n=*) N="${1#*=}"; shift ;;
    --chunk) CHUNK="$2"; shift 2 ;;
    --chunk=*) CHUNK="${1#*=}"; shift ;;
    --scheduler) SCHEDULER="$2"; shift 2 ;;
    --scheduler=*) SCHEDULER="${1#*=}"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "compare_dask: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
done
case "$SCHEDULER" in
  threads|sync) ;;
  *) echo "compare_dask: --scheduler must be threads or sync (got $SCHEDULER)" >&2; exit 2 ;;
esac

BUILD_DIR="${TESSERA_BUILD_DIR:-build}"
VENV="${TESSERA_DASK_VENV:-$ROOT/.venv-dask}"
log() { echo "compare_dask: $*" >&2; }

source "$ROOT/benchmarks/dask/find_python.sh"

PY="$(find_dask_python)"
log "Dask: $PY ($("$PY" -c 'import dask; print(dask.__version__)'))"

DASK_JSON="$("$PY" benchmarks/dask/seed_array.py --n "$N" --chunk "$CHUNK" --scheduler "$SCHEDULER")"
echo "$DASK_JSON"

SEED_BIN="$BUILD_DIR/benchmarks/seed_array"
if [[ ! -x "$SEED_BIN" ]]; then
  log "$SEED_BIN is missing: build Tessera first (bash scripts/build.sh); no comparison made"
  exit 1
fi
TESSERA_OUT="$("$SEED_BIN" --n "$N" --chunk "$CHUNK" --scheduler "$SCHEDULER")"
TESSERA_JSON="$(grep -m1 '"benchmark" *: *"seed_array"' <<<"$TESSERA_OUT" || true)"
if [[ -z "$TESSERA_JSON" ]]; then
  log "$SEED_BIN printed no seed_array JSON line; it printed:"
  echo "$TESSERA_OUT" >&2
  exit 1
fi
echo "$TESSERA_JSON"

"$PY" - "$TESSERA_JSON" "$DASK_JSON" <<'PYEOF'
import json, sys
t, d = json.loads(sys.argv[1]), json.loads(sys.argv[2])
ts, ds = float(t["seconds"]), float(d["seconds"])
print(json.dumps({
    "benchmark": "seed_array_speedup",
    "n": d["n"], "chunk": d["chunk"], "scheduler": d["scheduler"],
    "tessera_seconds": ts, "dask_seconds": ds,
    "speedup": round(ds / ts, 3) if ts > 0 else None,
    "tessera_value": t.get("value"), "dask_value": d.get("value"), "expected": d.get("expected"),
}))
PYEOF
