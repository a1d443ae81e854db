#!/usr/bin/env bash
# Tessera's dataframe_groupby against pandas on the same generated taxi files: every
# aggregation, on the thread pool and on a 2-worker cluster, several partitions per file.
#   bash tests/dataframe/pandas_check.sh BUILD_DIR
# Exit 77 (skipped) without the Python environment.
set -euo pipefail
BUILD="$1"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PYENV="${TESSERA_PYENV:-$HOME/.cache/tessera/pyenv}"
if ! "$PYENV/bin/python" -c "import pandas, pyarrow" 2>/dev/null; then
  echo "SKIP: no Python environment with pandas at $PYENV (scripts/python_env.sh makes it)"
  exit 77
fi
DIR="$(mktemp -d)"
trap 'rm -rf "$DIR"' EXIT
"$PYENV/bin/python" "$HERE/../../benchmarks/gen_taxi_csv.py" --out "$DIR" --files 3 --rows-per-file 20000 --seed 5 >/dev/null
for scheduler in threads distributed; do
  for agg in sum mean count min max std var size; do
    for by in passenger_count payment_type; do
      line="$("$BUILD/benchmarks/dataframe_groupby" --csv "$DIR/*.csv" --by "$by" --column fare_amount --agg "$agg" \
              --scheduler "$scheduler" --blocksize 400000)"
      "$PYENV/bin/python" "$HERE/check_against_pandas.py" --csv "$DIR/*.csv" --by "$by" --column fare_amount \
        --agg "$agg" --json "$line" >/dev/null || { echo "MISMATCH: $scheduler $by $agg"; echo "$line"; exit 1; }
    done
  done
  echo "$scheduler: 8 aggregations x 2 keys equal pandas"
done
