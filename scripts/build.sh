#!/usr/bin/env bash
# Configures (CMake + Ninja, Release) and builds Tessera.
#
#   bash scripts/build.sh [extra cmake args...]      e.g. -DTESSERA_CUDA=OFF
#
# Environment:
#   TESSERA_BUILD_DIR   build folder (default: build, relative to the repo root)
#   TESSERA_BUILD_TYPE  CMAKE_BUILD_TYPE (default: Release)
#   TESSERA_JOBS        parallel compile jobs (default: all cores, capped by memory)
#   TESSERA_BUILD_TARGETS  space-separated ninja targets (default: all)
#   CI                  when "true" (as in CI), warnings are errors (-DTESSERA_WERROR=ON)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BUILD_DIR="${TESSERA_BUILD_DIR:-build}"
# ccache keys on paths relative to the checkout, so clones in other folders share objects.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
BUILD_TYPE="${TESSERA_BUILD_TYPE:-Release}"

# All cores, but no more jobs than memory allows: a C++20 translation unit of this project
# (templates, cereal, spdlog) can take up to about 2 GiB in g++ at -O3; nvcc similar.
jobs_for_machine() {
  local cores mem_kib per_job_kib=$((2 * 1024 * 1024)) by_mem
  cores="$(nproc 2>/dev/null || echo 1)"
  mem_kib="$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo 2>/dev/null || echo 0)"
  if [[ -z "$mem_kib" || "$mem_kib" -le 0 ]]; then
    echo "$cores"
    return
  fi
  by_mem=$((mem_kib / per_job_kib))
  ((by_mem < 1)) && by_mem=1
  ((by_mem < cores)) && echo "$by_mem" || echo "$cores"
}
JOBS="${TESSERA_JOBS:-$(jobs_for_machine)}"

# A build folder made by another generator cannot be switched to Ninja in place.
if [[ -f "$BUILD_DIR/CMakeCache.txt" ]] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$BUILD_DIR/CMakeCache.txt"; then
  echo "build: $BUILD_DIR was configured with another generator; remove it or set TESSERA_BUILD_DIR" >&2
  exit 1
fi

# CI builds with warnings as errors, so a warning never lands; a local build only shows them.
WERROR=OFF
[[ "${CI:-}" == "true" ]] && WERROR=ON

# The GPU code's targets: sm_90 machine code plus compute_90 PTX (cmake/TesseraCuda.cmake), unless
# TESSERA_CUDA_ARCHITECTURES says otherwise (scripts/test.sh asks for PTX alone on a machine without
# a GPU). Always passed, so that a build folder configured by one script is not left with
# another's choice.
CUDA_ARCHS="${TESSERA_CUDA_ARCHITECTURES:-90-real;90-virtual}"

echo "build: configuring $BUILD_DIR ($BUILD_TYPE, warnings as errors: $WERROR, CUDA targets: $CUDA_ARCHS)"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" -DTESSERA_WERROR="$WERROR" \
  -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCHS" "$@"

echo "build: ninja -j$JOBS"
# shellcheck disable=SC2086  # a list of target names
ninja -C "$BUILD_DIR" -j "$JOBS" ${TESSERA_BUILD_TARGETS:-}
