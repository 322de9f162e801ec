#!/usr/bin/env bash
# The real binary on the CPU with tiny shapes: every record of a YAML sweep and a command-line sweep
# is checked, out-of-memory handling is exercised with a batch far beyond this machine's memory, and a
# complete run is not overwritten.
set -euo pipefail
bin="$1"; src="$2"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
check() { python3 "$src/tests/integration/check_run.py" "$@"; }

cat > "$work/tiny.yaml" <<YAML
device: cpu
defaults: {warmup: 1, steps: 2}
experiments:
  - {name: vgg16_tiny, model: vgg16, input: [3, 32, 32], classes: 10, batch: "1:4"}
  - {name: mnist_infer, model: mnist_cnn, phase: infer, batch: [1, 2, 3, 4], optimizer: adam}
YAML
"$bin" sweep "$work/tiny.yaml" --out "$work/yaml" --quiet > "$work/yaml.txt"
check "$work/yaml" 2 1,2,3,4 2
grep -q "median ms" "$work/yaml.txt"
# Without --memory-limit too, a CPU sweep counts LibTorch's CPU tensors: every point has its peak, and
# VGG16's grows with the batch.
python3 - "$work/yaml/steps.jsonl" <<'PY'
import json, sys
points = {(r["experiment"], r["batch_size"]): r for r in map(json.loads, open(sys.argv[1])) if r["type"] == "point"}
assert all((p["peak_memory_bytes"] or 0) > 0 for p in points.values()), points
assert points[("vgg16_tiny", 4)]["peak_memory_bytes"] > points[("vgg16_tiny", 1)]["peak_memory_bytes"], points
PY
grep -q "vgg16_tiny" "$work/yaml.txt"

# A complete run is kept unless --force is given.
before="$(md5sum < "$work/yaml/steps.jsonl")"
if "$bin" sweep "$work/tiny.yaml" --out "$work/yaml" --quiet 2> "$work/again.err"; then
  echo "a complete run was run again"; exit 1
fi
grep -q -- "--force" "$work/again.err"
[ "$before" = "$(md5sum < "$work/yaml/steps.jsonl")" ]
"$bin" sweep "$work/tiny.yaml" --out "$work/yaml" --quiet --force > /dev/null
check "$work/yaml" 2 1,2,3,4 2
# The sweep it replaced was kept aside while it ran, and removed once it completed.
[ ! -e "$work/yaml/.replaced" ] || { echo "the replaced sweep was left in .replaced"; exit 1; }

# Command-line only; 16,000 MNIST images do not fit in 128 MiB: oom, then the larger size is skipped.
"$bin" sweep --model mnist_cnn --batch 1,2,16000,20000 --device cpu --steps 3 --warmup 1 --memory-limit 128MiB \
  --out "$work/cli" --quiet > /dev/null 2>&1
check "$work/cli" 1 1,2,16000,20000 3 --oom-at 16000

# chunk: auto: under the same kind of limit a batch of 300 does not fit whole, and runs in the largest even
# micro-batches that do; the log says how it was found, the point and steps.csv record it, analyze lists it.
"$bin" sweep --model mnist_cnn --batch 8,300 --device cpu --steps 3 --warmup 1 --memory-limit 48MiB --chunk auto \
  --out "$work/chunk_auto" > "$work/chunk_auto.out" 2>&1 || { echo "chunk auto: $(tail -3 "$work/chunk_auto.out")"; exit 1; }
grep -q "batch size 300 does not fit whole on cpu" "$work/chunk_auto.out"
grep -Eq "batch size 300 in micro-batches of [0-9]+: out of memory \(1 step" "$work/chunk_auto.out"
grep -Eq "batch size 300 runs as [0-9]+ micro-batches of at most [0-9]+ \(the largest that fits is [0-9]+; [0-9]+ tries" "$work/chunk_auto.out"
grep -Eq "^ +300 .*\(did not fit whole: [0-9]+ micro-batches of at most [0-9]+\)$" "$work/chunk_auto.out"
"$bin" analyze "$work/chunk_auto" --out "$work/chunk_auto/analysis" --no-plots > /dev/null 2>&1
python3 - "$work/chunk_auto" <<'PY'
import csv, json, os, sys
records = [json.loads(l) for l in open(os.path.join(sys.argv[1], "steps.jsonl"))]
assert records[0]["config"]["experiments"][0]["chunk"] == "auto", records[0]["config"]["experiments"][0]
points = {r["batch_size"]: r for r in records if r["type"] == "point"}
assert sorted(points) == [8, 300] and "chunk" not in points[8], points
p = points[300]
fits = p["chunk_largest_fitting"]
passes = -(-300 // fits)
even = -(-300 // passes)  # as few micro-batches as fit, evenly; from 64 on rounded up to eights where that fits
assert 8 <= fits < 300 and p["chunk"] in (even, -(-even // 8) * 8) and p["chunk"] <= fits, p
assert p["chunk_tries"] >= 3 and p["chunk_search_s"] > 0, p
assert records[-1]["time_spent_s"]["chunk_search"] >= p["chunk_search_s"], records[-1]
rows = {int(r["batch_size"]): r for r in csv.DictReader(open(os.path.join(sys.argv[1], "steps.csv"))) if r["type"] == "point"}
assert rows[300]["chunk"] == str(p["chunk"]) and rows[8]["chunk"] == "", rows
best = json.load(open(os.path.join(sys.argv[1], "analysis", "analysis.json")))["groups"][0]["best"]
assert best["accumulated"] == [300] and best["largest_whole"] == 8, best
# The run record has the limit each device ran under, and the report's settings say it.
assert records[0]["memory_limit_bytes"] == {"cpu": 48 * 2**20}, records[0].get("memory_limit_bytes")
report = open(os.path.join(sys.argv[1], "analysis", "report.md")).read()
assert "memory limited to 48.0 MiB (--memory-limit)" in report, report
PY

# steps: auto from the command line: each point says why its steps stopped and carries the median's
# interval; the CSV has the same columns.
"$bin" sweep --model mnist_cnn --batch 1,4 --device cpu --warmup 1 --steps auto --ci-width 50% --max-time 2 \
  --out "$work/auto" --quiet > /dev/null
python3 - "$work/auto" <<'PY'
import csv, json, os, sys
records = [json.loads(l) for l in open(os.path.join(sys.argv[1], "steps.jsonl"))]
assert records[0]["config"]["experiments"][0]["steps"] == "auto", records[0]["config"]["experiments"][0]
points = [r for r in records if r["type"] == "point"]
assert [p["batch_size"] for p in points] == [1, 4], points
for p in points:
    steps = [r["time_ms"] for r in records if r["type"] == "step" and r["batch_size"] == p["batch_size"]]
    assert p["steps_stopped_by"] in ("ci_width", "max_time"), p
    assert p["samples"] == len(steps) >= 10 or p["steps_stopped_by"] == "max_time", p
    assert p["median_ci_low_ms"] <= p["median_ms"] <= p["median_ci_high_ms"], p
rows = [r for r in csv.DictReader(open(os.path.join(sys.argv[1], "steps.csv"))) if r["type"] == "point"]
assert [r["steps_stopped_by"] for r in rows] == [p["steps_stopped_by"] for p in points], rows
PY

# Shuffled order: every size once, not in ascending order.
"$bin" sweep --model mnist_cnn --batch 1:6 --device cpu --steps 2 --warmup 0 --order shuffled --seed 3 \
  --out "$work/shuffled" --quiet > /dev/null
check "$work/shuffled" 1 1,2,3,4,5,6 2
python3 -c 'import json,sys; b=[json.loads(l)["batch_size"] for l in open(sys.argv[1]) if "\"point\"" in l]; assert sorted(b)==[1,2,3,4,5,6] and b!=sorted(b), b' "$work/shuffled/steps.jsonl"

"$bin" models --json | python3 -c 'import json,sys; m={x["name"]:x for x in json.load(sys.stdin)}; assert m["vgg16"]["parameters"]==138357544, m["vgg16"]; assert m["mnist_cnn"]["gflops_per_sample"]>0'
"$bin" env --json | python3 -c 'import json,sys; e=json.load(sys.stdin); assert e["libtorch_version"] and "cpu" in e'

# Threads: one per usable physical core by default, whatever LibTorch would pick; OMP_NUM_THREADS where
# set; --threads over both. The run record says which, with the counts in effect.
cores="$(getconf _NPROCESSORS_ONLN)"  # nproc would follow OMP_NUM_THREADS
env -u OMP_NUM_THREADS -u MKL_NUM_THREADS "$bin" env --json | python3 -c '
import json, sys
c = json.load(sys.stdin)["cpu"]
assert c["threads_from"] == "physical cores", c
assert c["torch_threads"] == c["usable_physical_cores"] and 1 <= c["torch_threads"] <= int(sys.argv[1]), c' "$cores"
OMP_NUM_THREADS=1 "$bin" env --json | python3 -c '
import json, sys
c = json.load(sys.stdin)["cpu"]
assert c["threads_from"] == "OMP_NUM_THREADS" and c["torch_threads"] == 1, c
assert c["threading_environment"]["OMP_NUM_THREADS"] == "1", c'
# glibc's malloc thresholds: fixed by batchscope, unless the environment decides or asks for glibc's own.
malloc_of() { python3 -c 'import json,sys; m=json.load(sys.stdin)["cpu"]["malloc"]; print(m["thresholds"], m.get("decided_by", ""), m.get("mmap_threshold_bytes", ""))'; }
# (AddressSanitizer's allocator, in the checking build, refuses mallopt: the record says so instead.)
if [ -n "${ASAN_OPTIONS:-}" ]; then
  default_malloc="glibc dynamic mallopt "; default_line="glibc's own moving thresholds (mallopt)"
else
  default_malloc="fixed  33554432"; default_line="fixed by batchscope (mmap 32 MiB"
fi
got="$(env -u MALLOC_MMAP_THRESHOLD_ -u MALLOC_TRIM_THRESHOLD_ -u BATCHSCOPE_MALLOC "$bin" env --json | malloc_of)"
[ "$got" = "$default_malloc" ] || { echo "sweep_records: malloc by default: $got"; exit 1; }
got="$(MALLOC_TRIM_THRESHOLD_=4294967296 "$bin" env --json | malloc_of)"
[ "$got" = "environment MALLOC_TRIM_THRESHOLD_ " ] || { echo "sweep_records: malloc with MALLOC_TRIM_THRESHOLD_: $got"; exit 1; }
got="$(BATCHSCOPE_MALLOC=dynamic "$bin" env --json | malloc_of)"
[ "$got" = "glibc dynamic BATCHSCOPE_MALLOC " ] || { echo "sweep_records: malloc with BATCHSCOPE_MALLOC=dynamic: $got"; exit 1; }
grep -qF "$default_line" <<< "$(env -u MALLOC_MMAP_THRESHOLD_ -u MALLOC_TRIM_THRESHOLD_ -u BATCHSCOPE_MALLOC "$bin" env)" \
  || { echo "sweep_records: env prints no malloc line: $("$bin" env | grep malloc)"; exit 1; }
if BATCHSCOPE_MALLOC=lots "$bin" env > /dev/null 2> "$work/malloc.err"; then echo "sweep_records: BATCHSCOPE_MALLOC=lots accepted"; exit 1; fi
grep -q "environment: BATCHSCOPE_MALLOC='lots' is not fixed or dynamic" "$work/malloc.err" \
  || { echo "sweep_records: BATCHSCOPE_MALLOC=lots: $(cat "$work/malloc.err")"; exit 1; }
"$bin" sweep --model mnist_cnn --batch 2 --device cpu --steps 2 --warmup 0 --threads 1 --out "$work/threads" --quiet \
  > /dev/null 2> "$work/threads.err"
grep -q "2 timed step(s) per batch size, fewer than the 5 analyze needs" "$work/threads.err" \
  || { echo "sweep_records: no warning of too few steps: $(cat "$work/threads.err")"; exit 1; }
grep -q "no warm-up step, so each batch size's first timed step pays for" "$work/threads.err" \
  || { echo "sweep_records: no warning of no warm-up: $(cat "$work/threads.err")"; exit 1; }
python3 -c '
import json, sys
run = json.loads(open(sys.argv[1]).readline())
assert run["cpu"]["threads_from"] == "--threads" and run["cpu"]["torch_threads"] == 1, run["cpu"]
assert run["cpu"]["malloc"]["thresholds"] in ("fixed", "environment", "glibc dynamic"), run["cpu"]
end = [json.loads(l) for l in open(sys.argv[1])][-1]
spent = end["time_spent_s"]
assert spent["timed_steps"] > 0 and abs(sum(v for k, v in spent.items() if k != "total") - spent["total"]) < 1e-6, spent' \
  "$work/threads/steps.jsonl"
# analyze carries the end record's time spent into analysis.json and the report.
"$bin" analyze "$work/threads" --out "$work/threads/analysis" --no-plots > /dev/null
python3 -c '
import json, sys
log = json.load(open(sys.argv[1]))["logs"][0]
end = [json.loads(l) for l in open(sys.argv[2])][-1]
assert log["time_spent_s"] == end["time_spent_s"], (log, end)
spent = end["time_spent_s"]
share = (spent["timed_steps"] + spent["warm_up"]) / spent["total"]
assert abs(log["stepping_share"] - share) < 1e-9, (log["stepping_share"], share)' \
  "$work/threads/analysis/analysis.json" "$work/threads/steps.jsonl"
grep -q "Time spent by the session that completed .*timed steps.*warm-up and timed steps)" "$work/threads/analysis/report.md" \
  || { echo "sweep_records: the report does not say where the time went"; exit 1; }
# Nothing could be tested for jumps: the report says so and why, never "no jumps".
grep -q "Jumps:\*\* not tested.*too few timed steps: 2" "$work/threads/analysis/report.md" \
  && grep -q "Not tested: fewer than three batch sizes" "$work/threads/analysis/report.md" \
  && ! grep -qi "no jumps" "$work/threads/analysis/report.md" \
  && grep -q "| not tested |" "$work/threads/analysis/report.md" \
  || { echo "sweep_records: the report claims what it did not test: $(grep -i jump "$work/threads/analysis/report.md")"; exit 1; }

# --experiment runs only the named experiments of a file; an unknown name is refused with the known ones.
cat > "$work/two.yaml" <<'YAML'
device: cpu
defaults: {warmup: 0, steps: 5}
experiments:
  - {name: first, model: mnist_cnn, batch: [1, 2]}
  - {name: second, model: mnist_cnn, phase: infer, batch: [1, 2]}
  - {name: third, model: mnist_cnn, phase: infer, batch: [3]}
YAML
"$bin" sweep "$work/two.yaml" --experiment third --experiment second --threads 1 --out "$work/named" --quiet > /dev/null
python3 -c '
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
assert [e["name"] for e in records[0]["config"]["experiments"]] == ["second", "third"], records[0]["config"]
assert sorted({r["experiment"] for r in records if r["type"] == "point"}) == ["second", "third"]' "$work/named/steps.jsonl"
if "$bin" sweep "$work/two.yaml" --experiment fourth --out "$work/unnamed" > /dev/null 2> "$work/unnamed.err"; then
  echo "sweep_records: an unknown --experiment ran"; exit 1
fi
grep -q "no experiment named 'fourth'; give one of first, second, third" "$work/unnamed.err" && [ ! -e "$work/unnamed" ] \
  || { echo "sweep_records: unknown --experiment: $(cat "$work/unnamed.err")"; exit 1; }
# peak: the matrix-product and convolution rates per precision (the convolution's in both phases and
# layouts), each run timed; a precision the CPU has no mode for is said, not measured; --out appends one record per run.
"$bin" peak --device cpu --size 96 --conv-input 2x8x6x6 --steps 4 --warmup 1 --precision fp32,tf32 --out "$work/peak.jsonl" > "$work/peak.txt"
"$bin" peak --device cpu --operation matmul --size 64 --steps 3 --warmup 0 --json --out "$work/peak.jsonl" > "$work/peak.json"
grep -Eq "^fp32 +[0-9.e+-]+ +[0-9.e+-]+-[0-9.e+-]+ +[0-9.e+-]+$" "$work/peak.txt" \
  && grep -Eq "^fp32 +train +channels-last +[0-9.e+-]+ +[0-9.e+-]+-[0-9.e+-]+ +[0-9.e+-]+$" "$work/peak.txt" \
  && grep -Eq "^fp32 +infer +contiguous +[0-9.e+-]+ +[0-9.e+-]+-[0-9.e+-]+ +[0-9.e+-]+$" "$work/peak.txt" \
  && grep -q "^convolution 3x3, stride 1, padding 1: input 2x8x6x6, 8 channels out$" "$work/peak.txt" \
  && [ "$(grep -c "^tf32 .*not measured: TF32" "$work/peak.txt")" = 5 ] \
  || { echo "sweep_records: peak's table: $(cat "$work/peak.txt")"; exit 1; }
python3 - "$work/peak.jsonl" "$work/peak.json" <<'PY' || { echo "sweep_records: peak's records are wrong"; exit 1; }
import json, statistics, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert [r["type"] for r in lines] == ["peak", "peak"], lines
printed = json.load(open(sys.argv[2]))
assert printed["rates"] == lines[1]["rates"], (printed, lines[1])
first = lines[0]
config = first["config"]
assert config["size"] == 96 and config["conv_input"] == [2, 8, 6, 6] and config["precisions"] == ["fp32", "tf32"], config
assert config["operations"] == ["matmul", "conv"] and config["phases"] == ["train", "infer"], config
assert first["host"] and first["libtorch_version"] and "gpus" in first and first["command"].startswith("batchscope peak"), first
fp32, tf32 = first["rates"][:2]
assert tf32 == {"operation": "matmul", "precision": "tf32", "size": 96, "skipped": tf32["skipped"]} and "TF32" in tf32["skipped"], tf32
assert len(fp32["times_ms"]) == 4 and min(fp32["times_ms"]) > 0, fp32
assert fp32["flops_per_run"] == 2 * 96 ** 3 and fp32["timer"] == "steady_clock", fp32
median = statistics.median(fp32["times_ms"])
assert abs(fp32["median_ms"] - median) < 1e-9, (fp32["median_ms"], median)
assert abs(fp32["median_tflops"] - 2 * 96 ** 3 / (median / 1e3) / 1e12) < 1e-9 * fp32["median_tflops"], fp32
assert fp32["p10_tflops"] <= fp32["median_tflops"] <= fp32["p90_tflops"], fp32
# The convolution: fp32 in both phases and layouts, TF32 said in all; 2 FLOPs per multiply-add, C·3·3 of
# them per output, three times that in training (the backward's two convolutions).
conv = first["rates"][2:]
assert [(r["operation"], r["precision"], r["phase"], r["memory_format"]) for r in conv] == [
    ("conv", p, phase, layout) for p in ("fp32", "tf32") for phase in ("train", "infer")
    for layout in ("contiguous", "channels_last")], conv
forward = 2 * 2 * 8 * 8 * 9 * 6 * 6
for r in conv[:4]:
    assert r["flops_per_run"] == (3 if r["phase"] == "train" else 1) * forward, r
    assert len(r["times_ms"]) == 4 and r["median_tflops"] > 0, r
    assert r["conv_input"] == [2, 8, 6, 6] and r["cudnn_benchmark"] is False, r
assert all("TF32" in r["skipped"] and "times_ms" not in r for r in conv[4:]), conv
second = lines[1]
assert second["config"]["operations"] == ["matmul"] and "conv_input" not in second["config"], second["config"]
assert len(second["rates"]) == 1 and second["rates"][0]["size"] == 64 and len(second["rates"][0]["times_ms"]) == 3
PY
echo "sweep_records: ok"
