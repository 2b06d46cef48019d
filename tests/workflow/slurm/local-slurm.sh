#!/usr/bin/env bash
# local-slurm.sh up|down|status
# Single-node, loopback-only Slurm cluster for tests (Debian 12, run as root);
# adapted from the project's shared test script. Memory limits are enforced
# (jobacct_gather/linux + OverMemoryKill: a step above its --mem is killed), so
# tests can make a job fail for lack of memory and check Snakemake's retry.
# Packages needed: munge slurmctld slurmd slurm-client
#   (+ slurmdbd mariadb-server when WITH_ACCOUNTING=1)
# Everything lives under $SLURM_LOCAL_ROOT; nothing is written to /etc.
set -euo pipefail

ROOT=${SLURM_LOCAL_ROOT:-/tmp/local-slurm}
WITH_ACCOUNTING=${WITH_ACCOUNTING:-0}
CONF=$ROOT/etc/slurm.conf
MSOCK=$ROOT/run/munge/munge.socket

log() { echo "[local-slurm $(date +%T)] $*" >&2; }

wait_for() { # wait_for <desc> <seconds> <cmd...>
  local desc=$1 secs=$2; shift 2
  local i
  for ((i = 0; i < secs * 5; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  log "timeout waiting for $desc"
  return 1
}

node_idle() { [ "$(sinfo -h -n localhost -o %t)" = idle ]; }

write_slurm_conf() {
  local cpus mem acct
  cpus=$(nproc)
  # leave ~15% headroom below what slurmd detects, else node goes INVALID
  mem=$(( $(slurmd -C | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p') * 85 / 100 ))
  if [ "$WITH_ACCOUNTING" = 1 ]; then
    acct="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=6819
# munge socket used for the slurmctld->slurmdbd connection (AuthInfo is NOT used for it)
AccountingStoragePass=$MSOCK"
  else
    acct="AccountingStorageType=accounting_storage/none"
  fi
  cat > "$CONF" <<EOF
ClusterName=localcluster
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
SlurmctldPort=6817
SlurmdPort=6818
AuthType=auth/munge
AuthInfo=socket=$MSOCK
CredType=cred/munge
StateSaveLocation=$ROOT/spool/ctld
SlurmdSpoolDir=$ROOT/spool/d
SlurmctldPidFile=$ROOT/run/slurmctld.pid
SlurmdPidFile=$ROOT/run/slurmd.pid
SlurmctldLogFile=$ROOT/log/slurmctld.log
SlurmdLogFile=$ROOT/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=500
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
$acct
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=1
JobAcctGatherParams=OverMemoryKill
JobCompType=jobcomp/none
InactiveLimit=0
KillWait=30
# squeue-based status checks in snakemake-executor-plugin-slurm need
# MinJobAge >= 3 * slurm-init-seconds-before-status-checks
MinJobAge=300
SlurmctldTimeout=120
SlurmdTimeout=300
Waittime=0
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
}

start_accounting() {
  local db=$ROOT/mysql
  mkdir -p "$db/data" "$ROOT/run/mysql"
  chown -R mysql:mysql "$db" "$ROOT/run/mysql"
  mariadb-install-db --user=mysql --datadir="$db/data" \
    --auth-root-authentication-method=socket --skip-test-db >"$ROOT/log/mariadb-install.log" 2>&1
  setsid mariadbd --no-defaults --user=mysql --datadir="$db/data" \
    --socket="$ROOT/run/mysql/mysqld.sock" --pid-file="$ROOT/run/mysql/mysqld.pid" \
    --bind-address=127.0.0.1 --port=3306 --innodb-buffer-pool-size=128M \
    >"$ROOT/log/mariadb.log" 2>&1 < /dev/null &
  wait_for mariadb 60 mariadb --socket="$ROOT/run/mysql/mysqld.sock" -u root -e 'select 1'
  mariadb --socket="$ROOT/run/mysql/mysqld.sock" -u root -e "
    CREATE DATABASE IF NOT EXISTS slurm_acct_db;
    CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurmpw';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
    FLUSH PRIVILEGES;"
  # slurmdbd reads slurmdbd.conf from the directory of \$SLURM_CONF; must be mode 600
  cat > "$ROOT/etc/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=$MSOCK
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=6819
SlurmUser=root
DebugLevel=info
LogFile=$ROOT/log/slurmdbd.log
PidFile=$ROOT/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=3306
StorageUser=slurm
StoragePass=slurmpw
StorageLoc=slurm_acct_db
EOF
  chmod 600 "$ROOT/etc/slurmdbd.conf"
  slurmdbd          # daemonizes, writes PidFile
  wait_for slurmdbd 30 bash -c "exec 3<>/dev/tcp/127.0.0.1/6819"
}

up() {
  mkdir -p "$ROOT"/{etc,log,bin,spool/ctld,spool/d,munge,run/munge}
  chmod 700 "$ROOT/munge"
  chmod 755 "$ROOT/run" "$ROOT/run/munge"   # munged: socket dir must be o+x
  export SLURM_CONF=$CONF

  log "munge"
  if [ ! -f "$ROOT/munge/munge.key" ]; then
    dd if=/dev/urandom of="$ROOT/munge/munge.key" bs=1024 count=1 status=none
    chmod 400 "$ROOT/munge/munge.key"
  fi
  munged --key-file="$ROOT/munge/munge.key" --socket="$MSOCK" \
    --pid-file="$ROOT/run/munge/munged.pid" --log-file="$ROOT/log/munged.log" \
    --seed-file="$ROOT/munge/munged.seed"
  wait_for munged 10 bash -c "munge -S '$MSOCK' -n | unmunge -S '$MSOCK'"

  write_slurm_conf

  if [ "$WITH_ACCOUNTING" = 1 ]; then
    log "mariadb + slurmdbd"
    start_accounting
  fi

  log "slurmctld"
  slurmctld -f "$CONF"            # daemonizes, writes SlurmctldPidFile
  wait_for slurmctld 30 scontrol ping
  log "slurmd"
  slurmd -N localhost -f "$CONF"  # daemonizes, writes SlurmdPidFile
  wait_for "node idle" 60 node_idle

  # snakemake-executor-plugin-slurm-jobstep strips SLURM_* (incl. SLURM_CONF)
  # from the env of the srun it runs inside each job -> wrapper re-adds it.
  cat > "$ROOT/bin/srun" <<EOF
#!/bin/sh
export SLURM_CONF=$CONF
exec /usr/bin/srun "\$@"
EOF
  chmod +x "$ROOT/bin/srun"
  cat > "$ROOT/env.sh" <<EOF
export SLURM_CONF=$CONF
export PATH=$ROOT/bin:\$PATH
EOF
  sinfo
  log "up; source $ROOT/env.sh"
}

stop_pidfile() { # stop_pidfile <file>
  local f=$1 p i
  [ -f "$f" ] || return 0
  p=$(cat "$f")
  if kill "$p" 2>/dev/null; then
    for ((i = 0; i < 100; i++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
    kill -0 "$p" 2>/dev/null && { log "pid $p did not stop, SIGKILL"; kill -9 "$p"; }
  fi
  rm -f "$f"
}

down() {
  stop_pidfile "$ROOT/run/slurmd.pid"
  stop_pidfile "$ROOT/run/slurmctld.pid"
  stop_pidfile "$ROOT/run/slurmdbd.pid"
  stop_pidfile "$ROOT/run/mysql/mysqld.pid"
  stop_pidfile "$ROOT/run/munge/munged.pid"
  log "down"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) SLURM_CONF=$CONF sinfo; SLURM_CONF=$CONF squeue ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
