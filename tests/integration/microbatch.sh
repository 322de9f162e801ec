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

expect 0 "whole-model accumulation of resnet18" "BatchNorm" \
  microbatch --model resnet18 --input 3,32,32 --classes 10 --batch 8 --mode model --policy powerOfTwo --device cpu --steps 2 --warmup 1 --repeats 2 --out "$work/model"
expect 0 "analyze shows both studies" "written: .*report.md" analyze "$work/layer" "$work/model/microbatch.jsonl" --out "$work/analysis"
grep -q "^## Micro-batching" "$work/analysis/report.md" || fail "analyze's report has no micro-batching section"
[ "$(grep -c '^### resnet18, mini-batch 8' "$work/analysis/report.md")" -eq 2 ] || fail "analyze's report does not show both studies"

expect 2 "a complete study is not overwritten" "already holds" \
  microbatch --model resnet18 --input 3,32,32 --classes 10 --batch 8 --device cpu --out "$work/layer"
expect 2 "unknown policy" "policy" microbatch --model alexnet --batch 8 --policy sometimes --device cpu --out "$work/x"
expect 2 "batch 0" "batch" microbatch --model alexnet --batch 0 --device cpu --out "$work/x"
expect 2 "unknown model" "unknown model" microbatch --model alexnet2 --batch 8 --device cpu --out "$work/x"
expect 2 "layer mode without convolutions" "lstm_lm has none; use --mode model \(gradient accumulation\)\.$" \
  microbatch --model lstm_lm --batch 8 --device cpu --out "$work/x"

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all microbatch checks passed"
