#!/usr/bin/env bash
# Single-node Slurm for tests (Debian slurm-wlm + munge), as root, no systemd, no cgroups, loopback only.
# Recipe: ../shared/spec/distributed-setup.md. Fake GPUs are /dev/null symlinks so `--gres=gpu:N` schedules.
#
#   bash .ci/slurm.sh up       install if missing, write config, start munged/slurmctld/slurmd (idempotent)
#   bash .ci/slurm.sh down     stop the daemons by the PIDs in their pid files (never by name)
#   bash .ci/slurm.sh status   print the daemons' PIDs and `sinfo`
#
# Env: FAKE_GPUS (default 2), SLURM_STATE_RESET=1 clears controller state (job ids restart at 1).
# Functions `slurm_up` / `slurm_down` can also be sourced: `. .ci/slurm.sh lib`.
set -euo pipefail

FAKE_GPUS=${FAKE_GPUS:-2}
PIDFILES=(/run/slurm/slurmd.pid /run/slurm/slurmctld.pid /run/munge/munged.pid)

_alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

slurm_down() {
  local f p i
  for f in "${PIDFILES[@]}"; do
    [ -s "$f" ] || continue
    p=$(cat "$f")
    if kill "$p" 2>/dev/null; then
      for i in $(seq 1 40); do kill -0 "$p" 2>/dev/null || break; sleep 0.25; done
      kill -0 "$p" 2>/dev/null && kill -9 "$p" 2>/dev/null || true
      echo "slurm.sh: stopped $p ($f)"
    fi
    rm -f "$f"
  done
}

slurm_up() {
  [ "$(id -u)" = 0 ] || { echo "slurm.sh: needs root (munge/slurm users, /run, /etc/slurm)" >&2; return 1; }
  local H pk i gres=""
  H=$(hostname -s)
  pk="slurm-wlm slurmctld slurmd slurm-client munge"
  if ! dpkg -s $pk >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends $pk >/dev/null
  fi
  mkdir -p /run/munge /run/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /tmp/fakegpu /etc/slurm
  chown munge:munge /run/munge
  chown slurm:slurm /run/slurm /var/spool/slurmctld /var/log/slurm
  [ -s /etc/munge/munge.key ] || { runuser -u munge -- /usr/sbin/mungekey --create 2>/dev/null || \
      { dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null; chown munge:munge /etc/munge/munge.key; chmod 600 /etc/munge/munge.key; }; }
  _alive /run/munge/munged.pid || runuser -u munge -- /usr/sbin/munged
  if [ "$FAKE_GPUS" -gt 0 ]; then
    for i in $(seq 0 $((FAKE_GPUS - 1))); do ln -sf /dev/null /tmp/fakegpu/nvidia$i; done
    echo "NodeName=$H Name=gpu Type=fake File=/tmp/fakegpu/nvidia[0-$((FAKE_GPUS - 1))]" > /etc/slurm/gres.conf
    gres="Gres=gpu:fake:$FAKE_GPUS"
  else
    : > /etc/slurm/gres.conf
  fi
  cat > /etc/slurm/slurm.conf.new <<EOC
ClusterName=ci
SlurmctldHost=$H(127.0.0.1)
SlurmUser=slurm
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurm/slurmctld.pid
SlurmdPidFile=/run/slurm/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
GresTypes=gpu
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=/var/log/slurm/jobcomp.txt
KillWait=10
NodeName=$H NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=1000 $gres State=UNKNOWN
PartitionName=debug Nodes=$H Default=YES MaxTime=INFINITE State=UP
EOC
  local changed=0
  cmp -s /etc/slurm/slurm.conf.new /etc/slurm/slurm.conf 2>/dev/null || changed=1
  mv /etc/slurm/slurm.conf.new /etc/slurm/slurm.conf
  if [ "$changed" = 1 ] && { _alive /run/slurm/slurmctld.pid || _alive /run/slurm/slurmd.pid; }; then
    # config changed under running daemons: restart them (munged stays)
    for f in /run/slurm/slurmd.pid /run/slurm/slurmctld.pid; do
      _alive "$f" && { p=$(cat "$f"); kill "$p"; for i in $(seq 1 40); do kill -0 "$p" 2>/dev/null || break; sleep 0.25; done; }
      rm -f "$f"
    done
  fi
  [ "${SLURM_STATE_RESET:-0}" = 1 ] && ! _alive /run/slurm/slurmctld.pid && rm -rf /var/spool/slurmctld/*
  _alive /run/slurm/slurmctld.pid || /usr/sbin/slurmctld
  _alive /run/slurm/slurmd.pid || /usr/sbin/slurmd
  for i in $(seq 1 60); do   # bounded: an INVAL node never becomes idle
    if sinfo -h -o %t 2>/dev/null | grep -qE '^(idle|mix|alloc)'; then break; fi
    if sinfo -h -o %t 2>/dev/null | grep -qE 'drain|inval|down'; then scontrol update nodename="$H" state=resume >/dev/null 2>&1 || true; fi
    sleep 0.5
  done
  if ! sinfo -h -o %t 2>/dev/null | grep -qE '^(idle|mix|alloc)'; then
    echo "slurm.sh: node did not become idle" >&2; scontrol show node "$H" >&2 || true; return 1
  fi
  sinfo -o '%P %N %G %t'
}

slurm_status() {
  local f
  for f in "${PIDFILES[@]}"; do
    if _alive "$f"; then echo "$f: $(cat "$f") running"; else echo "$f: not running"; fi
  done
  sinfo -o '%P %N %G %t' 2>/dev/null || true
}

case "${1:-up}" in
  up) slurm_up ;;
  down|stop) slurm_down ;;
  status) slurm_status ;;
  lib) : ;;  # sourced for its functions
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
