# Sourced by benchmarks/compare_dask.sh and compare_distributed.sh: find_dask_python prints the
# Python that runs Dask. It uses $VENV (made and filled from PyPI with dask[array,distributed]
# and numpy when needed), else the system python3 with Debian's python3-dask and
# python3-distributed. The caller defines log().

have_dask() { "$1" -c 'import dask.array, distributed, numpy' >/dev/null 2>&1; }

find_dask_python() {
  if [[ -x "$VENV/bin/python" ]] && have_dask "$VENV/bin/python"; then
    echo "$VENV/bin/python"; return
  fi
  if [[ ! -x "$VENV/bin/python" ]]; then
    log "creating venv $VENV"
    if python3 -m venv "$VENV" >&2; then
      [[ -e "$VENV/.gitignore" ]] || echo '*' >"$VENV/.gitignore"
    else
      log "python3 -m venv failed (is python3-venv installed? bash scripts/setup.sh)"
    fi
  fi
  if [[ -x "$VENV/bin/python" ]]; then
    log "pip install dask[array,distributed] numpy into $VENV"
    if "$VENV/bin/python" -m pip install -q --disable-pip-version-check "dask[array,distributed]" numpy >&2 \
        && have_dask "$VENV/bin/python"; then
      echo "$VENV/bin/python"; return
    fi
    log "pip could not install Dask; falling back to Debian's python3-dask"
  fi
  if ! have_dask python3; then
    local sudo=()
    [[ "$(id -u)" == "0" ]] || sudo=(sudo)
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      python3-dask python3-distributed python3-numpy >&2
  fi
  have_dask python3 || { log "no usable Dask (with distributed) found"; exit 1; }
  command -v python3
}
