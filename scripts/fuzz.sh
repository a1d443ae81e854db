#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang (TESSERA_FUZZ=ON, in build-fuzz/) and runs each
# for a bounded time from its checked-in corpus, fuzz/corpus/<target>/ (fuzz/README.md).
# scripts/test.sh calls it when clang is installed; a crash fails the run and leaves its input in
# build-fuzz/artifacts/ (make it a regression test in tests/, then fix it).
#
#   bash scripts/fuzz.sh [target...]        default: every target
#
# Environment: TESSERA_FUZZ_SECONDS (per target, default 30), TESSERA_FUZZ_DIR (default
# build-fuzz), TESSERA_JOBS (build), TESSERA_FUZZ_JOBS (targets run at once, default one per
# core), TESSERA_FUZZ_CORPUS=1 (write fuzz/corpus/ again from real messages
# with fuzz_make_corpus first), TESSERA_FUZZ_ARGS (more libFuzzer flags, e.g. -jobs=2).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

FUZZ_DIR="${TESSERA_FUZZ_DIR:-build-fuzz}"
SECONDS_EACH="${TESSERA_FUZZ_SECONDS:-30}"
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
CLANG="$(command -v clang++ || command -v clang++-14 || true)"
if [[ -z "$CLANG" ]]; then
  echo "fuzz: clang++ not found (apt-get install clang); not fuzzing" >&2
  exit 1
fi
WERROR=OFF
[[ "${CI:-}" == "true" ]] && WERROR=ON

# Only the fuzz targets and the few sources they test are built (fuzz/CMakeLists.txt).
cmake -S . -B "$FUZZ_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER="$CLANG" -DCMAKE_C_COMPILER="${CLANG%++*}${CLANG##*++}" \
  -DTESSERA_FUZZ=ON -DTESSERA_UNITY_BUILD="${TESSERA_UNITY_BUILD:-ON}" -DTESSERA_WERROR="$WERROR" -DTESSERA_CUDA=OFF -DTESSERA_UCX=OFF -DTESSERA_DATAFRAME=OFF \
  -DTESSERA_BUILD_TESTS=OFF -DTESSERA_BUILD_EXAMPLES=OFF -DTESSERA_BUILD_BENCHMARKS=OFF >/dev/null
ninja -C "$FUZZ_DIR" -j "${TESSERA_JOBS:-$(nproc)}" fuzz_targets

if [[ "${TESSERA_FUZZ_CORPUS:-0}" == "1" ]]; then
  "$FUZZ_DIR/fuzz/fuzz_make_corpus" fuzz/corpus
fi

TARGETS=("$@")
[[ ${#TARGETS[@]} -eq 0 ]] && TARGETS=(preamble handshake message object scheduler_file cli_values state_events)
mkdir -p "$FUZZ_DIR/artifacts"
# The targets run side by side, TESSERA_FUZZ_JOBS at a time (default: one per core): each is one
# single-threaded libFuzzer process, so two cores fuzz two targets in the time of one.
FUZZ_JOBS="${TESSERA_FUZZ_JOBS:-$(nproc)}"
run_target() {
  local t="$1"
  # New inputs go to a scratch folder (the first one libFuzzer is given); the checked-in corpus
  # is only read. rss_limit_mb: a peer's input must not make us hold more than this.
  local scratch="$FUZZ_DIR/corpus/$t"
  mkdir -p "$scratch"
  # shellcheck disable=SC2086  # TESSERA_FUZZ_ARGS is a list of flags
  "$FUZZ_DIR/fuzz/fuzz_$t" -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -malloc_limit_mb=512 \
    -timeout=10 -print_final_stats=1 -artifact_prefix="$FUZZ_DIR/artifacts/$t-" ${TESSERA_FUZZ_ARGS:-} \
    "$scratch" "fuzz/corpus/$t" >"$FUZZ_DIR/$t.log" 2>&1
}
declare -A pid_of=()
for t in "${TARGETS[@]}"; do
  while [[ "$(jobs -rp | wc -l)" -ge "$FUZZ_JOBS" ]]; do wait -n || true; done
  echo "fuzz: $t for ${SECONDS_EACH} s"
  run_target "$t" &
  pid_of[$t]=$!
done
failed=()
for t in "${TARGETS[@]}"; do
  if ! wait "${pid_of[$t]}"; then
    failed+=("$t")
    tail -n 60 "$FUZZ_DIR/$t.log" >&2
  fi
  grep -E '^#[0-9]+.*DONE|^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb|new_units_added)' \
    "$FUZZ_DIR/$t.log" | sed "s/^/fuzz: $t: /" || true
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz: crashes in: ${failed[*]} (inputs in $FUZZ_DIR/artifacts/)" >&2
  exit 1
fi
echo "fuzz: no crash in ${TARGETS[*]}"
