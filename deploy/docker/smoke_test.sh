#!/usr/bin/env bash
# Runs the image that build_local.sh built, for real: a scheduler container and two worker
# containers on the host's network (every address 127.0.0.1: nothing leaves loopback), the seed
# workload submitted from this machine by examples/seed_workload, /health of the dashboard
# served from the scheduler's container, and `podman stop` ending all three with exit status 0.
#
#   sudo bash deploy/docker/smoke_test.sh [SEED_WORKLOAD]     (default build/examples/seed_workload)
#
# Exits 77 (ctest's skip) with the reason when podman, the image or the client is missing, or
# when not root. Every container and the scratch folder are removed on any exit.
#
# Environment: TESSERA_IMAGE (default tessera:latest), TESSERA_SMOKE_N (the array is N x N,
# default 4000, in 1000 x 1000 chunks).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

IMAGE="${TESSERA_IMAGE:-tessera:latest}"
SEED="${1:-build/examples/seed_workload}"
N="${TESSERA_SMOKE_N:-4000}"
CHUNK=1000

skip() { echo "smoke_test: SKIPPED: $*"; exit 77; }
fail() { echo "smoke_test: FAILED: $*" >&2; exit 1; }

[[ "$(id -u)" == 0 ]] || skip "not root (the containers use podman's system storage)"
command -v podman >/dev/null 2>&1 || skip "podman is not installed (deploy/docker/build_local.sh installs it)"
# shellcheck source=deploy/docker/podman_args.sh
source deploy/docker/podman_args.sh
"${PODMAN[@]}" image exists "$IMAGE" || skip "no image $IMAGE (build it with deploy/docker/build_local.sh)"
# An image left on the machine by an older checkout speaks an older protocol: not a failure of
# this checkout, so skipped with what to do (build_local.sh labels each image it builds).
want=$(sed -n 's/.*kProtocolVersion = \([0-9]*\);.*/\1/p' src/comm/wire.hpp)
have=$("${PODMAN[@]}" image inspect --format '{{ index .Labels "org.tessera.protocol" }}' "$IMAGE" 2>/dev/null || true)
[[ "$have" == "$want" ]] ||
  skip "$IMAGE speaks protocol ${have:-unknown (no label)}, this checkout $want: rebuild it with deploy/docker/build_local.sh"
[[ -x "$SEED" ]] || skip "no client program $SEED (build the seed_workload target)"
command -v curl >/dev/null 2>&1 || skip "curl is not installed"
command -v python3 >/dev/null 2>&1 || skip "python3 is not installed (reads the dashboard's JSON)"

# Names unique to this run, so a test running beside another (or a leftover) cannot collide.
tag="tessera-smoke-$$"
containers=("$tag-scheduler" "$tag-worker-0" "$tag-worker-1")
shared="$(mktemp -d)"
cleanup() {
  local status=$?
  if ((status != 0 && status != 77)); then
    for c in "${containers[@]}"; do
      "${PODMAN[@]}" container exists "$c" || continue
      echo "--- log of $c"
      "${PODMAN[@]}" logs "$c" 2>&1 | tail -n 30
    done
  fi
  "${PODMAN[@]}" rm --force --ignore --time 0 "${containers[@]}" >/dev/null 2>&1 || true
  rm -rf "$shared"
  exit "$status"
}
trap cleanup EXIT
# The containers run as the image's user (uid 1000): the scheduler writes its file here.
chmod 0777 "$shared"

TESSERA_TOKEN="$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
export TESSERA_TOKEN
run=("${PODMAN[@]}" run "${PODMAN_RUN[@]}" --detach --network host --env TESSERA_TOKEN --volume "$shared:/shared")

echo "smoke_test: scheduler container from $IMAGE"
"${run[@]}" --name "${containers[0]}" "$IMAGE" \
  tessera-scheduler --host 127.0.0.1 --port 0 --dashboard-address :0 \
  --scheduler-file /shared/scheduler.json >/dev/null
for i in 0 1; do
  "${run[@]}" --name "${containers[$((i + 1))]}" "$IMAGE" \
    tessera-worker --scheduler-file /shared/scheduler.json --host 127.0.0.1 --nthreads 1 \
    --name "smoke-worker-$i" --memory-limit 1GiB >/dev/null
done

for _ in $(seq 300); do [[ -s "$shared/scheduler.json" ]] && break; sleep 0.1; done
[[ -s "$shared/scheduler.json" ]] || fail "the scheduler wrote no scheduler file in 30 s"
read -r address dashboard < <(python3 -c '
import json, sys
f = json.load(open(sys.argv[1]))
print(f["address"], f["services"]["dashboard"])' "$shared/scheduler.json")
echo "smoke_test: scheduler at $address, dashboard on port $dashboard"

health="$(curl -fsS --max-time 5 "http://127.0.0.1:$dashboard/health")" || fail "/health did not answer"
[[ "$health" == ok ]] || fail "/health answered '$health', not 'ok'"
echo "smoke_test: /health answered '$health' from the scheduler's container"

workers=0
for _ in $(seq 300); do
  workers="$(curl -fsS --max-time 5 "http://127.0.0.1:$dashboard/api/v1/workers" \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["num_workers"])')" || workers=0
  [[ "$workers" == 2 ]] && break
  sleep 0.1
done
[[ "$workers" == 2 ]] || fail "$workers worker(s) registered in 30 s, not 2"
echo "smoke_test: 2 worker containers registered"

# The same expression in this process (thread pool) and on the containers: the graph and the
# random blocks are the same, so the sums must agree (to rounding: the tree of partial sums is
# the same, but summation within a block may vectorise differently between the two builds).
local_value="$("$SEED" --n "$N" --chunk "$CHUNK" | sed -n 's/^value *//p')"
remote_out="$("$SEED" --n "$N" --chunk "$CHUNK" --scheduler "$address")"
while IFS= read -r line; do echo "smoke_test:   $line"; done <<<"$remote_out"
remote_value="$(echo "$remote_out" | sed -n 's/^value *//p')"
expected="$(echo "$remote_out" | sed -n 's/^expected *\([0-9.]*\).*/\1/p')"
python3 - "$local_value" "$remote_value" "$expected" <<'EOF' || fail "the cluster's value is wrong"
import sys
local, remote, expected = map(float, sys.argv[1:])
# normal(10, 1) + 1 over n*n/4 elements: the mean is 11 to within a few standard errors.
assert abs(remote - expected) / expected < 1e-3, f"cluster {remote} is not near {expected}"
assert abs(remote - local) <= 1e-9 * abs(local), f"cluster {remote} != local {local}"
print(f"smoke_test: cluster value {remote:.6f} = local thread pool value {local:.6f}")
EOF

# Both workers ran tasks of it (the task stream names the worker of every finished task).
ran_on="$(curl -fsS --max-time 5 "http://127.0.0.1:$dashboard/api/v1/task-stream?limit=10000" \
  | python3 -c 'import json, sys; print(len({t["worker"] for t in json.load(sys.stdin)["tasks"]}))')"
[[ "$ran_on" == 2 ]] || fail "the tasks ran on $ran_on worker(s), not 2"
echo "smoke_test: the tasks ran on both worker containers"

# podman stop: SIGTERM to each container's first process (a worker's nanny, the scheduler),
# SIGKILL after 30 s. Workers first, then the scheduler; each must exit 0.
for c in "${containers[@]:1}" "${containers[0]}"; do
  "${PODMAN[@]}" stop --time 30 "$c" >/dev/null
  code="$("${PODMAN[@]}" inspect --format '{{.State.ExitCode}}' "$c")"
  [[ "$code" == 0 ]] || fail "$c exited $code after podman stop, not 0"
done
[[ ! -e "$shared/scheduler.json" ]] || fail "the scheduler left its scheduler file behind"
echo "smoke_test: podman stop ended the 3 containers with exit status 0"
echo "smoke_test: PASSED"
