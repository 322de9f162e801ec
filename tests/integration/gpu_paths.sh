#!/usr/bin/env bash
# The paths that only a GPU takes, on cuda:0 with small shapes: the device in `env`, the CUDA-event timer
# and its own cost, peak GPU memory, NVML energy with an idle baseline, the timed pinned-memory copy,
# cuDNN's benchmark mode, bf16/fp16 autocast with channels-last, the Transformer's causal mask under
# autocast, CTC on CUDA, maxbatch, micro-batching, training compared between the CPU and the GPU, TorchScript
# files, and the peak.
# Registered only where LibTorch has CUDA; without a visible GPU it fails, saying so.
set -uo pipefail
bin="$1"
source_dir="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"

"$bin" env --json > "$work/env.json" || { echo "FAIL batchscope env"; exit 1; }
python3 - "$work/env.json" <<'PY' || { echo "FAIL no usable GPU: the GPU tests need one"; exit 1; }
import json, sys
env = json.load(open(sys.argv[1]))
assert env["cuda_in_libtorch"] and env["gpus"], "no GPU visible"
g = env["gpus"][0]
assert g["total_memory_bytes"] > 0 and g["sm_count"] > 0 and g["pci_bus_id"], g
assert env["cuda_runtime_version"] and env["cudnn_version"], (env["cuda_runtime_version"], env["cudnn_version"])
print(f"ok   {g['name']}: CUDA {env['cuda_runtime_version']}, cuDNN {env['cudnn_version']}, "
      f"LibTorch {env['libtorch_version']}, {g['sm_count']} SMs")
PY
python3 "$source_dir/tests/data/make_idx.py" "$work/idx" --train 512 --test 128 > /dev/null

# Checks a run directory's records: CUDA-event timing, positive times, peak memory, energy where NVML is.
check_gpu_run() {  # NAME DIR [min peak growth]
  python3 - "$2/steps.jsonl" <<'PY' && ok "$1" || fail "$1"
import json, math, sys
records = [json.loads(l) for l in open(sys.argv[1])]
run, points = records[0], [r for r in records if r["type"] == "point"]
assert records[-1]["type"] == "end", records[-1]
timer = run["timers"].get("cuda:0")
assert timer and timer["method"] == "cuda_event", run["timers"]
assert 0 <= timer["overhead_ms"] < 0.5, timer
assert points, "no points"
for p in points:
    assert p["device"] == "cuda:0", p["device"]
    assert p["median_ms"] > 0 and p["min_ms"] > 0 and p["min_ms"] <= p["median_ms"] <= p["max_ms"], p
    assert p["peak_memory_bytes"] and p["peak_memory_bytes"] > 0, p
losses = [r["loss"] for r in records if r["type"] == "step" and r.get("loss") is not None]
assert all(math.isfinite(l) for l in losses), "a loss is not finite"
power = run["power"].get("cuda:0", {})
if power.get("available"):
    for p in points:
        if p.get("energy_j") is not None:
            assert p["energy_j"] > 0 and 5 < p["avg_power_w"] < 2000, (p["energy_j"], p["avg_power_w"])
    print(f"     energy by {power.get('method')}, counter updates every {power.get('update_period_ms')} ms, "
          f"idle {(power.get('idle') or {}).get('power_w')} W")
print(f"     {len(points)} sizes: " + ", ".join(f"b{p['batch_size']} {p['median_ms']:.3f} ms" for p in points))
PY
}

sweep=(sweep --device cuda:0 --quiet --steps 5 --warmup 2)
expect 0 "vgg16 training sweep on cuda:0" "written" "${sweep[@]}" --model vgg16 --input 3,32,32 --classes 10 \
  --batch 1:4 --idle-seconds 1 --out "$work/vgg"
check_gpu_run "CUDA events, peak memory and energy per batch size" "$work/vgg"
python3 - "$work/vgg/steps.jsonl" <<'PY' && ok "peak memory grows with the batch size" || fail "peak memory"
import json, sys
points = [json.loads(l) for l in open(sys.argv[1])]
peaks = [p["peak_memory_bytes"] for p in points if p["type"] == "point"]
assert peaks[-1] > peaks[0], peaks
PY
python3 - "$work/vgg/steps.jsonl" <<'PY' && ok "training on a GPU steps the optimizer multi-tensor (foreach)" || fail "foreach"
import json, sys
run = json.loads(open(sys.argv[1]).readline())
assert run["config"]["experiments"][0]["optimizer"].get("foreach") is True, run["config"]["experiments"][0]
PY

expect 0 "the copy of each batch timed (pinned memory)" "written" "${sweep[@]}" --model mnist_cnn \
  --data "$work/idx" --batch 1,64,256 --transfer included --idle-seconds 0 --out "$work/copy"
check_gpu_run "timed copies" "$work/copy"
grep -q '"transfer":"included"' "$work/copy/steps.jsonl" && ok "points say the copy was timed" ||
  fail "no point says transfer included"

expect 0 "bf16 with channels-last and cuDNN benchmark" "written" "${sweep[@]}" --model resnet18 --input 3,64,64 \
  --batch 2,3 --precision bf16 --channels-last --cudnn-benchmark --idle-seconds 0 --out "$work/bf16"
check_gpu_run "bf16 channels-last" "$work/bf16"
expect 0 "fp16 autocast" "written" "${sweep[@]}" --model vgg16 --input 3,32,32 --classes 10 --batch 2 \
  --precision fp16 --idle-seconds 0 --out "$work/fp16"
check_gpu_run "fp16" "$work/fp16"
python3 - "$work/fp16/steps.jsonl" <<'PY' && ok "fp16 training scales its loss (fused unscale and update on CUDA)" || fail "fp16 loss scaling"
import json, math, sys
records = [json.loads(l) for l in open(sys.argv[1])]
assert records[0]["config"]["experiments"][0]["loss_scale"] == "dynamic", records[0]["config"]["experiments"][0]
for p in (r for r in records if r["type"] == "point"):
    # The scale starts at 2^16 and halves at each overflow, the timed steps' among them.
    scale, skipped = p["loss_scale"], p["skipped_steps"]
    assert 0 <= skipped <= 5 and scale <= 65536 / 2 ** skipped and math.log2(scale).is_integer(), p
    print(f"     b{p['batch_size']}: {skipped} of 5 timed steps skipped, scale {scale:g}")
PY
expect 0 "inference, chunked" "written" "${sweep[@]}" --model mobilenet_v2 --input 3,64,64 --batch 8 --phase infer \
  --chunk 3 --idle-seconds 0 --out "$work/infer"
check_gpu_run "inference" "$work/infer"

expect 0 "the Transformer under bf16 autocast (causal mask)" "written" "${sweep[@]}" --model transformer \
  --seq-len 16 --classes 1000 --batch 2 --precision bf16 --idle-seconds 0 --out "$work/transformer"
check_gpu_run "transformer bf16" "$work/transformer"
expect 0 "Deep Speech 2 with CTC on CUDA" "written" "${sweep[@]}" --model deepspeech2 --input 1,32,100 --batch 2 \
  --idle-seconds 0 --out "$work/ds2"
check_gpu_run "deepspeech2 CTC" "$work/ds2"
expect 0 "the LSTM language model" "written" "${sweep[@]}" --model lstm_lm --seq-len 8 --classes 500 --batch 2 \
  --idle-seconds 0 --out "$work/lm"
check_gpu_run "lstm_lm" "$work/lm"

expect 0 "maxbatch on the GPU" "at least 512" maxbatch --model mnist_cnn --device cuda:0 --upper 512 --confirm 1
# --memory-limit caps the caching allocator: what fits on a GPU of 1 GiB, said so, and none of the steps
# held more; past it, chunk: auto runs the batch in micro-batches, and the run record has the limit.
expect 0 "maxbatch under a GPU memory limit" "within 1.00 GiB of its memory" maxbatch --model resnet18 \
  --input 3,64,64 --classes 10 --device cuda:0 --memory-limit 1GiB --granularity 8 --confirm 1 --quiet --out "$work/capped.jsonl"
python3 - "$work/capped.jsonl" <<'PY' && ok "the capped search held no more than the cap" || fail "capped maxbatch"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
result = [r for r in records if r["type"] == "maxbatch"][-1]["result"]
assert result["gpu_memory_limit_bytes"] == 2**30 and result["max_batch"], result
fits = [r for r in records if r["type"] == "maxbatch_try" and r["fits"]]
assert fits and all(r["peak_memory_bytes"] <= 2**30 for r in fits), fits
print(f"     {result['max_batch']} fit within 1 GiB")
PY
expect 0 "chunk: auto under a GPU memory limit" "did not fit whole" "${sweep[@]}" --model resnet18 --input 3,64,64 \
  --classes 10 --batch 32,2048 --chunk auto --memory-limit 1GiB --idle-seconds 0 --out "$work/capped-chunk"
python3 - "$work/capped-chunk/steps.jsonl" <<'PY' && ok "2048 ran in micro-batches under the cap" || fail "capped chunk: auto"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
assert records[0]["memory_limit_bytes"] == {"cuda:0": 2**30}, records[0].get("memory_limit_bytes")
points = {r["batch_size"]: r for r in records if r["type"] == "point"}
assert "chunk" not in points[32] and 1 <= points[2048]["chunk"] < 2048, points
assert all(p["peak_memory_bytes"] <= 2**30 for p in points.values()), points
PY
expect 0 "micro-batching on the GPU" "." microbatch --model alexnet --batch 8 --input 3,64,64 \
  --classes 10 --device cuda:0 --steps 2 --warmup 1 --repeats 2 --policy powerOfTwo --quiet --out "$work/micro"
python3 - "$work/micro/microbatch.jsonl" <<'PY' && ok "per-layer splits leave the gradients as they were" || fail "micro-batch result"
import json, sys
results = [json.loads(l) for l in open(sys.argv[1]) if '"microbatch_result"' in l]
assert results, "no result"
for r in results:
    assert r["measured"]["timer"] == "cuda_event", r["measured"]["timer"]
    assert r["gradient_difference"] < 1e-3, r["gradient_difference"]
PY
# Gradient accumulation in fp16 on the GPU: autocast in every micro-batch, one loss scaler, one step.
expect 0 "fp16 gradient accumulation on the GPU" "resnet18 \(3x32x32, fp16, loss scaled\)" microbatch --model resnet18 \
  --batch 16 --input 3,32,32 --classes 10 --device cuda:0 --mode model --precision fp16 --foreach on --tf32 off --steps 3 \
  --warmup 1 --repeats 2 --policy powerOfTwo --quiet --out "$work/micro-fp16"
python3 - "$work/micro-fp16/microbatch.jsonl" <<'PY' && ok "fp16 micro-batches counted their skipped steps" || fail "fp16 micro-batch result"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
assert records[0]["config"]["loss_scale"] == "dynamic", records[0]["config"]
assert records[0]["config"]["tf32"] == "off", records[0]["config"]
results = [r for r in records if r["type"] == "microbatch_result"]
assert results, "no result"
for r in results:
    for side in ("undivided", "planned"):
        m = r["measured"][side]
        assert m["median_ms"] > 0 and 0 <= m["skipped_steps"] <= m["steps"], m
PY
expect 0 "training compared between the CPU and the GPU" "written" train --data "$work/idx" --epochs 1 --batch 32 \
  --compare cpu,cuda:0 --quiet --out "$work/train"
# Both runs draw mnist_cnn's dropout masks on the host from the seed and keep fp32 without TF32, so they
# differ by the devices' arithmetic alone: 16 steps on 512 images must leave the losses and accuracies
# equal to at least 3 significant digits (what the MNIST claim asks of a whole training run).
python3 - "$work/train/compare.jsonl" <<'PY' && ok "CPU and GPU runs compared epoch by epoch" || fail "CPU/GPU comparison"
import json, math, sys
records = [json.loads(l) for l in open(sys.argv[1])]
assert records[0]["config"]["dropout_masks"] == "drawn on the host from the seed", records[0]["config"]
assert records[0]["config"]["drawn_on_device"] == [], records[0]["config"]
rows = [r for r in records if r["type"] == "comparison"]
assert rows, "no comparison rows"
for r in rows:
    assert r["devices"] == ["cpu", "cuda:0"], r["devices"]
    digits = []
    for q in ("train_loss", "train_accuracy", "test_loss", "test_accuracy"):
        a, b = r[q]["values"]
        assert math.isfinite(a) and math.isfinite(b), (q, a, b)
        if q.endswith("accuracy"):
            assert 0 <= a <= 1 and 0 <= b <= 1, (q, a, b)
        digits.append(r[q]["digits"])
    assert r["min_digits"] == min(digits), (r["min_digits"], digits)
    assert r["min_digits"] >= 3, f"epoch {r['epoch']}: the devices agree to {r['min_digits']} digits only"
    print(f"     epoch {r['epoch']}: " + ", ".join(f"{q} {r[q]['values'][0]:.4g}/{r[q]['values'][1]:.4g}"
          for q in ("train_loss", "test_accuracy")) + f", {r['min_digits']} digits at worst")
PY

# TorchScript files on cuda:0, saved by PyTorch in Python on the CPU: a scripted CNN, and a traced sequence
# classifier of token ids and an attention mask that returns a tuple. batchscope moves them to the GPU and
# makes the ids, the mask and the targets there.
# torch.jit.script reads a class's source, so the script is a file (from standard input it has none).
if python3 -c "import torch" 2> /dev/null; then
  cat > "$work/save_models.py" <<'PY'
import sys, torch
from torch import nn
class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(8, 5)
    def forward(self, x):
        return self.head(self.features(x).flatten(1))
class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.word_embeddings = nn.Embedding(60, 16)
        self.head = nn.Linear(16, 3)
    def forward(self, input_ids, attention_mask):
        h = self.word_embeddings(input_ids) * attention_mask.unsqueeze(-1).to(torch.float32)
        return self.head(h.mean(1)), h
torch.jit.script(Cnn()).save(f"{sys.argv[1]}/cnn.pt")
ids = torch.zeros(1, 8, dtype=torch.long)
torch.jit.trace(Classifier().eval(), (ids, torch.ones_like(ids))).save(f"{sys.argv[1]}/classifier.pt")
PY
  python3 "$work/save_models.py" "$work" || fail "PyTorch in Python saves the TorchScript files"
  expect 0 "a scripted CNN from a file, profiled" "written" "${sweep[@]}" --model "$work/cnn.pt" --input 3,32,32 \
    --batch 2,3 --profile --idle-seconds 0 --out "$work/ts-cnn"
  check_gpu_run "a TorchScript CNN on cuda:0" "$work/ts-cnn"
  # Its kernels go to its modules by their PyTorch names, in both passes.
  python3 - "$work/ts-cnn/profile.jsonl" <<'PY' && ok "a TorchScript CNN's kernels go to its modules" || fail "a TorchScript CNN's profile"
import json, sys
profiles = [r for r in map(json.loads, open(sys.argv[1])) if r["type"] == "profile"]
assert len(profiles) == 2, len(profiles)
for p in profiles:
    assert p.get("kernel_ms"), p["method"]
    layers = {(l["layer"], l["pass"]): l for l in p["layers"]}
    for module in ("features.0", "head"):
        for pass_ in ("forward", "backward"):
            assert (layers.get((module, pass_)) or {}).get("device_ms", 0) > 0, (module, pass_, sorted(layers))
    print(f"     b{p['batch_size']}: " + ", ".join(f"{l['layer']} {l['pass']} {l['device_ms']:.3f} ms"
                                              for l in p["layers"] if l.get("device_ms")))
PY
  expect 0 "a traced sequence classifier from a file" "written" "${sweep[@]}" --model "$work/classifier.pt" \
    --input-kind tokens --seq-len 8 --vocab 60 --batch 1,4 --idle-seconds 0 --out "$work/ts-classifier"
  check_gpu_run "a TorchScript sequence classifier on cuda:0" "$work/ts-classifier"
  expect 0 "a traced sequence classifier's inference" "written" "${sweep[@]}" --model "$work/classifier.pt" \
    --input-kind tokens --seq-len 8 --vocab 60 --batch 4 --phase infer --idle-seconds 0 --out "$work/ts-infer"
  check_gpu_run "a TorchScript sequence classifier's inference on cuda:0" "$work/ts-infer"
else
  echo "skip TorchScript files on cuda:0: no PyTorch in Python here to save them"
fi

# peak: all four precisions measured on CUDA events, the matrix product and the convolution (both
# phases and layouts, benchmark mode); the tensor cores' formats beat IEEE fp32.
"$bin" peak --device cuda:0 --size 2048 --conv-input 16x128x28x28 --steps 5 --warmup 2 --json > "$work/peak.json" 2> "$work/peak.err" &&
python3 - "$work/peak.json" <<'PY' && ok "peak: fp32, tf32, bf16 and fp16 products and convolutions on CUDA events" || fail "peak: $(cat "$work/peak.err")"
import json, sys
all_rates = json.load(open(sys.argv[1]))["rates"]
kinds = [("matmul", None, None)] + [("conv", phase, layout) for phase in ("train", "infer")
                                    for layout in ("contiguous", "channels_last")]
for operation, phase, layout in kinds:
    rates = {r["precision"]: r for r in all_rates
             if r["operation"] == operation and r.get("phase") == phase and r.get("memory_format") == layout}
    assert sorted(rates) == ["bf16", "fp16", "fp32", "tf32"], (operation, layout, sorted(rates))
    for r in rates.values():
        assert "skipped" not in r and r["timer"] == "cuda_event" and len(r["times_ms"]) == 5, r
        assert 0 < r["p10_tflops"] <= r["median_tflops"] <= r["p90_tflops"], r
        assert r.get("cudnn_benchmark", True) is True, r
    if operation == "matmul":
        assert rates["bf16"]["median_tflops"] > rates["fp32"]["median_tflops"], rates
        assert rates["tf32"]["median_tflops"] > rates["fp32"]["median_tflops"], rates
    print(f"     {operation} {phase or ''} {layout or ''}: " + ", ".join(f"{p} {r['median_tflops']:.1f}" for p, r in sorted(rates.items())) + " TFLOP/s")
# The convolution's faster layout in bf16 beats IEEE fp32's (which cuDNN may run by FFT or Winograd).
best = lambda p: max(r["median_tflops"] for r in all_rates if r["operation"] == "conv" and r["phase"] == "infer" and r["precision"] == p)
assert best("bf16") > best("fp32"), all_rates
PY

# peak --model: each of VGG16's layers alone on CUDA events (with cuDNN's heuristics: no search to wait
# for), and once more under the profiler: the layer's kernels, which lie within the span its events time
# (a pass that counted another pass's kernels, e.g. the forward run before each backward, would not).
"$bin" peak --device cuda:0 --model vgg16 --input 3,32,32 --classes 10 --batch 16 --precision tf32 \
  --phase train --cudnn-benchmark off --steps 5 --warmup 2 --profiled-runs 3 --json > "$work/layers.json" 2> "$work/layers.err" &&
python3 - "$work/layers.json" <<'PY' && ok "peak --model: each layer's passes on CUDA events, and their kernels within them" || fail "peak --model: $(cat "$work/layers.err")"
import json, sys
rates = json.load(open(sys.argv[1]))["rates"]
assert len(rates) == 13 * 2 * 2 + 3 * 2, len(rates)  # 13 convolutions' 2 passes in 2 layouts, 3 linear layers'
assert all(r["precision"] == "tf32" and r["cudnn_benchmark"] is False for r in rates), rates
worst = None
for r in rates:
    assert "skipped" not in r and r["timer"] == "cuda_event" and len(r["times_ms"]) == 5, r
    p = r["profiled"]
    assert p["as"] == "kernels" and len(p["times_ms"]) == 3 and p["median_ms"] > 0, r
    # Every run showed the same kernels (else the pass is dropped), at least the GEMM's own.
    assert "profiled_dropped" not in r and p["kernels_per_run"] >= 1 and p["layout_ms"] >= 0, r
    assert p["median_ms"] <= 1.10 * r["median_ms"] + 0.002, (r["layer"], r["pass"], p["median_ms"], r["median_ms"])
    gap = r["median_ms"] - p["median_ms"]
    if worst is None or gap > worst[0]:
        worst = (gap, f'{r["layer"]} {r["pass"]} {r["precision"]} {r["memory_format"]}: {r["median_ms"]:.4f} ms between events, {p["median_ms"]:.4f} ms of kernels')
print(f"     {len(rates)} passes; the largest gap: {worst[1]}")
layout = {f: sum(r["profiled"]["layout_ms"] for r in rates if r["memory_format"] == f) for f in ("contiguous", "channels_last")}
print(f"     layout conversions alone: {layout['contiguous']:.4f} ms contiguous, {layout['channels_last']:.4f} ms channels-last")
short = {"contiguous": "nchw", "channels_last": "nhwc", "forward": "fwd", "backward": "bwd"}
print("     kernels per run: " + ", ".join(f'{r["layer"]} {short[r["pass"]]} {short[r["memory_format"]]} {r["profiled"]["kernels_per_run"]}' for r in rates))
PY

echo "$failures failures"
[ "$failures" -eq 0 ]
