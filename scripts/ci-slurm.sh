#!/usr/bin/env bash
# A two-node Slurm cluster on loopback, for rigor's Slurm tests (issues 17, 27).
#
#   scripts/ci-slurm.sh install   # apt-get Debian's Slurm 22.05 and munge (as root)
#   scripts/ci-slurm.sh start     # write the config, start munged, slurmctld, slurmd; wait until idle
#   scripts/ci-slurm.sh stop      # cancel every job, stop the daemons, wait until they are gone
#   scripts/ci-slurm.sh status    # sinfo, or exit 1 when the cluster is not up
#   scripts/ci-slurm.sh kill N    # kill -9 node N's slurmd (a test of a node lost mid-job)
#   scripts/ci-slurm.sh restart N # start node N's slurmd again, wait until it is back
#
# The daemons run as plain background processes (no systemd), as root, with
# munge authentication. Two nodes, one slurmd each on this host:
#   n1  two fake GPUs (GRES gpu:rtx:2, device files are symlinks to
#       /dev/null: nothing opens them), features rigortest and fakegpu, so
#       --gres and --constraint paths are exercised;
#   n2  no GPU, feature rigortest, and a machine without shared storage: its
#       slurmd runs in a mount namespace of its own with an empty tmpfs over
#       $RIGOR_SLURM_DIR/private, so a job on n2 sees nothing a test keeps
#       there (its module checkout, rigor cache, Hugging Face cache).
# The facts and gotchas behind this configuration are in
# ../shared/reference/SLURM.md.
#
# State lives in $RIGOR_SLURM_DIR (default /tmp/rigor-slurm): pids, logs,
# spool, the jobcomp file, private/. The configuration is
# /etc/slurm/slurm.conf, where the Slurm clients look for it without
# SLURM_CONF (testscripts do not pass the caller's environment through).
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
	mkdir -p "$dir"/{spool/ctld,spool/d-n1,spool/d-n2,log,dev,private} "$conf"
	chmod 0755 "$dir"
	chmod 1777 "$dir/private"
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
# Written by rigor's scripts/ci-slurm.sh: a two-node test cluster on one host.
ClusterName=rigortest
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$dir/spool/ctld
SlurmdSpoolDir=$dir/spool/d-%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
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
NodeName=n1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=6818 CPUs=$cpus RealMemory=$mem Gres=gpu:rtx:2 Features=rigortest,fakegpu State=UNKNOWN
NodeName=n2 NodeHostname=localhost NodeAddr=127.0.0.1 Port=6819 CPUs=$cpus RealMemory=$mem Features=rigortest State=UNKNOWN
PartitionName=debug Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP
EOF
	cat >"$conf/gres.conf" <<EOF
NodeName=n1 Name=gpu Type=rtx File=$dir/dev/gpu0
NodeName=n1 Name=gpu Type=rtx File=$dir/dev/gpu1
EOF

	slurmctld -D -i >"$dir/log/slurmctld.out" 2>&1 &
	echo $! >"$dir/slurmctld.pid"
	start_node n1
	start_node n2
	if ! wait_idle n1 n2; then
		tail -n 20 "$dir/log/slurmctld.log" "$dir/log/slurmd-n1.log" "$dir/log/slurmd-n2.log" >&2 || true
		stop
		return 1
	fi
	echo "ci-slurm: cluster up in $dir: n1 ($cpus CPUs, ${mem} MB, gpu:rtx:2), n2 ($cpus CPUs, ${mem} MB, no GPU, $dir/private hidden)" >&2
}

# start_node NAME: start the node's slurmd; n2's in a mount namespace of its
# own with an empty tmpfs over $dir/private (a machine without shared
# storage). unshare and sh exec slurmd in the same process: the pid kept is
# slurmd's.
start_node() {
	if [ "$1" = n2 ]; then
		unshare -m --propagation private sh -c 'mount -t tmpfs -o mode=1777 rigor-n2-private "$1" && exec slurmd -D -N n2' sh "$dir/private" >"$dir/log/slurmd-n2.out" 2>&1 &
	else
		slurmd -D -N "$1" >"$dir/log/slurmd-$1.out" 2>&1 &
	fi
	echo $! >"$dir/slurmd-$1.pid"
}

# wait_idle NODE...: wait until each node is idle or busy (not down, drained
# or invalid), resuming a node a restart left down; 30 s at most.
wait_idle() {
	local n state up
	for _ in $(seq 1 150); do
		up=0
		for n in "$@"; do
			state=$(timeout 5 sinfo -h -N -n "$n" -o '%T' 2>/dev/null || true)
			case "$state" in
			idle* | mixed* | allocated*) up=$((up + 1)) ;;
			*inval* | *drain* | *down*)
				timeout 5 scontrol update nodename="$n" state=resume 2>/dev/null || true
				;;
			esac
		done
		[ "$up" -eq $# ] && return 0
		sleep 0.2
	done
	echo "ci-slurm: not every node of $* became idle: $(timeout 5 sinfo -h -N -o '%N=%T' 2>/dev/null | tr '\n' ' ')" >&2
	return 1
}

# kill NODE: kill -9 the node's slurmd, as a machine that dies does (its
# jobs' processes go on: slurmstepd is detached; Slurm marks the node down
# after SlurmdTimeout and fails its jobs, and kills what is left of them
# when the node's slurmd comes back: restart).
kill_node() {
	local f="$dir/slurmd-$1.pid"
	[ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null || true
}

# restart NODE: start a node's slurmd again after it was killed (a test's
# kill -9 of n2's slurmd), and wait until Slurm has it back.
restart() {
	local f="$dir/slurmd-$1.pid"
	if ! { [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null; }; then
		start_node "$1"
	fi
	wait_idle "$1"
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
	for name in slurmd-n1 slurmd-n2 slurmd slurmctld munged; do
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
restart) restart "${2:?usage: $0 restart n1|n2}" ;;
kill) kill_node "${2:?usage: $0 kill n1|n2}" ;;
*)
	echo "usage: $0 install|start|stop|status|kill NODE|restart NODE" >&2
	exit 2
	;;
esac
