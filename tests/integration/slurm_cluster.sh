#!/usr/bin/env bash
# A real single-node Slurm on this machine (Debian's slurmctld, slurmd, slurm-client and munge): a
# generated slurm.conf naming this host, proctrack/pgid, task/none, no accounting, its state and spool in
# a temporary directory, the daemons started directly and stopped by their process ids at the end. Then
#   - submit slurm of a small CPU experiment file as a 4-task array; analyze merges the shards and every
#     batch size appears exactly once;
#   - one task of a 2-task array cancelled with scancel mid-sweep, resubmitted with --unfinished: it
#     resumes without losing or repeating a batch size;
#   - more shards than work, a task index that is no shard, and a second plan in the same directory are
#     refused with one sentence and exit 2.
# Skipped (exit 77) only where Slurm is not installed or cannot run here (not root).
set -uo pipefail
bin="$1"; src="$2"
skip() { echo "slurm_cluster: skipped: $*"; exit 77; }
for program in slurmctld slurmd sbatch squeue scancel sinfo munged; do
  command -v "$program" > /dev/null || skip "$program is not installed (scripts/setup.sh --cluster installs Slurm and munge)"
done
[ "$(id -u)" -eq 0 ] || skip "slurmd runs jobs as their users and needs root"

work="$(mktemp -d)"
cluster="$work/cluster"
mkdir -p "$cluster"/{state,spool,log,munge}
stop_cluster() {
  scancel --quiet --full --user=root 2> /dev/null || true
  for pidfile in "$cluster/slurmd.pid" "$cluster/slurmctld.pid" "$cluster/munge/munged.pid"; do
    [ -s "$pidfile" ] && kill "$(cat "$pidfile")" 2> /dev/null
  done
  sleep 1
  for pidfile in "$cluster/slurmd.pid" "$cluster/slurmctld.pid" "$cluster/munge/munged.pid"; do
    [ -s "$pidfile" ] && kill -9 "$(cat "$pidfile")" 2> /dev/null
  done
  rm -rf "$work"
}
trap stop_cluster EXIT
source "$src/tests/integration/checks.sh"

# munge: a key of its own and a socket in the temporary directory.
head -c 1024 /dev/urandom > "$cluster/munge/munge.key"
chmod 700 "$cluster/munge"; chmod 400 "$cluster/munge/munge.key"
munged --key-file="$cluster/munge/munge.key" --socket="$cluster/munge/socket" --pid-file="$cluster/munge/munged.pid" \
  --log-file="$cluster/munge/log" --seed-file="$cluster/munge/seed" --force \
  || skip "munged does not start here: $(tail -2 "$cluster/munge/log" 2>/dev/null)"

host="$(hostname -s)"
port=$((20000 + RANDOM % 20000))
cat > "$cluster/slurm.conf" <<CONF
ClusterName=batchscope-test
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
AuthInfo=socket=$cluster/munge/socket
CredType=cred/munge
StateSaveLocation=$cluster/state
SlurmdSpoolDir=$cluster/spool
SlurmctldPidFile=$cluster/slurmctld.pid
SlurmdPidFile=$cluster/slurmd.pid
SlurmctldLogFile=$cluster/log/slurmctld.log
SlurmdLogFile=$cluster/log/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
KillWait=30
NodeName=$host CPUs=$(getconf _NPROCESSORS_ONLN) State=UNKNOWN
PartitionName=batch Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$cluster/slurm.conf"
slurmctld -f "$SLURM_CONF" || skip "slurmctld does not start here: $(tail -3 "$cluster/log/slurmctld.log")"
slurmd -f "$SLURM_CONF" || skip "slurmd does not start here: $(tail -3 "$cluster/log/slurmd.log")"
for _ in $(seq 1 60); do
  grep -q idle <<< "$(sinfo -h -o %T 2> /dev/null)" && break
  sleep 0.5
done
grep -q idle <<< "$(sinfo -h -o %T)" || skip "the node never became idle: $(tail -3 "$cluster/log/slurmctld.log")"
ok "a single-node Slurm on $host: $(sinfo -h -o '%P %D node(s) %c CPUs %T')"

# wait_job ID: until the job has left the queue (at most 5 minutes).
wait_job() {
  for _ in $(seq 1 600); do
    [ -n "$(squeue -h -j "$1" 2> /dev/null)" ] || return 0
    sleep 0.5
  done
  fail "job $1 still queued after 5 minutes: $(squeue -j "$1")"
}
job_of() { sed -n 's/^submitted job \([0-9]*\):.*/\1/p' "$work/out"; }

cat > "$work/small.yaml" <<'YAML'
device: cpu
defaults: {warmup: 1, steps: 5}
experiments:
  - {name: mnist, model: mnist_cnn, batch: 1:16}
  - {name: mnist_infer, model: mnist_cnn, phase: infer, batch: [1, 8, 32, 64]}
  - {name: vgg, model: vgg16, input: [3, 32, 32], classes: 10, batch: [1, 2, 3]}
YAML

# 1. A 4-task array; every batch size measured once; analyze merges them.
expect 0 "submit slurm, 4 shards" "submitted job [0-9]+: tasks 0-3" submit slurm "$work/small.yaml" --shards 4 --out "$work/array" \
  -- --no-energy --idle-seconds 0
job="$(job_of)"
start=$SECONDS
wait_job "$job"
ok "job $job ran its 4 tasks in $((SECONDS - start)) s"
ls "$work/array/slurm-logs/${job}_"{0,1,2,3}.out > /dev/null 2>&1 && ok "one output file per task" \
  || fail "the tasks' output files: $(ls "$work/array/slurm-logs")"
grep -q "SLURM_ARRAY_TASK_ID=2 with --shards 4" "$work/array/slurm-logs/${job}_2.out" \
  && ok "task 2 said where its shard came from" || fail "task 2's output: $(cat "$work/array/slurm-logs/${job}_2.out")"
expect 0 "status after the array" "4 of 4 shards complete" status "$work/array"
expect 0 "analyze merges the shards" "written: .*report.md" analyze "$work/array" --no-plots
if python3 "$src/tests/integration/check_shards.py" "$work/array" > "$work/check.txt" 2>&1; then ok "$(cat "$work/check.txt")"
else fail "the array's shards: $(cat "$work/check.txt")"; fi

# 2. A task cancelled mid-sweep, and resubmitted: it resumes.
cat > "$work/long.yaml" <<'YAML'
device: cpu
defaults: {warmup: 1, steps: 6}
experiments:
  - {name: vgg, model: vgg16, input: [3, 32, 32], classes: 10, batch: 1:12}
YAML
expect 0 "submit slurm, 2 shards" "submitted job [0-9]+: tasks 0-1" submit slurm "$work/long.yaml" --shards 2 --out "$work/cancel" \
  -- --no-energy --idle-seconds 0
job="$(job_of)"
points() { local n; n="$(grep -c '"type":"point"' "$1" 2>/dev/null || true)"; echo "${n:-0}"; }
log1="$work/cancel/shard-0001-of-0002/steps.jsonl"
# The node has every core of the machine (nproc would follow the tests' OMP_NUM_THREADS=1, and one
# slot would run the two shards one after the other).
for _ in $(seq 1 3000); do
  [ "$(points "$log1")" -ge 2 ] && break
  sleep 0.1
done
[ "$(points "$log1")" -ge 2 ] || fail "shard 1 measured $(points "$log1") batch sizes in 300 s; squeue: $(squeue --noheader 2>&1)"
scancel "${job}_1"
wait_job "$job"
done1="$(points "$log1")"
grep -q '"type":"end"' "$log1" && fail "shard 1 finished before the cancel came ($done1 batch sizes)" \
  || ok "shard 1 cancelled after $done1 of 6 batch sizes"
expect 3 "status after the cancel" "1 of 2 shards complete, 1 (stopped|running)" status "$work/cancel"
expect 0 "resubmit what is not complete" "submitted job [0-9]+: tasks 1$" submit slurm "$work/long.yaml" --shards 2 --out "$work/cancel" \
  --unfinished -- --no-energy --idle-seconds 0
wait_job "$(job_of)"
expect 0 "status after the resubmission" "2 of 2 shards complete" status "$work/cancel"
expect 0 "analyze the cancelled and resumed sweep" "written:" analyze "$work/cancel" --no-plots
if python3 "$src/tests/integration/check_shards.py" "$work/cancel" --resumed 1 > "$work/check.txt" 2>&1; then ok "$(cat "$work/check.txt")"
else fail "after the resubmission: $(cat "$work/check.txt")"; fi

# 3. Refusals.
expect 2 "more shards than batch sizes" "fewer than the 40 shards asked for" submit slurm "$work/small.yaml" --shards 40 --out "$work/r1"
expect 2 "a second plan in the same directory" "holds shards of plan .* not of this sweep's plan" \
  submit slurm "$work/small.yaml" --shards 3 --out "$work/array"
# A task whose index is no shard of the plan: it says so and writes nothing.
id="$(sbatch --parsable --array=7 "$work/array/slurm.sbatch")"
wait_job "$id"
if grep -q "SLURM_ARRAY_TASK_ID=7 is no shard of --shards 4" "$work/array/slurm-logs/${id%%;*}_7.out" 2> /dev/null \
   && [ ! -e "$work/array/shard-0007-of-0004" ]; then
  ok "task 7 of a 4-shard plan: $(grep -m1 'no shard' "$work/array/slurm-logs/${id%%;*}_7.out")"
else
  fail "task 7: $(cat "$work/array/slurm-logs/${id%%;*}_7.out" 2>&1)"
fi
expect 0 "the plan's shards are untouched" "4 of 4 shards complete" status "$work/array"

echo "$failures failed"
[ "$failures" -eq 0 ]
