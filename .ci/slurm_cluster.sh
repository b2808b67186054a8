#!/usr/bin/env bash
# A one-node SLURM cluster on this host (Debian's slurm-wlm 22.05 + munge), for the `slurm` tests.
#   sudo .ci/slurm_cluster.sh            # install if needed, configure, start, wait until idle
#   sudo .ci/slurm_cluster.sh --stop     # stop slurmd, slurmctld (munge stays)
# Idempotent: with the cluster up and its configuration unchanged it returns in well under a second.
# Also installs Debian's `chromium` for the browser test unless REPLIKIT_NO_CHROMIUM=1.
#
# Configuration choices (what works on a container/VM without systemd and without cgroup control):
# - proctrack/linuxproc + task/none: no cgroup enforcement (cgroup.conf is written all the same,
#   slurmd reads it at start-up).
# - AccountingStoreFlags=job_comment: sacct shows the plugin's --comment (rule and wildcards).
# - select/cons_tres with CR_Core_Memory: `mem_mb` is a real request checked against RealMemory.
# - Accounting through slurmdbd + a local MariaDB: 22.05 has no accounting_storage/filetxt any more
#   (only none, slurmdbd, mysql), and with accounting_storage/none its `sacct` answers only "Slurm
#   accounting storage is disabled" (measured), while snakemake-executor-plugin-slurm polls job
#   states with `sacct` and the tests check every job there. An account `replikit` holds root, so
#   the profile's `slurm_account` is validated as on a real cluster. jobcomp/filetxt also appends
#   every finished job to /var/log/slurm/jobcomp.log.
set -euo pipefail

CONF_DIR=/etc/slurm
LOG_DIR=/var/log/slurm
SPOOL=/var/spool/slurmd
STATE=/var/spool/slurmctld
NODE="$(hostname -s)"

if [[ "${1:-}" == "--stop" ]]; then
    scontrol shutdown >/dev/null 2>&1 || true
    exit 0
fi

if [[ "$(id -u)" != 0 ]]; then
    echo "slurm_cluster.sh: needs root (installs packages, starts daemons)" >&2
    exit 2
fi

need=()
command -v slurmctld >/dev/null || need+=(slurmctld)
command -v slurmd >/dev/null || need+=(slurmd)
command -v sbatch >/dev/null || need+=(slurm-client)
command -v munged >/dev/null || need+=(munge)
command -v slurmdbd >/dev/null || need+=(slurmdbd)
command -v mariadbd >/dev/null || need+=(mariadb-server)
if [[ "${REPLIKIT_NO_CHROMIUM:-0}" != 1 ]] && ! command -v chromium >/dev/null; then need+=(chromium fonts-dejavu-core); fi
if (( ${#need[@]} )); then
    echo "slurm_cluster.sh: installing ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null
    apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
fi

# This node as slurmd sees it (CPUs, sockets, cores, RealMemory); leave 512 MB to the OS.
node_line="$(slurmd -C | head -n 1)"
mem="$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$node_line")"
node_line="$(sed "s/RealMemory=[0-9]*/RealMemory=$((mem > 1024 ? mem - 512 : mem))/" <<<"$node_line")"

mkdir -p "$CONF_DIR" "$LOG_DIR" "$SPOOL" "$STATE"
new_conf="$(cat <<EOF
# Written by replikit .ci/slurm_cluster.sh: one-node test cluster on $NODE.
ClusterName=replikit
SlurmctldHost=$NODE
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmdSpoolDir=$SPOOL
StateSaveLocation=$STATE
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=30
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoreFlags=job_comment
AccountingStorageTRES=gres/gpu
GresTypes=gpu
JobCompType=jobcomp/filetxt
JobCompLoc=$LOG_DIR/jobcomp.log
MinJobAge=86400
KillWait=10
InactiveLimit=0
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2
$node_line Gres=gpu:1 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
)"
# One pretend GPU (no device file): jobs asking for --gpus=1 are scheduled and show gres/gpu=1 in
# scontrol/sacct, which is how the tests see a rule's `gpu` resource reach sbatch. Nothing uses it.
gres_conf="NodeName=$NODE Name=gpu File=/dev/null Count=1"
dbd_conf="# Written by replikit .ci/slurm_cluster.sh
AuthType=auth/munge
DbdHost=localhost
SlurmUser=root
PidFile=/run/slurmdbd.pid
LogFile=$LOG_DIR/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=replikit-ci
StorageLoc=slurm_acct_db"
cgroup_conf="CgroupAutomount=no
ConstrainCores=no
ConstrainRAMSpace=no"

changed=0
if [[ ! -f "$CONF_DIR/slurm.conf" ]] || [[ "$(cat "$CONF_DIR/slurm.conf")" != "$new_conf" ]]; then
    printf '%s\n' "$new_conf" >"$CONF_DIR/slurm.conf"
    changed=1
fi
if [[ ! -f "$CONF_DIR/cgroup.conf" ]] || [[ "$(cat "$CONF_DIR/cgroup.conf")" != "$cgroup_conf" ]]; then
    printf '%s\n' "$cgroup_conf" >"$CONF_DIR/cgroup.conf"
    changed=1
fi

if [[ ! -f "$CONF_DIR/gres.conf" ]] || [[ "$(cat "$CONF_DIR/gres.conf")" != "$gres_conf" ]]; then
    printf '%s\n' "$gres_conf" >"$CONF_DIR/gres.conf"
    changed=1
fi
if [[ ! -f "$CONF_DIR/slurmdbd.conf" ]] || [[ "$(cat "$CONF_DIR/slurmdbd.conf")" != "$dbd_conf" ]]; then
    printf '%s\n' "$dbd_conf" >"$CONF_DIR/slurmdbd.conf"
    changed=1
fi
chmod 600 "$CONF_DIR/slurmdbd.conf"

node_state() { sinfo -h -n "$NODE" -o %t 2>/dev/null | head -n 1; }

if (( changed == 0 )) && pgrep -x slurmdbd >/dev/null && pgrep -x slurmctld >/dev/null \
        && pgrep -x slurmd >/dev/null; then
    case "$(node_state)" in idle|mix|alloc|comp) exit 0 ;; esac
fi

# munge: a key (the package creates one; make sure), then the daemon.
if [[ ! -s /etc/munge/munge.key ]]; then
    dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key status=none
    chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
fi
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    mkdir -p /run/munge && chown munge:munge /run/munge
    runuser -u munge -- /usr/sbin/munged
    for _ in $(seq 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
fi

# MariaDB with the accounting database and its user.
if ! mariadb -e 'select 1' >/dev/null 2>&1; then
    /etc/init.d/mariadb start >/dev/null
fi
mariadb -e "CREATE DATABASE IF NOT EXISTS slurm_acct_db;
    CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'replikit-ci';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';"

if (( changed )) || ! pgrep -x slurmdbd >/dev/null || ! pgrep -x slurmctld >/dev/null \
        || ! pgrep -x slurmd >/dev/null; then
    for d in slurmd slurmctld slurmdbd; do
        pid="$(pgrep -x "$d" || true)"
        if [[ -n "$pid" ]]; then
            kill $pid
            for _ in $(seq 100); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
        fi
    done
    /usr/sbin/slurmdbd
    for _ in $(seq 100); do sacctmgr -n list cluster >/dev/null 2>&1 && break; sleep 0.2; done
    sacctmgr -i add cluster replikit >/dev/null 2>&1 || true
    /usr/sbin/slurmctld
    /usr/sbin/slurmd
fi
if ! sacctmgr -n -P list assoc user=root account=replikit format=account | grep -qx replikit; then
    sacctmgr -i add account replikit cluster=replikit description=replikit-ci organization=replikit \
        >/dev/null 2>&1 || true
    sacctmgr -i add user root account=replikit cluster=replikit >/dev/null
fi

for _ in $(seq 60); do
    case "$(node_state)" in
        idle|mix|alloc|comp) sinfo; exit 0 ;;
        down*|drain*) scontrol update nodename="$NODE" state=resume 2>/dev/null || true ;;
    esac
    sleep 1
done
echo "slurm_cluster.sh: node $NODE not idle after 60 s" >&2
sinfo >&2 || true
tail -n 20 "$LOG_DIR/slurmctld.log" "$LOG_DIR/slurmd.log" >&2 || true
exit 1
