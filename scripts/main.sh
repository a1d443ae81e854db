#!/usr/bin/env bash
# The README's main-job command: installs missing packages, builds, runs the seed workload.
#
#   bash scripts/main.sh [extra cmake args...]
#
# Steps, each a function so later back ends slot in without reshaping the script:
#   1. setup        missing Debian packages (scripts/setup.sh)
#   2. build        configure + build (scripts/build.sh)
#   3. run_local    the seed workload in this process (thread pool executor)
#   4. run_cluster  start tessera-scheduler and two tessera-worker processes, run the seed
#                   workload and the submit/map example (seed 002) on them, stop them
#   5. run_gpu      where GPUs are present: tessera-scheduler and tessera-cuda-worker (one worker
#                   per GPU), test_gpu (seed 000) and the seed workload on device arrays on
#                   them; without a GPU it says so (the seed workload ran on host memory)
#
# Environment: TESSERA_BUILD_DIR (default build), TESSERA_JOBS, TESSERA_SKIP_SETUP=1,
# TESSERA_UNITY_BUILD (default ON; see scripts/test.sh),
# TESSERA_SKIP_BUILD=1 (run what TESSERA_BUILD_DIR holds: the GPU suite runs this script on the
# GPU machine over the unpacked bundle, which has the build tree's layout).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BUILD_DIR="${TESSERA_BUILD_DIR:-build}"

need_binary() {
  local bin="$1" what="$2"
  if [[ ! -x "$bin" ]]; then
    echo "main: $bin is missing: $what has not been built (is it written yet? see the build output above)" >&2
    exit 1
  fi
}

run_local() {
  local seed="$BUILD_DIR/examples/seed_workload"
  need_binary "$seed" "the seed example (examples/seed_workload.cpp)"
  echo "main: seed workload, local thread pool"
  "$seed"
}

CLUSTER_PIDS=()
CLUSTER_DIRS=()
stop_cluster() {
  local pid
  for pid in "${CLUSTER_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${CLUSTER_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  CLUSTER_PIDS=()
}
# On any exit: stop what is still running and remove the scratch folders. (A trap naming a
# function's local variable would expand it, unset, at exit and fail the script under set -u.)
cleanup() {
  stop_cluster
  local d
  for d in "${CLUSTER_DIRS[@]}"; do rm -rf "$d"; done
}
trap cleanup EXIT

# Starts tessera-scheduler and one worker command (WORKER_BINARY ARGS...; the scheduler file,
# a scratch folder and the log level are added) in a fresh scratch folder, and waits for the
# scheduler's address: sets CLUSTER_ADDRESS. cleanup stops both and removes the folder.
start_cluster() {
  local worker="$1" dir
  shift
  dir="$(mktemp -d)"
  CLUSTER_DIRS+=("$dir")
  "$BUILD_DIR/bin/tessera-scheduler" --port 0 --scheduler-file "$dir/scheduler.json" --log-level warning &
  CLUSTER_PIDS+=($!)
  "$worker" --scheduler-file "$dir/scheduler.json" --local-directory "$dir" --log-level warning "$@" &
  CLUSTER_PIDS+=($!)
  for _ in $(seq 100); do [[ -s "$dir/scheduler.json" ]] && break; sleep 0.1; done
  CLUSTER_ADDRESS="$(sed -n 's/.*"address": *"\([^"]*\)".*/\1/p' "$dir/scheduler.json")"
}

run_cluster() {
  local bin="$BUILD_DIR/bin" tasks="$BUILD_DIR/examples/libtessera_example_tasks.so"
  need_binary "$bin/tessera-scheduler" "the scheduler binary (apps/)"
  need_binary "$bin/tessera-worker" "the worker binary (apps/)"
  echo "main: starting tessera-scheduler and 2 tessera-worker processes (1 thread each)"
  start_cluster "$bin/tessera-worker" --nworkers 2 --nthreads 1 --preload "$tasks"
  local address="$CLUSTER_ADDRESS"
  echo "main: seed workload on the cluster at $address"
  "$BUILD_DIR/examples/seed_workload" --scheduler "$address"
  echo "main: submit/map example on the cluster"
  "$BUILD_DIR/examples/distributed_submit" --scheduler "$address"
  if [[ -x "$BUILD_DIR/examples/dataframe_taxi" ]]; then
    echo "main: dataframes on the cluster: mean tip per passenger count over taxi CSV files (seed 000)"
    "$BUILD_DIR/examples/dataframe_taxi" --scheduler "$address" | tail -n 2
    echo "main: dataframes on the cluster: groupby('name').x.mean() over 30 days of timeseries data (seed 002)"
    "$BUILD_DIR/examples/dataframe_timeseries" --freq 10s --scheduler "$address" | tail -n 2
  else
    echo "main: the dataframe layer was not built (no Arrow: scripts/python_env.sh makes it)"
  fi
  stop_cluster
  echo "main: cluster stopped"
}

# gpu_count: the GPUs this machine has (scripts/gpus.sh).
# shellcheck source=scripts/gpus.sh
source scripts/gpus.sh

run_gpu() {
  local gpus
  gpus="$(gpu_count)"
  if [[ "$gpus" -eq 0 ]]; then
    echo "main: no GPU found: the seed workload ran on host memory"
    return 0
  fi
  if [[ ! -f "$BUILD_DIR/src/libtessera_cuda.so" ]]; then
    echo "main: $gpus GPU(s) found, but the CUDA back end was not built (no nvcc; see README): the seed workload ran on host memory"
    return 0
  fi
  local bin="$BUILD_DIR/bin" ex="$BUILD_DIR/examples" seed="$BUILD_DIR/benchmarks/seed_array"
  need_binary "$bin/tessera-cuda-worker" "the GPU worker binary (apps/)"
  need_binary "$seed" "the seed benchmark (benchmarks/seed_array.cpp)"
  need_binary "$ex/test_gpu" "the test_gpu example (examples/test_gpu.cpp)"
  echo "main: $gpus GPU(s): starting tessera-scheduler and tessera-cuda-worker (one worker per GPU)"
  start_cluster "$bin/tessera-cuda-worker" --nthreads 1 --preload "$ex/libtessera_example_tasks.so"
  local address="$CLUSTER_ADDRESS"
  # test_gpu first: it waits until every GPU worker has registered (a device task submitted
  # before any GPU worker is there would fail at once).
  echo "main: test_gpu (seed 000) on the GPU workers at $address"
  "$ex/test_gpu" --scheduler "$address" --wait-workers "$gpus"
  echo "main: seed workload on device arrays (n 20000, chunk 2000) on the GPU workers"
  "$seed" --n 20000 --chunk 2000 --device gpu --scheduler "$address"
  stop_cluster
  echo "main: GPU cluster stopped"
}

bash scripts/setup.sh
if [[ "${TESSERA_SKIP_BUILD:-0}" == "1" ]]; then
  echo "main: TESSERA_SKIP_BUILD=1, running what $BUILD_DIR holds"
else
  # Only what the steps below run (the tessera_main_job target: the binaries and examples), not
  # the test suite: on a fresh machine that is most of the compile time. The CUDA back end and
  # the seed benchmark only where run_gpu will use them. TESSERA_BUILD_TARGETS=all builds all.
  if [[ -z "${TESSERA_BUILD_TARGETS:-}" ]]; then
    TESSERA_BUILD_TARGETS="tessera_main_job"
    [[ "$(gpu_count)" -gt 0 ]] && TESSERA_BUILD_TARGETS="tessera_main_job_gpu"
  fi
  [[ "$TESSERA_BUILD_TARGETS" == "all" ]] && TESSERA_BUILD_TARGETS=""
  # In batches, as scripts/test.sh builds (the same build folder, so the two never rebuild each
  # other's objects); TESSERA_UNITY_BUILD=OFF for file-by-file builds while editing.
  TESSERA_BUILD_TARGETS="$TESSERA_BUILD_TARGETS" bash scripts/build.sh -DTESSERA_UNITY_BUILD="${TESSERA_UNITY_BUILD:-ON}" "$@"
fi
main_start=$SECONDS
run_local
run_cluster
run_gpu
echo "main: the runs took $((SECONDS - main_start)) s (${SECONDS} s since the start)"
