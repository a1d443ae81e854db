#!/usr/bin/env bash
# Checks deploy/docker/Dockerfile.gpu as far as a machine without NVIDIA's registry allows:
# NVIDIA's CUDA images cannot be pulled, so its build stage runs on a stand-in base,
# debian:bookworm (from build_local.sh) with this machine's CUDA toolkit mounted at
# /usr/local/cuda, named nvidia/cuda:13.0.0-devel-ubuntu24.04 for the length of the build.
# It parses the whole file, runs stage one (apt-get, CMake with the CUDA back end on, the
# build, the install) and lists what was installed and what tessera-cuda-worker loads. The
# runtime stage is not built: its package names are Ubuntu 24.04's (libssl3t64, ...), which
# Debian's mirror does not have.
#
#   sudo bash deploy/docker/gpu_stand_in_build.sh        (after build_local.sh)
#
# Environment: TESSERA_JOBS (default all cores), TESSERA_IMAGE_CCACHE (as for build_local.sh),
# CUDA_HOME (default /usr/local/cuda). Removed on exit: the stand-in name and the stage-one image.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

cuda="${CUDA_HOME:-/usr/local/cuda}"
[[ "$(id -u)" == 0 ]] || { echo "gpu_stand_in_build: run as root" >&2; exit 1; }
[[ -x "$cuda/bin/nvcc" ]] || { echo "gpu_stand_in_build: no CUDA toolkit at $cuda" >&2; exit 1; }
# shellcheck source=deploy/docker/podman_args.sh
source deploy/docker/podman_args.sh
"${PODMAN[@]}" image exists docker.io/library/debian:bookworm \
  || { echo "gpu_stand_in_build: no debian:bookworm image: run build_local.sh first" >&2; exit 1; }

stand_in=docker.io/nvidia/cuda:13.0.0-devel-ubuntu24.04
stage_one=localhost/tessera-gpu-stage-one:stand-in
# The real image of that name is never on this machine: the stand-in must not stay under it.
cleanup() {
  "${PODMAN[@]}" rmi -f "$stage_one" "$stand_in" >/dev/null 2>&1 || true
  "${PODMAN[@]}" image prune -f >/dev/null 2>&1 || true
}
trap cleanup EXIT

# As NVIDIA's devel image: nvcc on PATH, the toolkit at /usr/local/cuda (mounted at build time).
# shellcheck disable=SC2016  # $PATH is the image's, expanded by the ENV line
printf 'FROM docker.io/library/debian:bookworm\nENV PATH=/usr/local/cuda/bin:$PATH CUDA_HOME=/usr/local/cuda\n' \
  | "${PODMAN[@]}" build --pull=never "${PODMAN_BUILD[@]}" -t "$stand_in" -f - . >/dev/null

build_args=(--build-arg "TESSERA_JOBS=${TESSERA_JOBS:-$(nproc)}" --volume "$cuda:/usr/local/cuda:ro")
ccache_dir="${TESSERA_IMAGE_CCACHE:-}"
if [[ -z "$ccache_dir" ]] && command -v ccache >/dev/null 2>&1; then ccache_dir="$(ccache -k cache_dir)"; fi
[[ -n "$ccache_dir" && "$ccache_dir" != none ]] && build_args+=(--volume "$ccache_dir:/ccache")

echo "gpu_stand_in_build: Dockerfile.gpu, stage one, on the stand-in base ($("$cuda/bin/nvcc" --version | tail -n 1))"
start=$(date +%s)
nice -n 19 "${PODMAN[@]}" build --network host --pull=never --layers=false --force-rm "${PODMAN_BUILD[@]}" \
  "${build_args[@]}" --target build -f deploy/docker/Dockerfile.gpu -t "$stage_one" .
echo "gpu_stand_in_build: stage one built in $(($(date +%s) - start)) s; installed:"
"${PODMAN[@]}" run --rm "${PODMAN_RUN[@]}" --network none --volume "$cuda:/usr/local/cuda:ro" "$stage_one" bash -c '
  ls /opt/tessera/bin /opt/tessera/lib | sed "s/^/  /"
  echo "tessera-cuda-worker loads (libcuda.so.1 comes from the driver at run time):"
  LD_LIBRARY_PATH=/opt/tessera/lib ldd /opt/tessera/bin/tessera-cuda-worker | grep -E "tessera|cuda|not found" | sed "s/^/ /"'
