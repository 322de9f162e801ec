#!/usr/bin/env bash
# batchscope's measured step against PyTorch-in-Python's on the same backend, model, batch and
# optimizer (mnist_cnn, SGD, CPU), in one run. For every round and batch size the two run back to back
# (alternating which goes first, pinned to one core), each a fresh process timing STEPS steps after a warm-up; the ratio
# batchscope/PyTorch of each pair's median step time is taken, and the median ratio over the rounds
# is reported, so that drift of the machine's speed cancels out. Also prints the timer's own cost.
# Goals: ratio <= 0.90 at batch 1 and <= 1.00 at every batch size.
# usage: bench/overhead_vs_pytorch.sh [BATCHES] [STEPS] [THREADS] [ROUNDS]   (needs scripts/setup.sh --bench)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
batches="${1:-1,2,4,8,16,32,64}"; steps="${2:-100}"; threads="${3:-1}"; rounds="${4:-5}"
python=/usr/bin/python3
bin=build/batchscope
[ -x "$bin" ] || { echo "bench: build first (scripts/setup.sh --bench)"; exit 2; }
$python -c 'import torch' 2>/dev/null || { echo "bench: PyTorch for $python is missing: scripts/setup.sh --bench installs it"; exit 2; }
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT

# Both pinned to the same core where taskset exists: a process that lands on a busier core is slower
# for reasons that have nothing to do with it.
pin=""; command -v taskset > /dev/null && pin="taskset -c $(($(nproc) - 1))"
run_python() { $pin $python bench/pytorch_reference.py --batch "$1" --steps "$steps" --warmup 20 --threads "$threads" >> "$work/python.jsonl"; }
run_batchscope() {
  $pin "$bin" sweep --model mnist_cnn --batch "$1" --device cpu --steps "$steps" --warmup 20 --threads "$threads" \
    --out "$work/batchscope_$2_$1" --quiet > /dev/null
  cat "$work/batchscope_$2_$1/steps.jsonl" >> "$work/batchscope.jsonl"
}
for r in $(seq 1 "$rounds"); do
  for b in ${batches//,/ }; do
    if [ $((r % 2)) -eq 1 ]; then run_python "$b"; run_batchscope "$b" "$r"; else run_batchscope "$b" "$r"; run_python "$b"; fi
  done
done

$python - "$work" "$threads" "$rounds" "$steps" <<'PY'
import json, statistics, sys
work, threads, rounds, steps = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
py, bs, overhead = {}, {}, []
for line in open(f"{work}/python.jsonl"):
    j = json.loads(line); py.setdefault(j["batch_size"], []).append(j["median_ms"]); version = j["torch"]
for line in open(f"{work}/batchscope.jsonl"):
    j = json.loads(line)
    if j["type"] == "point": bs.setdefault(j["batch_size"], []).append(j["median_ms"])
    if j["type"] == "run": overhead.append(j["timers"]["cpu"]["overhead_ms"]); libtorch = j["libtorch_version"]
print(f"mnist_cnn train step (SGD) on the CPU, {threads} thread(s): PyTorch {version} in Python vs batchscope on LibTorch {libtorch}")
print(f"{rounds} rounds of paired runs, {steps} timed steps each; ratio = median over rounds of batchscope/PyTorch")
print(f"{'batch':>6} {'pytorch ms':>11} {'batchscope ms':>14} {'ratio':>7} {'ratio range':>15}  goal")
missed = 0
for b in sorted(py):
    ratios = [s / p for p, s in zip(py[b], bs[b])]
    ratio = statistics.median(ratios)
    goal = 0.90 if b == 1 else 1.00
    missed += ratio > goal
    print(f"{b:>6} {statistics.median(py[b]):>11.4f} {statistics.median(bs[b]):>14.4f} {ratio:>7.3f} "
          f"{min(ratios):>7.3f}-{max(ratios):<7.3f}  <= {goal:.2f} {'met' if ratio <= goal else 'MISSED'}")
print(f"timer overhead per step: {statistics.median(overhead) * 1e3:.3f} us (median of empty start/stop pairs)")
print("all goals met" if missed == 0 else f"{missed} goal(s) missed")
PY
