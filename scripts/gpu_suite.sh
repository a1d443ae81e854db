#!/usr/bin/env bash
# The GPU run, in two halves (see docs/benchmarks.md "GPU" and DEVELOPERS notes in README):
#
#   bash scripts/gpu_suite.sh bundle        # here: build for sm_90 and pack a relocatable tree
#   bash scripts/gpu_suite.sh run PART...   # on the GPU machine: tests, examples, memcheck, bench
#
# The GPU machine reaches no package registry and keeps nothing, so `bundle` builds in
# build-gpu (CUDA on, sm_90 + PTX), copies the binaries it runs (stripped) into the layout of the
# build tree (bin/, src/, tests/, benchmarks/, examples/: their RUNPATH is $ORIGIN-relative) with
# the Debian shared libraries they need in lib/ (not glibc, libstdc++ or CUDA's own: the GPU
# machine has newer ones), and packs it as build-gpu-bundle/tessera-gpu.tar.xz (under the 64 MiB
# the device tool carries). Then two device calls, each with carry ["build-gpu-bundle"] (one
# call allows 600 s and brings back 8 files from $OUT):
#
#   bash scripts/gpu_suite.sh run tests examples memcheck
#   bash scripts/gpu_suite.sh run bench
#
# Each unpacks the bundle and writes logs and JSON lines under $OUT (default: ./gpu-out). Every
# step's timeout is also capped by what is left of GPU_SUITE_SECONDS (default 560) since the
# unpack, so a hang costs its step and not the call; a failing step never stops the later ones.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$PWD"
BUNDLE_DIR="$ROOT/build-gpu-bundle"
ARCHIVE="$BUNDLE_DIR/tessera-gpu.tar.xz"

bundle() {
  local build="${TESSERA_GPU_BUILD_DIR:-build-gpu}"
  # Everything the GPU machine runs (not the NumPy conformance runner: it needs this machine's
  # Python environment and runs on the fake device anyway).
  local targets="tessera-scheduler tessera-worker tessera-cuda-worker tessera_cuda tessera_tests"
  targets+=" tessera_fake_nvml_2 tessera_fake_nvml_0 tessera_fake_nvml_fail tessera_fake_nvml_old tessera_cuda_worker_tasks"
  targets+=" seed_array gpu_arrays transfer philox_limit"
  targets+=" tessera_example_tasks seed_workload distributed_submit dataframe_taxi dataframe_timeseries test_gpu gpu_trials mixed_pipeline cuda_kernel tessera_fake_gpu"
  TESSERA_BUILD_TARGETS="$targets" TESSERA_BUILD_DIR="$build" bash scripts/build.sh -DTESSERA_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="90-real;90-virtual"
  local stage="$BUNDLE_DIR/tree"
  rm -rf "$BUNDLE_DIR"
  mkdir -p "$stage"/{bin,src,tests,benchmarks,examples,lib}
  cp -a "$build"/bin/. "$stage/bin/"
  cp -a "$build"/src/*.so* "$stage/src/"
  cp -a "$build"/tests/tessera_tests "$build"/tests/*.so "$stage/tests/" 2>/dev/null || true
  find "$build"/benchmarks -maxdepth 1 -type f -executable -exec cp -a {} "$stage/benchmarks/" \;
  find "$build"/examples -maxdepth 1 -type f \( -executable -o -name '*.so' \) -exec cp -a {} "$stage/examples/" \;
  cp -a benchmarks/gpu/cupy_local.py "$stage/benchmarks/"
  # Strip what travels (symbols only; the tree stays runnable).
  find "$stage" -type f \( -perm -u+x -o -name '*.so*' \) -exec sh -c 'file -b "$1" | grep -q ELF && strip --strip-unneeded "$1"' _ {} \;
  # Shared libraries from Debian packages that the GPU machine's image lacks.
  local skip='linux-vdso|ld-linux|/libc\.so|/libm\.so|/libmvec|/libpthread|/libdl\.|/librt\.|/libstdc\+\+|/libgcc_s|/libcuda\.|/libcudart|/libcublas|/libcurand|/libcufft|/libcusolver|/libcusparse|/libnvJitLink|/libnvidia|libtessera'
  find "$stage" -type f -exec sh -c 'file -b "$1" | grep -q "ELF.*dynamically linked\|ELF.*shared object"' _ {} \; -print |
    xargs -r ldd 2>/dev/null | awk '/=> \// {print $3}' | sort -u | grep -Ev "$skip" | while read -r lib; do
      cp -L "$lib" "$stage/lib/"
    done
  # UCX loads its transports as modules from <libucs dir>/ucx.
  if [[ -d /usr/lib/x86_64-linux-gnu/ucx ]] && ls "$stage"/lib/libucs.so* >/dev/null 2>&1; then
    mkdir -p "$stage/lib/ucx"
    cp -L /usr/lib/x86_64-linux-gnu/ucx/*.so.0 "$stage/lib/ucx/" 2>/dev/null || true
  fi
  bundle_cuda_ucx "$stage/ucx-cuda"
  git rev-parse HEAD >"$stage/COMMIT"
  git status --porcelain | grep -q . && echo "dirty" >>"$stage/COMMIT" || true
  tar -C "$stage" -cJf "$ARCHIVE" .
  rm -rf "$stage"
  echo "gpu_suite: $(du -h "$ARCHIVE" | cut -f1) in $ARCHIVE (commit $(git rev-parse --short HEAD))"
  local bytes
  bytes=$(stat -c %s "$ARCHIVE")
  ((bytes < 60 * 1024 * 1024)) || { echo "gpu_suite: the bundle is over 60 MiB; the device tool carries 64 MiB with the repo" >&2; exit 1; }
}

# A UCX built with CUDA, for the direct device path of ucx:// (docs/ucx.md): Debian's UCX has
# none; the libucx-cu13 wheel on PyPI has it (libuct_cuda, libucm_cuda and the cudart they need).
# `run` loads it in place of Debian's UCX for the runs marked "ucx-cuda" only. Tessera is built
# against Debian's UCX 1.13 headers; UCP keeps its ABI, and the ucx tests pass here against the
# wheel's 1.22 (run_tests below runs the suite with both). Optional: without PyPI, no ucx-cuda.
bundle_cuda_ucx() {
  local dest="$1" tmp
  tmp=$(mktemp -d)
  if ! python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$tmp" "libucx-cu13" >&2; then
    echo "gpu_suite: could not download libucx-cu13; the bundle has no CUDA-enabled UCX" >&2
    rm -rf "$tmp"
    return 0
  fi
  python3 -m zipfile -e "$tmp"/libucx_cu13-*.whl "$tmp/x"
  mkdir -p "$dest/libucx/lib/ucx" "$dest/libucx/bin" "$dest/libucx_cu13.libs"
  # The wheel stores each library three times (.so, .so.0, .so.0.0.0: zip has no links); the
  # loader wants the .so.0 names. libucm_cuda and ucx_perftest find the cudart and libgomp they
  # need through $ORIGIN/../../(..)/libucx_cu13.libs, so the layout is kept.
  cp "$tmp"/x/libucx/lib/lib{ucp,uct,ucs,ucm,ucs_signal}.so.0 "$dest/libucx/lib/"
  cp "$tmp"/x/libucx/lib/ucx/lib{uct_cma,uct_cuda,ucm_cuda,ucx_perftest_cuda}.so.0 "$dest/libucx/lib/ucx/"
  cp "$tmp"/x/libucx/bin/{ucx_info,ucx_perftest} "$dest/libucx/bin/"
  cp "$tmp"/x/libucx_cu13.libs/* "$dest/libucx_cu13.libs/"
  basename "$tmp"/libucx_cu13-*.whl >"$dest/WHEEL"
  rm -rf "$tmp"
  echo "gpu_suite: CUDA-enabled UCX from $(cat "$dest/WHEEL")" >&2
}

# ---- on the GPU machine ---------------------------------------------------------------------
OUT="${OUT:-$ROOT/gpu-out}"
TREE="$ROOT/build-gpu-run"

SUITE_END=0

# A step's timeout: its own cap, or less when the suite's time is nearly up (at least 5 s).
cap() {
  local left=$((SUITE_END - SECONDS - 5))
  ((left < 5)) && left=5
  echo $(($1 < left ? $1 : left))
}

unpack() {
  [[ -f "$ARCHIVE" ]] || { echo "gpu_suite: $ARCHIVE is missing (run 'bundle' here and carry build-gpu-bundle)" >&2; exit 1; }
  SUITE_END=$((SECONDS + ${GPU_SUITE_SECONDS:-560}))
  rm -rf "$TREE" && mkdir -p "$TREE" "$OUT"
  tar -C "$TREE" -xJf "$ARCHIVE"
  export LD_LIBRARY_PATH="$TREE/lib:$TREE/src${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}:$(cuda_library_dirs)"
  export UCX_MODULE_DIR="$TREE/lib/ucx"
  {
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "commit: $(tr '\n' ' ' <"$TREE/COMMIT")"
    nvidia-smi --query-gpu=name,memory.total,driver_version,uuid --format=csv,noheader 2>&1 || true
    nproc
    # What the CUDA back end resolves to here (a "not found" explains GPU tests that skip).
    ldd "$TREE/src/libtessera_cuda.so" 2>&1 | grep -E "cudart|cublas|not found" || true
    if ldd "$TREE/src/libtessera_cuda.so" 2>&1 | grep -q "not found"; then
      echo "gpu_suite: WARNING: libtessera_cuda.so misses libraries (above): the test binary will not start"
    fi
    # The working tree here is what the bundle should have been built from.
    local checkout bundled
    bundled=$(head -1 "$TREE/COMMIT")
    if checkout=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null) && [[ "$bundled" != "$checkout" ]]; then
      echo "gpu_suite: WARNING: the bundle is from $bundled, the checkout is at $checkout: bundle again"
    fi
  } | tee "$OUT/device.txt"
  # One NVML client open for the whole run (it only reads), so that a GPU without persistence
  # mode is not torn down and initialised again between the many short worker processes.
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi -l 30 >/dev/null 2>&1 &
    NVML_KEEPER=$!
    trap 'kill "$NVML_KEEPER" 2>/dev/null || true' EXIT
  fi
}

# Folders holding CUDA 13's libcudart and libcublas on this machine, ':'-separated: the
# toolkit's (libtessera_cuda's RUNPATH names /usr/local/cuda/lib only) and, failing that, the
# nvidia-* Python packages' (the GPU image has both; which of them, is read here, not assumed).
cuda_library_dirs() {
  local dirs=() d
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda/lib; do
    [[ -e "$d/libcublas.so.13" ]] && dirs+=("$d")
  done
  # Then the nvidia-* Python packages' folders, for whatever the toolkit folders lack.
  while read -r d; do [[ -n "$d" ]] && dirs+=("$d"); done < <(python3 - 2>/dev/null <<'PY'
import glob, os, site
seen = set()
for root in site.getsitepackages():
    for lib in ("libcublas.so.13", "libcudart.so.13", "libcufft.so.12", "libcusolver.so.12",
                "libcusparse.so.12", "libnvJitLink.so.13", "libcurand.so.10"):
        for f in glob.glob(os.path.join(root, "nvidia", "**", lib), recursive=True):
            d = os.path.dirname(f)
            if d not in seen:
                seen.add(d)
                print(d)
PY
  )
  local IFS=:
  echo "${dirs[*]}"
}

# Runs "$@" with the bundle's CUDA-enabled UCX in place of Debian's (no-op message without one).
with_cuda_ucx() {
  local u="$TREE/ucx-cuda/libucx/lib"
  [[ -d "$u" ]] || { echo "gpu_suite: no CUDA-enabled UCX in the bundle; skipped: $*" >&2; return 0; }
  LD_LIBRARY_PATH="$u:$LD_LIBRARY_PATH" UCX_MODULE_DIR="$u/ucx" "$@"
}

# The tests that exercise the GPU (they skip where there is none): tests/cuda/, the GPU worker,
# placement, and the blockwise device paths.
GPU_TEST_FILTER='Cuda*:BlockwiseDevice*:BlockwiseEmulated*:BlockwiseEncode*:ClusterGpu*:ArrayPlacement*:FrameOpsDevice*:GatherDevice*'

run_gpu_tests() {
  (cd "$TREE/tests" && timeout "$(cap 120)" ./tessera_tests --gtest_brief=1 --gtest_filter="$GPU_TEST_FILTER" \
      --gtest_output="json:$OUT/tests-gpu.json" >"$OUT/tests-gpu.log" 2>&1) && echo "gpu tests: passed" || echo "gpu tests: FAILED (rc $?)"
  grep -E "^\[  (PASSED|FAILED|SKIPPED)|Failure|error" "$OUT/tests-gpu.log" | head -60 || true
  grep -cE "^\[       OK|^\[  SKIPPED" "$OUT/tests-gpu.log" || true
}

run_tests() {
  # The whole suite with the CUDA back end loaded, one process per test as ctest runs it (the
  # tests count the process's device memory, so they must not share a process), 12 at once.
  local list="$OUT/tests.list" results="$OUT/tests-results.txt"
  (cd "$TREE/tests" && ./tessera_tests --gtest_list_tests --gtest_filter="${GPU_SUITE_TEST_FILTER:-*}") |
    awk '/^[^ ]/ { suite = $1; next } /^  / { if ($1 !~ /^DISABLED_/ && suite !~ /^DISABLED_/) print suite $1 }' >"$list"
  : >"$results"
  : >"$OUT/tests.log"
  local deadline=$(($(date +%s) + $(cap 300)))
  export TREE OUT
  xargs -P 12 -I{} bash -c '
    name="$1"; left=$(('"$deadline"' - $(date +%s))); ((left < 5)) && left=5
    log=$(cd "$TREE/tests" && timeout "$((left < 300 ? left : 300))" ./tessera_tests --gtest_brief=1 --gtest_filter="$name" 2>&1); rc=$?
    if ((rc != 0)); then printf "%s\n" "== $name (rc $rc)" "$log" >>"$OUT/tests.log"; fi
    if grep -q "^\[  SKIPPED \]" <<<"$log"; then echo "skipped $name" >>"$OUT/tests-results.txt";
    elif ((rc == 0)); then echo "passed $name" >>"$OUT/tests-results.txt"; else echo "failed $name" >>"$OUT/tests-results.txt"; fi
  ' _ {} <"$list" || true
  awk '{n[$1]++} END {for (k in n) print k, n[k]}' "$results" | sort
  grep "^failed" "$results" | head -40 || true
  rm -f "$list"
  # The UCX and device-frame tests again with the CUDA-enabled UCX: the direct path.
  (cd "$TREE/tests" && with_cuda_ucx timeout "$(cap 90)" ./tessera_tests --gtest_brief=1 \
      --gtest_filter='CommUcx*:UcxCluster*:CudaUcx*:ClusterGpu*' --gtest_output="json:$OUT/tests-ucx-cuda.json" \
      >"$OUT/tests-ucx-cuda.log" 2>&1) && echo "tests (ucx-cuda): passed" || echo "tests (ucx-cuda): FAILED (rc $?)"
  grep -E "^\[  (PASSED|FAILED)|INFO" "$OUT/tests-ucx-cuda.log" | tail -20 || true
}

run_memcheck() {
  # The GPU tests once more under compute-sanitizer's memcheck: out-of-bounds or misaligned
  # accesses in the kernels, reported with the kernel and the thread. Failed API calls are not
  # reported (some tests make them on purpose: a 1 EiB cudaHostAlloc, a full pool), and the
  # timing test and the largest chunks are left out (memcheck slows kernels 10-100x).
  local sanitizer
  sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
  if [[ -n "$sanitizer" ]]; then
    (cd "$TREE/tests" && timeout "$(cap 180)" "$sanitizer" --tool memcheck --report-api-errors no --error-exitcode 9 --print-limit 20 \
        ./tessera_tests --gtest_brief=1 \
        --gtest_filter='CudaRuntime*:CudaDeviceOps*:CudaRandom*:CudaFft*:CudaLinalg*:GatherDevice*:FrameOpsDevice*:BlockwiseDevice*-BlockwiseDevice.SeedHeadlineTaskTime:BlockwiseDevice.LargeChunks*' \
        >"$OUT/memcheck.log" 2>&1) && echo "memcheck: clean" || echo "memcheck: errors or failures (rc $?): memcheck.log"
    tail -4 "$OUT/memcheck.log"
  fi
}

run_examples() {
  local log="$OUT/examples.log"
  : >"$log"
  for ex in test_gpu cuda_kernel gpu_trials mixed_pipeline seed_workload; do
    [[ -x "$TREE/examples/$ex" ]] || continue
    echo "== $ex" | tee -a "$log"
    (cd "$TREE/examples" && timeout "$(cap 30)" "./$ex" >>"$log" 2>&1) && echo "$ex: ok" || echo "$ex: FAILED (rc $?)"
  done
  # The README's main job over the bundle's binaries: its GPU step starts tessera-cuda-worker,
  # runs test_gpu and the seed workload on device arrays.
  echo "== scripts/main.sh" | tee -a "$log"
  (TESSERA_SKIP_SETUP=1 TESSERA_SKIP_BUILD=1 TESSERA_BUILD_DIR="$TREE" timeout "$(cap 60)" bash "$ROOT/scripts/main.sh" \
      >>"$log" 2>&1) && echo "main.sh: ok" || echo "main.sh: FAILED (rc $?)"
  tail -30 "$log"
}

# One benchmark: its JSON lines to bench.jsonl (anything else on its stdout, such as UCX's
# log, to bench.err); a failure or timeout is a JSON line too, and never stops the steps after it.
json_lines() {
  local line j="$OUT/bench.jsonl"
  while IFS= read -r line; do
    if [[ "$line" == "{"* ]]; then echo "$line" | tee -a "$j"; else echo "$line" >>"$OUT/bench.err"; fi
  done
}
run1() {
  echo "+ $*" >&2
  echo "+ $*" >>"$OUT/bench.err"
  local rc=0
  timeout "$(cap "${RUN_CAP:-120}")" "$@" 2>>"$OUT/bench.err" | json_lines || rc=$?
  ((rc == 0)) || echo "{\"benchmark\": \"failed\", \"command\": \"${*//\"/}\", \"rc\": $rc}" | tee -a "$OUT/bench.jsonl"
  return 0
}

run_bench() {
  local j="$OUT/bench.jsonl" b="$TREE/benchmarks"
  : >"$j"
  # The limit first: bare Philox and seed kernels (benchmarks/gpu/philox_limit.cu).
  RUN_CAP=30 run1 "$b/philox_limit" --n 100000 --repeat 3
  # The seed headline: a 1/25 size first (a rate even if the full size overruns its cap), then
  # the full 500,000 x 500,000 on one GPU.
  RUN_CAP=40 run1 "$b/seed_array" --n 100000 --chunk 10000 --device gpu --scheduler threads
  # ... and at cupy_local.py's seed size (n 50,000: CuPy must hold all of x).
  RUN_CAP=30 run1 "$b/seed_array" --n 50000 --chunk 10000 --device gpu --scheduler threads --repeat 3
  RUN_CAP=90 run1 "$b/seed_array" --n 500000 --chunk 10000 --device gpu --scheduler threads
  # dask-cuda's local_cupy workloads against CuPy alone on the same GPU, inputs persisted first
  # (untimed) as both scripts time them, then generated inside the timed graph.
  RUN_CAP=60 run1 env -u LD_LIBRARY_PATH -u UCX_MODULE_DIR python3 "$b/cupy_local.py" --n 40000 --matmul-n 20000 --seed-n 50000
  RUN_CAP=40 run1 "$b/gpu_arrays" --op transpose_sum --n 40000 --chunk 10000 --device gpu --repeat 3 --persist
  RUN_CAP=40 run1 "$b/gpu_arrays" --op matmul --n 20000 --chunk 5000 --device gpu --repeat 3 --persist
  RUN_CAP=40 run1 "$b/gpu_arrays" --op transpose_sum --n 40000 --chunk 10000 --device gpu --repeat 3
  RUN_CAP=40 run1 "$b/gpu_arrays" --op matmul --n 20000 --chunk 5000 --device gpu --repeat 3
  # A run needing about twice its device memory limit: matmul inputs and outputs are held on
  # the device (3 x 40000^2 x 8 B = 38 GB) by one worker limited to 16 GB, so it must spill.
  RUN_CAP=90 run1 "$b/gpu_arrays" --op matmul --n 40000 --chunk 10000 --device gpu --scheduler distributed --workers 1 \
    --device-memory-limit 16GB
  run_transfer
  # The seed headline on several workers sharing the GPU.
  RUN_CAP=60 run1 "$b/seed_array" --n 500000 --chunk 10000 --device gpu --scheduler distributed --workers 4 --threads 1
}

# Device to device between two workers sharing the GPU (issue 5): staged over tcp and ucx,
# then direct over a CUDA-enabled UCX, beside UCX's own device-to-device bandwidth between two
# processes on this GPU as the limit. UCX's protocol choice (UCX_PROTO_INFO=y) is printed by a
# separate run into bench.err: UCX writes it to stdout, where it would split the JSON line.
run_transfer() {
  local b="$TREE/benchmarks"
  RUN_CAP=30 run1 "$b/transfer" --device gpu --megabytes 256 --repeat 5 --protocol tcp
  RUN_CAP=30 run1 "$b/transfer" --device gpu --megabytes 256 --repeat 5 --protocol ucx
  RUN_CAP=30 with_cuda_ucx run1 "$b/transfer" --device gpu --megabytes 256 --repeat 5 --protocol ucx
  UCX_PROTO_INFO=y with_cuda_ucx timeout "$(cap 30)" "$b/transfer" --device gpu --megabytes 256 --repeat 1 --protocol ucx \
    >>"$OUT/bench.err" 2>&1 || true
  # The wheel's programs come out of the zip without their execute bit.
  chmod +x "$TREE"/ucx-cuda/libucx/bin/* 2>/dev/null || true
  with_cuda_ucx bash -c 'p="$1"; m="$2"; "$p" -t ucp_put_bw -m cuda,cuda -s 268435456 -n 20 -p 13377 >/dev/null 2>&1 &
      srv=$!; sleep 2; timeout 30 "$p" 127.0.0.1 -t ucp_put_bw -m cuda,cuda -s 268435456 -n 20 -p 13377 -f 2>&1 | tail -3 >>"$m";
      kill $srv 2>/dev/null; wait $srv 2>/dev/null; true' _ "$TREE/ucx-cuda/libucx/bin/ucx_perftest" "$OUT/ucx_perftest_cuda.txt"
  cat "$OUT/ucx_perftest_cuda.txt" 2>/dev/null || true
}

case "${1:-}" in
  bundle) bundle ;;
  run)
    unpack
    shift
    # Parts run in the order given, under one deadline.
    for part in "${@:-tests}"; do
      case "$part" in
        gputests) run_gpu_tests ;;
        tests) run_tests ;;
        examples) run_examples ;;
        memcheck) run_memcheck ;;
        bench) run_bench ;;
        transfer) : >>"$OUT/bench.jsonl"; run_transfer ;;
        probe)
          # transpose_sum's gap to CuPy by chunk size: per-task costs or the transposed read.
          for c in 5000 10000 20000 40000; do
            RUN_CAP=30 run1 "$TREE/benchmarks/gpu_arrays" --op transpose_sum --n 40000 --chunk $c --device gpu --repeat 3 --persist
          done
          RUN_CAP=30 run1 "$TREE/benchmarks/gpu_arrays" --op transpose_sum --n 40000 --chunk 10000 --device gpu --repeat 3
          RUN_CAP=60 run1 env -u LD_LIBRARY_PATH -u UCX_MODULE_DIR python3 "$TREE/benchmarks/cupy_local.py" --n 40000 --matmul-n 20000 --seed-n 50000 ;;
        sweep)
          # Device-to-device transfer time by size (8 B to 1 GiB), direct and staged: what is
          # per transfer and what is per byte.
          RUN_CAP=60 with_cuda_ucx run1 "$TREE/benchmarks/transfer" --device gpu --megabytes 1024 --repeat 3 --protocol ucx --sweep
          RUN_CAP=60 run1 "$TREE/benchmarks/transfer" --device gpu --megabytes 1024 --repeat 3 --protocol ucx --sweep ;;
        seedcmp) RUN_CAP=30 run1 "$TREE/benchmarks/seed_array" --n 50000 --chunk 10000 --device gpu --scheduler threads --repeat 3 ;;
        *) echo "usage: gpu_suite.sh run [gputests] [tests] [transfer] [seedcmp] [examples] [memcheck] [bench]" >&2; exit 2 ;;
      esac
    done ;;
  *) echo "usage: gpu_suite.sh bundle | run [tests] [examples] [memcheck] [bench]" >&2; exit 2 ;;
esac
