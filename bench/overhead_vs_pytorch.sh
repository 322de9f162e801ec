#!/usr/bin/env bash
# batchscope's measured step against PyTorch-in-Python's on the same backend, model, batch and
# optimizer (mnist_cnn, SGD, CPU), in one run. Prints per batch size the median step time of each
# and their ratio (batchscope / PyTorch), and batchscope's timer overhead per step.
# Goals: ratio <= 0.90 at batch 1 and <= 1.00 at every batch size.
# usage: bench/overhead_vs_pytorch.sh [BATCHES] [STEPS] [THREADS] [ROUNDS]   (needs scripts/setup.sh --bench)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
batches="${1:-1,2,4,8,16,32,64,128}"; steps="${2:-200}"; threads="${3:-1}"; rounds="${4:-3}"
python=/usr/bin/python3
bin=build/batchscope
[ -x "$bin" ] || { echo "bench: build first (scripts/setup.sh --bench)"; exit 2; }
$python -c 'import torch' 2>/dev/null || { echo "bench: PyTorch for $python is missing: scripts/setup.sh --bench installs it"; exit 2; }
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT

# Alternate the two, so that drift of the machine hits both alike; each round is a fresh process.
for r in $(seq 1 "$rounds"); do
  $python bench/pytorch_reference.py --batch "$batches" --steps "$steps" --warmup 20 --threads "$threads" \
    > "$work/python_$r.jsonl"
  "$bin" sweep --model mnist_cnn --batch "$batches" --device cpu --steps "$steps" --warmup 20 \
    --threads "$threads" --out "$work/batchscope_$r" --quiet > /dev/null
done

$python - "$work" "$rounds" "$threads" <<'PY'
import glob, json, statistics, sys
work, rounds, threads = sys.argv[1], int(sys.argv[2]), sys.argv[3]
py, bs, overhead = {}, {}, []
for r in range(1, rounds + 1):
    for line in open(f"{work}/python_{r}.jsonl"):
        j = json.loads(line); py.setdefault(j["batch_size"], []).append(j["median_ms"]); version = j["torch"]
    for line in open(f"{work}/batchscope_{r}/steps.jsonl"):
        j = json.loads(line)
        if j["type"] == "point": bs.setdefault(j["batch_size"], []).append(j["median_ms"])
        if j["type"] == "run": overhead.append(j["timers"]["cpu"]["overhead_ms"]); libtorch = j["libtorch_version"]
print(f"mnist_cnn train step, CPU, {threads} thread(s), SGD; median of {rounds} rounds of per-step medians")
print(f"PyTorch {version} (Python) vs batchscope on LibTorch {libtorch}")
print(f"{'batch':>6} {'pytorch ms':>11} {'batchscope ms':>14} {'ratio':>7}  goal")
worst = 0
for b in sorted(py):
    p, s = statistics.median(py[b]), statistics.median(bs[b])
    goal = 0.90 if b == 1 else 1.00
    ok = s / p <= goal
    worst += not ok
    print(f"{b:>6} {p:>11.4f} {s:>14.4f} {s / p:>7.3f}  <= {goal:.2f} {'ok' if ok else 'MISSED'}")
print(f"timer overhead per step: {statistics.median(overhead) * 1e3:.3f} us (median of empty start/stop pairs)")
print("all goals met" if worst == 0 else f"{worst} goal(s) missed")
PY
