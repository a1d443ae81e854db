#!/usr/bin/env bash
# The README's test command: installs missing packages, builds, runs the whole test suite.
#
#   bash scripts/test.sh [extra cmake args...]
#
# Environment: TESSERA_BUILD_DIR (default build), TESSERA_JOBS, TESSERA_SKIP_SETUP=1,
# TESSERA_CTEST_ARGS (extra ctest arguments, e.g. "-R array").
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BUILD_DIR="${TESSERA_BUILD_DIR:-build}"

bash scripts/setup.sh
bash scripts/build.sh "$@"

# shellcheck disable=SC2086  # TESSERA_CTEST_ARGS is a list of words on purpose
ctest --test-dir "$BUILD_DIR" --output-on-failure -j2 --timeout 600 ${TESSERA_CTEST_ARGS:-}
