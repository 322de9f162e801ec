#!/usr/bin/env bash
# A sweep killed with SIGKILL part-way resumes with the same command: the batch sizes finished before
# the kill are kept byte for byte, none is repeated, and the result is complete. Then the same for a
# sweep stopped with SIGINT, which ends cleanly after its running batch size.
set -euo pipefail
bin="$1"; src="$2"
work="$(mktemp -d)"; trap 'kill -9 "${pid:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT
args=(sweep --model mnist_cnn --batch 1:40 --device cpu --steps 4 --warmup 1 --out "$work/run" --quiet)

"$bin" "${args[@]}" > /dev/null &
pid=$!
# points FILE: how many batch sizes FILE holds (0 before it exists).
points() { local n; n="$(grep -c '"type":"point"' "$1" 2>/dev/null || true)"; echo "${n:-0}"; }
for _ in $(seq 1 600); do
  [ "$(points "$work/run/steps.jsonl")" -ge 5 ] && break
  sleep 0.1
done
kill -9 "$pid"; wait "$pid" 2>/dev/null || true
done_before="$(points "$work/run/steps.jsonl")"
[ "$done_before" -ge 5 ] && [ "$done_before" -lt 40 ] || { echo "kill came at $done_before of 40 batch sizes"; exit 1; }
# Everything up to the last complete line must survive the resume unchanged.
cp "$work/run/steps.jsonl" "$work/before.jsonl"
python3 - "$work/before.jsonl" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
cut = data.rfind(b"\n") + 1  # drop a half-written last line, if any
open(sys.argv[1], "wb").write(data[:cut])
PY

"$bin" "${args[@]}" > "$work/resume.txt"
grep -q "resumed and completed" "$work/resume.txt"
cmp -n "$(stat -c %s "$work/before.jsonl")" "$work/before.jsonl" "$work/run/steps.jsonl"
python3 "$src/tests/integration/check_run.py" "$work/run" 1 "$(seq -s, 1 40)" 4 --resumes 1

# Ctrl-C (SIGINT) stops after the running batch size: exit code 130, whole lines only, no end record,
# and the same command resumes it.
args=(sweep --model mnist_cnn --batch 1:30 --device cpu --steps 4 --warmup 1 --out "$work/int" --quiet)
# interrupt COUNT N ERR ARGS...: runs the program with ARGS (stderr to ERR), waits until COUNT (a function
# of no arguments) reaches N, sends SIGINT and expects exit code 130.
interrupt() {
  local count="$1" n="$2" err="$3" rc=0
  shift 3
  "$bin" "$@" > /dev/null 2> "$err" &
  pid=$!
  for _ in $(seq 1 600); do
    [ "$("$count")" -ge "$n" ] && break
    sleep 0.1
  done
  kill -INT "$pid"
  wait "$pid" || rc=$?
  [ "$rc" -eq 130 ] || { echo "SIGINT gave exit code $rc: $*"; cat "$err"; exit 1; }
}
int_points() { points "$work/int/steps.jsonl"; }
interrupt int_points 3 "$work/int.err" "${args[@]}"
grep -q "run the same command to resume" "$work/int.err"
[ "$(tail -c 1 "$work/int/steps.jsonl" | od -An -c | tr -d ' ')" = '\n' ] || { echo "a half line after SIGINT"; exit 1; }
! grep -q '"type":"end"' "$work/int/steps.jsonl"
stopped_at="$(points "$work/int/steps.jsonl")"
"$bin" "${args[@]}" > /dev/null
python3 "$src/tests/integration/check_run.py" "$work/int" 1 "$(seq -s, 1 30)" 4 --resumes 1

# maxbatch --out: SIGINT stops the search after its running try (exit 130), and the same command goes
# on from the tries written to the answer an uninterrupted search gives, none of them run twice.
search=(maxbatch --model resnet18 --input 3,48,48 --classes 10 --device cpu --memory-limit 192MiB --quiet)
"$bin" "${search[@]}" --out "$work/whole.jsonl" > "$work/whole.txt"
tries() { local n; n="$(grep -c '"type":"maxbatch_try"' "$1" 2>/dev/null || true)"; echo "${n:-0}"; }
search_tries() { tries "$work/search.jsonl"; }
interrupt search_tries 2 "$work/search.err" "${search[@]}" --out "$work/search.jsonl"
grep -q "run the same command to go on" "$work/search.err"
tries_before="$(tries "$work/search.jsonl")"
cp "$work/search.jsonl" "$work/search-before.jsonl"
# Another search is refused, naming the difference, and leaves the file as it was.
rc=0; "$bin" "${search[@]}" --confirm 2 --out "$work/search.jsonl" > /dev/null 2> "$work/other.err" || rc=$?
[ "$rc" -eq 2 ] && grep -q "confirm_steps was 3 there and is 2 here" "$work/other.err" ||
  { echo "maxbatch: another search was not refused (exit $rc)"; cat "$work/other.err"; exit 1; }
cmp "$work/search.jsonl" "$work/search-before.jsonl"
"$bin" "${search[@]}" --out "$work/search.jsonl" > "$work/search.txt"
grep -q "$tries_before of them in an earlier session" "$work/search.txt"
cmp -n "$(stat -c %s "$work/search-before.jsonl")" "$work/search-before.jsonl" "$work/search.jsonl"
python3 - "$work/whole.jsonl" "$work/search.jsonl" "$tries_before" <<'PY'
import json, sys
def read(path):
    return [json.loads(line) for line in open(path)]
whole, resumed, before = read(sys.argv[1]), read(sys.argv[2]), int(sys.argv[3])
course = lambda records: [(r["batch_size"], r["stage"], r["steps"], r["fits"]) for r in records if r["type"] == "maxbatch_try"]
assert course(resumed) == course(whole), (course(resumed), course(whole))
openings = [r for r in resumed if r["type"] == "maxbatch_search"]
assert len(openings) == 2 and openings[1]["resumed_tries"] == before, openings
result = resumed[-1]["result"]
assert result["max_batch"] == whole[-1]["result"]["max_batch"] and result["earlier_tries"] == before, result
PY
# A sweep's batch: 1:max search stops the same way between two tries, kept in OUT/maxbatch/, and the same
# sweep command goes on from its tries to the same answer, then sweeps up to it.
tomax=(sweep --model resnet18 --input 3,48,48 --classes 10 --batch 1:max:x4 --device cpu --memory-limit 192MiB
       --steps 1 --warmup 0 --no-energy --out "$work/tomax" --quiet)
tomax_tries() { tries "$work/tomax/maxbatch/resnet18_train_fp32.jsonl"; }
interrupt tomax_tries 2 "$work/tomax.err" "${tomax[@]}"
grep -q "the same command goes on from there" "$work/tomax.err"
[ ! -e "$work/tomax/steps.jsonl" ] || { echo "sweep 1:max: the sweep began before its search ended"; exit 1; }
"$bin" "${tomax[@]}" > /dev/null 2> "$work/tomax2.err"
grep -q "going on with the search stopped" "$work/tomax2.err"
python3 - "$work/whole.jsonl" "$work/tomax/maxbatch/resnet18_train_fp32.jsonl" "$work/tomax/steps.jsonl" <<'PY'
import json, sys
whole, search, steps = ([json.loads(line) for line in open(path)] for path in sys.argv[1:])
course = lambda records: [(r["batch_size"], r["stage"], r["steps"], r["fits"]) for r in records if r["type"] == "maxbatch_try"]
assert course(search) == course(whole), (course(search), course(whole))
answer = whole[-1]["result"]["max_batch"]
assert search[-1]["result"]["max_batch"] == answer, search[-1]
assert steps[0]["config"]["experiments"][0]["batch"][-1] == answer, steps[0]["config"]["experiments"][0]["batch"]
assert steps[-1]["type"] == "end", steps[-1]
PY

# train: SIGKILL in an epoch, then SIGINT after one, and the same command goes on each time after the
# last complete epoch, with the losses and accuracies of a run that never stopped (bit for bit: the
# optimizer's state and the random generators go on too).
python3 "$src/tests/data/make_idx.py" "$work/digits" --train 320 --test 100 > /dev/null
train=(train --data "$work/digits" --device cpu --threads 1 --batch 16 --epochs 4 --quiet)
"$bin" "${train[@]}" --out "$work/train_whole" > /dev/null
epochs() { local n; n="$(grep -c '"type":"epoch"' "$work/train/train.jsonl" 2>/dev/null || true)"; echo "${n:-0}"; }
"$bin" "${train[@]}" --out "$work/train" > /dev/null 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  [ "$(epochs)" -ge 1 ] && break
  sleep 0.1
done
kill -9 "$pid"; wait "$pid" 2>/dev/null || true
killed_after="$(epochs)"
[ "$killed_after" -ge 1 ] && [ "$killed_after" -lt 3 ] || { echo "train: the kill came after $killed_after of 4 epochs"; exit 1; }
interrupt epochs $((killed_after + 1)) "$work/train.err" "${train[@]}" --out "$work/train"
grep -q "stopped after epoch [23] of 4: the same command goes on from $work/train" "$work/train.err"
"$bin" "${train[@]}" --out "$work/train" > "$work/train.txt"
python3 - "$work/train_whole/train.jsonl" "$work/train/train.jsonl" <<'PY'
import json, sys
whole, resumed = ([json.loads(line) for line in open(path)] for path in sys.argv[1:])
numbers = lambda records: [(r["epoch"], r["train_loss"], r["train_accuracy"], r["test_loss"], r["test_correct"])
                           for r in records if r["type"] == "epoch"]
assert numbers(resumed) == numbers(whole), (numbers(resumed), numbers(whole))
assert [r["type"] for r in resumed].count("resume") >= 1 and resumed[-1]["type"] == "end", [r["type"] for r in resumed]
PY
[ "$(grep -c '^ *[0-9]' "$work/train.txt")" -eq 4 ] || { echo "train: the table after going on is not whole"; cat "$work/train.txt"; exit 1; }

echo "kill_resume: ok ($done_before of 40 batch sizes before the kill, $stopped_at of 30 before SIGINT, $tries_before tries of the search, train killed after $killed_after epochs)"
