#!/usr/bin/env bash
# TPC-H on Tessera's DataFrames against DuckDB: tpchgen-cli writes scale factor 0.05 into a
# scratch folder, and benchmarks/tpch_compare.py runs the written queries on the thread pool and on
# a 2-worker cluster and checks every result row against DuckDB's.
#   bash tests/dataframe/tpch_check.sh BUILD_DIR
# Exit 77 (skipped) without the Python environment's duckdb and tpchgen-cli.
set -euo pipefail
BUILD="$1"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PYENV="${TESSERA_PYENV:-$HOME/.cache/tessera/pyenv}"
if ! "$PYENV/bin/python" -c "import duckdb, pandas" 2>/dev/null || [[ ! -x "$PYENV/bin/tpchgen-cli" ]]; then
  echo "SKIP: no Python environment with duckdb and tpchgen-cli at $PYENV (scripts/python_env.sh makes it)"
  exit 77
fi
DIR="$(mktemp -d)"
trap 'rm -rf "$DIR"' EXIT
"$PYENV/bin/tpchgen-cli" parquet -s 0.05 --parts 4 --output-dir="$DIR/data" >/dev/null
"$PYENV/bin/python" "$HERE/../../benchmarks/tpch_compare.py" --data "$DIR/data" --repeat 1 \
  --engines tessera-threads,tessera-distributed,duckdb --tessera "$BUILD/benchmarks/tpch" | tee "$DIR/out.txt"
# Every Tessera line says it equals DuckDB's answer (tpch_compare.py also exits 1 when one does not).
if grep '"engine": "tessera' "$DIR/out.txt" | grep -qv '"equals_duckdb": true'; then
  echo "MISMATCH: a Tessera result differs from DuckDB's"
  exit 1
fi
