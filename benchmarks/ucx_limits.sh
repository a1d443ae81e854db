#!/usr/bin/env bash
# Tessera's comm layer over tcp:// and ucx:// beside the limits of this machine: UCX's own
# ucx_perftest (UCP active messages, two processes on this host, shared memory) and memcpy
# (printed by comm_transfer --sweep for every size). One JSON object per line on stdout.
#
#   benchmarks/ucx_limits.sh [BUILD_DIR] [MAX_MEGABYTES] [ROUNDS]
#
# BUILD_DIR defaults to build; MAX_MEGABYTES to 256; ROUNDS (tcp and ucx sweeps, interleaved,
# so both see the same machine) to 2. Needs ucx_perftest (Debian: ucx-utils). The worker-to-
# worker figures are benchmarks/transfer --sweep --protocol tcp|ucx (a local cluster).
set -euo pipefail

BUILD=${1:-build}
MAX_MB=${2:-256}
ROUNDS=${3:-2}
BENCH="$BUILD/benchmarks/comm_transfer"
[[ -x "$BENCH" ]] || { echo "ucx_limits: $BENCH not built" >&2; exit 1; }

echo "{\"benchmark\": \"machine\", \"uptime\": \"$(uptime | sed 's/.*load average: //')\", \"nproc\": $(nproc), \"seconds\": 0}"

# ucx_perftest: a server (one test, then it exits) and a client on 127.0.0.1.
perftest() {  # test size iterations
  local test=$1 size=$2 iters=$3 port=$((20000 + RANDOM % 20000)) out srv
  ucx_perftest -p "$port" >/dev/null 2>&1 &
  srv=$!
  sleep 0.3
  local t0=$(date +%s.%N)
  out=$(timeout 120 ucx_perftest 127.0.0.1 -p "$port" -t "$test" -s "$size" -n "$iters" -w $((iters / 10 + 1)) -f 2>/dev/null |
        awk 'NF == 8 && $1 ~ /^[0-9]+$/ {print}' | tail -1) || true
  local t1=$(date +%s.%N)
  wait "$srv" 2>/dev/null || true
  [[ -n "$out" ]] || { echo "ucx_limits: ucx_perftest $test -s $size failed" >&2; return 0; }
  # iterations, latency p50/avg/overall (us), bandwidth avg/overall (MB/s), rate avg/overall
  echo "$out" | awk -v t="$test" -v s="$size" -v secs="$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')" \
    'function num(x) { return (x ~ /^[0-9.]+$/) ? x : "null" }
     {printf "{\"benchmark\": \"ucx_perftest\", \"test\": \"%s\", \"bytes\": %s, \"iterations\": %s, \"seconds\": %s, \"median_us\": %s, \"average_us\": %s, \"gb_per_s\": %.3f}\n", t, s, $1, secs, num($2), num($3), $6 * 1048576 / 1e9}'
}

if command -v ucx_perftest >/dev/null 2>&1; then
  size=8
  max=$((MAX_MB * 1048576))
  while :; do
    iters=$((400000000 / (size + 4000)))
    ((iters < 20)) && iters=20
    ((iters > 100000)) && iters=100000
    # Latency: a one-way time per message (half a ping-pong); bandwidth: a stream.
    perftest ucp_am_lat "$size" "$iters"
    perftest ucp_am_bw "$size" "$iters"
    ((size >= max)) && break
    size=$((size * 4))
    ((size > max)) && size=$max
  done
else
  echo "ucx_limits: no ucx_perftest (apt-get install ucx-utils); skipping UCX's own figures" >&2
fi

for ((r = 0; r < ROUNDS; ++r)); do
  for p in tcp ucx; do
    "$BENCH" --sweep --protocol "$p" --max-megabytes "$MAX_MB"
  done
done
