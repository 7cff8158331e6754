#!/bin/bash
# What a fetch of the results remote costs with 1,000 stale batches' refs
# (BENCHMARKS.md, "Slurm: what a month of stale batch refs costs"). Usage:
#   RIGOR=path/to/rigor OLD=path/to/another/rigor N=7 scripts/bench-slurm-refs.sh
# Three bare remotes: none (no batch refs), stale (1,000 finished batches'
# submit and batch refs, what rigor left before it pruned them) and
# batchonly (their batch refs only, what 'rigor results sync' leaves until
# 'rigor jobs --prune'); a clone of each holding the same 1,000 settled
# batches in .rigor/slurm. Every command runs N times in each clone; the
# median is printed, with the load.
set -euo pipefail
RIGOR=${RIGOR:?the rigor to measure (this change)}
OLD=${OLD:?a rigor to compare with (main before it)}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cd "$W"
export HOME=$W GIT_CONFIG_NOSYSTEM=1 RIGOR_CACHE=$W/cache XDG_CACHE_HOME=$W/cache
git config --global user.email b@example.com; git config --global user.name bench
"$RIGOR" init m >/dev/null 2>&1
git -C m branch -M main
for side in none stale batchonly; do
  git init -q --bare $side.git
  git -C m push -q $W/$side.git main
done
# 1,000 finished batches' refs on "stale", made with fast-import.
head=$(git -C m rev-parse HEAD)
{
  for i in $(seq -w 1 1000); do
    id="20261101T00${i:0:2}${i:2:2}Z-$(printf %04x $((10#$i)))"
    data="{\"id\": \"$id\", \"experiment\": \"example/smoke\", \"commit\": \"$head\", \"tasks\": [{\"index\": 0, \"point\": \"example/smoke\", \"round\": 1}]}"
    echo "commit refs/rigor/batches/$id"
    echo "committer bench <b@example.com> 1764547200 +0000"
    echo "data 10"; echo "batch.json"
    echo "M 100644 inline batch.json"
    echo "data ${#data}"; echo "$data"
    echo "reset refs/rigor/submit/$id"
    echo "from $head"
  done
} >fi.txt
git -C stale.git fast-import --quiet <fi.txt
grep -v '^reset refs/rigor/submit/\|^from ' fi.txt | git -C batchonly.git fast-import --quiet
echo "stale refs: $(git -C stale.git for-each-ref refs/rigor | wc -l), batch only: $(git -C batchonly.git for-each-ref refs/rigor | wc -l)"
for side in none stale batchonly; do
  git clone -q -b main $side.git c-$side
done
# The submitting clone's own state of those 1,000 batches, settled (every
# job recorded): the same on both sides, so that only the remote differs.
for side in none stale batchonly; do
  for i in $(seq -w 1 1000); do
    id="20261101T00${i:0:2}${i:2:2}Z-$(printf %04x $((10#$i)))"
    d=c-$side/.rigor/slurm/$id; mkdir -p $d
    echo "{\"id\": \"$id\", \"experiment\": \"example/smoke\", \"commit\": \"$head\", \"branch\": \"rigor/results/$id\", \"jobId\": \"$((10#$i))\", \"tasks\": [{\"index\": 0, \"point\": \"example/smoke\", \"round\": 1}]}" >$d/batch.json
    echo "{\"index\": 0, \"jobId\": \"$((10#$i))\", \"node\": \"n1\", \"status\": \"ok\", \"runId\": \"$id\", \"record\": \"results/example/smoke/$id.json\", \"pushed\": \"$head\", \"slurmState\": \"COMPLETED\"}" >$d/task-0.json
  done
  printf '*\n' >c-$side/.rigor/.gitignore
done
t() { local s=$(date +%s.%N); "$@" >/dev/null 2>&1 || echo "FAILED: $*" >&2; echo "$(date +%s.%N) - $s" | bc; }
med() { sort -n | awk '{a[NR]=$1} END {printf "%.3f", a[int((NR+1)/2)]}'; }
N=${N:-7}
printf "%-52s %10s %10s %10s\n" "command (median of $N, s)" none stale batchonly
row() {
  local name=$1 sides=$2; shift 2
  local out=()
  for side in none stale batchonly; do
    if [[ " $sides " == *" $side "* ]]; then
      out+=("$(for k in $(seq $N); do (cd c-$side && t "$@"); done | med)")
    else out+=("-"); fi
  done
  printf "%-52s %10s %10s %10s\n" "$name" "${out[0]}" "${out[1]}" "${out[2]}"
}
ALL="none stale batchonly"
row "git fetch origin (protocol v2)" "$ALL" git fetch -q origin
row "git -c protocol.version=0 fetch origin" "$ALL" git -c protocol.version=0 fetch -q origin
row "git ls-remote origin" "$ALL" git ls-remote origin
row "git fetch refs/rigor/batches/* (rigor jobs)" "$ALL" git fetch -q origin '+refs/rigor/batches/*:refs/rigor/batches/*'
row "rigor results sync (main)" "$ALL" "$OLD" results sync
row "rigor results sync (this change)" "none batchonly" "$RIGOR" results sync
row "rigor jobs, 1,000 settled batches here (main)" "$ALL" "$OLD" jobs
row "rigor jobs, 1,000 settled batches here (this change)" "$ALL" "$RIGOR" jobs
echo "load: $(cat /proc/loadavg)"
echo "ls-remote lines: none $(git ls-remote none.git | wc -l), stale $(git ls-remote stale.git | wc -l)"
