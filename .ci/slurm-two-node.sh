#!/usr/bin/env bash
# A second, two-node Slurm cluster on this host for the multi-node tests: two slurmd (`slurmd -N n1`,
# `slurmd -N n2`, Debian's slurm-wlm 22.05 accepts several on one host) under their own slurmctld, with their
# own config (/etc/slurm-two/slurm.conf: export SLURM_CONF to use it), ports (6917-6922), state, pid and log
# files, so the single-node cluster of .ci/slurm.sh keeps running beside it. No GPUs: the CPU deployment's
# pools take a node each. Needs .ci/slurm.sh's packages and munged (started by `bash .ci/slurm.sh up`).
#
#   bash .ci/slurm-two-node.sh up | down | status
set -euo pipefail

D=/etc/slurm-two
S=/var/spool/slurm-two
R=/run/slurm-two
L=/var/log/slurm-two
export SLURM_CONF=$D/slurm.conf
PIDFILES=("$R/slurmd-n1.pid" "$R/slurmd-n2.pid" "$R/slurmctld.pid")

_alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

two_down() {
  local f p i
  for f in "${PIDFILES[@]}"; do
    [ -s "$f" ] || continue
    p=$(cat "$f")
    if kill "$p" 2>/dev/null; then
      for i in $(seq 1 40); do kill -0 "$p" 2>/dev/null || break; sleep 0.25; done
      kill -0 "$p" 2>/dev/null && kill -9 "$p" 2>/dev/null || true
      echo "slurm-two-node.sh: stopped $p ($f)"
    fi
    rm -f "$f"
  done
}

two_up() {
  [ "$(id -u)" = 0 ] || { echo "slurm-two-node.sh: needs root" >&2; return 1; }
  _alive /run/munge/munged.pid || bash "$(dirname "$0")/slurm.sh" up >/dev/null
  local H i
  H=$(hostname -s)
  mkdir -p "$D" "$S/state" "$S/spool" "$R" "$L"
  chown -R slurm:slurm "$S" "$R" "$L"
  cat > "$D/slurm.conf.new" <<EOC
ClusterName=ci2
SlurmctldHost=$H(127.0.0.1)
SlurmctldPort=6917
SlurmdPort=6918
SlurmUser=slurm
AuthType=auth/munge
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool/%n
SlurmctldPidFile=$R/slurmctld.pid
SlurmdPidFile=$R/slurmd-%n.pid
SlurmctldLogFile=$L/slurmctld.log
SlurmdLogFile=$L/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
AccountingStorageType=accounting_storage/none
KillWait=10
NodeName=n1 NodeHostname=$H NodeAddr=127.0.0.1 Port=6921 CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
NodeName=n2 NodeHostname=$H NodeAddr=127.0.0.1 Port=6922 CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
PartitionName=two Nodes=n1,n2 Default=YES MaxTime=INFINITE OverSubscribe=YES State=UP
EOC
  if ! cmp -s "$D/slurm.conf.new" "$D/slurm.conf" 2>/dev/null; then
    mv "$D/slurm.conf.new" "$D/slurm.conf"
    two_down >/dev/null
  else
    rm -f "$D/slurm.conf.new"
  fi
  _alive "$R/slurmctld.pid" || /usr/sbin/slurmctld
  _alive "$R/slurmd-n1.pid" || /usr/sbin/slurmd -N n1
  _alive "$R/slurmd-n2.pid" || /usr/sbin/slurmd -N n2
  for i in $(seq 1 60); do  # bounded
    [ "$(sinfo -h -o %t 2>/dev/null | grep -cE '^(idle|mix|alloc)')" -ge 1 ] && \
      [ "$(sinfo -h -N -o %t 2>/dev/null | grep -cE '^(idle|mix|alloc)')" = 2 ] && break
    sinfo -h -N -o '%N %t' 2>/dev/null | awk '/drain|inval|down/{print $1}' | while read -r n; do
      scontrol update nodename="$n" state=resume >/dev/null 2>&1 || true; done
    sleep 0.5
  done
  [ "$(sinfo -h -N -o %t 2>/dev/null | grep -cE '^(idle|mix|alloc)')" = 2 ] || {
    echo "slurm-two-node.sh: the two nodes did not become idle" >&2; sinfo -N >&2 || true; return 1; }
  sinfo -N -o '%P %N %t'
}

two_status() {
  local f
  for f in "${PIDFILES[@]}"; do
    if _alive "$f"; then echo "$f: $(cat "$f") running"; else echo "$f: not running"; fi
  done
  sinfo -N -o '%P %N %t' 2>/dev/null || true
}

case "${1:-up}" in
  up) two_up ;;
  down|stop) two_down ;;
  status) two_status ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
