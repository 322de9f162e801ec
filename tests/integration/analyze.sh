#!/usr/bin/env bash
# batchscope analyze end to end: a real CPU sweep turned into report, analysis.json and plots; logs
# with known jumps, split and compared; and damaged or empty logs answered as the README says.
set -uo pipefail
bin="$1"; src="$2"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
make_log="$src/tests/data/analysis/make_log.py"
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
ok() { echo "ok   $*"; }

# A real sweep on the CPU, then analyze on its directory with the default output place.
"$bin" sweep --model mnist_cnn --batch 1:6 --device cpu --steps 5 --warmup 1 --out "$work/cpu" --quiet > /dev/null \
  || fail "the CPU sweep did not run"
if "$bin" analyze "$work/cpu" > "$work/out" 2> "$work/err"; then
  ok "analyze of a real CPU sweep"
else
  fail "analyze of a real CPU sweep: $(cat "$work/err")"
fi
for f in report.md analysis.json plots/mnist_cnn_train_fp32_cpu_time.png plots/mnist_cnn_train_fp32_cpu_time.svg \
         plots/mnist_cnn_train_fp32_cpu_throughput.png plots/mnist_cnn_train_fp32_cpu_throughput.svg; do
  [ -s "$work/cpu/analysis/$f" ] || fail "missing $f"
done
grep -q "89 50 4e 47 0d 0a 1a 0a" <<< "$(head -c 8 "$work/cpu/analysis/plots/mnist_cnn_train_fp32_cpu_time.png" | od -An -tx1)" \
  || fail "the time plot is not a PNG"
grep -q "<svg" "$work/cpu/analysis/plots/mnist_cnn_train_fp32_cpu_time.svg" || fail "the time plot is not an SVG"
grep -q "^## mnist_cnn train fp32" "$work/cpu/analysis/report.md" || fail "report.md has no section for the group"
grep -q "(plots/mnist_cnn_train_fp32_cpu_time.png)" "$work/cpu/analysis/report.md" || fail "report.md does not show the plot"
grep -q "fastest: batch" "$work/out" || fail "no terminal summary: $(cat "$work/out")"
# The CPU's counted peaks make a memory line: in the terminal, the report and its plot.
grep -Eq "^  memory: .* per sample(; the peak steps off it at .*)?$" "$work/out" || fail "no memory line in the terminal summary: $(cat "$work/out")"
grep -q "^\*\*Memory\*\* (the most LibTorch's CPU allocator held" "$work/cpu/analysis/report.md" \
  || fail "report.md has no memory paragraph"
[ -s "$work/cpu/analysis/plots/mnist_cnn_train_fp32_cpu_memory.png" ] || fail "no memory plot"
python3 - "$work/cpu/analysis/analysis.json" <<'PY' || fail "analysis.json of the CPU sweep"
import json, sys
a = json.load(open(sys.argv[1]))
g = a["groups"]
assert len(g) == 1, g
assert [p["batch_size"] for p in g[0]["points"]] == [1, 2, 3, 4, 5, 6]
assert all(p["samples"] == 5 and p["median_ms"] > 0 and p["tflops"] > 0 for p in g[0]["points"])
assert g[0]["trend"]["slope_ms_per_sample"] > 0
assert g[0]["best"]["fastest"]["batch_size"] in range(1, 7)
PY

# Known staircase, in two parts of one sweep (merged), and the same on a second GPU (compared).
python3 "$make_log" --batches 1:35 --jumps 16:4,32:4 --base 20 --slope 0.2 --noise 0.005 --seed 1 --run-id a1 --no-end > "$work/part1.jsonl"
python3 "$make_log" --batches 36:70 --jumps 16:4,32:4,48:4,64:4 --base 20 --slope 0.2 --noise 0.005 --seed 2 --run-id a2 > "$work/part2.jsonl"
python3 "$make_log" --batches 1:70 --gpu "Other GPU" --jumps 16:2,32:2,48:2,64:2 --base 10 --slope 0.1 --noise 0.005 --seed 3 --run-id b > "$work/other.jsonl"
if "$bin" analyze "$work/part1.jsonl" "$work/part2.jsonl" "$work/other.jsonl" --out "$work/cmp" > "$work/out" 2> "$work/err"; then
  ok "analyze of a split sweep and a second GPU"
else
  fail "split and compared logs: $(cat "$work/err")"
fi
python3 - "$work/cmp/analysis.json" <<'PY' || fail "analysis.json of the staircase logs"
import json, sys
a = json.load(open(sys.argv[1]))
g = a["groups"]
assert len(g) == 2, [x["label"] for x in g]
assert len(g[0]["points"]) == 70 and len(g[0]["logs"]) == 2
for group in g:
    assert [(j["from"], j["to"]) for j in group["jumps"]["rises"]] == [(16, 17), (32, 33), (48, 49), (64, 65)], group["jumps"]
    assert group["periodicity"]["periodic"] and group["periodicity"]["best"]["k"] == 16, group["periodicity"]
c = a["comparisons"]
assert len(c) == 1 and len(c[0]["curves"]) == 1, c
assert abs(c[0]["curves"][0]["median_speedup"] - 2.0) < 0.05, c[0]["curves"][0]["median_speedup"]
PY
for f in vgg16_train_fp32_nvidia_test_gpu_time.png vgg16_train_fp32_other_gpu_time.svg throughput_all.png vgg16_train_3x32x32_speedup.png; do
  [ -s "$work/cmp/plots/$f" ] || fail "missing comparison plot $f ($(ls "$work/cmp/plots" | tr '\n' ' '))"
done
grep -q "16→17" "$work/out" || fail "the terminal summary does not name the jumps"

# The same --out analysed again with one log of another sweep: the earlier plots go, plots are counted.
if "$bin" analyze "$work/cpu" --out "$work/cmp" > "$work/out" 2> "$work/err"; then
  drawn="$(ls "$work/cmp/plots"/*.png | wc -l)"
  if [ ! -e "$work/cmp/plots/vgg16_train_fp32_other_gpu_time.png" ] && [ ! -e "$work/cmp/plots/vgg16_train_fp32_other_gpu_time.dat" ] \
     && [ -s "$work/cmp/plots/mnist_cnn_train_fp32_cpu_time.png" ] \
     && grep -q "written: .*, $drawn plots in .* (removed [0-9]* files of plots an earlier analysis drew there)" "$work/out"; then
    ok "a second analysis into the same --out: $(grep written "$work/out")"
  else
    fail "a second analysis into the same --out: $(cat "$work/out") / $(ls "$work/cmp/plots" | tr '\n' ' ')"
  fi
else
  fail "the second analysis into the same --out: $(cat "$work/err")"
fi
# ... and a third that draws none (--no-plots): no earlier plot stays beside a report that has none.
if "$bin" analyze "$work/cpu" --out "$work/cmp" --no-plots > "$work/out" 2> "$work/err" &&
   [ -z "$(ls "$work/cmp/plots")" ] && grep -q "(removed [0-9]* files of plots an earlier analysis drew there)" "$work/out"; then
  ok "an analysis with --no-plots removes the earlier plots"
else
  fail "--no-plots into an --out with plots: $(cat "$work/out" "$work/err") / $(ls "$work/cmp/plots" | tr '\n' ' ')"
fi

# Damaged logs: analysed with a warning each, exit 0.
{ head -n 5 "$work/part2.jsonl"; echo "garbage line"; echo '{"type":"mystery"}'; tail -n +6 "$work/part2.jsonl" | head -n 40; printf '{"type":"step","ba'; } > "$work/damaged.jsonl"
if "$bin" analyze "$work/damaged.jsonl" --out "$work/damaged" --no-plots > "$work/out" 2> "$work/err"; then
  grep -q "damaged.jsonl:6: line(s) 6 are not batchscope records" "$work/err" || fail "no warning for the bad line: $(cat "$work/err")"
  grep -q "damaged.jsonl:7: record type \"mystery\"" "$work/err" || fail "no warning for the unknown type"
  grep -q "last line is unfinished" "$work/err" || fail "no warning for the truncated tail"
  grep -q "Plots were skipped" "$work/damaged/report.md" || fail "report.md does not say the plots were skipped"
  ok "a damaged log is analysed with warnings"
else
  fail "a damaged log: $(cat "$work/err")"
fi

# Gnuplot missing: the report still comes out and says so.
if "$bin" analyze "$work/part1.jsonl" --out "$work/noplot" --gnuplot /nonexistent/gnuplot > /dev/null 2> "$work/err" \
   && grep -q "Plots were skipped: .*gnuplot" "$work/noplot/report.md" && [ ! -e "$work/noplot/plots/vgg16_train_fp32_nvidia_test_gpu_time.png" ]; then
  ok "no gnuplot: report without plots"
else
  fail "no gnuplot: $(cat "$work/err")"
fi

# Nothing to analyse: one sentence and exit 2.
expect2() {
  local name="$1" pattern="$2"; shift 2
  "$bin" analyze "$@" > "$work/out" 2> "$work/err"
  local rc=$?
  if [ "$rc" -ne 2 ] || ! grep -Eq -- "$pattern" "$work/err" || [ "$(wc -l < "$work/err")" -ne 1 ]; then
    fail "$name: exit $rc, stderr: $(cat "$work/err")"
  else
    ok "$name: $(cat "$work/err")"
  fi
}
python3 "$make_log" --batches 1:4 --oom-from 1 > "$work/oom.jsonl"
echo "not a log" > "$work/text.jsonl"
python3 "$make_log" --batches 36:70 --gpu "Third GPU" --seed 4 > "$work/elsewhere.jsonl"
expect2 missing_log "absent.jsonl: does not exist" "$work/absent.jsonl"
expect2 empty_directory "steps.jsonl: is missing" "$work/cmp"
expect2 only_oom "oom.jsonl: holds only out-of-memory records: even batch size 1" "$work/oom.jsonl"
expect2 not_a_log "text.jsonl: holds no batchscope records" "$work/text.jsonl"
cp "$work/part2.jsonl" "$work/copy.jsonl"
expect2 measured_twice "copy.jsonl:[0-9]+: batch size 36 .* already measured in .*part2.jsonl.*--separate" "$work/part2.jsonl" "$work/copy.jsonl"
# Two experiments of the same settings in two shards of one sweep (each ran part of both): one group, as in
# one log, and a warning that says so; with --separate, a group each.
python3 "$make_log" --experiment first --batches 30:40 --seed 5 --shard 0/2 > "$work/shard_a.jsonl"
python3 "$make_log" --experiment second --batches 30:40 --seed 6 --shard 1/2 > "$work/shard_b.jsonl"
if "$bin" analyze "$work/shard_a.jsonl" "$work/shard_b.jsonl" --out "$work/two_experiments" > /dev/null 2> "$work/err" &&
   grep -q "experiments first and second ran with the same settings (.*), so their step times are pooled into one group; add --separate" "$work/err" &&
   python3 -c 'import json, sys; assert len(json.load(open(sys.argv[1]))["groups"]) == 1' "$work/two_experiments/analysis.json" &&
   "$bin" analyze "$work/shard_a.jsonl" "$work/shard_b.jsonl" --separate --out "$work/two_apart" > /dev/null 2>&1 &&
   python3 -c 'import json, sys; assert len(json.load(open(sys.argv[1]))["groups"]) == 2' "$work/two_apart/analysis.json"; then
  ok "two experiments of the same settings across one sweep's shards pool, said so; --separate keeps them apart"
else
  fail "two experiments of the same settings across shards: $(cat "$work/err")"
fi
# The same in the logs of two sweeps (no shard plan in common): two sweeps, refused as one measured twice.
python3 "$make_log" --experiment first --batches 30:40 --seed 5 > "$work/sweep_a.jsonl"
python3 "$make_log" --experiment second --batches 30:40 --base 20 --seed 6 > "$work/sweep_b.jsonl"
expect2 two_sweeps_same_settings "sweep_b.jsonl:[0-9]+: batch size 30 .*\(experiment second\) was already measured in .*sweep_a.jsonl \(experiment first\), by another sweep of the same settings; .*--separate" \
  "$work/sweep_a.jsonl" "$work/sweep_b.jsonl"
expect2 split_across_gpus "elsewhere.jsonl:1: .*NVIDIA Test GPU vs Third GPU" "$work/part1.jsonl" "$work/elsewhere.jsonl" --out "$work/x"
expect2 no_logs "at least one log" --out "$work/x"
expect2 bad_option "--threshold: '0' is not a number above 0" "$work/part1.jsonl" --threshold 0

# --peak: the sweep's highest TFLOP/s against this CPU's measured fp32 peaks, the matrix product's and the
# convolution's (its faster layout in the sweep's phase, training), from two files, in the report, the summary and analysis.json; a file
# that is not a peak file is refused with its line.
"$bin" peak --device cpu --operation matmul --size 128 --steps 3 --warmup 1 --out "$work/peak.jsonl" > /dev/null
"$bin" peak --device cpu --operation conv --conv-input 2x16x8x8 --steps 3 --warmup 1 --out "$work/conv.jsonl" > /dev/null
if "$bin" analyze "$work/cpu" --peak "$work/peak.jsonl" --peak "$work/conv.jsonl" --no-plots --out "$work/peaked" > "$work/out" 2> "$work/err" &&
   grep -Eq "^- highest rate: batch [0-9]+, [0-9.e+-]+ TFLOP/s, [0-9.e+-]+% of the measured fp32 matrix-product peak \([0-9.e+-]+ TFLOP/s, .*peak.jsonl:1\), [0-9.e+-]+% of the fp32 convolution peak \([0-9.e+-]+ TFLOP/s, forward and backward, (contiguous|channels-last), .*conv.jsonl:1\)$" "$work/peaked/report.md" &&
   grep -Eq "^  highest rate: .*% of the measured fp32 matrix-product peak .*% of the fp32 convolution peak" "$work/out" &&
   python3 - "$work/peaked/analysis.json" "$work/conv.jsonl" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))["groups"][0]["peak"]
matmul, conv = g["of_peaks"]
assert (matmul["operation"], matmul["precision"]) == ("matmul", "fp32") and "memory_format" not in matmul, g
for share in (matmul, conv):
    assert abs(share["share"] * share["peak_tflops"] - g["tflops"]) < 1e-9 * g["tflops"], g
# The convolution's roof is the faster of its two layouts in the sweep's phase.
rates = [r for r in json.loads(open(sys.argv[2]).readline())["rates"] if r["phase"] == "train"]
best = max(rates, key=lambda r: r["median_tflops"])
assert (conv["operation"], conv["phase"], conv["memory_format"], conv["peak_tflops"]) == ("conv", "train", best["memory_format"], best["median_tflops"]), (conv, rates)
PY
then
  echo "ok   --peak: $(grep 'highest rate' "$work/out")"
else
  echo "FAIL --peak: $(cat "$work/err") $(grep -i 'rate' "$work/peaked/report.md" 2>/dev/null)"; failures=$((failures + 1))
fi
expect2 not_a_peak_file "cpu/steps.jsonl:1: holds a \"run\" record, not a peak record; give --peak the JSON-lines file that batchscope peak --out wrote" \
  "$work/cpu" --peak "$work/cpu/steps.jsonl" --no-plots --out "$work/x"

# A run record may hold anything where the program writes a boolean or a word (tf32's settings, an
# experiment's transfer): analyze reads them by type, and a value of another type is no word of theirs.
mkdir -p "$work/odd"
python3 - "$work/cpu/steps.jsonl" "$work/odd/steps.jsonl" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
run = json.loads(lines[0])
run["tf32"] = {"cudnn_convolutions": "yes", "cublas_matmul": 1}
run["config"]["experiments"][0]["transfer"] = 5
open(sys.argv[2], "w").write("\n".join([json.dumps(run)] + lines[1:]) + "\n")
PY
if "$bin" analyze "$work/odd" --no-plots --out "$work/odd/analysis" > /dev/null 2> "$work/err"; then
  grep -q "by LibTorch's default fp32 convolutions in fp32 and matrix products in fp32" "$work/odd/analysis/report.md" \
    && ok "analyze of a run record with values of other types" || fail "tf32 settings of other types made words"
else
  fail "analyze of a run record with values of other types: $(cat "$work/err")"
fi

# The default --out beside the first log holds that log's own analysis: an analysis of it with another log
# would replace it, and is refused with the way out; the same log again, from inside its directory too,
# replaces it as always.
before="$(md5sum < "$work/cpu/analysis/report.md")"
if "$bin" analyze "$work/cpu" "$work/odd" --no-plots > /dev/null 2> "$work/err"; then
  fail "an analysis of two logs replaced the first log's own"
elif grep -q "analysis.json: holds the analysis of cpu/steps.jsonl, which this analysis of cpu/steps.jsonl and odd/steps.jsonl would replace; give --out DIR" "$work/err" &&
     [ "$before" = "$(md5sum < "$work/cpu/analysis/report.md")" ] &&
     (cd "$work/cpu" && "$bin" analyze . --no-plots --quiet > /dev/null 2>&1); then
  ok "an analysis of other logs does not replace a log's own in its default place"
else
  fail "the default place of an analysis of two logs: $(cat "$work/err")"
fi

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all analyze checks passed"
