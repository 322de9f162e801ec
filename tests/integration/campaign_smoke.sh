#!/usr/bin/env bash
# The GPU campaign's smoke mode on the CPU, end to end: the plan, a budget that stops the first sweep
# half-way (SIGINT, exit 3), a second run that resumes it (the finished batch sizes kept byte for byte)
# and runs every other item but one that cannot resume and needs more time than it has, a longer run that
# runs that one, a run after that which finds nothing left, and the copies made after each item.
set -uo pipefail
bin="$1"
source_dir="$2"
python="${3:-/usr/bin/python3}"  # with PyTorch: the benchmark items' reference
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"
cd "$source_dir"
campaign=(scripts/gpu_campaign.sh --smoke --bin "$bin" --results "$work/r" --python "$python" --copy-to "$work/copy" --archive "$work/copy.tar.gz")

# A GPU whose sweeps ran LibTorch's loop optimizer step keeps it for every later sweep (--foreach off)
# and contrasts ResNet-50 with the multi-tensor step; one that ran foreach (or nothing yet) the reverse.
python3 - "$work/gpu" <<'PY' && ok "the optimizer step of a GPU's earlier sweeps decides its later ones'; the GPU plan's sawtooth, benchmark-mode and 16 GiB items" || fail "foreach pins, or the GPU plan's items"
import json, os, sys, types
sys.path.insert(0, "scripts/lib")
import campaign
def plan_for(records):
    results = os.path.join(sys.argv[1], str(len(records)))
    for name, optimizer in records:
        os.makedirs(os.path.join(results, name), exist_ok=True)
        run = {"type": "run", "config": {"experiments": [{"phase": "train", "device": "cuda:0", "optimizer": optimizer}]}}
        with open(os.path.join(results, name, "steps.jsonl"), "w") as f:
            f.write(json.dumps(run) + "\n")
    a = types.SimpleNamespace(results=results, smoke=False, data=None, copy_to=None, python="python3")
    c = campaign.Campaign.__new__(campaign.Campaign)
    c.results, c.a, c.bin = results, a, "batchscope"
    return {it["id"]: it["argv"] for it in c.items()}
loop = plan_for([("vgg16_jumps", {"type": "sgd", "lr": 0.01})])
assert loop["mnist_train_vs_infer"][-4:-2] == ["--foreach", "off"], loop["mnist_train_vs_infer"]
assert "resnet50_foreach_on" in loop and loop["resnet50_foreach_on"].count("--foreach") == 1, loop.keys()
multi = plan_for([("vgg16_jumps", {"type": "sgd", "foreach": True}),
                  ("resnet50_foreach_off", {"type": "sgd"})])  # the contrast runs the loop on purpose
assert "--foreach" not in multi["mnist_train_vs_infer"], multi["mnist_train_vs_infer"]
assert "resnet50_foreach_off" in multi, multi.keys()
# On a GPU: benchmark mode in IEEE fp32 at the sawtooth's sizes only, and VGG16's search under 16 GiB.
bench = multi["vgg16_tf32_off_bench_on"]
sizes = [int(b) for b in bench[bench.index("--batch") + 1].split(",")]
assert len(sizes) == 27 and {16, 17, 24, 25, 32, 33, 48, 49, 64, 65} <= set(sizes), sizes
# Benchmark mode on the other nets: both sides of each multiple of 16 (29 sizes); VGG16's 1..70.
for m in ("vgg19", "resnet50", "mobilenet_v2"):
    argv = multi[f"{m}_bench_on"]
    sides = [int(b) for b in argv[argv.index("--batch") + 1].split(",")]
    assert len(sides) == 29 and all({k - 1, k, k + 1} <= set(sides) for k in (16, 32, 48, 64)), (m, sides)
assert multi["vgg16_bench_on"][multi["vgg16_bench_on"].index("--batch") + 1] == "1:70", multi["vgg16_bench_on"]
capped = multi["maxbatch_vgg16_fp32_16GiB"]
assert capped[capped.index("--memory-limit") + 1] == "16GiB", capped
PY

"${campaign[@]}" --plan-only > "$work/plan.out" 2>&1
rc=$?
if [ "$rc" -eq 0 ] && grep -q "vgg16_jumps" "$work/plan.out" && [ -f "$work/r/campaign/plan.json" ] &&
   [ ! -e "$work/r/vgg16_jumps" ]; then
  ok "the plan is made and printed, nothing is run: $(tail -1 "$work/plan.out")"
else
  fail "plan only: exit $rc, $(tail -3 "$work/plan.out")"
fi

# A command changed in the campaign since the plan was made (here: changed in the plan) is planned again
# where its item has not started, without --replan: a sweep's too, but not for the step counts that the
# plan lowers to fit its time.
python3 - "$work/r/campaign/plan.json" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
for it in plan["items"]:
    if it["id"] in ("microbatch_resnet18", "energy_zoo"):
        it["argv"] = it["argv"] + ["--an-old-option"]
    if it["id"] == "mnist_train_vs_infer":
        it["argv"][it["argv"].index("--steps") + 1] = "3"
json.dump(plan, open(sys.argv[1], "w"))
PY
"${campaign[@]}" --plan-only > "$work/changed.out" 2>&1
rc=$?
# The sweeps' commands are the campaign's as before, so their plans are the last plan's: no sweep is
# asked for its plan again.
if [ "$rc" -eq 0 ] && grep -q "commands changed for items not started (microbatch_resnet18, energy_zoo): planning again" "$work/changed.out" &&
   ! grep -q -- "--an-old-option" "$work/r/campaign/plan.json" &&
   grep -Eq "sweep plans: ([0-9]+) of \1 taken from the last plan's, 0 asked for" "$work/changed.out" &&
   grep -Eq "sweep plans: 0 of ([0-9]+) taken from the last plan's, \1 asked for" "$work/plan.out"; then
  ok "a command changed since the plan was made is planned again, the sweeps' plans of the same commands kept"
else
  fail "changed command: exit $rc, $(head -3 "$work/changed.out")"
fi

# The runs follow the campaign's order: a plan whose items lie in another (here: two swapped in the
# plan) is planned again in the campaign's.
python3 - "$work/r/campaign/plan.json" > "$work/order.txt" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
print(" ".join(it["id"] for it in plan["items"]))
ids = [it["id"] for it in plan["items"]]
i, j = ids.index("energy_zoo"), ids.index("maxbatch_resnet18_fp32")
plan["items"][i], plan["items"][j] = plan["items"][j], plan["items"][i]
json.dump(plan, open(sys.argv[1], "w"))
PY
"${campaign[@]}" --plan-only > "$work/reordered.out" 2>&1
rc=$?
if [ "$rc" -eq 0 ] && grep -q "runs its items in another order than the plan's: planning again" "$work/reordered.out" &&
   python3 -c 'import json, sys; assert " ".join(it["id"] for it in json.load(open(sys.argv[1]))["items"]) == open(sys.argv[2]).read().strip()' \
     "$work/r/campaign/plan.json" "$work/order.txt" &&
   "${campaign[@]}" --plan-only > "$work/reordered_again.out" 2>&1 && grep -q "following the plan" "$work/reordered_again.out"; then
  ok "a plan in another order than the campaign's is planned again in the campaign's, once"
else
  fail "reordered plan: exit $rc, $(head -3 "$work/reordered.out")"
fi
# A reader that leaves early (--plan-only | head) ends the listing without a traceback: the campaign
# exits as a program whose pipe's reader left (141), or 0 where the listing was all written before.
"${campaign[@]}" --plan-only 2> "$work/early.err" | head -1 > /dev/null
rc="${PIPESTATUS[0]}"
if { [ "$rc" -eq 141 ] || [ "$rc" -eq 0 ]; } && ! grep -q "Traceback\|Error" "$work/early.err"; then
  ok "a listing whose reader leaves early ends quietly: exit $rc"
else
  fail "listing into head -1: exit $rc, $(head -3 "$work/early.err")"
fi

# A sweep begun on another machine is refused by batchscope; the campaign knows that refusal by its words
# (and sets the sweep aside to start it again), and no other.
python3 - "$work" <<'PY' && ok "a sweep begun on another machine is told from other refusals" || fail "begun_elsewhere"
import os, sys
sys.path.insert(0, "scripts/lib")
import campaign
log = os.path.join(sys.argv[1], "item.log")
with open(log, "w") as f:
    f.write("[info] starting\nbatchscope: r/vgg16/steps.jsonl:1: was begun with LibTorch 2.6.0, and this session has "
            "2.11.0; resume it with the program and libraries it was begun with, choose another --out directory, "
            "or pass --force to replace it.\n\n")
assert campaign.begun_elsewhere(log) == "was begun with LibTorch 2.6.0, and this session has 2.11.0", campaign.begun_elsewhere(log)
with open(log, "a") as f:
    f.write("batchscope: r/vgg16/steps.jsonl:1: holds a sweep of different experiments than this command asks for\n")
assert campaign.begun_elsewhere(log) == ""
assert campaign.begun_elsewhere(os.path.join(sys.argv[1], "absent.log")) == ""
PY

# 16 s of budget, 4 kept back: the first sweep (six batch sizes of VGG16, profiled, about 25 s here) is
# asked to stop after 12 s. It starts where 5 s are left after the reserve, so the campaign's own start may
# take 7 s on a loaded machine (0.2 s on an idle one).
"${campaign[@]}" --budget-s 16 --reserve-s 4 > "$work/first.out" 2>&1
rc=$?
jsonl="$work/r/vgg16_jumps/steps.jsonl"
if [ "$rc" -eq 3 ] && grep -q "stopped at the budget" "$work/first.out" && [ -f "$jsonl" ] &&
   ! grep -q '"type":"end"' "$jsonl"; then
  ok "a short budget stops the running sweep cleanly: exit 3"
else
  fail "short budget: exit $rc, $(tail -5 "$work/first.out")"
fi
points_before=$(grep -c '"type":"point"' "$jsonl" 2>/dev/null)
cp "$jsonl" "$work/first.jsonl" 2>/dev/null
[ -f "$work/copy/r/vgg16_jumps/steps.jsonl" ] && ok "the stopped sweep's log was copied back" ||
  fail "nothing copied to --copy-to after the first run"
listing="$(tar tzf "$work/copy.tar.gz" 2>&1)"
grep -qx "r/vgg16_jumps/steps.jsonl" <<< "$listing" && grep -qx "r/campaign/plan.json" <<< "$listing" &&
  ! grep -q '\.png$' <<< "$listing" && [ ! -e "$work/copy.tar.gz.tmp" ] &&
  [ -s "$work/r/campaign/sweep_plans.cache.json" ] && ! grep -q "sweep_plans.cache.json" <<< "$listing" &&
  ok "... and archived in one file, plots and the kept sweep plans left out" || fail "--archive after the first run: $(head -3 <<< "$listing")"

# Planning again keeps the commands of what was started (the stopped sweep resumes with its own) and
# plans the rest anew: a mark put on one started and one untouched item shows which entries were kept.
python3 - "$work/r/campaign/plan.json" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
for it in plan["items"]:
    if it["id"] in ("vgg16_jumps", "microbatch_alexnet"):
        it["estimate_s"] = 999.0
json.dump(plan, open(sys.argv[1], "w"))
PY
"${campaign[@]}" --plan-only --replan > "$work/replan.out" 2>&1
rc=$?
python3 - "$work/r/campaign/plan.json" <<'PY' && [ "$rc" -eq 0 ] && grep -q "planned again: .* started or finished 1 items, which keep their commands: vgg16_jumps" "$work/replan.out" \
  && ok "planning again keeps the started sweep's command and plans the rest anew" || fail "replan: exit $rc, $(head -3 "$work/replan.out")"
import json, sys
plan = json.load(open(sys.argv[1]))
by_id = {it["id"]: it for it in plan["items"]}
assert plan["kept"] == ["vgg16_jumps"], plan["kept"]
assert by_id["vgg16_jumps"]["estimate_s"] == 999.0, by_id["vgg16_jumps"]
assert by_id["microbatch_alexnet"]["estimate_s"] != 999.0, by_id["microbatch_alexnet"]
assert [it["id"] for it in plan["items"]][:3] == ["vgg16_jumps", "peak", "peak_conv"], [it["id"] for it in plan["items"]]
PY

# A command that cannot resume and was stopped at the budget after 1500 s (as if an earlier run had been)
# needs more than that to start again: with 1800 s of budget it waits, and every item after it runs.
python3 - "$work/r/campaign/state.json" <<'PY'
import json, sys
state = json.load(open(sys.argv[1]))
state["train_compare"] = "stopped after 1500 s"
json.dump(state, open(sys.argv[1], "w"))
PY
# A budget the rest of the smoke campaign fits in on a slow CPU too (about 320 s of items alone on a
# 2-core AVX2 one, twice that beside other tests).
"${campaign[@]}" --budget-s 1800 > "$work/second.out" 2>&1
rc=$?
if [ "$rc" -eq 3 ] && grep -q "train_compare: .* 1960 s needed to start it: left for a run with more time" "$work/second.out" &&
   grep -q "; left: train_compare$" "$work/second.out"; then
  ok "a command stopped after 1500 s waits for a longer run, and the items after it run"
else
  fail "second run: exit $rc, $(grep -E 'FAILED|Error|error' "$work/second.out" | head -5) $(tail -3 "$work/second.out")"
fi
# A longer run starts it, and completes the campaign.
"${campaign[@]}" --budget-s 2100 > "$work/longer.out" 2>&1
rc=$?
if [ "$rc" -eq 0 ] && grep -q "the campaign is complete" "$work/longer.out" && [ -f "$work/r/train_compare/compare.jsonl" ]; then
  ok "a run with more time runs it and completes the campaign"
else
  fail "longer run: exit $rc, $(grep -E 'FAILED|Error|error' "$work/longer.out" | head -5) $(tail -3 "$work/longer.out")"
fi
python3 - "$work/first.jsonl" "$jsonl" "$points_before" <<'PY' || fail "the resumed sweep"
import json, sys
first, final, points_before = open(sys.argv[1]).read(), open(sys.argv[2]).read(), int(sys.argv[3])
records = [json.loads(l) for l in final.splitlines()]
points = [r["batch_size"] for r in records if r["type"] == "point"]
assert points == [1, 2, 3, 4, 5, 6], points
assert records[-1]["type"] == "end", records[-1]["type"]
# What the first run finished is kept as it was: the points written before the stop, byte for byte.
kept = [l for l in first.splitlines() if json.loads(l)["type"] == "point"]
assert len(kept) == points_before, (len(kept), points_before)
for line in kept:
    assert line in final.splitlines(), "a finished batch size was measured again"
print(f"resumed after {points_before} of 6 batch sizes; all six measured, the first ones kept")
PY
for item in jumps/vgg19_bench_off jumps/vgg16_bench_on jumps/vgg16_tf32_off jumps/vgg16_bf16_channels_last \
            jumps/vgg16_copy_included jumps/resnet50_tf32_off jumps/vgg16_tf32_off_profiled \
            jumps/vgg16_channels_last_profiled \
            jumps/vgg16_tf32_off_bench_on \
            jumps/resnet50_bench_off_pass2 jumps/resnet50_foreach_off \
            chunk_auto/vgg16 mnist_train_vs_infer energy_zoo; do
  grep -q '"type":"end"' "$work/r/$item/steps.jsonl" 2>/dev/null && [ -f "$work/r/$item/analysis/report.md" ] ||
    fail "$item: no complete, analysed sweep"
done
# A finished profiled sweep keeps its profile compressed, and analyze read it from there.
[ -s "$work/r/jumps/vgg16_tf32_off_profiled/profile.jsonl.gz" ] &&
  [ ! -e "$work/r/jumps/vgg16_tf32_off_profiled/profile.jsonl" ] &&
  grep -q '"profile"' "$work/r/jumps/vgg16_tf32_off_profiled/analysis/analysis.json" &&
  ok "a finished sweep's profile is kept compressed and analysed from there" ||
  fail "profile: $(ls "$work/r/jumps/vgg16_tf32_off_profiled")"
# Its layers' rates are read against the campaign's measured convolution peak.
python3 - "$work/r/jumps/vgg16_tf32_off_profiled/analysis/analysis.json" <<'PY' &&
import json, sys
rates = json.load(open(sys.argv[1]))["groups"][0]["layer_rates"]
assert rates["roof"]["operation"] == "conv" and rates["roof"]["from"].endswith("peak_conv.jsonl:1"), rates["roof"]
assert rates["layers"] and all(l["gflop"] > 0 and "share_of_roof" in l for l in rates["layers"]), rates["layers"]
# And each pass against the same pass of the same layer timed alone at the same batch (peak_layers).
alone = rates["alone"]
assert alone["passes"] == len(rates["layers"]) and ":" in alone["from"] and alone["tflops"] > 0, alone
assert alone["from"].rsplit(":", 1)[0].endswith("peak_layers.jsonl"), alone
# Every pass alone was also run under the profiler, timed as the step's layers are.
assert alone["profiled_passes"] == alone["passes"], alone
assert all(l["alone_tflops"] > 0 and l["alone_precision"] == "fp32" for l in rates["layers"]), rates["layers"]
# At every batch size the peak files time the layers at (1 to 6 in peak_layers), all of them together.
assert {1, 2, 3, 4, 5, 6} <= {a["batch"] for a in rates["all_alone_by_batch"]}, rates["all_alone_by_batch"]
assert all(len(l["alone_by_batch"]) >= 6 for l in rates["layers"]), rates["layers"]
PY
  ok "the profiled sweep's layer rates are read against the measured convolution peak and each layer alone" ||
  fail "layer rates: no conv roof or no layers alone in the profiled sweep's analysis.json"
# chunk: auto ran the size that does not fit whole under the memory limit in micro-batches, 4 whole.
python3 - "$work/r/chunk_auto/vgg16/steps.jsonl" <<'PY' && ok "chunk: auto ran 32 in micro-batches and 4 whole" ||
import json, sys
points = {r["batch_size"]: r for r in map(json.loads, open(sys.argv[1])) if r["type"] == "point"}
assert sorted(points) == [4, 32], sorted(points)
assert "chunk" not in points[4], points[4]
assert 1 <= points[32]["chunk"] < 32 and points[32]["chunk_tries"] > 0, points[32]
PY
  fail "chunk: auto: 32 not in micro-batches, or 4 not whole"
[ -s "$work/r/maxbatch/resnet18_fp32.jsonl" ] || fail "maxbatch: no result"
# The allocator item runs with its variable set, which its records and commands.txt name.
grep -q '"type":"maxbatch".*"PYTORCH_CUDA_ALLOC_CONF":"expandable_segments:True"' \
  "$work/r/maxbatch/resnet18_fp32_expandable_segments.jsonl" &&
  grep -q '^PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True .* maxbatch ' "$work/r/commands.txt" &&
  ok "the allocator item ran with PYTORCH_CUDA_ALLOC_CONF set" || fail "the allocator item: no record naming its variable"
# The capped item: the same search under half the limit, its limit in its result, and a smaller answer.
python3 - "$work/r/maxbatch/resnet18_fp32.jsonl" "$work/r/maxbatch/resnet18_fp32_16GiB.jsonl" <<'PY' &&
import json, sys
whole, capped = ([json.loads(l) for l in open(path)][-1]["result"] for path in sys.argv[1:])
assert capped["cpu_memory_limit_bytes"] == 128 * 2**20, capped
assert 1 <= capped["max_batch"] < whole["max_batch"], (capped["max_batch"], whole["max_batch"])
PY
  ok "the capped maxbatch item found less under its limit" || fail "the capped maxbatch item: no smaller answer under its limit"
python3 - "$work/r/peak.jsonl" "$work/r/peak_conv.jsonl" <<'PY' || fail "peak: no measured rate of each operation"
import json, sys
for path, operation in zip(sys.argv[1:], ("matmul", "conv")):
    r = json.loads(open(path).readline())
    assert r["type"] == "peak" and r["config"]["operations"] == [operation], r["config"]
    assert all(rate["operation"] == operation and rate["median_tflops"] > 0 for rate in r["rates"]), r["rates"]
PY
grep -q "% of the measured fp32 matrix-product peak .*, .*% of the fp32 convolution peak" "$work/r/mnist_train_vs_infer/analysis/report.md" &&
  ok "sweeps after the peaks are read against both" || fail "the MNIST report does not read its rate against both peaks"
[ -f "$work/r/microbatch/alexnet/report.md" ] || fail "microbatch: no report"
# The workspace-cap item runs with its variable set, which its run record names twice (the study's own
# field and the environment's list), beside cuDNN's search.
python3 - "$work/r/microbatch/alexnet_bench_on_wscap64/microbatch.jsonl" <<'PY' &&
import json, sys
run = json.loads(open(sys.argv[1]).readline())
assert run["type"] == "run" and run["cudnn_conv_wscap_dbg"] == "64", run.get("cudnn_conv_wscap_dbg")
assert run["cuda_library_environment"] == {"CUDNN_CONV_WSCAP_DBG": "64"}, run.get("cuda_library_environment")
assert run["config"]["cudnn_benchmark"] is True, run["config"]
PY
  grep -q '^CUDNN_CONV_WSCAP_DBG=64 .* microbatch --model alexnet .*--cudnn-benchmark' "$work/r/commands.txt" &&
  ok "the workspace-cap item ran with CUDNN_CONV_WSCAP_DBG=64 and benchmark mode" || fail "the workspace-cap item"
[ -f "$work/r/train_compare/compare.jsonl" ] || fail "train --compare: no comparison"
python3 -c 'import json, sys; t = json.load(open(sys.argv[1])); assert [r["batch_size"] for r in t["rows"]] == [16, 64] and t["target_accuracy"] == 0.5, t' \
  "$work/r/mnist_time_to_accuracy/time_to_accuracy.json" && [ -f "$work/r/mnist_time_to_accuracy/time_to_accuracy.md" ] &&
  [ -s "$work/r/mnist_time_to_accuracy/time_to_accuracy.gp" ] && [ -s "$work/r/mnist_time_to_accuracy/time_to_accuracy.png" ] &&
  python3 -c 'import json, sys; r = json.loads(open(sys.argv[1]).readline()); assert r["config"]["determinism"]["deterministic"] == "off", r["config"]' \
    "$work/r/mnist_time_to_accuracy/batch-16/train.jsonl" &&
  ok "the batch-size study trained each size to its target, without deterministic algorithms, and wrote its table" ||
  fail "time to accuracy: $(ls "$work/r/mnist_time_to_accuracy" 2>&1)"
[ -f "$work/copy/r/energy_zoo/analysis/report.md" ] && [ -f "$work/copy/r/campaign/log.txt" ] &&
  [ -f "$work/copy/r/train_compare/cpu/checkpoint.json" ] && [ -z "$(find "$work/copy" -name '*.png' -o -name '*.pt')" ] &&
  ok "reports, logs and checkpoint records copied back, pictures and weights not" ||
  fail "copies: $(find "$work/copy" -maxdepth 2 | head)"
diff <(tar tzf "$work/copy.tar.gz" | sort) <(cd "$work/copy" && find r -type f | sort) > "$work/archive.diff" &&
  [ ! -e "$work/copy/r/vgg16_jumps/profile.jsonl" ] && [ -s "$work/copy/r/vgg16_jumps/profile.jsonl.gz" ] &&
  ok "the archive holds what was copied back, file for file; the copy has no file the results lost (the stopped sweep's plain profile)" || fail "archive and copies differ: $(head -4 "$work/archive.diff")"
# train's epoch against PyTorch's, at both batch sizes, each side's epoch timed and the ratio theirs.
python3 - "$work/r/bench" <<'PY' && grep -q "^$python bench/train_loop_bench.py --bin $bin .*--batch 8 " "$work/r/commands.txt" &&
import json, os, sys
for batch in (64, 8):
    t = json.load(open(os.path.join(sys.argv[1], f"train_loop_b{batch}.json")))
    assert t["batch"] == batch and t["images"] == 256 and len(t["rounds"]) == 1, t
    r = t["rounds"][0]
    assert r["batchscope_s"] > 0 and r["pytorch_s"] > 0 and abs(r["ratio"] - r["batchscope_s"] / r["pytorch_s"]) < 1e-9, r
    assert t["goal_met"] == (t["median_ratio"] <= 1.0), t
PY
  python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); assert [(x["device"], x["phase"], [r["batch"] for r in x["rows"]]) for x in c] == [("cpu", "infer", [0, 1])], c; assert c[0]["processes"]["pytorch"]["device"] == c[0]["processes"]["batchscope"]["device"] == "cpu", c' \
    "$work/r/bench/overhead.json" && grep -q "^$(dirname "$bin")/bench_overhead .*--python $python " "$work/r/commands.txt" &&
  ok "the train-loop benchmark ran at 64 and 8 with the campaign's Python, its rounds in the results; the overhead benchmark beside batchscope, with the same Python" ||
  fail "train-loop benchmark: $(ls "$work/r/bench" 2>&1; tail -3 "$work/r/campaign/train_loop_b8.log" 2>&1)"
[ "$(wc -l < "$work/r/commands.txt")" -ge 18 ] && ok "commands.txt lists every command run" ||
  fail "commands.txt: $(wc -l < "$work/r/commands.txt") lines"

"${campaign[@]}" > "$work/third.out" 2>&1
rc=$?
if [ "$rc" -eq 0 ] && ! grep -q "): estimated" "$work/third.out"; then
  ok "a run after that finds nothing left to do"
else
  fail "run after completion: exit $rc, $(tail -3 "$work/third.out")"
fi

# An item added to the campaign after its plan was made (here: taken out of the plan) joins the plan on
# the next run, as --replan would add it; what is done stays done.
python3 - "$work/r/campaign/plan.json" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
plan["items"] = [it for it in plan["items"] if it["id"] != "vgg16_tf32_off_profiled"]
json.dump(plan, open(sys.argv[1], "w"))
PY
"${campaign[@]}" --plan-only > "$work/added.out" 2>&1
rc=$?
if [ "$rc" -eq 0 ] && grep -q "the campaign has items the plan lacks (vgg16_tf32_off_profiled): planning again" "$work/added.out" &&
   grep -q '"vgg16_tf32_off_profiled"' "$work/r/campaign/plan.json" && grep -q "vgg16_tf32_off_profiled .* done" "$work/added.out"; then
  ok "an item added to the campaign joins an earlier plan"
else
  fail "added item: exit $rc, $(head -3 "$work/added.out")"
fi

# Results moved elsewhere (a GPU host's unpacked archive, a copy) are analysed where they are now: the
# plan's paths follow them, the first place is not written to, and the peaks read are the new place's
# (the run records' commands keep the path they ran with).
cp -r "$work/r" "$work/moved"
touch "$work/before-moved"
sleep 1
scripts/gpu_campaign.sh --smoke --bin "$bin" --results "$work/moved" --analyze-only > "$work/moved.out" 2>&1
rc=$?
written_first="$(find "$work/r" -newer "$work/before-moved" -type f | head -3)"
if [ "$rc" -eq 0 ] && [ -z "$written_first" ] && grep -q "^analysed $work/moved/vgg16_jumps$" "$work/moved.out" &&
   [ "$work/moved/energy_zoo/analysis/report.md" -nt "$work/before-moved" ] &&
   cmp -s "$work/r/campaign/log.txt" "$work/moved/campaign/log.txt" &&
   grep -q "$work/moved/peak.jsonl:1" "$work/moved/mnist_train_vs_infer/analysis/report.md" &&
   ! grep -q "$work/r/peak" "$work/moved/mnist_train_vs_infer/analysis/report.md"; then
  ok "moved results are analysed where they are, the first place untouched, the runs' log as it was"
else
  fail "moved results: exit $rc, written in the first place: '$written_first', $(head -3 "$work/moved.out")"
fi
scripts/gpu_campaign.sh --smoke --bin "$bin" --results "$work/moved" --plan-only > "$work/moved-plan.out" 2>&1
rc=$?
if [ "$rc" -eq 0 ] && ! grep -q "planning again" "$work/moved-plan.out" && ! grep -q "to do" "$work/moved-plan.out" &&
   grep -q " $work/moved/jumps/" "$work/moved-plan.out" && ! grep -q "$work/r/" "$work/moved-plan.out"; then
  ok "moved results keep their plan: every item done, every command's path in the new place"
else
  fail "moved plan: exit $rc, $(grep -m3 "planning again\|to do\|$work/r/" "$work/moved-plan.out")"
fi

# The GPU-path tests run once for each state of the code: not again on the same code, passed or failed;
# again on changed code, the earlier log kept beside under its code's fingerprint.
(
  source scripts/lib/tests_once.sh
  t="$work/tests"
  mkdir -p "$t"
  code="$(code_fingerprint)"
  [[ "$code" =~ ^[0-9a-f]{16}$ ]] || { echo "fingerprint '$code'"; exit 1; }
  echo "from before fingerprints" > "$t/tests.log"; : > "$t/tests.ran"
  tests_ran_on "$t" "$code" && { echo "an empty tests.ran counted as this code's"; exit 1; }
  run_tests "$t" "$code" 10 sh -c 'echo first; exit 1'
  [ "$(cat "$t/tests.ran")" = "$code" ] && [ ! -e "$t/tests.passed" ] && grep -qx first "$t/tests.log" &&
    grep -qx "from before fingerprints" "$t/tests-unknown.log" || { echo "first run: $(ls "$t")"; exit 1; }
  tests_ran_on "$t" "$code" || { echo "a failed run on this code not counted"; exit 1; }
  run_tests "$t" "0123456789abcdef" 10 sh -c 'echo second'
  [ -e "$t/tests.passed" ] && grep -qx second "$t/tests.log" && grep -qx first "$t/tests-$code.log" &&
    ! tests_ran_on "$t" "$code" || { echo "second run: $(ls "$t")"; exit 1; }
  run_tests "$t" "$code" 1 sleep 5
  [ ! -e "$t/tests.passed" ] && [ "$(ls "$t" | grep -c '^tests-')" -eq 3 ] || { echo "timed out: $(ls "$t")"; exit 1; }
  # A process the tests left behind, deaf to SIGTERM (a sweep finishing its batch size), does not
  # outlive them.
  run_tests "$t" "$code" 10 sh -c '(trap "" TERM; exec sleep 60) & echo $! > "$0"' "$t/left.pid"
  left="$(cat "$t/left.pid")"
  for _ in $(seq 50); do
    [ -d "/proc/$left" ] && [ "$(awk '{print $3}' "/proc/$left/stat" 2> /dev/null)" != Z ] || break
    sleep 0.1
  done
  [ -d "/proc/$left" ] && [ "$(awk '{print $3}' "/proc/$left/stat" 2> /dev/null)" != Z ] &&
    { echo "process $left the tests left is still running"; exit 1; }
  [ -e "$t/tests.passed" ] || { echo "the run that left a process behind did not pass"; exit 1; }
) > "$work/tests_once.out" 2>&1 && ok "the GPU-path tests run once for each state of the code, earlier logs kept" ||
  fail "tests once per code: $(cat "$work/tests_once.out")"

echo "$failures failures"
[ "$failures" -eq 0 ]
