#!/usr/bin/env bash
# Builds deploy/docker/Dockerfile into tessera:latest on a machine with no Docker daemon and no
# container registry, with Debian's own tools (docs/deployment.md, "Building the image here"):
#
#   sudo bash deploy/docker/build_local.sh        (root: podman's system storage, mmdebstrap)
#
#   1. installs podman, mmdebstrap and runc from Debian when missing;
#   2. makes the base images the Dockerfile names, debian:bookworm and debian:bookworm-slim,
#      with mmdebstrap from Debian's mirror (minbase, as the official images; the slim one
#      also drops documentation, man pages and locales as the official slim image does), and
#      imports them under the names a registry pull would give them
#      (docker.io/library/debian:...), so the Dockerfile's FROM lines find them with --pull=never;
#   3. podman build --network host --pull=never into tessera:latest, at nice 19, and prints
#      the image's size.
#
# Environment:
#   TESSERA_JOBS            compile jobs inside the build (default: all cores)
#   TESSERA_DEBIAN_MIRROR   Debian mirror (default http://deb.debian.org/debian)
#   TESSERA_REBUILD_BASES=1 make the base images again even when they exist
#   TESSERA_IMAGE_CCACHE    a ccache folder mounted into the build at /ccache (the Dockerfile
#                           uses it when there): default the host's own (`ccache -k cache_dir`)
#                           when ccache is installed; "none" builds without
#   TESSERA_IMAGE           the image's name (default tessera:latest)
#
# Kept afterwards: the image and the two base images. Removed: the base tarballs, the build's
# intermediate containers and its untagged intermediate images.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

if [[ "$(id -u)" != 0 ]]; then
  echo "build_local: run as root (podman's system storage; mmdebstrap's root mode)" >&2
  exit 1
fi

JOBS="${TESSERA_JOBS:-$(nproc)}"
MIRROR="${TESSERA_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SECURITY_MIRROR="${MIRROR%/debian}/debian-security"
IMAGE="${TESSERA_IMAGE:-tessera:latest}"

# runc as well as podman's crun: podman_args.sh picks runc where crun cannot run.
missing=()
for tool in podman mmdebstrap runc; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if ((${#missing[@]})); then
  echo "build_local: installing ${missing[*]}"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" \
    crun netavark aardvark-dns
fi

# shellcheck source=deploy/docker/podman_args.sh
source deploy/docker/podman_args.sh

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# The official images' apt settings (debuerreotype's): no translations, lists and .debs
# removed after each install, no Recommends pulled in by autoremove.
apt_options=(
  --aptopt='Acquire::Languages "none"'
  --aptopt='APT::AutoRemove::SuggestsImportant "false"'
  --aptopt='DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; }'
  --aptopt='Dir::Cache::pkgcache ""'
  --aptopt='Dir::Cache::srcpkgcache ""'
)
# What debian:*-slim leaves out (debuerreotype's slimify list), kept in
# /etc/dpkg/dpkg.cfg.d/ so later apt-get installs in the image leave them out too.
slim_options=(
  --dpkgopt='path-exclude=/usr/share/doc/*'
  --dpkgopt='path-include=/usr/share/doc/*/copyright'
  --dpkgopt='path-exclude=/usr/share/groff/*'
  --dpkgopt='path-exclude=/usr/share/info/*'
  --dpkgopt='path-exclude=/usr/share/linda/*'
  --dpkgopt='path-exclude=/usr/share/lintian/overrides/*'
  --dpkgopt='path-exclude=/usr/share/locale/*'
  --dpkgopt='path-exclude=/usr/share/man/*'
)

# make_base NAME [mmdebstrap options...]: bookworm, minbase, with updates and security, as
# docker.io/library/NAME.
make_base() {
  local name="docker.io/library/$1" tarball
  shift
  if [[ "${TESSERA_REBUILD_BASES:-0}" != 1 ]] && "${PODMAN[@]}" image exists "$name"; then
    echo "build_local: $name exists (TESSERA_REBUILD_BASES=1 makes it again)"
    return
  fi
  tarball="$scratch/${name##*:}.tar"
  echo "build_local: mmdebstrap $name from $MIRROR"
  # The merged-usr hook makes /bin -> usr/bin itself and installs usr-is-merged, as the official
  # images have; without it mmdebstrap converts with usrmerge, which leaves perl behind (47 MB).
  nice -n 19 mmdebstrap --quiet --variant=minbase --mode=root --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    "${apt_options[@]}" "$@" bookworm "$tarball" \
    "deb $MIRROR bookworm main" "deb $MIRROR bookworm-updates main" \
    "deb $SECURITY_MIRROR bookworm-security main"
  "${PODMAN[@]}" import --change 'CMD ["bash"]' --message "mmdebstrap --variant=minbase bookworm ($MIRROR)" \
    "$tarball" "$name" >/dev/null
  rm -f "$tarball"
}

make_base debian:bookworm
make_base debian:bookworm-slim "${slim_options[@]}"

build_args=(--build-arg "TESSERA_JOBS=$JOBS")
ccache_dir="${TESSERA_IMAGE_CCACHE:-}"
if [[ -z "$ccache_dir" ]] && command -v ccache >/dev/null 2>&1; then ccache_dir="$(ccache -k cache_dir)"; fi
if [[ -n "$ccache_dir" && "$ccache_dir" != none ]]; then
  mkdir -p "$ccache_dir"
  build_args+=(--volume "$ccache_dir:/ccache")
  echo "build_local: compiler cache $ccache_dir mounted at /ccache"
fi

# The wire protocol the image speaks, as a label: a client speaks with a cluster only of its own
# version, so smoke_test.sh skips an image older than the checkout instead of failing on it.
protocol=$(sed -n 's/.*kProtocolVersion = \([0-9]*\);.*/\1/p' src/comm/wire.hpp)
build_args+=(--label "org.tessera.protocol=$protocol" --label "org.tessera.commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)")
echo "build_local: podman build -f deploy/docker/Dockerfile -t $IMAGE ($JOBS compile jobs, nice 19, protocol $protocol)"
start=$(date +%s)
nice -n 19 "${PODMAN[@]}" build --network host --pull=never --layers=false --force-rm \
  "${PODMAN_BUILD[@]}" "${build_args[@]}" -f deploy/docker/Dockerfile -t "$IMAGE" .
echo "build_local: built $IMAGE in $(($(date +%s) - start)) s"
# The build stage's image is untagged once the final stage is done: remove it (and any other
# untagged image an interrupted build left behind).
"${PODMAN[@]}" image prune -f >/dev/null

"${PODMAN[@]}" images --format '{{.Repository}}:{{.Tag}}  {{.Size}}' \
  | grep -E '(tessera|debian):' | sed 's/^/build_local: image /'
size=$("${PODMAN[@]}" image inspect --format '{{.Size}}' "$IMAGE")
echo "build_local: $IMAGE is $((size / 1000000)) MB ($size bytes, uncompressed)"
