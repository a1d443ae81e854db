#!/usr/bin/env bash
# Writes TPC-H data as Parquet for benchmarks/tpch/run.py (and benchmarks/tpch_compare.py):
# tpchgen-cli from the Python environment (scripts/python_env.sh), one folder per table
# (DIR/lineitem/lineitem.1.parquet, ...), each table split into PARTS files.
#
#   bash scripts/tpch_data.sh SCALE DIR [PARTS]
#
# PARTS defaults to 4 below scale factor 10 and 16 from 10 on, so that a file of lineitem stays
# near 50-200 MB and the engines have several files to read in parallel. Nothing is written
# when DIR/lineitem exists already. The tables are generated into a scratch folder inside DIR
# and moved into place with lineitem last, so an interrupted run never leaves a DIR/lineitem
# that a later call would take for complete data.
#
# Environment: TESSERA_PYENV (default ~/.cache/tessera/pyenv).
set -euo pipefail

if [[ $# -lt 2 || $# -gt 3 ]]; then
  echo "usage: $0 SCALE DIR [PARTS]" >&2
  exit 2
fi
SCALE="$1"
DIR="$2"
if [[ $# -eq 3 ]]; then
  PARTS="$3"
elif awk -v s="$SCALE" 'BEGIN { exit !(s >= 10) }'; then
  PARTS=16
else
  PARTS=4
fi

if [[ -d "$DIR/lineitem" ]]; then
  echo "tpch_data: $DIR/lineitem exists; nothing to do"
  exit 0
fi

PYENV="${TESSERA_PYENV:-$HOME/.cache/tessera/pyenv}"
GEN="$PYENV/bin/tpchgen-cli"
if [[ ! -x "$GEN" ]]; then
  echo "tpch_data: no $GEN (bash scripts/python_env.sh installs tpchgen-cli)" >&2
  exit 1
fi

mkdir -p "$DIR"
SCRATCH="$DIR/.tpchgen-partial"
rm -rf "$SCRATCH"
trap 'rm -rf "$SCRATCH"' EXIT
echo "tpch_data: scale factor $SCALE, $PARTS files per table, into $DIR"
"$GEN" parquet --scale-factor "$SCALE" --parts "$PARTS" --output-dir "$SCRATCH" --quiet
for table in region nation supplier customer part partsupp orders lineitem; do
  rm -rf "${DIR:?}/$table"
  mv "$SCRATCH/$table" "$DIR/$table"
done
echo "tpch_data: done"
