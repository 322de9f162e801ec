#!/usr/bin/env bash
# Real data, timed copies, batch sizes up to the largest that fits, maxbatch, and train/eval, all with
# the real binary on the CPU and a small generated MNIST-like dataset.
set -uo pipefail
bin="$1"; src="$2"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"

python3 "$src/tests/data/make_idx.py" "$work/digits" --train 300 --test 100 --gzip

# Inference over the whole small dataset, with and without the copy timed, from real images.
cat > "$work/real.yaml" <<YAML
device: cpu
defaults: {model: mnist_cnn, data: $work/digits, phase: infer, warmup: 1, steps: 3}
experiments:
  - {name: copy_excluded, batch: "1:300:x4", transfer: excluded}
  - {name: copy_included, batch: "1:300:x4", transfer: included, chunk: 64}
YAML
if "$bin" sweep "$work/real.yaml" --out "$work/real" --quiet > "$work/out" 2> "$work/err"; then
  ok "a sweep on IDX images"
else
  fail "a sweep on IDX images: $(cat "$work/err")"
fi
python3 - "$work/real/steps.jsonl" <<'PY' || fail "records of the real-data sweep"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
run = records[0]
exps = {e["name"]: e for e in run["config"]["experiments"]}
assert exps["copy_included"]["transfer"] == "included" and exps["copy_included"]["chunk"] == 64, exps
assert exps["copy_excluded"]["input"] == [1, 28, 28] and exps["copy_excluded"]["classes"] == 10
assert exps["copy_excluded"]["batch"] == [1, 4, 16, 64, 256, 300], exps["copy_excluded"]["batch"]
steps = [r for r in records if r["type"] == "step"]
assert steps and all(r["transfer"] == exps[r["experiment"]]["transfer"] for r in steps)
points = [r for r in records if r["type"] == "point"]
assert sorted({(p["experiment"], p["batch_size"]) for p in points}) == sorted(
    (n, b) for n in exps for b in exps[n]["batch"]), points
assert records[-1]["type"] == "end"
PY
expect 0 "analyze compares the copy timed and not" "copy_included|transfer included" analyze "$work/real" --out "$work/real/analysis" --no-plots

# Batch sizes up to the largest that fits under a CPU memory limit; kept when the sweep resumes.
expect 0 "sweep 1:max under --memory-limit" "the largest batch size that fits is [0-9]+" \
  sweep --model mnist_cnn --batch 1:max:x2 --device cpu --steps 2 --warmup 0 --memory-limit 48MiB --out "$work/tomax" --quiet
python3 - "$work/tomax/steps.jsonl" "$work/tomax/maxbatch/mnist_cnn_train_fp32.jsonl" <<'PY' || fail "the run record of the 1:max sweep"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
e = records[0]["config"]["experiments"][0]
assert e["batch_to_max"] == {"from": 1, "step": 1, "factor": 2.0}, e["batch_to_max"]
b = e["batch"]
# The search is kept beside the log: its opening, its tries and its answer, the sweep's last size.
search = [json.loads(l) for l in open(sys.argv[2])]
assert [r["type"] for r in search[:2]] == ["maxbatch_search", "maxbatch_try"], search[:2]
assert search[-1]["type"] == "maxbatch" and b[-1] == search[-1]["result"]["max_batch"], (search[-1], b)
assert b[0] == 1 and len(b) >= 3 and all(b[i] * 2 == b[i + 1] for i in range(len(b) - 2)), b
points = [r for r in records if r["type"] == "point"]
assert [p["batch_size"] for p in points] == b, (points, b)
assert all(p["peak_memory_bytes"] and p["peak_memory_bytes"] <= 48 * 2**20 for p in points), points
PY
expect 2 "a complete 1:max sweep is not searched again" "already holds a complete sweep" \
  sweep --model mnist_cnn --batch 1:max:x2 --device cpu --steps 2 --warmup 0 --memory-limit 48MiB --out "$work/tomax" --quiet
expect 2 "a sweep under one limit is not resumed under another" \
  "steps.jsonl:1: .*memory limits cpu 48.0 MiB \(--memory-limit\), and this command gives cpu 64.0 MiB" \
  sweep --model mnist_cnn --batch 1:max:x2 --device cpu --steps 2 --warmup 0 --memory-limit 64MiB --out "$work/tomax" --quiet
! grep -Eq "batch sizes up to|the largest batch size that fits" "$work/out" "$work/err" &&
  ok "... refused before its batch sizes are taken from the log or searched" ||
  fail "the refused sweep took or searched its batch sizes first: $(grep -h "batch size" "$work/err" | head -2)"

# maxbatch: an answer, nothing fits (exit 3), and bad input (exit 2).
expect 0 "maxbatch under a limit" "largest batch size that runs a full train step of mnist_cnn .* [0-9]+ \(confirmed" \
  maxbatch --model mnist_cnn --device cpu --memory-limit 48MiB --quiet
# The loss scaler and the multi-tensor optimizer step are part of the step searched, and said so; the
# record written with -o holds them as a sweep's would.
expect 0 "maxbatch of a loss-scaled step with the foreach optimizer" \
  "a full train step of mnist_cnn \(1x28x28, fp32, loss scaled, foreach optimizer\) on cpu .* [0-9]+ \(confirmed" \
  maxbatch --model mnist_cnn --device cpu --memory-limit 48MiB --loss-scale dynamic --foreach on --max-tries 4 \
  --out "$work/maxbatch.jsonl" --quiet
python3 - "$work/maxbatch.jsonl" <<'PY' || fail "the maxbatch record of a loss-scaled foreach step"
import json, sys
result = [json.loads(l) for l in open(sys.argv[1])][-1]
assert result["type"] == "maxbatch", result["type"]
e = result["config"]
assert e["loss_scale"] == "dynamic" and e["optimizer"]["foreach"] is True, e
PY
expect 2 "maxbatch --restart without --out" "--restart applies to a search kept with --out" maxbatch --model mnist_cnn --device cpu --restart
expect 3 "maxbatch when nothing fits" "no batch size|not even batch size 1" maxbatch --model mnist_cnn --device cpu --memory-limit 1MiB --quiet
expect 2 "maxbatch of an unknown model" "--model vgg17 is not a known model; did you mean vgg16" maxbatch --model vgg17 --device cpu
expect 2 "maxbatch with a bad size" "memory-limit" maxbatch --model mnist_cnn --device cpu --memory-limit lots
expect 2 "train on a mistyped dataset" "mnsit: is not a dataset .*; did you mean mnist\? scripts/get_datasets.sh mnist fetches it" \
  train --data mnsit --device cpu --out "$work/mnsit"

# Training to an accuracy, its checkpoint evaluated, and two runs compared.
expect 0 "train on the generated digits" "^ +2 +[0-9.]+ +[0-9.]+%" \
  train --data "$work/digits" --epochs 2 --batch 32 --device cpu --threads 1 --out "$work/train"
# Each epoch is said once: a row of the table on stdout, and no log line on stderr that repeats it.
[ "$(grep -cE '^ +[12] +[0-9.]+ ' "$work/out")" = 2 ] && [ "$(grep -c 'epoch' "$work/out")" = 1 ] \
  && ! grep -q "epoch [12]/2" "$work/err" && ok "train says each epoch once" \
  || fail "train's epochs: stdout: $(cat "$work/out"), stderr: $(cat "$work/err")"
python3 - "$work/train/train.jsonl" <<'PY' || fail "train.jsonl"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
epochs = [r for r in records if r["type"] == "epoch"]
assert [r["epoch"] for r in epochs] == [1, 2], epochs
assert epochs[-1]["test_accuracy"] >= 0.7, epochs[-1]  # chance is 0.1
assert records[-1]["type"] == "end"
PY
accuracy="$(python3 -c "import json,sys; print([json.loads(l) for l in open(sys.argv[1])][-2]['test_correct'])" "$work/train/train.jsonl")"
expect 0 "eval of the checkpoint gives the last epoch's accuracy" "\(${accuracy}/100\)|\"correct\": ?${accuracy}" \
  eval --checkpoint "$work/train" --data "$work/digits" --device cpu --threads 1
expect 0 "train --compare cpu,cpu" "agree to ≥ 15 significant digits" \
  train --data "$work/digits" --epochs 1 --batch 32 --threads 1 --compare cpu,cpu --out "$work/compare" --quiet \
  --lr 0.01 --lr-batch 16 --lr-scaling linear
python3 -c "import json,sys; lr=json.loads(open(sys.argv[1]).readline())['config']['optimizer']['lr']; sys.exit(lr != 0.02)" \
  "$work/compare/cpu/train.jsonl" && ok "train --compare trains the batch size's scaled rate" \
  || fail "train --compare did not scale --lr from --lr-batch: $(head -c 600 "$work/compare/cpu/train.jsonl")"
# AdamW trains with PyTorch's decay, and its record says so.
expect 0 "train with adamw" "^ +1 +[0-9.]+ +[0-9.]+%" \
  train --data "$work/digits" --epochs 1 --batch 32 --device cpu --threads 1 --optimizer adamw --lr 0.001 \
  --out "$work/train_adamw"
python3 - "$work/train_adamw/train.jsonl" <<'PY' || fail "the adamw run's record"
import json, sys
optimizer = json.loads(open(sys.argv[1]).readline())["config"]["optimizer"]
assert optimizer["type"] == "adamw" and optimizer["weight_decay"] == 0.01 and "betas" in optimizer, optimizer
PY
# Mixed precision: bf16 under autocast with a loss scaler of its own first scale, on the epoch's row and in
# the record; fp16 needs a GPU; a scaler setting where no loss is scaled is refused.
# A warm-up from --lr at --lr-batch to the scaled rate, then a step down after epoch 1: the record holds
# the schedule and each epoch's last rate (2 steps an epoch: the first epoch's last is half-way up).
expect 0 "train warmed up and stepped down" "^ +2 +[0-9.]+ +[0-9.]+%" \
  train --data "$work/digits" --epochs 2 --batch 64 --limit-train 128 --limit-test 32 --device cpu --threads 1 \
  --lr 0.01 --lr-batch 32 --lr-scaling linear --lr-warmup 1 --lr-decay step:1 --momentum 0.8 --weight-decay 5e-4 \
  --out "$work/train_scheduled"
python3 - "$work/train_scheduled/train.jsonl" <<'PY' || fail "the scheduled run's record"
import json, math, sys
records = [json.loads(l) for l in open(sys.argv[1])]
config = records[0]["config"]
optimizer = config["optimizer"]
assert optimizer["lr"] == 0.02 and optimizer["momentum"] == 0.8 and optimizer["weight_decay"] == 5e-4, optimizer
schedule = config["lr_schedule"]
assert schedule["warmup_epochs"] == 1 and schedule["warmup_from"] == 0.01, schedule
assert schedule["decay"] == "step" and schedule["milestones"] == [1] and schedule["gamma"] == 0.1, schedule
rates = [r["lr"] for r in records if r["type"] == "epoch"]
assert math.isclose(rates[0], 0.015) and math.isclose(rates[1], 0.002), rates
PY
expect 2 "a warm-up with no rate scaled" \
  "--lr-warmup rises from the rate at --lr-batch to a batch size's scaled rate, and --lr-scaling none scales no rate; give --lr-scaling linear or sqrt" \
  train --data "$work/digits" --epochs 1 --lr-warmup 1 --device cpu --out "$work/v"
expect 2 "a warm-up of one run without --lr-batch" "--lr-warmup rises from the rate --lr gives at --lr-batch, and no --lr-batch is given" \
  train --data "$work/digits" --epochs 1 --lr-warmup 1 --lr-scaling linear --device cpu --out "$work/v"
expect 2 "a momentum for adam" "--momentum applies to --optimizer momentum, not adam; remove --momentum, or give --optimizer momentum" \
  train --data "$work/digits" --epochs 1 --optimizer adam --momentum 0.5 --device cpu --out "$work/v"
expect 2 "an unknown decay" "--lr-decay step:5,2 is not known; use none, cosine or step:E1,E2,... with ascending epochs" \
  train --data "$work/digits" --epochs 1 --lr-decay step:5,2 --device cpu --out "$work/v"
# The gradient noise scale after each epoch: on the epoch's row and in its record; a batch study's table
# has it as a column; a --noise-group without --noise-scale, or one batch of the split, is refused.
expect 0 "train --noise-scale" "^ +1 +[0-9.]+ +[0-9.]+%.*B_noise ([0-9.e+]+|unresolved)" \
  train --data "$work/digits" --epochs 1 --batch 16 --device cpu --threads 1 --noise-scale 6 --noise-group 4 \
  --out "$work/train_noise"
python3 - "$work/train_noise/train.jsonl" <<'PY' || fail "the noise-scale run's record"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
config = records[0]["config"]["noise_scale"]
assert config["groups"] == 6 and config["group"] == 4 and config["small_batch"] == 16 and config["big_batch"] == 64, config
n = records[1]["noise_scale"]
assert n["groups"] == 6 and n["small_batch"] == 16 and n["big_batch"] == 64 and n["trace"] > 0, n
assert n["b_simple"] is None or abs(n["b_simple"] - n["trace"] / n["gradient_sq"]) < 1e-6 * abs(n["b_simple"]), n
PY
expect 0 "a batch study with the noise scale" "\| batch \| lr \| epochs \| steps \| seconds \| samples/s \| best test accuracy \| peak memory \| B_noise \|" \
  train --data "$work/digits" --epochs 1 --batch 16,32 --device cpu --threads 1 --noise-scale 2 --noise-group 2 \
  --out "$work/study_noise" --quiet
python3 -c "import json,sys; rows=json.load(open(sys.argv[1]))['rows']; sys.exit(not all(r['noise_scale']['small_batch']==r['batch_size'] for r in rows))" \
  "$work/study_noise/time_to_accuracy.json" && ok "the study's JSON has each size's noise scale" \
  || fail "the study's JSON lacks the noise scale: $(head -c 800 "$work/study_noise/time_to_accuracy.json")"
expect 0 "a noise scale that costs more than its epoch says so" "the noise scale takes 4 batches of 100 after each epoch: 1.3 epochs' worth" \
  train --data "$work/digits" --epochs 1 --batch 100 --device cpu --threads 1 --noise-scale 2 --noise-group 2 \
  --out "$work/train_noise_costly"
expect 2 "a noise group without the noise scale" "--noise-group sizes the batches --noise-scale measures, and no --noise-scale is given; add e.g. --noise-scale 8, or remove --noise-group" \
  train --data "$work/digits" --epochs 1 --noise-group 4 --device cpu --out "$work/v"
expect 2 "a noise scale of one batch of the split" "the 300 training images hold 1 batch of 200; give a --noise-batch of at most 150, or leave out --noise-scale" \
  train --data "$work/digits" --epochs 1 --batch 16 --noise-scale 2 --noise-batch 200 --device cpu --out "$work/v"
# Evaluations within an epoch: the target's step, in the message and the end record.
expect 0 "train --eval-every to a target" "reached 50% test accuracy at step [0-9]+ of epoch 1, after [0-9.]+ s of that epoch's training" \
  train --data "$work/digits" --epochs 2 --batch 16 --device cpu --threads 1 --eval-every 3 --target-accuracy 50% \
  --out "$work/train_within"
python3 - "$work/train_within/train.jsonl" <<'PY' || fail "the eval-every run's records"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
assert records[0]["config"]["eval_every"] == 3, records[0]["config"]
epoch = records[1]
steps = [e["step"] for e in epoch["evaluations"]]
assert steps and steps == list(range(3, 3 * len(steps) + 1, 3)), steps
end = records[-1]
assert end["type"] == "end" and end["target_epoch"] == 1 and end["target_step"] in steps, end
PY
# Gradient accumulation: the log line and the record's chunk; eval takes the run's evaluation batch; a
# batch study marks the sizes that accumulated.
expect 0 "train --chunk" "gradient accumulation: each batch of 32 as 3 micro-batches \(2×11 \+ 10\), then one optimizer step" \
  train --data "$work/digits" --epochs 1 --batch 32 --chunk 12 --eval-batch 30 --device cpu --threads 1 --out "$work/train_chunk"
python3 - "$work/train_chunk/train.jsonl" <<'PY' || fail "the accumulated run's record"
import json, sys
config = json.loads(open(sys.argv[1]).readline())["config"]
assert config["chunk"] == 12 and config["batch_size"] == 32 and config["eval_batch_size"] == 30, config
PY
"$bin" eval --checkpoint "$work/train_chunk" --device cpu --threads 1 --json > "$work/eval_chunk.json" 2>/dev/null \
  && python3 - "$work/train_chunk/train.jsonl" "$work/eval_chunk.json" <<'PY' && ok "eval evaluates in the run's batches, to its numbers" || fail "eval of the accumulated run: $(cat "$work/eval_chunk.json")"
import json, sys
epoch = [json.loads(l) for l in open(sys.argv[1])][1]
evaluation = json.load(open(sys.argv[2]))
assert evaluation["test_loss"] == epoch["test_loss"] and evaluation["test_correct"] == epoch["test_correct"], (evaluation, epoch)
PY
expect 0 "a batch study with --chunk" "\| 32 \(2×11 \+ 10\) \|" \
  train --data "$work/digits" --epochs 1 --batch 8,32 --chunk 12 --device cpu --threads 1 --out "$work/study_chunk" --quiet
grep -q "batches above 12 accumulated in micro-batches of at most 12" "$work/study_chunk/time_to_accuracy.md" \
  && ok "the study's heading says which sizes accumulated" || fail "the study's heading: $(head -3 "$work/study_chunk/time_to_accuracy.md")"
expect 2 "more epochs of a run, with another chunk" "each batch ran in micro-batches of 12 there and runs whole here\); give --chunk 12 to go on with it" \
  train --data "$work/digits" --epochs 2 --batch 32 --eval-batch 30 --device cpu --threads 1 --out "$work/train_chunk"
# --chunk auto: the search's log line and record; a batch that fits trains whole, with no chunk.
expect 0 "train --chunk auto" "--chunk auto: the batch of 32 fits whole \(2 tries, " \
  train --data "$work/digits" --epochs 1 --batch 32 --chunk auto --eval-batch 30 --device cpu --threads 1 --out "$work/train_auto"
python3 - "$work/train_auto/train.jsonl" <<'PY' || fail "the run record of --chunk auto"
import json, sys
run = json.loads(open(sys.argv[1]).readline())
search = run["chunk_search"]
assert "chunk" not in run["config"] and search["chunk"] == 0 and search["largest_fitting"] == 32, run
assert search["tries"] == 2 and search["held_bytes"] == 32 * (28 * 28 * 4 + 8) and search["margin"] == 0.05, search
PY
# A --noise-batch that the split cannot hold twice is refused before --chunk auto's search, not after it.
expect 2 "train --chunk auto with a --noise-batch the split holds once" \
  "compares one batch with two or more together, and the 300 training images hold 1 batch of 200.*give a --noise-batch of at most 150" \
  train --data "$work/digits" --epochs 1 --batch 32 --chunk auto --noise-scale 2 --noise-batch 200 --device cpu --threads 1 \
  --out "$work/train_auto_noise"
! grep -q -- "--chunk auto:" "$work/err" "$work/out" && ok "the refusal came before the search" \
  || fail "--chunk auto searched before the noise scale's refusal: $(grep -h -- '--chunk auto:' "$work/err" "$work/out")"
# --memory-limit: the run holds what fits in 48 MiB (the dataset's images counted), so the batch of 300 does
# not fit whole and --chunk auto finds micro-batches within the limit; the run record says the limit.
expect 0 "train --memory-limit with --chunk auto" "--chunk auto: the largest micro-batch that fits is [0-9]+ .* each batch of 300 as [0-9]+ micro-batches" \
  train --data "$work/digits" --epochs 1 --batch 300 --chunk auto --memory-limit 48MiB --eval-batch 10 --device cpu \
  --threads 1 --out "$work/train_limit"
python3 - "$work/train_limit/train.jsonl" <<'PY' && ok "the run record holds the memory limit" || fail "the run record of train --memory-limit"
import json, sys
run = json.loads(open(sys.argv[1]).readline())
assert run["memory_limit_bytes"] == {"cpu": 48 * 2**20}, run.get("memory_limit_bytes")
assert 0 < run["chunk_search"]["largest_fitting"] < 300 and 0 < run["config"]["chunk"] < 300, run["chunk_search"]
assert run["chunk_search"]["cpu_memory_limit"] <= 48 * 2**20, run["chunk_search"]
PY
# Going on under another limit: the epochs do not depend on it (unlike a sweep's sizes, refused above), so
# the run goes on with its micro-batches, says so, and the resume record holds the new limit.
expect 0 "train going on under another --memory-limit" \
  "ran last under memory limits cpu 48.0 MiB \(--memory-limit\) and goes on under cpu 64.0 MiB: each batch still runs in micro-batches of [0-9]+" \
  train --data "$work/digits" --epochs 2 --batch 300 --chunk auto --memory-limit 64MiB --eval-batch 10 --device cpu \
  --threads 1 --out "$work/train_limit"
python3 - "$work/train_limit/train.jsonl" <<'PY' && ok "... with its chunk, the new limit in the resume record" || fail "train going on under another limit"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
run, resumed = records[0], next(r for r in records if r["type"] == "resume")
assert resumed["memory_limit_bytes"] == {"cpu": 64 * 2**20}, resumed.get("memory_limit_bytes")
assert resumed["config"]["chunk"] == run["config"]["chunk"], (resumed["config"].get("chunk"), run["config"]["chunk"])
assert [r["epoch"] for r in records if r["type"] == "epoch"] == [1, 2], records
PY
# analyze --noise-scale: a training sweep's least time to an accuracy, from a number or the run above.
"$bin" sweep --model mnist_cnn --batch 4,16,64 --device cpu --threads 1 --steps 5 --warmup 1 --out "$work/noise_sweep" \
  --quiet > /dev/null 2>&1 || fail "the training sweep for analyze --noise-scale"
expect 0 "analyze --noise-scale 100" "least time to an accuracy \(B_noise 100\): batch (4|16|64)" \
  analyze "$work/noise_sweep" --noise-scale 100 --no-plots --out "$work/noise_sweep/a"
if python3 -c "import json,sys; r=[json.loads(l) for l in open(sys.argv[1])][1]; sys.exit(r['noise_scale']['b_simple'] is None)" \
    "$work/train_noise/train.jsonl"; then
  expect 0 "analyze --noise-scale of a train run" "least time to an accuracy \(B_noise [0-9.]+\)" \
    analyze "$work/noise_sweep" --noise-scale "$work/train_noise" --no-plots --out "$work/noise_sweep/a"
  grep -q '"from": ".*train_noise/train.jsonl:2 (epoch 1)"' "$work/noise_sweep/a/analysis.json" \
    && ok "analysis.json says where B_noise came from" || fail "analysis.json lacks the noise scale's source"
  expect 0 "analyze --noise-scale RUN:EPOCH" "least time to an accuracy \(B_noise [0-9.]+\)" \
    analyze "$work/noise_sweep" --noise-scale "$work/train_noise:1" --no-plots --out "$work/noise_sweep/a"
  expect 2 "analyze --noise-scale of an epoch the run lacks" "holds no epoch 2 whose noise scale was resolved; give one of its epochs with one: 1" \
    analyze "$work/noise_sweep" --noise-scale "$work/train_noise:2" --no-plots --out "$work/noise_sweep/a"
else
  expect 2 "analyze --noise-scale of a run it did not resolve" "holds no epoch whose noise scale was resolved" \
    analyze "$work/noise_sweep" --noise-scale "$work/train_noise" --no-plots --out "$work/noise_sweep/a"
fi
expect 2 "analyze --noise-scale of neither a number nor a run" "--noise-scale nowhere is neither a number nor a training run's directory or train.jsonl" \
  analyze "$work/noise_sweep" --noise-scale nowhere --no-plots --out "$work/noise_sweep/a"
expect 2 "analyze --noise-scale of a run without it" "holds no epoch whose noise scale was resolved" \
  analyze "$work/noise_sweep" --noise-scale "$work/train_adamw" --no-plots --out "$work/noise_sweep/a"
expect 0 "train in bf16 with a loss scaler" "^ +1 +[0-9.]+ +[0-9.]+%.*loss scale 1024, 0 skipped" \
  train --data "$work/digits" --epochs 1 --batch 32 --limit-train 64 --limit-test 32 --device cpu --threads 1 \
  --precision bf16 --loss-scale dynamic --loss-scale-init 1024 --out "$work/train_bf16"
python3 - "$work/train_bf16/train.jsonl" <<'PY' || fail "the bf16 run's record"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
config = records[0]["config"]
assert config["precision"] == "bf16" and config["loss_scale"] == "dynamic", config
assert config["loss_scaler"]["init_scale"] == 1024, config["loss_scaler"]
assert records[1]["skipped_steps"] == 0 and records[1]["loss_scale"] == 1024, records[1]
PY
expect 2 "train in fp16 on the CPU" "--precision fp16 trains under autocast on a GPU only.*--precision bf16" \
  train --data "$work/digits" --epochs 1 --precision fp16 --device cpu --out "$work/v"
expect 2 "a loss scaler setting in fp32" "--loss-scale-init applies to dynamic loss scaling, which is off for fp32 training" \
  train --data "$work/digits" --epochs 1 --loss-scale-init 512 --device cpu --out "$work/v"
expect 2 "train with an unknown optimizer" "--optimizer adagrad is not known; use sgd, momentum \(0.9\), adam or adamw" \
  train --data "$work/digits" --epochs 1 --optimizer adagrad --device cpu --out "$work/v"

# CIFAR's binary files: colour images of 3x32x32 trained on, evaluated and swept, and get_datasets.sh
# taking CIFAR's archive as its authors publish it.
python3 "$src/tests/data/make_cifar.py" "$work/colours" --train 250 --test 100
expect 0 "train on generated CIFAR-10 files" "^ +2 +[0-9.]+ +[0-9.]+%" \
  train --data "$work/colours" --epochs 2 --batch 25 --device cpu --threads 1 --out "$work/train_cifar"
grep -q "training images augmented (crop:4+flip): a random 32x32 crop of the image padded by 4, then a left-right flip" \
  "$work/err" && ok "CIFAR's training images are cropped and flipped, and train says so" \
  || fail "train on CIFAR-10 did not say its augmentation: $(cat "$work/err")"
python3 - "$work/train_cifar" <<'PY' || fail "the CIFAR-10 run's records"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1] + "/train.jsonl")]
epochs = [r for r in records if r["type"] == "epoch"]
assert [r["epoch"] for r in epochs] == [1, 2] and epochs[-1]["test_samples"] == 100, epochs
assert epochs[-1]["test_accuracy"] >= 0.3, epochs[-1]  # chance is 0.1; its images are cropped and flipped
info = json.load(open(sys.argv[1] + "/checkpoint.json"))
assert info["input"] == [3, 32, 32] and info["classes"] == 10 and info["data"]["name"] == "cifar10", info
augment = records[0]["config"]["augment"]
assert augment["crop_padding"] == 4 and augment["flip"] is True, augment
PY
expect 2 "train with an unknown augmentation" \
  "--augment mirror is not known; use auto, none, flip, crop, crop:N \(N from 1 to 16\) or crop\+flip" \
  train --data "$work/colours" --epochs 1 --augment mirror --device cpu --out "$work/v"
expect 2 "the CIFAR-10 run again without its augmentation" \
  "train_cifar/train.jsonl:1: holds a complete training run of other options \(augment was crop:4\+flip there and is none here\); give --augment crop:4\+flip to go on with it" \
  train --data "$work/colours" --epochs 3 --batch 25 --device cpu --threads 1 --augment none --out "$work/train_cifar"
[ ! -s "$work/out" ] && ok "a refused train prints no epoch table" \
  || fail "a refused train printed: $(cat "$work/out")"
accuracy="$(python3 -c "import json,sys; print([json.loads(l) for l in open(sys.argv[1])][-2]['test_correct'])" "$work/train_cifar/train.jsonl")"
expect 0 "eval of the CIFAR-10 checkpoint gives its last epoch's accuracy" "\(${accuracy}/100\)|\"correct\": ?${accuracy}" \
  eval --checkpoint "$work/train_cifar" --device cpu --threads 1
expect 2 "eval of a CIFAR-10 model on MNIST's images" \
  "checkpoint.json: describes a model of CIFAR-10's 3x32x32 images of 10 classes, and .*digits holds MNIST's 1x28x28" \
  eval --checkpoint "$work/train_cifar" --data "$work/digits" --device cpu
cat > "$work/cifar.yaml" <<YAML
device: cpu
defaults: {model: mnist_cnn, data: $work/colours, warmup: 1, steps: 2}
experiments:
  - {name: colours_train, batch: "1:16:x4"}
  - {name: colours_infer, batch: "1:16:x4", phase: infer, transfer: included}
YAML
expect 0 "a sweep on CIFAR-10 images" "colours_infer" sweep "$work/cifar.yaml" --out "$work/cifar_sweep"
python3 - "$work/cifar_sweep/steps.jsonl" <<'PY' || fail "records of the CIFAR-10 sweep"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
for e in records[0]["config"]["experiments"]:
    assert e["input"] == [3, 32, 32] and e["classes"] == 10, e
points = [r for r in records if r["type"] == "point"]
assert sorted((p["experiment"], p["batch_size"]) for p in points) == sorted(
    (n, b) for n in ("colours_train", "colours_infer") for b in (1, 4, 16)), points
PY
python3 "$src/tests/data/make_cifar.py" "$work/hundred" --train 40 --test 10 --hundred
expect 0 "a sweep on CIFAR-100 images" "batch +median ms" \
  sweep --model mnist_cnn --data "$work/hundred" --batch 1:4:x2 --steps 1 --warmup 0 --device cpu --out "$work/hundred_sweep" --quiet
python3 -c "import json,sys; e=json.loads(open(sys.argv[1]).readline())['config']['experiments'][0]; assert e['classes'] == 100 and e['input'] == [3, 32, 32], e" \
  "$work/hundred_sweep/steps.jsonl" && ok "CIFAR-100 sets 100 classes" || fail "CIFAR-100's classes in the run record"
expect 2 "a CIFAR-10 directory that lacks a file" "lacks data_batch_2.bin, data_batch_3.bin, data_batch_4.bin and data_batch_5.bin of the CIFAR-10 files.*get_datasets.sh cifar10" \
  sweep --model mnist_cnn --data "$(mkdir -p "$work/part" && cp "$work/colours/data_batch_1.bin" "$work/colours/test_batch.bin" "$work/part/" && echo "$work/part")" \
  --batch 1 --device cpu --out "$work/x"
# The archive as published: cifar-10-batches-bin/ with files of exactly 10,000 records (zeros compress well).
mkdir -p "$work/archive/cifar-10-batches-bin"
for f in data_batch_1 data_batch_2 data_batch_3 data_batch_4 data_batch_5 test_batch; do
  truncate -s 30730000 "$work/archive/cifar-10-batches-bin/$f.bin"
done
tar -czf "$work/cifar-10-binary.tar.gz" -C "$work/archive" cifar-10-batches-bin && rm -rf "$work/archive"
if "$src/scripts/get_datasets.sh" cifar10 --archive "$work/cifar-10-binary.tar.gz" --dir "$work/fetched" > "$work/out" 2>&1 &&
   [ "$(stat -c %s "$work/fetched/cifar10/data_batch_5.bin")" = 30730000 ] &&
   "$src/scripts/get_datasets.sh" cifar10 --dir "$work/fetched" > "$work/again" 2>&1 && grep -q "cifar10 is complete" "$work/again"; then
  ok "get_datasets.sh cifar10 --archive fills data/cifar10 and keeps it"
else
  fail "get_datasets.sh cifar10 --archive: $(cat "$work/out")"
fi
head -c 100000 "$work/cifar-10-binary.tar.gz" > "$work/cut.tar.gz"
rm -f "$work/fetched/cifar10/test_batch.bin"
if "$src/scripts/get_datasets.sh" cifar10 --archive "$work/cut.tar.gz" --dir "$work/fetched" > "$work/out" 2>&1; then
  fail "get_datasets.sh took a cut archive"
else
  grep -q "could not fetch cifar10" "$work/out" && ok "get_datasets.sh refuses a cut archive" || fail "get_datasets.sh on a cut archive: $(cat "$work/out")"
fi

# Bad data: one sentence and exit 2.
BATCHSCOPE_DATA="$work/none" expect 2 "missing dataset" "get_datasets.sh" sweep --model mnist_cnn --data mnist --batch 1:2 --device cpu --out "$work/x"
head -c 1000 "$work/digits/t10k-images-idx3-ubyte.gz" > "$work/cut.gz"
mkdir -p "$work/cut" && cp "$work/digits/"*labels* "$work/digits/train-images-idx3-ubyte.gz" "$work/cut/" && cp "$work/cut.gz" "$work/cut/t10k-images-idx3-ubyte.gz"
expect 2 "truncated IDX file" "t10k-images-idx3-ubyte.gz" train --data "$work/cut" --epochs 1 --device cpu --out "$work/y"
expect 2 "batch larger than the dataset" "batch size 500 is larger than the 300 training images" \
  sweep --model mnist_cnn --data "$work/digits" --batch 500 --device cpu --out "$work/z"
expect 2 "vgg16 cannot take MNIST images" "at least 32x32" train --model vgg16 --data "$work/digits" --device cpu --out "$work/w"

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all data and limit checks passed"
