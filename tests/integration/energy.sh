#!/usr/bin/env bash
# Energy end to end on the CPU: a powercap tree whose package counter a writer advances at a known
# power (wrapping around on the way), read by a real sweep through BATCHSCOPE_POWERCAP; the idle
# baseline, the per-point energy, analyze's energy section, and the sequence models from the CLI.
set -uo pipefail
bin="$1"
work="$(mktemp -d)"
writer=""
trap '[ -n "$writer" ] && kill "$writer" 2>/dev/null; rm -rf "$work"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"

zone="$work/powercap/intel-rapl:0"
mkdir -p "$zone" "$work/powercap/intel-rapl:0:0"
echo package-0 > "$zone/name"
echo core > "$work/powercap/intel-rapl:0:0/name"
echo 000000000000000 > "$zone/energy_uj"
echo 000000000000000 > "$work/powercap/intel-rapl:0:0/energy_uj"
# A 50 J range: at 40 W the counter wraps every 1.25 s, as real ones do after minutes.
echo 49999999 > "$zone/max_energy_range_uj"
python3 - "$zone/energy_uj" <<'PY' &
import os, sys, time
# 40 W, written in place with a fixed width so a reader never sees a half-written number.
fd = os.open(sys.argv[1], os.O_WRONLY)
start = time.monotonic()
while True:
    microjoules = int(40e6 * (time.monotonic() - start)) % 50000000
    os.pwrite(fd, b"%015d\n" % microjoules, 0)
    time.sleep(0.0002)
PY
writer=$!
sleep 0.5

export BATCHSCOPE_POWERCAP="$work/powercap"
expect 0 "env finds the package counter" "energy cpu: rapl" env
expect 0 "a sweep with energy" "written" \
  sweep --model mnist_cnn --batch 1,16 --steps 5 --warmup 1 --device cpu --idle-seconds 0.3 --quiet --out "$work/e"
python3 - "$work/e/steps.jsonl" <<'PY' || fail "energy records of the sweep"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
cpu = records[0]["power"]["cpu"]
assert cpu["available"] and cpu["method"] == "rapl", cpu
assert cpu["min_window_ms"] >= 10, cpu
idle = cpu["idle"]["power_w"]
assert abs(idle - 40) < 6, idle
points = [r for r in records if r["type"] == "point"]
assert [p["batch_size"] for p in points] == [1, 16]
for p in points:
    assert abs(p["avg_power_w"] - 40) < 6, p
    assert p["energy_window_ms"] >= cpu["min_window_ms"], p
    assert p["energy_steps"] >= 5, p
    assert abs(p["j_per_step"] * p["energy_steps"] - p["energy_j"]) < 1e-9 * max(1, p["energy_j"]), p
    assert abs(p["j_per_sample"] * p["batch_size"] - p["j_per_step"]) < 1e-12 + 1e-9 * p["j_per_step"], p
    assert abs(p["idle_power_w"] - idle) < 1e-9, p
print("idle %.1f W, points %s W" % (idle, [round(p["avg_power_w"], 1) for p in points]))
PY
grep -q "j_per_sample" <<< "$(head -1 "$work/e/steps.csv")" || fail "steps.csv has no energy columns"
expect 0 "analyze shows the energy" "written: .*report.md" analyze "$work/e" --out "$work/e_analysis"
grep -qi "^#.*energy" "$work/e_analysis/report.md" || fail "report.md has no energy section"
python3 - "$work/e_analysis/analysis.json" <<'PY' || fail "analysis.json has no most energy-efficient batch size"
import json, sys
group = json.load(open(sys.argv[1]))["groups"][0]
best = group["best"]["most_efficient"]
assert best["batch_size"] in (1, 16) and best["samples_per_j"] > 0, best
PY

# train: each epoch's training energy at the writer's 40 W, in the row and the records.
python3 "$(dirname "${BASH_SOURCE[0]}")/../data/make_idx.py" "$work/digits" --train 256 --test 32 > /dev/null \
  || fail "the digits for train"
expect 0 "train measures each epoch's energy" "^ +2 +[0-9.]+ .* [0-9.]+ J" \
  train --data "$work/digits" --epochs 2 --batch 16 --device cpu --threads 1 --out "$work/train"
python3 - "$work/train/train.jsonl" <<'PY' || fail "the energy records of train"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
assert records[0]["power"]["method"] == "rapl" and "power" not in records[0]["config"], records[0]
epochs = [r for r in records if r["type"] == "epoch"]
for e in epochs:
    assert abs(e["energy_j"] / e["epoch_seconds"] - 40) < 6, e
print("train: %s W" % [round(e["energy_j"] / e["epoch_seconds"], 1) for e in epochs])
PY
expect 0 "a sweep without energy" "written" \
  sweep --model mnist_cnn --batch 2 --steps 2 --warmup 1 --device cpu --no-energy --quiet --out "$work/off"
grep -q energy_j <<< "$(grep '"type":"point"' "$work/off/steps.jsonl")" && fail "--no-energy still measured energy"
grep -q 'turned off (--no-energy)' "$work/off/steps.jsonl" || fail "the run record does not say why energy is missing"

unset BATCHSCOPE_POWERCAP
export BATCHSCOPE_POWERCAP="$work/nowhere"
expect 0 "env says why there is no CPU energy" "energy cpu: unavailable: .*nowhere" env
expect 2 "a negative idle baseline is refused" "idle-seconds" sweep --model mnist_cnn --batch 2 --idle-seconds -1 --device cpu --out "$work/bad"
[ -e "$work/bad" ] && fail "a refused sweep left $work/bad behind"

expect 0 "the sequence models are listed with their references" "lstm_lm .* same" models
expect 0 "lstm_lm from the command line" "written" \
  sweep --model lstm_lm --seq-len 5 --classes 50 --batch 1,2 --steps 2 --warmup 1 --device cpu --quiet --out "$work/lm"
grep -q '"input":\[5\]' "$work/lm/steps.jsonl" || fail "the run record does not hold the sequence length"
expect 2 "seq-len on an image model" "vgg16 takes no sequences" sweep --model vgg16 --seq-len 35 --batch 2 --device cpu --out "$work/bad"
expect 2 "a language model on images" "lstm_lm takes" sweep --model lstm_lm --data mnist --batch 2 --device cpu --out "$work/bad"

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all energy checks passed"
