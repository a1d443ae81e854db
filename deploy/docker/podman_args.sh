# shellcheck shell=bash
# Sourced by the scripts of this folder: the podman command line for this kind of machine.
# - Without systemd as init (a VM, or a container running the build), podman must manage
#   cgroups itself and log its events to a file.
# - On a hybrid cgroup hierarchy whose cgroup2 mount holds a controller (this VM's kernel has
#   hugetlb there), crun refuses to start anything ("cgroups in hybrid mode not supported");
#   runc runs there. `podman build` takes its own --runtime: PODMAN_BUILD holds it.
# - A root podman gives a container 1048576 open files and 4194304 processes; where this
#   process's hard limits are lower and may not be raised (no CAP_SYS_RESOURCE: this VM has
#   20000 files, "error setting rlimit type 7"), `podman run` gets them as they are, and at most
#   32768 processes, the limit podman's own process runs under here (its /proc/PID/limits;
#   `--ulimit host` asks for more and fails the same way): PODMAN_RUN holds the flags.
# Elsewhere podman's defaults stand.
PODMAN=(podman)
PODMAN_BUILD=()
PODMAN_RUN=()
if [[ ! -d /run/systemd/system ]]; then
  PODMAN+=(--cgroup-manager=cgroupfs --events-backend=file)
fi
if [[ -n "$(cat /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null)" ]]; then  # (sysfs sizes read 0: no -s)
  PODMAN+=(--runtime=runc)
  PODMAN_BUILD+=(--runtime=runc)
fi
if [[ "$(ulimit -Hn)" != unlimited ]] && (( $(ulimit -Hn) < 1048576 )); then
  nproc="$(ulimit -Hu)"
  [[ "$nproc" == unlimited ]] || (( nproc > 32768 )) && nproc=32768
  PODMAN_RUN+=(--ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit "nproc=$nproc:$nproc")
  unset nproc
fi
