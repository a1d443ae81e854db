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
#   5. run_gpu      (GPU issue) GPU workers where GPUs are present, seed workload on device
#
# Environment: TESSERA_BUILD_DIR (default build), TESSERA_JOBS, TESSERA_SKIP_SETUP=1.
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
stop_cluster() {
  local pid
  for pid in "${CLUSTER_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${CLUSTER_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  CLUSTER_PIDS=()
}

run_cluster() {
  local bin="$BUILD_DIR/bin" tasks="$BUILD_DIR/examples/libtessera_example_tasks.so"
  need_binary "$bin/tessera-scheduler" "the scheduler binary (apps/)"
  need_binary "$bin/tessera-worker" "the worker binary (apps/)"
  local dir
  dir="$(mktemp -d)"
  trap 'stop_cluster; rm -rf "$dir"' EXIT
  echo "main: starting tessera-scheduler and 2 tessera-worker processes (1 thread each)"
  "$bin/tessera-scheduler" --port 0 --scheduler-file "$dir/scheduler.json" --log-level warning &
  CLUSTER_PIDS+=($!)
  "$bin/tessera-worker" --scheduler-file "$dir/scheduler.json" --nworkers 2 --nthreads 1 \
    --preload "$tasks" --local-directory "$dir" --log-level warning &
  CLUSTER_PIDS+=($!)
  for _ in $(seq 100); do [[ -s "$dir/scheduler.json" ]] && break; sleep 0.1; done
  local address
  address="$(sed -n 's/.*"address": *"\([^"]*\)".*/\1/p' "$dir/scheduler.json")"
  echo "main: seed workload on the cluster at $address"
  "$BUILD_DIR/examples/seed_workload" --scheduler "$address"
  echo "main: submit/map example on the cluster"
  "$BUILD_DIR/examples/distributed_submit" --scheduler "$address"
  stop_cluster
  echo "main: cluster stopped"
}

run_gpu() {
  # Filled in by the GPU back end: when nvidia-smi lists GPUs, start tessera-cuda-worker and
  # run the seed workload on device arrays; otherwise say so and stay on host memory.
  :
}

bash scripts/setup.sh
bash scripts/build.sh "$@"
run_local
run_cluster
run_gpu
