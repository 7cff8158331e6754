#!/usr/bin/env bash
# A single-node Slurm cluster on loopback, for rigor's Slurm tests (issue 17).
#
#   scripts/ci-slurm.sh install   # apt-get Debian's Slurm 22.05 and munge (as root)
#   scripts/ci-slurm.sh start     # write the config, start munged, slurmctld, slurmd; wait until idle
#   scripts/ci-slurm.sh stop      # cancel every job, stop the daemons, wait until they are gone
#   scripts/ci-slurm.sh status    # sinfo, or exit 1 when the cluster is not up
#
# The daemons run as plain background processes (no systemd), as root, with
# munge authentication. The node has two fake GPUs (GRES gpu:rtx:2, device
# files are symlinks to /dev/null: nothing opens them) and the features
# rigortest and fakegpu, so --gres and --constraint paths are exercised. The
# facts and gotchas behind this configuration are in ../shared/reference/SLURM.md.
#
# State lives in $RIGOR_SLURM_DIR (default /tmp/rigor-slurm): pids, logs,
# spool, the jobcomp file. The configuration is /etc/slurm/slurm.conf, where
# the Slurm clients look for it without SLURM_CONF (testscripts do not pass
# the caller's environment through).
set -euo pipefail

dir=${RIGOR_SLURM_DIR:-/tmp/rigor-slurm}
conf=/etc/slurm

install() {
	if command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v sbatch >/dev/null && command -v munged >/dev/null; then
		return
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge >/dev/null
}

start() {
	if [ -f "$dir/slurmctld.pid" ] && kill -0 "$(cat "$dir/slurmctld.pid")" 2>/dev/null; then
		echo "ci-slurm: already running ($dir)" >&2
		return
	fi
	mkdir -p "$dir"/{spool/ctld,spool/d,log,dev} "$conf"
	ln -sf /dev/null "$dir/dev/gpu0"
	ln -sf /dev/null "$dir/dev/gpu1"

	# munge: a key, and a socket directory others can traverse.
	if [ ! -s /etc/munge/munge.key ]; then
		mkdir -p /etc/munge
		dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null
	fi
	chmod 0400 /etc/munge/munge.key
	mkdir -p /run/munge /var/lib/munge /var/log/munge
	chmod 0755 /run/munge
	munged --force --key-file=/etc/munge/munge.key \
		--socket=/run/munge/munge.socket.2 --pid-file="$dir/munged.pid" \
		--log-file="$dir/log/munged.log" --seed-file="$dir/munge.seed"

	local cpus mem
	cpus=$(nproc)
	mem=$(awk '/MemTotal/ {print int($2/1024/2)}' /proc/meminfo) # half the RAM, in MB
	cat >"$conf/slurm.conf" <<EOF
# Written by rigor's scripts/ci-slurm.sh: a single-node test cluster.
ClusterName=rigortest
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$dir/spool/ctld
SlurmdSpoolDir=$dir/spool/d
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldPort=6817
SlurmdPort=6818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
DefMemPerCPU=256
GresTypes=gpu
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobcomp.txt
AccountingStorageType=accounting_storage/none
MinJobAge=600
# A job Slurm signals (scancel, its time limit) has KillWait seconds to
# record and push its run before SIGKILL: 5 s is short on a loaded machine.
KillWait=30
MessageTimeout=10
SlurmdTimeout=30
NodeName=localhost CPUs=$cpus RealMemory=$mem Gres=gpu:rtx:2 Features=rigortest,fakegpu State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
	cat >"$conf/gres.conf" <<EOF
NodeName=localhost Name=gpu Type=rtx File=$dir/dev/gpu0
NodeName=localhost Name=gpu Type=rtx File=$dir/dev/gpu1
EOF

	slurmctld -D -i >"$dir/log/slurmctld.out" 2>&1 &
	echo $! >"$dir/slurmctld.pid"
	slurmd -D -N localhost >"$dir/log/slurmd.out" 2>&1 &
	echo $! >"$dir/slurmd.pid"

	# Wait until the node is idle (not down, drained or invalid).
	for _ in $(seq 1 150); do
		state=$(timeout 5 sinfo -h -N -n localhost -o '%T' 2>/dev/null || true)
		case "$state" in
		idle | mixed | allocated)
			echo "ci-slurm: cluster up ($state; $cpus CPUs, ${mem} MB, gpu:rtx:2) in $dir" >&2
			return
			;;
		*inval* | *drain* | *down*)
			# A restart after a crash leaves the node down: bring it back.
			timeout 5 scontrol update nodename=localhost state=resume 2>/dev/null || true
			;;
		esac
		sleep 0.2
	done
	echo "ci-slurm: the node did not become idle; last state: ${state:-none}" >&2
	tail -n 20 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2 || true
	stop
	return 1
}

stop() {
	# Killing slurmd does not kill running jobs: cancel them first.
	if [ -f "$dir/slurmctld.pid" ] && kill -0 "$(cat "$dir/slurmctld.pid")" 2>/dev/null; then
		timeout 10 scancel --full --quiet --user="$(id -un)" 2>/dev/null || true
		for _ in $(seq 1 50); do
			[ -z "$(timeout 5 squeue -h -o %i 2>/dev/null)" ] && break
			sleep 0.2
		done
	fi
	local pid
	for name in slurmd slurmctld munged; do
		f="$dir/$name.pid"
		[ -f "$f" ] || continue
		pid=$(cat "$f")
		if kill -0 "$pid" 2>/dev/null; then
			kill "$pid" 2>/dev/null || true
			for _ in $(seq 1 100); do
				kill -0 "$pid" 2>/dev/null || break
				sleep 0.1
			done
			kill -9 "$pid" 2>/dev/null || true
		fi
		rm -f "$f"
	done
	# Job steps are detached from slurmd: stop any left over.
	for p in $(pgrep -x slurmstepd 2>/dev/null || true); do
		kill -9 "$p" 2>/dev/null || true
	done
	echo "ci-slurm: stopped" >&2
}

status() {
	timeout 5 sinfo -N -o '%N %T %C %m %G %f' 2>/dev/null
}

case "${1:-}" in
install) install ;;
start) start ;;
stop) stop ;;
status) status ;;
*)
	echo "usage: $0 install|start|stop|status" >&2
	exit 2
	;;
esac
