#!/usr/bin/env bash
# A single-node SLURM cluster in a scratch folder, for the SLURMCluster tests (run as root):
#   slurm_single_node.sh start DIR   munged, slurmctld and slurmd with everything in DIR; waits
#                                    until sinfo shows the node idle; prints SLURM_CONF=DIR/slurm.conf
#   slurm_single_node.sh stop DIR    stops the daemons by their pid files and removes DIR
# Exit status 77 from start: SLURM cannot run here (the reason on stderr); start stops what it
# started before returning non-zero. Nothing outside DIR is written: its own munge socket, key
# and ports, so it runs beside a system SLURM or another test's cluster.
set -uo pipefail

cmd="${1:?start|stop}" dir="${2:?scratch folder}"

stop() {
  local f pid
  # Jobs first: their steps (slurmstepd and what it runs) outlive slurmd. Only this cluster's
  # jobs: scancel asks this folder's slurmctld.
  if [[ -s "$dir/slurmctld.pid" ]] && kill -0 "$(cat "$dir/slurmctld.pid")" 2>/dev/null; then
    SLURM_CONF="$dir/slurm.conf" scancel --quiet --user="$(id -un)" 2>/dev/null || true
    for _ in $(seq 100); do
      [[ -z "$(SLURM_CONF="$dir/slurm.conf" squeue --noheader 2>/dev/null)" ]] && break
      sleep 0.1
    done
  fi
  # slurmd first (its jobs' steps), then the controller, then munge that both use.
  for f in slurmd.pid slurmctld.pid munged.pid; do
    [[ -s "$dir/$f" ]] || continue
    pid="$(cat "$dir/$f")"
    kill -TERM "$pid" 2>/dev/null || continue
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  rm -rf "$dir"
}

if [[ "$cmd" == stop ]]; then stop; exit 0; fi
[[ "$cmd" == start ]] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }

skip() { echo "slurm_single_node: $*" >&2; stop; exit 77; }
for b in munged slurmctld slurmd sinfo sbatch squeue scancel; do
  command -v "$b" >/dev/null || PATH="$PATH:/usr/sbin"
  command -v "$b" >/dev/null || skip "$b not installed (scripts/setup.sh installs slurmd, slurmctld, slurm-client, munge)"
done
(( EUID == 0 )) || skip "needs root (SlurmUser=root, slurmd runs jobs as their user)"

mkdir -p "$dir"/{state,spool,log,munge}
chmod 700 "$dir/munge"
head -c 1024 /dev/urandom > "$dir/munge/munge.key"
chmod 400 "$dir/munge/munge.key"
sock="$dir/munge/munge.socket"
munged --force --key-file="$dir/munge/munge.key" --socket="$sock" --pid-file="$dir/munged.pid" \
  --log-file="$dir/log/munged.log" --seed-file="$dir/munge/munged.seed" \
  || skip "munged did not start: $(tail -3 "$dir/log/munged.log" 2>/dev/null)"

# Free ports for slurmctld and slurmd (a small race with other programs; they fail clearly).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ctld_port="$(free_port)" d_port="$(free_port)"
host="$(hostname -s)"
mem="$(awk '/MemTotal/ { print int($2 / 1024 / 2) }' /proc/meminfo)"
cat > "$dir/slurm.conf" <<CONF
ClusterName=tessera-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
MessageTimeout=10
KillWait=5
InactiveLimit=0
NodeName=$host NodeAddr=127.0.0.1 CPUs=2 RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$dir/slurm.conf"
slurmctld -f "$SLURM_CONF" || skip "slurmctld did not start: $(tail -5 "$dir/log/slurmctld.log" 2>/dev/null)"
slurmd -f "$SLURM_CONF" || skip "slurmd did not start: $(tail -5 "$dir/log/slurmd.log" 2>/dev/null)"
for _ in $(seq 150); do
  state="$(sinfo -h -N -o %t 2>/dev/null | head -1)"
  [[ "$state" == idle ]] && { echo "SLURM_CONF=$SLURM_CONF"; exit 0; }
  sleep 0.2
done
skip "the node is not idle after 30 s (sinfo: ${state:-nothing}); slurmctld: $(tail -3 "$dir/log/slurmctld.log"); slurmd: $(tail -3 "$dir/log/slurmd.log")"
