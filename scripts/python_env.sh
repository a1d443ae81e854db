#!/usr/bin/env bash
# Creates (or completes) the Python virtual environment Tessera's dataframe layer, its tests and
# its side-by-side benchmarks use, with pinned versions:
#   - pyarrow: its wheel carries Apache Arrow C++ (headers and shared libraries), which Debian
#     does not package; CMake finds them through this environment (cmake/TesseraArrow.cmake).
#   - pandas: the reference the dataframe tests compare results with.
#   - moto[server]: a local S3-compatible server for the s3:// tests.
#   - tpchgen-cli: writes TPC-H data (benchmarks/tpch.py).
#   - dask[dataframe], distributed, polars, duckdb: the engines the dataframe benchmarks run
#     beside Tessera (benchmarks/dataframe_compare.py, benchmarks/merge_compare.py).
#   - kubernetes-validate: checks deploy/kubernetes/ against Kubernetes' schemas, offline (the
#     ctest deploy_kubernetes_manifests); Debian packages no such checker.
#
# Environment: TESSERA_PYENV (default ~/.cache/tessera/pyenv): where the environment lives,
# outside the checkout so fresh clones share it. Safe to run again: it only checks versions.
set -euo pipefail

PYENV="${TESSERA_PYENV:-$HOME/.cache/tessera/pyenv}"
PINS=(pyarrow==26.0.1 pandas==3.1.1 "moto[server]==5.2.5" "dask[dataframe]==2026.8.0" distributed==2026.8.0 polars==2.1.0 duckdb==2.0.1 tpchgen-cli==4.0.0 kubernetes-validate==1.37.0)

# The interpreter that makes the environment: Debian's python3 (python3-venv is in setup.sh).
PYTHON="${TESSERA_PYTHON:-}"
if [[ -z "$PYTHON" ]]; then
  if [[ -x /usr/bin/python3 ]]; then PYTHON=/usr/bin/python3; else PYTHON="$(command -v python3)"; fi
fi

if [[ ! -x "$PYENV/bin/python" ]]; then
  echo "python_env: creating $PYENV"
  "$PYTHON" -m venv "$PYENV"
fi

if "$PYENV/bin/python" - "${PINS[@]}" <<'PY' 2>/dev/null; then
import sys
from importlib.metadata import version
for pin in sys.argv[1:]:
    name, want = pin.split("==")
    name = name.split("[")[0]
    if version(name) != want:
        sys.exit(1)
PY
  echo "python_env: ${PINS[*]} present in $PYENV"
  exit 0
fi

echo "python_env: installing ${PINS[*]} into $PYENV"
"$PYENV/bin/pip" install -q --disable-pip-version-check "${PINS[@]}"
echo "python_env: done"
