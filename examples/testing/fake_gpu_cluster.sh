#!/usr/bin/env bash
# The GPU examples against a cluster with a fake GPU worker, on any machine: tessera-scheduler, a
# CPU worker, and a worker that preloads libtessera_fake_gpu.so (a fake device runtime: host
# memory labelled Device), both with the example tasks preloaded. Runs test_gpu, mixed_pipeline
# and gpu_trials with --scheduler and fails when one fails or skips. Checks the routing of device
# tasks, the GPU entries of scheduler_info and device-placed arrays; no CUDA kernel runs (the
# examples' own tests do that on a machine with a GPU).
#
#   bash examples/testing/fake_gpu_cluster.sh BUILD_DIR
set -euo pipefail
build="${1:?usage: fake_gpu_cluster.sh BUILD_DIR}"
bin="$build/bin" ex="$build/examples"
dir="$(mktemp -d)"
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
export TESSERA_LOG_LEVEL="${TESSERA_LOG_LEVEL:-warning}"
"$bin/tessera-scheduler" --port 0 --scheduler-file "$dir/scheduler.json" &
pids+=($!)
for _ in $(seq 100); do [[ -s "$dir/scheduler.json" ]] && break; sleep 0.1; done
address="$(sed -n 's/.*"address": *"\([^"]*\)".*/\1/p' "$dir/scheduler.json")"
[[ -n "$address" ]] || { echo "fake_gpu_cluster: the scheduler did not start" >&2; exit 1; }
"$bin/tessera-worker" "$address" --nthreads 1 --name cpu-worker --local-directory "$dir" \
  --preload "$ex/libtessera_example_tasks.so" &
pids+=($!)
"$bin/tessera-worker" "$address" --nthreads 1 --name fake-gpu-worker --resources GPU=1 --local-directory "$dir" \
  --preload "$ex/libtessera_fake_gpu.so" --preload "$ex/libtessera_example_tasks.so" &
pids+=($!)

run() {  # run NAME ARGS...: the example's output, failing on a non-zero exit or a skip
  local out
  echo "== $*"
  out="$("$ex/$@" 2>&1)" || { echo "$out"; echo "fake_gpu_cluster: $1 failed" >&2; return 1; }
  echo "$out"
  if grep -q '^SKIP' <<<"$out"; then echo "fake_gpu_cluster: $1 skipped" >&2; return 1; fi
}
run test_gpu --scheduler "$address" --wait-workers 2
run mixed_pipeline --scheduler "$address" --wait-workers 2 --pipelines 2 --n 1000
run gpu_trials --scheduler "$address" --wait-workers 2 --trials 3 --steps 20 --samples 1024 --features 8
echo "fake_gpu_cluster: ok"
