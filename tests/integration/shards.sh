#!/usr/bin/env bash
# A sweep shared out over three shards on this machine, each shard told its index another way (--shard,
# a Slurm array task's variables, a Kubernetes completion index): one is killed part-way and resumed;
# status follows them; analyze merges them and every batch size appears once. Then the refusals: a
# second plan in the same directory, more shards than work, an index that is no shard's.
set -uo pipefail
bin="$1"; src="$2"
work="$(mktemp -d)"; trap 'kill -9 "${pid:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT
source "$src/tests/integration/checks.sh"
cat > "$work/cluster.yaml" <<'YAML'
device: cpu
defaults: {warmup: 1, steps: 5}
experiments:
  - {name: mnist, model: mnist_cnn, batch: 1:24}
  - {name: vgg, model: vgg16, input: [3, 32, 32], classes: 10, batch: [1, 2, 3, 4]}
YAML
out="$work/run"
common=(sweep "$work/cluster.yaml" --out "$out" --no-energy --idle-seconds 0)

expect 0 "shard 0 from --shard" "shard 0 of 3 \(--shard 0/3\)" "${common[@]}" --shard 0/3
SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_COUNT=3 SLURM_ARRAY_TASK_MIN=0 \
  expect 0 "shard 1 from a Slurm array" "shard 1 of 3 \(SLURM_ARRAY_TASK_ID=1 of SLURM_ARRAY_TASK_COUNT=3\)" "${common[@]}"
expect 3 "status while shard 2 is missing" "2 of 3 shards complete, 1 missing" status "$out"

# Shard 2, from a Kubernetes completion index, killed after its first batch size and resumed.
points() { local n; n="$(grep -c '"type":"point"' "$1" 2>/dev/null || true)"; echo "${n:-0}"; }
log2="$out/shard-0002-of-0003/steps.jsonl"
JOB_COMPLETION_INDEX=2 "$bin" "${common[@]}" --shards 3 > /dev/null 2> "$work/k8s.err" &
pid=$!
for _ in $(seq 1 600); do
  [ "$(points "$log2")" -ge 1 ] && break
  sleep 0.1
done
kill -9 "$pid"; wait "$pid" 2>/dev/null
grep -q "JOB_COMPLETION_INDEX=2 with --shards 3" "$work/k8s.err" && ok "shard 2 says it came from JOB_COMPLETION_INDEX" \
  || fail "shard 2 did not say where its index came from: $(cat "$work/k8s.err")"
before="$(points "$log2")"
planned2="$(python3 -c "import json,sys; p=json.load(open('$out/plan.json')); print(sum(len(x['batch']) for x in p['shares'][2]['parts']))")"
[ "$before" -ge 1 ] && [ "$before" -lt "$planned2" ] && ok "shard 2 killed after $before of $planned2 batch sizes" \
  || fail "the kill came at $before of $planned2 batch sizes"
expect 3 "status of a killed shard" "2 of 3 shards complete, 1 stopped" status "$out" --stale-minutes 0.001
"$bin" status "$out" --json > "$work/status.json"
python3 -c "
import json; s=json.load(open('$work/status.json'))
assert s['complete'] is False and s['unfinished'] == [2], s
assert s['per_shard'][2]['points_done'] == $before, s
assert 0 < s['work_left'] < 1, s" && ok "status --json: shard 2 unfinished with $before done" || fail "status --json: $(cat "$work/status.json")"
JOB_COMPLETION_INDEX=2 expect 0 "shard 2 resumes" "resum" "${common[@]}" --shards 3
expect 0 "status when every shard is complete" "3 of 3 shards complete: ([0-9]+) of \\1 points done \\(a point: one batch size of one experiment in one pass\\), 0.0% of the estimated work left" status "$out"
expect 0 "a complete shard run again ends at once" "complete already" "${common[@]}" --shard 1/3

expect 0 "analyze merges the shards" "written: .*report.md" analyze "$out" --no-plots
if python3 "$src/tests/integration/check_shards.py" "$out" --resumed 2 > "$work/check.txt" 2>&1; then
  ok "$(cat "$work/check.txt")"
else
  fail "the shards do not add up: $(cat "$work/check.txt")"
fi

# Refusals, each one sentence and exit 2, with nothing written.
before_md5="$(find "$out" -type f -name '*.jsonl' | sort | xargs md5sum | md5sum)"
expect 2 "another shard count in the same directory" "holds shards of plan .* not of this sweep's plan" "${common[@]}" --shard 0/2
expect 2 "other experiments in the same directory" "holds shards of plan" "${common[@]}" --shard 0/3 --steps 6
expect 2 "more shards than batch sizes" "has 28 batch size\(s\) to share out, fewer than the 29 shards asked for; use at most 28 shards" \
  "${common[@]}" --shard 0/29
expect 2 "an index that is no shard" "there is no shard 3 of 3" "${common[@]}" --shard 3/3
SLURM_ARRAY_TASK_ID=5 expect 2 "a Slurm task id beyond --shards" "is no shard of --shards 3" "${common[@]}" --shards 3
JOB_COMPLETION_INDEX=0 expect 2 "a completion index without --shards" "no --shards N says how many" "${common[@]}"
expect 2 "--shards alone" "needs to know which shard this is" "${common[@]}" --shards 3
expect 2 "a batch list up to max" "cannot be shared out in advance" sweep --model mnist_cnn --batch 4:max --device cpu --shard 0/2 --out "$work/max"
[ "$(find "$out" -type f -name '*.jsonl' | sort | xargs md5sum | md5sum)" = "$before_md5" ] && ok "the refusals left the shards as they were" \
  || fail "a refusal changed a shard's log"

# A shard of another plan moved into the directory: analyze and status refuse the mix.
"$bin" sweep "$work/cluster.yaml" --out "$work/other" --no-energy --idle-seconds 0 --shard 1/2 > /dev/null 2>&1
cp -r "$work/other/shard-0001-of-0002" "$out/"
expect 2 "analyze refuses a mix of plans" "two different sweeps share" analyze "$out" --no-plots
expect 2 "status refuses a mix of plans" "two different sweeps share" status "$out"
rm -rf "$out/shard-0001-of-0002"

# The Slurm script, written and not submitted: a job array over the shards that bash can read.
expect 0 "submit slurm --dry-run" "not submitted \(--dry-run\)" submit slurm "$work/cluster.yaml" --out "$work/slurm" \
  --shards 4 --max-parallel 2 --partition debug --time 0:30:00 --dry-run -- --steps 5 --no-energy
script="$work/slurm/slurm.sbatch"
for line in '#SBATCH --array=0-3%2' '#SBATCH --partition=debug' '#SBATCH --time=0:30:00' '#SBATCH --requeue' \
            "--shards 4 --steps 5 --no-energy"; do
  grep -qF -- "$line" "$script" && ok "the script has: $line" || fail "the script lacks: $line"
done
grep -q -- "--gres" "$script" && fail "a CPU sweep asks for a GPU" || ok "a CPU sweep asks for no GPU"
bash -n "$script" && ok "bash reads the script" || fail "bash cannot read the script"
expect 2 "submit with --out among the sweep options" "belongs to submit itself" submit slurm "$work/cluster.yaml" --dry-run -- --out x
# Options are checked before anything is written, and the fix says which characters each takes.
expect 2 "submit slurm --time 2h" "--time '2h' has characters a cluster does not take there; use digits, ':' and '-'" \
  submit slurm "$work/cluster.yaml" --out "$work/bad_time" --time 2h --dry-run
[ ! -e "$work/bad_time" ] || fail "a refused submit wrote $work/bad_time"
expect 2 "submit k8s --claim a_b" "--claim 'a_b' is not a Kubernetes name" \
  submit k8s "$work/cluster.yaml" --out "$work/bad_claim" --image r.example/b:1 --claim a_b
expect 0 "submit k8s --claim 2024-results" "on the claim 2024-results" \
  submit k8s "$work/cluster.yaml" --out "$work/claim" --image r.example/b:1 --claim 2024-results --namespace ml-team
grep -q "claimName: 2024-results" "$work/claim/k8s-job.yaml" || fail "the claim is not named as given: $(grep claimName "$work/claim/k8s-job.yaml")"
expect 2 "submit to an unknown cluster" "not a cluster batchscope submits to" submit pbs "$work/cluster.yaml"
expect 2 "submit more shards than work" "use at most 28 shards" submit slurm "$work/cluster.yaml" --shards 40 --out "$work/s40" --dry-run

echo "$failures failed"
[ "$failures" -eq 0 ]
