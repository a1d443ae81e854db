#!/usr/bin/env bash
# The README's main-job command: installs missing packages, builds, runs the seed workload.
#
#   bash scripts/main.sh [extra cmake args...]
#
# Steps, each a function so later back ends slot in without reshaping the script:
#   1. setup        missing Debian packages (scripts/setup.sh)
#   2. build        configure + build (scripts/build.sh)
#   3. run_local    the seed workload in this process (thread pool executor)
#   4. run_cluster  (distributed issue) start a local scheduler + workers, run the seed
#                   workload and a submit/map example on it, stop the cluster
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

run_cluster() {
  # Filled in by the distributed runtime: start tessera-scheduler and tessera-worker
  # processes (trap EXIT to stop them), run the seed workload and a submit/map example
  # against them, then stop them.
  :
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
