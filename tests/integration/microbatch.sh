#!/usr/bin/env bash
# batchscope microbatch end to end on the CPU: per-layer and whole-model plans written and measured,
# analyze showing them, and bad input refused.
set -uo pipefail
bin="$1"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"

expect 0 "per-layer plans of resnet18" "powerOfTwo: [0-9]+/20 convolutions split" \
  microbatch --model resnet18 --input 3,32,32 --classes 10 --batch 8 --device cpu --steps 2 --warmup 1 --repeats 2 --out "$work/layer"
python3 - "$work/layer/microbatch.jsonl" <<'PY' || fail "records of the per-layer study"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
assert records[0]["type"] == "run" and records[-1]["type"] == "end"
assert "workspace" in records[0]["workspace_limit_note"]
costs = [r for r in records if r["type"] == "layer_cost"]
layers = {r["layer"] for r in costs}
assert len(layers) == 20, layers
assert all(r["median_ms"] > 0 for r in costs)
plans = [r for r in records if r["type"] == "layer_plan"]
assert {r["policy"] for r in plans} == {"undivided", "powerOfTwo", "all"}
assert all(sum(r["split"]) == 8 for r in plans), plans
results = [r for r in records if r["type"] == "microbatch_result"]
assert [r["policy"] for r in results] == ["undivided", "powerOfTwo", "all"], results
for r in results:
    assert r["measured"]["speedup"] > 0 and r["predicted"]["speedup"] >= 1 - 1e-9, r
    assert r["measured"]["undivided"]["median_ms"] > 0 and r["measured"]["planned"]["median_ms"] > 0
    assert abs(r["gradient_difference"]) < 1e-3, r  # per-layer splits leave batch norm whole
PY
[ -s "$work/layer/report.md" ] && grep -q "1.63" "$work/layer/report.md" || fail "report.md does not set the numbers next to the paper's"

# A stopped study goes on from the costs its file kept: the first 30 of the study above, one of them
# marked with a time no measurement gives, and a half-written line after them.
mkdir -p "$work/resume"
python3 - "$work/layer/microbatch.jsonl" "$work/resume/microbatch.jsonl" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
costs = [l for l in lines if json.loads(l)["type"] == "layer_cost"][:30]
first = json.loads(costs[0]); first["median_ms"] = 999.25
costs[0] = json.dumps(first)
open(sys.argv[2], "w").write("\n".join([lines[0]] + costs) + '\n{"type":"layer_co')
PY
expect 0 "a stopped study goes on" "30 costs measured by a stopped run of this study are taken" \
  microbatch --model resnet18 --input 3,32,32 --classes 10 --batch 8 --device cpu --steps 2 --warmup 1 --repeats 2 --out "$work/resume"
python3 - "$work/resume/microbatch.jsonl" <<'PY' || fail "records of the resumed study"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
assert records[0]["type"] == "run" and records[0]["resumed_costs"] == 30 and records[-1]["type"] == "end", records[0]
costs = [r for r in records if r["type"] == "layer_cost"]
assert len(costs) == 20 * 8 and costs[0]["median_ms"] == 999.25, (len(costs), costs[0])
assert len({(c["layer"], c["micro_batch"]) for c in costs}) == 160, "a cost measured twice"
PY
grep -q "30 of the 160 costs were measured by an earlier run of this study" "$work/resume/report.md" ||
  fail "the resumed study's report does not say which costs an earlier run measured"
# Another study's stopped file is refused, naming it; Ctrl-C stops a study after its running cost.
head -3 "$work/resume/microbatch.jsonl" > "$work/stopped.jsonl"
mkdir -p "$work/other" && cp "$work/stopped.jsonl" "$work/other/microbatch.jsonl"
expect 2 "a stopped study of other settings" "other/microbatch.jsonl:1: holds a stopped study of other settings \(batch was 8 there and is 4 here\)" \
  microbatch --model resnet18 --input 3,32,32 --classes 10 --batch 4 --device cpu --out "$work/other"
"$bin" microbatch --model resnet18 --input 3,32,32 --classes 10 --batch 64 --policy all --device cpu --steps 2 \
  --warmup 1 --repeats 2 --quiet --out "$work/interrupted" > "$work/int.out" 2> "$work/int.err" &
pid=$!
for _ in $(seq 1 600); do
  [ "$(grep -c '"layer_cost"' "$work/interrupted/microbatch.jsonl" 2>/dev/null)" -ge 3 ] && break
  sleep 0.1
done
kill -INT "$pid"
wait "$pid"
rc=$?
if [ "$rc" -eq 130 ] && grep -q "run the same command again to go on" "$work/int.err" &&
   ! grep -q '"type":"end"' "$work/interrupted/microbatch.jsonl" &&
   [ "$(grep -c '"layer_cost"' "$work/interrupted/microbatch.jsonl")" -ge 3 ]; then
  ok "Ctrl-C stops a study, its costs kept: exit 130"
else
  fail "Ctrl-C: exit $rc, $(tail -2 "$work/int.err")"
fi

expect 0 "whole-model accumulation of resnet18" "BatchNorm" \
  microbatch --model resnet18 --input 3,32,32 --classes 10 --batch 8 --mode model --policy powerOfTwo --device cpu --steps 2 --warmup 1 --repeats 2 --out "$work/model"
expect 0 "analyze shows both studies" "written: .*report.md" analyze "$work/layer" "$work/model/microbatch.jsonl" --out "$work/analysis"
grep -q "^## Micro-batching" "$work/analysis/report.md" || fail "analyze's report has no micro-batching section"
[ "$(grep -c '^### resnet18, mini-batch 8' "$work/analysis/report.md")" -eq 2 ] || fail "analyze's report does not show both studies"

# Gradient accumulation as the user's step runs it: bf16 autocast, loss scaling, AdamW's multi-tensor step.
expect 0 "bf16 gradient accumulation with loss scaling" "mnist_cnn \(1x28x28, bf16, loss scaled\), batch 8, mode model" \
  microbatch --model mnist_cnn --batch 8 --mode model --policy all --device cpu --precision bf16 --loss-scale dynamic \
  --optimizer adamw --foreach on --tf32 off --steps 2 --warmup 1 --repeats 2 --out "$work/bf16"
python3 - "$work/bf16/microbatch.jsonl" <<'PY' || fail "records of the bf16 study"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
config = records[0]["config"]
assert config["precision"] == "bf16" and config["loss_scale"] == "dynamic", config
assert config["optimizer"]["type"] == "adamw" and config["optimizer"]["foreach"] is True, config["optimizer"]
assert config["tf32"] == "off", config
assert "under bf16 autocast" in records[0]["precision_note"], records[0]["precision_note"]
results = [r for r in records if r["type"] == "microbatch_result"]
assert results and all("skipped_steps" in r["measured"][s] for r in results for s in ("undivided", "planned")), results
PY
grep -q "adamw with the multi-tensor (foreach) step, bf16 under autocast" "$work/bf16/report.md" || fail "the bf16 report does not say how its steps ran"
expect 0 "analyze names how the bf16 study's steps ran" "written: " analyze "$work/bf16" --out "$work/bf16-analysis"
grep -q "^### mnist_cnn, mini-batch 8, bf16, loss scaled, adamw foreach on cpu (mode model" "$work/bf16-analysis/report.md" \
  || fail "analyze's micro-batching heading does not say how the steps ran"
# A log may hold anything in its run record's config: words are made of what has the right type only.
mkdir -p "$work/odd"
python3 - "$work/bf16/microbatch.jsonl" "$work/odd/microbatch.jsonl" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
run = json.loads(lines[0])
run["config"].update({"cudnn_benchmark": "yes", "loss_scale": 3, "optimizer": {"type": 5, "foreach": "on"}})
open(sys.argv[2], "w").write("\n".join([json.dumps(run)] + lines[1:]) + "\n")
PY
expect 0 "analyze of a study whose config holds odd types" "written: " analyze "$work/odd" --out "$work/odd-analysis"
grep -q "^### mnist_cnn, mini-batch 8, bf16 on cpu (mode model, cuDNN benchmark off)" "$work/odd-analysis/report.md" \
  || fail "analyze made words of values of the wrong type"
expect 2 "an unknown optimizer" "optimizer" microbatch --model mnist_cnn --batch 8 --device cpu --optimizer adagrad --out "$work/x"
expect 2 "fp16 on the CPU" "fp16" microbatch --model mnist_cnn --batch 8 --device cpu --precision fp16 --out "$work/x"

expect 2 "a complete study is not overwritten" "already holds" \
  microbatch --model resnet18 --input 3,32,32 --classes 10 --batch 8 --device cpu --out "$work/layer"
expect 2 "unknown policy" "policy" microbatch --model alexnet --batch 8 --policy sometimes --device cpu --out "$work/x"
expect 2 "batch 0" "batch" microbatch --model alexnet --batch 0 --device cpu --out "$work/x"
expect 2 "unknown model" "--model alexnet2 is not a known model; did you mean alexnet" microbatch --model alexnet2 --batch 8 --device cpu --out "$work/x"
expect 2 "layer mode without convolutions" "lstm_lm has none; use --mode model \(gradient accumulation\)\.$" \
  microbatch --model lstm_lm --batch 8 --device cpu --out "$work/x"

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all microbatch checks passed"
