#!/usr/bin/env bash
# Installs the Debian packages Tessera needs to build, test and benchmark, and only those that
# are missing. Safe to run again and again: with everything present it only runs dpkg-query.
#
# The CUDA Toolkit is NOT installed here: it is optional. CMake finds it by itself in
# /usr/local/cuda (or via CMAKE_CUDA_COMPILER) and then builds the cuda/ back end; without it
# the build is host-only. Install CUDA 13 from NVIDIA on GPU machines.
#
# Then scripts/python_env.sh makes the Python environment with the pinned pyarrow wheel (Arrow
# C++ for the dataframe layer), pandas, moto, Dask and Polars.
#
# Environment: TESSERA_SKIP_SETUP=1 skips this script entirely (e.g. on a machine you manage).
set -euo pipefail

if [[ "${TESSERA_SKIP_SETUP:-0}" == "1" ]]; then
  echo "setup: TESSERA_SKIP_SETUP=1, not checking packages"
  exit 0
fi

PACKAGES=(
  cmake ninja-build g++ pkg-config ccache doxygen
  libgtest-dev libgmock-dev libbenchmark-dev
  libboost-dev prometheus-cpp-dev nlohmann-json3-dev
  libcereal-dev libspdlog-dev librandom123-dev libopenblas-dev liblapacke-dev libeigen3-dev libsleef-dev libucx-dev ucx-utils libcli11-dev libhdf5-dev libssl-dev
  python3-venv
  openssh-client openssh-server iproute2  # SSHCluster's ssh; sshd in the namespaced hosts of tests/distributed/ssh_cluster_test.cpp
  openssl  # the tls:// tests make their certificates with it (tests/support/tls_certs.hpp)
  chromium  # the dashboard's browser test (tests/distributed/status_page_test.cpp)
  slurmd slurmctld slurm-client munge  # SLURMCluster's tests: a single-node SLURM (tests/distributed/slurm_single_node.sh)
  clang libclang-rt-14-dev  # libFuzzer for the fuzz targets (fuzz/, scripts/fuzz.sh)
)

is_installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

missing=()
for p in "${PACKAGES[@]}"; do
  is_installed "$p" || missing+=("$p")
done

# The Python environment is optional for the build: without it (no network for pip, say) the
# dataframe layer, its tests and the side-by-side benchmarks are left out, and everything else
# builds and runs; say so loudly rather than stop.
python_env() {
  bash "$(dirname "${BASH_SOURCE[0]}")/python_env.sh" ||
    echo "setup: WARNING: the Python environment (pyarrow, pandas, moto, Dask, Polars) could not be made;" \
      "the dataframe layer will not be built" >&2
}

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#PACKAGES[@]} packages present"
  python_env
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup: missing packages (${missing[*]}) and no apt-get here; install them by hand" >&2
  exit 1
fi

SUDO=()
if [[ "$(id -u)" != "0" ]]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
  else
    echo "setup: not root and no sudo; cannot install: ${missing[*]}" >&2
    exit 1
  fi
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  "${missing[@]}" >/dev/null
echo "setup: done"
python_env
