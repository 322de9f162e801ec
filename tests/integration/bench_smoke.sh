#!/usr/bin/env bash
# The overhead benchmark end to end with tiny settings: both sides start, agree on the model and the
# threads, take their turns, and every table row comes back. Its ratios are not judged here: timings are
# checked by running the benchmark, never by a test.
set -euo pipefail
bench="$1"; src="$2"; python="$3"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
"$python" -c "import torch" 2> /dev/null || { echo "no PyTorch for $python: skipped"; exit 77; }
cd "$src"
status=0
"$bench" --models mnist_cnn --phases train,infer --threads 1 --batch 1,3 --rounds 2 --turns 2 --warmup 1 \
  --turn-ms 1 --touch-gib 0.25 --python "$python" --json "$work/bench.json" > "$work/bench.txt" || status=$?
cat "$work/bench.txt"
# 0: every goal met, 1: one missed; 2 is a failure of the benchmark itself.
[ "$status" -le 1 ] || { echo "bench_overhead failed with $status"; exit 1; }
grep -q "glibc malloc of both sides: MALLOC_MMAP_THRESHOLD_=" "$work/bench.txt"
grep -q "host memory touched once before the cases: 0.2 GiB" "$work/bench.txt"
grep -q "mnist_cnn 1,28,28, train, 1 thread on" "$work/bench.txt"
grep -q "mnist_cnn 1,28,28, infer, 1 thread on" "$work/bench.txt"
"$python" - "$work/bench.json" <<'PY'
import json, sys
cases = json.load(open(sys.argv[1]))
assert [(c["phase"], c["threads"]) for c in cases] == [("train", 1), ("infer", 1)], cases
for c in cases:
    assert c["processes"]["pytorch"]["parameters"] == c["processes"]["batchscope"]["parameters"] > 0, c
    assert [r["batch"] for r in c["rows"]] == [1, 3], c
    for r in c["rows"]:
        assert len(r["round_ratios"]) == 2 and all(x > 0 for x in r["round_ratios"]), r
        assert r["pytorch_median_ms"] > 0 and r["batchscope_median_ms"] > 0, r
        # Every timed step of both sides, as many of each (2 rounds x 2 turns x the steps of a turn).
        n = 2 * 2 * r["steps_per_turn"]
        assert len(r["pytorch_steps_ms"]) == len(r["batchscope_steps_ms"]) == n, r
PY
# A model the reference does not have is refused with exit code 2.
if "$bench" --models resnet50 --python "$python" > /dev/null 2> "$work/err.txt"; then exit 1; fi
grep -q "no model resnet50" "$work/err.txt"
echo "bench_smoke: ok"
