#!/usr/bin/env bash
# The overhead benchmark end to end with tiny settings: both sides start, agree on the model and the
# threads, take their turns, and every table row comes back. Its ratios are not judged here: timings are
# checked by running the benchmark, never by a test.
set -euo pipefail
bench="$1"; src="$2"; python="$3"; batchscope="${4:-}"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
"$python" -c "import torch" 2> /dev/null || { echo "no PyTorch for $python: skipped"; exit 77; }
cd "$src"
# A device that is not one, or a GPU this machine (or build) lacks: one sentence naming --device, exit 2.
for device in gpu cuda:7; do
  rc=0
  "$bench" --device "$device" --models mnist_cnn --phases infer --threads 1 --batch 1 --rounds 1 --turns 1 \
    --turn-ms 1 --confirm-rounds 0 --touch-gib 0 --python "$python" > "$work/device.txt" 2>&1 || rc=$?
  [ "$rc" -eq 2 ] && grep -q "^bench_overhead: --device $device: " "$work/device.txt" ||
    { echo "--device $device: exit $rc, $(cat "$work/device.txt")"; exit 1; }
done
status=0
"$bench" --models mnist_cnn --phases train,infer --threads 1 --batch 1,3 --rounds 2 --turns 2 --warmup 1 \
  --turn-ms 1 --confirm-rounds 1 --touch-gib 0.25 --python "$python" --json "$work/bench.json" > "$work/bench.txt" || status=$?
cat "$work/bench.txt"
# 0: every goal met, 1: one missed; 2 is a failure of the benchmark itself.
[ "$status" -le 1 ] || { echo "bench_overhead failed with $status"; exit 1; }
grep -q "glibc malloc of both sides: MALLOC_MMAP_THRESHOLD_=" "$work/bench.txt"
grep -q "host memory touched once before the cases: 0.2 GiB" "$work/bench.txt"
grep -q "mnist_cnn 1,28,28, train with sgd, 1 thread on" "$work/bench.txt"
grep -q "mnist_cnn 1,28,28, infer, 1 thread on" "$work/bench.txt"
[ "$(grep -c '^ *empty ' "$work/bench.txt")" = 2 ]
"$python" - "$work/bench.json" <<'PY'
import json, statistics, sys

def round_medians(row, side):
    # Rounds of 2 turns: a round's steps lie together in the list.
    n, steps = 2 * row["steps_per_turn"], row[side + "_steps_ms"]
    return [statistics.median(steps[i * n:(i + 1) * n]) for i in range(len(row["round_ratios"]))]

cases = json.load(open(sys.argv[1]))
assert [(c["phase"], c["threads"]) for c in cases] == [("train", 1), ("infer", 1)], cases
for c in cases:
    assert c["processes"]["pytorch"]["parameters"] == c["processes"]["batchscope"]["parameters"] > 0, c
    # Both sides on the case's device, each with its timer (the CPU's monotonic clocks).
    assert c["device"] == c["processes"]["pytorch"]["device"] == c["processes"]["batchscope"]["device"] == "cpu", c
    assert (c["processes"]["pytorch"]["timer"], c["processes"]["batchscope"]["timer"]) == ("perf_counter", "steady_clock"), c
    # The empty batch first, not judged; the others with what is left of PyTorch's step without it, and
    # the goal.
    assert [r["batch"] for r in c["rows"]] == [0, 1, 3], c
    empty = c["rows"][0]
    assert empty["goal"] is None and "without_empty" not in empty, empty
    assert c["rounds"] == 2 and c["confirm_rounds"] == 1, c
    # A size missed in both rounds ran a third (and the empty batch with it); the others two.
    confirmed = [r for r in c["rows"][1:] if len(r["round_ratios"]) == 3]
    for r in c["rows"][1:]:
        assert len(r["round_ratios"]) in (2, 3), r
        assert (len(r["round_ratios"]) == 3) == all(x > r["goal"] for x in r["round_ratios"][:2]), r
    assert len(empty["round_ratios"]) == (3 if confirmed else 2), (empty, confirmed)
    print("sizes confirmed with a third round:", [(c["phase"], r["batch"]) for r in confirmed])
    for r in c["rows"][1:]:
        assert len(r["round_without_empty"]) == len(r["round_ratios"]) and r["without_empty"] < 1, r
        # Each round's share is (PyTorch at b - PyTorch on the empty batch) / PyTorch at b.
        py0, py = round_medians(empty, "pytorch"), round_medians(r, "pytorch")
        for got, a, b in zip(r["round_without_empty"], py0, py):
            assert abs(got - (b - a) / b) < 1e-9, (r["round_without_empty"], py0, py)
        # The goals as stated, whatever the empty batch shows: 0.90 at batch 1, 1.00 elsewhere.
        assert r["goal"] == (0.90 if r["batch"] == 1 else 1.00), r
        assert "goal_out_of_reach" not in r and "bound" not in r, r
        # Missed only where every round missed; a median above the goal with a round at or below it is
        # not told apart.
        expected = ("met" if r["ratio"] <= r["goal"] else
                    "missed" if min(r["round_ratios"]) > r["goal"] else "not told apart")
        assert r["verdict"] == expected, r
    for r in c["rows"]:
        assert all(x > 0 for x in r["round_ratios"]), r
        assert r["pytorch_median_ms"] > 0 and r["batchscope_median_ms"] > 0, r
        # Every timed step of both sides, as many of each (its rounds x 2 turns x the steps of a turn).
        n = len(r["round_ratios"]) * 2 * r["steps_per_turn"]
        assert len(r["pytorch_steps_ms"]) == len(r["batchscope_steps_ms"]) == n, r
PY
# The optimizer is a case of its own, the same on both sides (type, settings, loop or multi-tensor).
"$bench" --models mnist_cnn --phases train --optimizers adam,adamw+foreach --threads 1 --batch 1 --rounds 1 \
  --turns 1 --warmup 1 --turn-ms 1 --confirm-rounds 0 --touch-gib 0 --python "$python" --json "$work/optimizers.json" \
  > "$work/optimizers.txt" || [ $? -le 1 ] || { cat "$work/optimizers.txt"; echo "bench_overhead failed with adam"; exit 1; }
grep -q "mnist_cnn 1,28,28, train with adamw+foreach, 1 thread on" "$work/optimizers.txt"
"$python" - "$work/optimizers.json" <<'PY'
import json, sys
cases = json.load(open(sys.argv[1]))
assert [c["optimizer"] for c in cases] == ["adam", "adamw+foreach"], cases
for c, decay, foreach in zip(cases, (0, 0.01), (False, True)):
    py, bs = c["processes"]["pytorch"]["optimizer"], c["processes"]["batchscope"]["optimizer"]
    assert py == bs, (py, bs)
    assert bs["type"] == c["optimizer"].split("+")[0] and bs["weight_decay"] == decay and bs["foreach"] == foreach, bs
PY
status=0
"$bench" --optimizers adagrad --touch-gib 0 --python "$python" > "$work/bad.txt" 2>&1 || status=$?
[ "$status" = 2 ] && grep -q "use sgd, adam or adamw" "$work/bad.txt" || { cat "$work/bad.txt"; echo "an unknown optimizer was not refused"; exit 1; }

# Goals no step can meet: every size misses both rounds, runs a third, still misses: exit code 1.
status=0
"$bench" --models mnist_cnn --phases infer --threads 1 --batch 1,3 --rounds 2 --turns 1 --warmup 1 --turn-ms 1 \
  --confirm-rounds 1 --goals 0.01,0.01 --touch-gib 0 --python "$python" --json "$work/strict.json" \
  > "$work/strict.txt" || status=$?
cat "$work/strict.txt"
[ "$status" = 1 ] || { echo "unmeetable goals gave exit code $status, not 1"; exit 1; }
grep -q "2 sizes missed in every round, run again for 1 round" "$work/strict.txt"
grep -q "2 goals missed in every round" "$work/strict.txt"
"$python" - "$work/strict.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))[0]["rows"]
assert [len(r["round_ratios"]) for r in rows] == [3, 3, 3], rows
assert [r["verdict"] for r in rows[1:]] == ["missed", "missed"], rows
PY
if "$bench" --goals 0.9 --python "$python" > /dev/null 2> "$work/err.txt"; then exit 1; fi
grep -q -- "--goals 0.9: give two ratios" "$work/err.txt"
# A model the reference does not have is refused with exit code 2.
if "$bench" --models resnet50 --python "$python" > /dev/null 2> "$work/err.txt"; then exit 1; fi
grep -q "no model resnet50" "$work/err.txt"
# The training loop's benchmark: an epoch of each side on a small MNIST-like set, every line it prints.
if [ -n "$batchscope" ]; then
  "$python" tests/data/make_idx.py "$work/digits" --train 256 --test 32 --gzip
  status=0
  "$python" bench/train_loop_bench.py --bin "$batchscope" --data "$work/digits" --batch 32 --rounds 2 --threads 1 \
    --json "$work/loop.json" > "$work/loop.txt" || status=$?
  cat "$work/loop.txt"
  [ "$status" -le 1 ] || { echo "train_loop_bench failed with $status"; exit 1; }
  grep -q "mnist_cnn on 256 MNIST images, batch 32 (8 steps), SGD momentum 0.9, lr 0.01, cpu, 1 thread(s)" "$work/loop.txt"
  grep -q "round 2 (pytorch first): batchscope" "$work/loop.txt"
  grep -Eq "batchscope / PyTorch, median of 2 round\(s\): [0-9.]+x" "$work/loop.txt"
  "$python" -c "import json,sys; j=json.load(open(sys.argv[1])); sys.exit(not (len(j['rounds']) == 2 and j['steps'] == 8 and all(r['batchscope_s'] > 0 and r['pytorch_s'] > 0 for r in j['rounds'])))" "$work/loop.json"
  # A directory without MNIST's files is refused with exit code 2.
  if "$python" bench/train_loop_bench.py --bin "$batchscope" --data "$work/none" > /dev/null 2> "$work/err.txt"; then exit 1; fi
  grep -q "give --data a directory of MNIST's IDX files" "$work/err.txt"
fi
echo "bench_smoke: ok"
