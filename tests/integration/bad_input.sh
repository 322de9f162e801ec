#!/usr/bin/env bash
# Every kind of bad input gets one sentence on stderr (one line: never a backtrace) that names where the
# problem is, exit code 2, and leaves an existing result untouched.
set -uo pipefail
bin="$1"; src="$2"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
failures=0

# expect NAME PATTERN ARGS...: exit code 2 and stderr matching PATTERN (extended regex).
expect() {
  local name="$1" pattern="$2"; shift 2
  "$bin" "$@" > "$work/out" 2> "$work/err"
  local rc=$?
  if [ "$rc" -ne 2 ] || ! grep -Eq -- "$pattern" "$work/err" || [ "$(wc -l < "$work/err")" -ne 1 ]; then
    echo "FAIL $name: exit $rc, stderr: $(cat "$work/err")"; failures=$((failures + 1))
  else
    echo "ok   $name: $(cat "$work/err")"
  fi
}

# A finished result that no failing command may touch.
"$bin" sweep --model mnist_cnn --batch 1:2 --device cpu --steps 1 --warmup 0 --out "$work/kept" --quiet > /dev/null
sum="$(md5sum "$work/kept/steps.jsonl" "$work/kept/steps.csv")"

printf 'experiments:\n  - model: vgg16\n    batch: [1, 2\n' > "$work/malformed.yaml"
printf 'experiments:\n  - model: vgg16\n    batch: 1:4\n    stepz: 3\n' > "$work/unknown_key.yaml"
printf 'experiments:\n  - model: vgg17\n    batch: 1:4\n' > "$work/unknown_model.yaml"
printf 'experiments:\n  - model: mnist_cnn\n    batch: 70:1\n' > "$work/inverted.yaml"
printf 'experiments:\n  - model: mnist_cnn\n    batch: []\n' > "$work/empty.yaml"
printf 'device: tpu\nexperiments:\n  - model: mnist_cnn\n    batch: 1:2\n' > "$work/bad_device.yaml"
printf 'experiments:\n  - model: mnist_cnn\n    batch: 1:2\n    steps: many\n' > "$work/bad_type.yaml"

expect malformed_yaml "malformed.yaml:3" sweep "$work/malformed.yaml" --out "$work/kept"
expect unknown_key "unknown_key.yaml:4.*stepz" sweep "$work/unknown_key.yaml" --out "$work/kept"
expect unknown_model "unknown_model.yaml:2.*vgg17.*vgg16" sweep "$work/unknown_model.yaml" --out "$work/kept"
expect inverted_range "inverted.yaml:3" sweep "$work/inverted.yaml" --out "$work/kept"
expect empty_batches "empty.yaml:3" sweep "$work/empty.yaml" --out "$work/kept"
expect unknown_device "bad_device.yaml:1.*tpu" sweep "$work/bad_device.yaml" --out "$work/kept"
expect wrong_type "bad_type.yaml:4.*steps" sweep "$work/bad_type.yaml" --out "$work/kept"
expect missing_file "absent.yaml" sweep "$work/absent.yaml" --out "$work/kept"
printf 'experiments:\n  - model: mnist_cnn\n    batch: 1:2\n    repeats: 0\n' > "$work/repeats.yaml"
printf 'prices:\n  cpu: free\n' > "$work/prices.yaml"
expect zero_repeats "repeats.yaml:4.*repeats" sweep "$work/repeats.yaml" --out "$work/kept"
expect repeats_option "--repeats.*not a whole number" sweep --model mnist_cnn --batch 1:2 --repeats two --out "$work/kept"
expect profile_steps_option "--profile-steps 0.*1 to 100" sweep --model mnist_cnn --batch 1:2 --profile-steps 0 --out "$work/kept"
printf 'experiments:\n  - model: mnist_cnn\n    batch: 1:2\n    steps: 5\n    ci_width: 2%%\n' > "$work/ci_fixed.yaml"
expect ci_width_with_a_count "ci_fixed.yaml:5.*ci_width applies to steps: auto only.*set steps: auto" sweep "$work/ci_fixed.yaml" --out "$work/kept"
expect ci_width_option "--ci-width.*must be a number.*in percent" sweep --model mnist_cnn --batch 1:2 --ci-width wide --out "$work/kept"
expect min_above_max "--min-time 30 s is longer than max_time 10 s" sweep --model mnist_cnn --batch 1:2 --min-time 30 --out "$work/kept"
expect bad_price "--price" analyze "$work/kept" --price -1 --no-plots --out "$work/kept_analysis"
expect bad_prices_file "prices.yaml:2.*not a number" analyze "$work/kept" --prices "$work/prices.yaml" --no-plots --out "$work/kept_analysis"
expect bad_tile "--tile 12x is not a tile" analyze "$work/kept" --tile 12x --no-plots --out "$work/kept_analysis"
expect cli_unknown_model "vgg17.*vgg16" sweep --model vgg17 --batch 1 --out "$work/kept"
expect cli_inverted "70:1" sweep --model mnist_cnn --batch 70:1 --out "$work/kept"
expect cli_missing_cuda "cuda:3" sweep --model mnist_cnn --batch 1 --device cuda:3 --out "$work/kept"
expect cli_bad_option "^batchscope: command line: --batchez is not an option of batchscope sweep; did you mean --batch\\? batchscope sweep --help lists its options\\.$" sweep --model mnist_cnn --batchez 1 --out "$work/kept"
expect cli_bad_option_alias "--batch-size is not an option.*did you mean --batch\\?" sweep --model mnist_cnn --batch-size=1 --out "$work/kept"
expect cli_bad_option_far "--zzzz is not an option of batchscope train; batchscope train --help lists its options" train --zzzz
expect cli_bad_short_option "^batchscope: command line: -x is not an option of batchscope sweep;" sweep --model mnist_cnn -x --out "$work/kept"
expect cli_option_without_value "--model needs a value after it; batchscope sweep --help says what it takes" sweep --model
expect cli_no_model "--model" sweep --batch 1:2 --out "$work/kept"
expect cli_small_input "mnist_cnn" sweep --model mnist_cnn --input 1,4,4 --batch 1 --out "$work/kept"
expect unknown_command "^batchscope: command line: unknown command 'swep'; did you mean batchscope sweep --model mnist_cnn\\? use one of sweep, analyze, " swep --model mnist_cnn
expect other_tools_command "unknown command 'merge'; did you mean batchscope analyze runs/a\\?" merge runs/a
expect option_before_command "the option --model comes before any command; did you mean batchscope sweep --model vgg16 --batch 1:4\\?" --model vgg16 --batch 1:4
expect config_before_command "unknown command 'configs/cnn_zoo.yaml'; did you mean batchscope sweep configs/cnn_zoo.yaml\\?" configs/cnn_zoo.yaml
expect results_before_command "did you mean batchscope analyze $work/kept\\?" "$work/kept"
expect unwritable_out "cannot be created" sweep --model mnist_cnn --batch 1 --steps 1 --out "$work/kept/steps.csv/sub"
expect other_run_in_out "different experiments" sweep --model mnist_cnn --batch 1:3 --device cpu --steps 1 --warmup 0 --out "$work/kept"
expect complete_run_in_out "complete" sweep --model mnist_cnn --batch 1:2 --device cpu --steps 1 --warmup 0 --out "$work/kept"

# Sizes beyond what is accepted, refused before anything is allocated or written.
printf 'experiments:\n  - model: mnist_cnn\n    batch: [1, 99999999999999999999]\n' > "$work/huge_batch.yaml"
printf 'experiments:\n  - model: vgg16\n    input: [3, 2000000, 224]\n    batch: 1\n' > "$work/huge_dim.yaml"
printf 'experiments:\n  - model: vgg16\n    input: [3, 60000, 60000]\n    batch: 1\n' > "$work/huge_sample.yaml"
printf 'experiments:\n  - model: vgg16\n    input: [3, 4000, 4000]\n    batch: [1, 100000]\n' > "$work/huge_batch_bytes.yaml"
printf 'experiments:\n  - model: mnist_cnn\n    batch: 1\n    steps: 9999999999\n' > "$work/huge_steps.yaml"
expect huge_batch_in_list "huge_batch.yaml:3.*too large.*16777216" sweep "$work/huge_batch.yaml" --out "$work/new1"
expect huge_batch_range "9223372036854775807.*16777216" sweep --model mnist_cnn --batch 1:9223372036854775807 --out "$work/new1"
expect huge_batch_number "too large for a batch size" sweep --model mnist_cnn --batch 1:99999999999999999999 --out "$work/new1"
expect huge_dimension "huge_dim.yaml:3.*too large.*1048576" sweep "$work/huge_dim.yaml" --out "$work/new1"
expect huge_sample "huge_sample.yaml:3.*2147483648" sweep "$work/huge_sample.yaml" --out "$work/new1"
expect huge_batch_elements "huge_batch_bytes.yaml:4.*batch sizes up to" sweep "$work/huge_batch_bytes.yaml" --out "$work/new1"
expect huge_steps "huge_steps.yaml:4.*steps.*1000000" sweep "$work/huge_steps.yaml" --out "$work/new1"
expect huge_cli_input "--input.*too large" sweep --model vgg16 --input 3,99999999,3 --batch 1 --out "$work/new1"
expect huge_classes "classes.*16777216" sweep --model mnist_cnn --classes 999999999999 --batch 1 --out "$work/new1"
expect huge_memory_limit "memory-limit.*too large" sweep --model mnist_cnn --batch 1 --memory-limit 9999999999999999999999999999999999999GiB --out "$work/new1"
expect train_memory_limit "command line: --memory-limit memory size 'lots' does not start with a number" train --memory-limit lots --out "$work/new1"
# Batch norm cannot train on one value per channel: refused up front, with the file and line.
printf 'experiments:\n  - model: resnet18\n    input: [3, 32, 32]\n    batch: 1:4\n' > "$work/bn_batch.yaml"
expect batchnorm_yaml "bn_batch.yaml:4.*resnet18 cannot train at batch size 1.*start the batch sizes at 2" sweep "$work/bn_batch.yaml" --device cpu --out "$work/new1"
# ... by the plan and by submit too, on any machine: a cluster's tasks would each fail on it.
expect batchnorm_plan "bn_batch.yaml:4.*resnet18 cannot train at batch size 1" sweep "$work/bn_batch.yaml" --plan
expect batchnorm_submit "bn_batch.yaml:4.*resnet18 cannot train at batch size 1" submit slurm "$work/bn_batch.yaml" --shards 2 --dry-run --out "$work/bn_submit"
[ ! -e "$work/bn_submit" ] && echo "ok   batchnorm_submit wrote nothing" || { echo "FAIL batchnorm_submit wrote $work/bn_submit"; failures=$((failures + 1)); }
# Every shipped experiment file plans on any machine.
for config in "$src"/configs/*.yaml; do
  if "$bin" sweep "$config" --plan > /dev/null 2> "$work/err"; then
    echo "ok   $(basename "$config") plans"
  else
    echo "FAIL $(basename "$config") does not plan: $(cat "$work/err")"; failures=$((failures + 1))
  fi
done
for model in resnet50 mobilenet mobilenet_v2; do
  expect "batchnorm_$model" "command line: --batch: $model cannot train at batch size 1" sweep --model "$model" --input 3,32,32 --batch 1 --device cpu --out "$work/new1"
done
expect batchnorm_chunk "command line: --chunk: resnet18 cannot train batch size 5 in micro-batches of at most 2 \\(2×2 \\+ 1\\).*give a chunk of 3 or more" sweep --model resnet18 --input 3,32,32 --batch 4,5 --chunk 2 --device cpu --out "$work/new1"
expect maxbatch_infer_loss_scale "command line: --loss-scale applies to phase: train only; remove it" maxbatch --model mnist_cnn --phase infer --loss-scale dynamic --memory-limit 1GiB
expect sweep_loss_scale_init "command line: --loss-scale-init 0 is too small; give a first scale above 0, such as 65536" sweep --model mnist_cnn --batch 1 --precision fp16 --loss-scale-init 0
expect batchnorm_maxbatch "--start: resnet18 cannot train at batch size 1" maxbatch --model resnet18 --input 3,32,32 --device cpu --memory-limit 1GiB
# Checks made once the experiment is resolved name the file and line of the value, or the option.
printf 'experiments:\n  - model: mnist_cnn\n    batch: 1\n    precision: fp16\n    device: cpu\n' > "$work/fp16_cpu.yaml"
printf 'experiments:\n  - model: mnist_cnn\n    batch: 1\n  - model: mnist_cnn\n    name: second\n    batch: 1\n    device: cuda:0\n' > "$work/cuda_line.yaml"
printf 'experiments:\n  - model: vgg16\n    batch: 1\n    input: [3, 16, 16]\n' > "$work/small_input.yaml"
# The fix is said in the words of where the value came from: the file's key, or the option.
expect fp16_on_cpu_line "fp16_cpu.yaml:4.*fp16.*; use precision: bf16 or fp32 on the CPU\.$" sweep "$work/fp16_cpu.yaml" --out "$work/new1"
expect fp16_on_cpu_option "command line: --precision: fp16.*; use --precision bf16 or fp32 on the CPU\.$" sweep --model mnist_cnn --batch 1 --precision fp16 --device cpu --out "$work/new1"
expect fp16_on_cpu_file_option "fp16_cpu.yaml:4.*; use precision: bf16 or fp32" sweep "$work/fp16_cpu.yaml" --device cpu --out "$work/new1"
expect cuda_device_line "cuda_line.yaml:7.*cuda:0.*; use device: cpu, or run" sweep "$work/cuda_line.yaml" --out "$work/new1"
expect cuda_device_option "command line: --device: .*; use --device cpu, or run" sweep --model mnist_cnn --batch 1 --device cuda:0 --out "$work/new1"
expect channels_last_option "command line: --channels-last: .*; drop --channels-last for this model\.$" sweep --model lstm_lm --batch 1 --channels-last --device cpu --out "$work/new1"
expect small_input_line "small_input.yaml:4.*vgg16" sweep "$work/small_input.yaml" --device cpu --out "$work/new1"
# Raw bytes in an error stay on one printable line.
expect control_bytes_escaped 'unknown command .*\\x1b\[31m' "$(printf 'sw\033[31mep')"
# A damaged checkpoint.json is refused as strictly as a configuration.
python3 "$src/tests/data/make_idx.py" "$work/digits" --train 64 --test 32 > /dev/null
"$bin" train --data "$work/digits" --epochs 1 --batch 32 --device cpu --quiet --out "$work/ckpt" > /dev/null 2>&1
damaged() {  # NAME PATTERN PYTHON-EDIT: the edit applied to a copy of checkpoint.json, then eval
  rm -rf "$work/ckpt2" && cp -r "$work/ckpt" "$work/ckpt2"
  python3 - "$work/ckpt2/checkpoint.json" "$3" <<'PY'
import json, sys
path, edit = sys.argv[1], sys.argv[2]
info = json.load(open(path))
exec(edit)
json.dump(info, open(path, "w"))
PY
  expect "$1" "$2" eval --checkpoint "$work/ckpt2" --device cpu
}
damaged checkpoint_unknown_model 'checkpoint.json: names the model "vit_b16", which this batchscope \(.*\) lacks; evaluate it with the batchscope that trained it' 'info["model"] = "vit_b16"'
damaged checkpoint_model_type 'checkpoint.json.*no text field "model"' 'info["model"] = 7'
damaged checkpoint_limit_fraction 'checkpoint.json.*limit_test' 'info["limit_test"] = 2.5'
damaged checkpoint_limit_negative 'checkpoint.json.*limit_test' 'info["limit_test"] = -3'
damaged checkpoint_weights_outside 'checkpoint.json.*outside its directory' 'info["weights"] = "../../etc/passwd"'
damaged checkpoint_no_data 'checkpoint.json.*"data"' 'del info["data"]'
damaged checkpoint_not_object 'checkpoint.json.*not a JSON object' 'info = [1, 2]'
damaged checkpoint_control_bytes 'checkpoint.json.*vgg\\x00' 'info["model"] = "vgg\x00"'
# A damaged log of an interrupted sweep is refused on resume with its line, and left as it was.
"$bin" sweep --model mnist_cnn --batch 1:3 --device cpu --steps 1 --warmup 0 --idle-seconds 0 --out "$work/part" \
  --quiet > /dev/null 2>&1
python3 - "$work/part/steps.jsonl" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines()
open(sys.argv[1], "w").write("\n".join(l for l in lines if '"type":"end"' not in l) + "\n")
PY
damaged_copy() {  # DIR PYTHON-EDIT: $work/part copied to $work/DIR, the edit applied to its records
  rm -rf "$work/$1" && cp -r "$work/part" "$work/$1"
  python3 - "$work/$1/steps.jsonl" "$2" <<'PY'
import json, sys
path, edit = sys.argv[1], sys.argv[2]
records = [json.loads(l) for l in open(path)]
p = next(r for r in records if r["type"] == "point")  # the first point record
exec(edit)
open(path, "w").write("".join(json.dumps(r) + "\n" for r in records))
PY
}
resume_damaged() {  # NAME PATTERN PYTHON-EDIT of the records (`records`, `p` the first point)
  damaged_copy part2 "$3"
  local before; before="$(md5sum < "$work/part2/steps.jsonl")"
  expect "$1" "$2" sweep --model mnist_cnn --batch 1:3 --device cpu --steps 1 --warmup 0 --idle-seconds 0 --out "$work/part2"
  [ "$before" = "$(md5sum < "$work/part2/steps.jsonl")" ] || { echo "FAIL $1: the log was changed"; failures=$((failures + 1)); }
}
resume_damaged resume_batch_text 'steps.jsonl:[0-9]+: is damaged.*batch_size' 'p["batch_size"] = "2"'
resume_damaged resume_batch_fraction 'steps.jsonl:[0-9]+: is damaged.*batch_size' 'p["batch_size"] = 1.5'
resume_damaged resume_batch_outside_plan 'steps.jsonl:[0-9]+: is damaged.*batch size 40' 'p["batch_size"] = 40'
resume_damaged resume_median_text 'steps.jsonl:[0-9]+: is damaged.*median_ms' 'p["median_ms"] = "fast"'
resume_damaged resume_type_number 'steps.jsonl:[0-9]+: is not a batchscope record.*"type" in text' 'p["type"] = 3'
resume_damaged resume_chunk_without_search 'steps.jsonl:[0-9]+: is damaged.*has a chunk whose chunk_largest_fitting is not a whole number' 'p["chunk"] = 2'
resume_damaged resume_unknown_experiment 'steps.jsonl:[0-9]+: is damaged.*other' 'p["experiment"] = "other"'
# A session on another machine than the first one's is refused before it measures or searches anything.
resume_damaged resume_other_threads 'steps.jsonl:1: was begun with 99 LibTorch CPU threads, and this session has [0-9]+.*give --threads 99' 'records[0]["cpu"]["torch_threads"] = 99'
resume_damaged resume_other_libtorch 'steps.jsonl:1: was begun with LibTorch 0.1.0, and this session has' 'records[0]["libtorch_version"] = "0.1.0"'
# analyze keeps what it can use of a damaged log: each bad record is skipped with a warning naming its
# line, exit code 0, and the report is still written.
analyze_damaged() {  # NAME PATTERN PYTHON-EDIT of the records, as `records` (p: the first point)
  damaged_copy part3 "$3"
  "$bin" analyze "$work/part3" --out "$work/part3/analysis" > "$work/out" 2> "$work/err"
  local rc=$?
  if [ "$rc" -ne 0 ] || ! grep -Eq -- "$2" "$work/err" || grep -q "internal error" "$work/err" ||
     [ ! -s "$work/part3/analysis/report.md" ]; then
    echo "FAIL $1: exit $rc, stderr: $(cat "$work/err")"; failures=$((failures + 1))
  else
    echo "ok   $1: $(grep -E -- "$2" "$work/err" | head -1)"
  fi
}
analyze_damaged analyze_batch_text 'steps.jsonl:[0-9]+: the record on line\(s\) [0-9]+ has a batch_size' 'p["batch_size"] = "2"'
analyze_damaged analyze_median_text 'steps.jsonl:[0-9]+: the record on line\(s\) [0-9]+ has a median_ms' 'p["median_ms"] = "fast"'
analyze_damaged analyze_statistics_order 'steps.jsonl:[0-9]+: .*out of order' 'p["p10_ms"] = p["max_ms"] * 2'
analyze_damaged analyze_oom_outside_plan 'steps.jsonl:[0-9]+: .*plan in the run record does not have' \
  'records.insert(2, dict(p, type="oom", batch_size=99999))'
analyze_damaged analyze_step_time_negative 'steps.jsonl:[0-9]+: .*time_ms that is not a positive duration' \
  'next(r for r in records if r["type"] == "step")["time_ms"] = -1'
analyze_damaged analyze_energy_text 'steps.jsonl:[0-9]+: .*energy_j that is not a number' 'p["energy_method"] = "rapl"; p["energy_j"] = "lots"'
analyze_damaged analyze_gpus_damaged 'steps.jsonl:1: the record on line\(s\) 1 has a gpus entry' 'records[0]["gpus"] = [{"index": "zero"}]'
analyze_damaged analyze_cpu_damaged 'steps.jsonl:1: .*cpu.torch_threads' 'records[0]["cpu"]["torch_threads"] = "two"'
# A command-line value of the wrong kind is refused with its option's name and what it takes.
expect option_threads_text "command line: --threads: 'abc' is not a whole number from 1 to 4096" sweep --model mnist_cnn --batch 1 --threads abc --out "$work/new1"
expect option_threads_zero "command line: --threads: '0' is not a whole number from 1" train --threads 0 --out "$work/new1"
expect option_steps_fraction "command line: --steps: '1.5' is not auto or a whole number from 1 to 1000000" sweep --model mnist_cnn --batch 1 --steps 1.5 --out "$work/new1"
expect option_lr_text "command line: --lr: 'fast' is not a number above 0" sweep --model mnist_cnn --batch 1 --lr fast --out "$work/new1"
expect option_seed_negative "command line: --seed: '-1' is not a whole number from 0" sweep --model mnist_cnn --batch 1 --seed -1 --out "$work/new1"
expect option_bool_value "command line: --channels-last: 'maybe' is not a value that option takes" sweep --model mnist_cnn --batch 1 --channels-last=maybe --out "$work/new1"
expect option_epochs_text "command line: --epochs: 'abc' is not a whole number from 1" train --epochs abc --out "$work/new1"
expect option_target_share "command line: --target-accuracy 0.98 reads as 0.98%.*e.g. --target-accuracy 98%" train --target-accuracy 0.98 --out "$work/new1"
expect option_target_above "command line: --target-accuracy: '101%' is not a percentage from 0% to 100%" train --target-accuracy 101% --out "$work/new1"
expect option_lr_scaling "command line: --lr-scaling cosine is not known.*none, linear or sqrt" train --lr-scaling cosine --out "$work/new1"
# A value another tool would write, or mistyped, is answered with ours (never taken in its place).
expect option_precision_meant "command line: --precision half is not known; did you mean fp16\? use fp32, fp16 or bf16" train --precision half --out "$work/new1"
expect option_phase_meant "command line: --phase inference is not recognised; did you mean infer\? use train or infer" sweep --model mnist_cnn --batch 1 --phase inference --out "$work/new1"
expect option_device_meant "command line: device gpu:0 is not recognised; did you mean cuda:0\? use cpu, cuda" train --device gpu:0 --out "$work/new1"
expect option_sweep_device_meant "command line: --device GPU is not recognised; did you mean cuda\?" sweep --model mnist_cnn --batch 1 --device GPU --out "$work/new1"
expect option_train_batches "command line: --batch 32,x: .*give one size \(64\) or several" train --batch 32,x --out "$work/new1"
expect option_compare_batches "command line: --compare trains one batch size" train --batch 32,64 --compare cpu,cpu --out "$work/new1"
expect option_min_samples "command line: --min-samples: '0' is not a whole number from 1" analyze --min-samples 0 "$work/kept"
expect option_threshold "command line: --threshold: '-2' is not a number above 0" analyze --threshold -2 "$work/kept"
expect option_microbatch_batch "command line: --batch: 'x' is not a whole number from 1 to 16777216" microbatch --model alexnet --batch x --out "$work/new1"
expect option_maxbatch_confirm "command line: --confirm: '0' is not a whole number from 1" maxbatch --model mnist_cnn --confirm 0 --memory-limit 1GiB
expect option_peak_precision "command line: --precision: 'fp8' is not a precision peak measures; give a comma-separated list of fp32, tf32, bf16 and fp16" peak --device cpu --precision fp8
expect option_peak_size "command line: --size: '0' is not a whole number from 1 to 65536" peak --device cpu --size 0
expect option_peak_operation "command line: --operation: 'gemm' is not an operation peak measures; give a comma-separated list of matmul, conv and layers, e.g. --operation conv" peak --device cpu --operation gemm
expect option_peak_conv_input "command line: --conv-input: '64x256x56' is not an input shape N×C×H×W; give four whole numbers from 1 to 999999 joined by x, e.g. --conv-input 64x256x56x56" peak --device cpu --conv-input 64x256x56
expect option_peak_conv_input_zero "command line: --conv-input: '0x8x8x8' is not an input shape" peak --device cpu --conv-input 0x8x8x8
expect option_peak_size_without_matmul "command line: --size is the matrix product's, and --operation leaves it out; add matmul to --operation or leave --size out" peak --device cpu --operation conv --size 512
expect option_peak_phase "command line: --phase: 'backward' is not a phase of the convolution or the layers; give a comma-separated list of train and infer, e.g. --phase train" peak --device cpu --phase backward
expect option_peak_phase_without_conv "command line: --phase is the convolution's and the layers', and --operation leaves both out; add conv or layers to --operation or leave --phase out" peak --device cpu --operation matmul --phase infer
expect option_peak_layers_without_model "command line: --operation layers times a model's layers, and no --model is given; add --model M, e.g. --model vgg16" peak --device cpu --operation layers
expect option_peak_model_without_layers "command line: --model is the layers', and --operation leaves them out; add layers to --operation or leave --model out" peak --device cpu --operation conv --model vgg16
expect option_peak_sequence_model "command line: lstm_lm is a sequence model, not laid out as convolution and linear layers; give a convolutional model to --model" peak --device cpu --model lstm_lm
expect option_peak_unknown_model "command line: --model vgg17 is not a known model; did you mean vgg16 \\(known models: vgg16, .*, or the path of a TorchScript file" peak --device cpu --model vgg17
expect option_peak_layer_search "command line: --cudnn-benchmark: 'maybe' is not a mode of cuDNN; give a comma-separated list of on and off, e.g. --cudnn-benchmark on,off" peak --device cpu --model mnist_cnn --cudnn-benchmark maybe
expect option_peak_search_without_layers "command line: --cudnn-benchmark is the layers', and --operation leaves them out; add layers to --operation or leave --cudnn-benchmark out" peak --device cpu --cudnn-benchmark off
expect option_peak_profiled_runs "command line: --profiled-runs: 'x' is not a whole number from 0 to 1000000; give one, e.g. --profiled-runs 0" peak --device cpu --model mnist_cnn --profiled-runs x
expect option_peak_profiled_without_layers "command line: --profiled-runs is the layers', and --operation leaves them out; add layers to --operation or leave --profiled-runs out" peak --device cpu --operation conv --profiled-runs 3
expect option_train_deterministic "command line: --deterministic 'maybe' is neither on nor off; give --deterministic on or off" train --device cpu --deterministic maybe
expect option_sweep_chunk_word "command line: --chunk: 'many' is not auto or a whole number of samples; give one, e.g. --chunk 256" sweep --model mnist_cnn --batch 1:2 --chunk many --out "$work/new1"
printf 'experiments:\n  - model: mnist_cnn\n    batch: 1:max\n    chunk: auto\n' > "$work/chunk_auto_max.yaml"
expect chunk_auto_to_max "chunk_auto_max.yaml:4: chunk auto runs the batch sizes that do not fit whole in micro-batches, and batch: ...:max holds only sizes that fit; give the batch sizes to go up to" sweep "$work/chunk_auto_max.yaml" --out "$work/new1"
expect option_train_chunk_word "command line: --chunk many is neither auto nor a whole number of samples from 0 to [0-9]+; give e.g. --chunk 256, 0 for every batch whole, or auto" train --chunk many --out "$work/new1"
expect option_train_compare_chunk_auto "command line: --chunk auto would find each device's own micro-batches, and --compare runs the same on both; give a --chunk of samples" train --compare cpu,cpu --chunk auto --out "$work/new1"
expect option_train_compare_loose "command line: --compare needs deterministic runs, so that only the devices' arithmetic differs; leave --deterministic off out" train --compare cpu,cpu --deterministic off
expect option_peak_layer_batch "command line: --batch 8,0: 8,0 contains 0, which is not a batch size.*; give one size \(64\) or several \(32,128,512 or 32:4096:x4\)" peak --device cpu --model mnist_cnn --batch 8,0
expect option_peak_layer_batch_large "command line: --batch: '99999999' is not a whole number from 1 to 16777216" peak --device cpu --model mnist_cnn --batch 99999999
expect option_peak_layer_input "command line: --input 3,8,8 does not suit vgg16: a 2x2 max-pool .*; give an input the model takes" peak --device cpu --model vgg16 --input 3,8,8
expect option_peak_layer_memory "command line: --batch 9999999 needs .* for the largest layer of vgg16, more than the .* this machine has free; give a smaller --batch" peak --device cpu --model vgg16 --batch 9999999
expect option_peak_conv_memory "command line: --conv-input 999999x4096x512x512 needs .* for its convolution's tensors, more than the .* this machine has free; give a smaller --conv-input" peak --device cpu --conv-input 999999x4096x512x512
expect option_peak_out "p.jsonl: cannot open for writing .*; choose an --out directory you can write to" peak --device cpu --size 2048 --out "$work/absent-dir/p.jsonl"
# Three 65536² fp32 matrices need 48 GiB: refused before any is made where less is free (as here).
if [ "$(awk '/^MemAvailable:/ {print int($2 / 1048576)}' /proc/meminfo)" -lt 44 ]; then
  expect option_peak_size_memory "command line: --size 65536 needs 48.0 GiB for its three matrices, more than the .* this machine has free; give a smaller --size" peak --device cpu --size 65536
fi
expect option_eval_batch "command line: --batch: '0' is not a whole number from 1" eval --checkpoint "$work/ckpt" --batch 0
expect option_idle_seconds "command line: --idle-seconds: '1e9' is not a number from 0 to 600" sweep --model mnist_cnn --batch 1 --idle-seconds 1e9 --out "$work/new1"
mkdir -p "$work/dirlog/steps.jsonl"
expect resume_log_is_a_directory "steps.jsonl: is not a regular file" sweep --model mnist_cnn --batch 1 --device cpu --out "$work/dirlog"
# An operation LibTorch has no kernel for in a precision on a device (mobilenet_v2's ReLU6 backward in
# bf16 on the CPU, in LibTorch 1.13) is the same at every size: recorded as skipped with LibTorch's
# reason, a located warning, the sweep completes. Where LibTorch has the kernel, the sizes are measured.
"$bin" sweep --model mobilenet_v2 --input 3,32,32 --precision bf16 --batch 2:3 --device cpu --steps 1 --warmup 0 \
  --no-energy --out "$work/unsupported" > "$work/out" 2> "$work/err"
rc=$?
if [ "$rc" -ne 0 ] || grep -q "internal error" "$work/err" || ! python3 - "$work/unsupported/steps.jsonl" "$work/err" <<'PY'
import json, re, sys
records = [json.loads(l) for l in open(sys.argv[1])]
done = {r["batch_size"]: r for r in records if r["type"] in ("point", "skipped")}
assert sorted(done) == [2, 3], done
skipped = [r for r in done.values() if r["type"] == "skipped"]
if skipped:
    assert len(skipped) == 2 and all("cannot run mobilenet_v2 train in bf16 on cpu" in r["reason"] for r in skipped)
    assert re.search(r"command line: --precision: experiment .*cannot run", open(sys.argv[2]).read())
assert records[-1]["type"] == "end"
PY
then
  echo "FAIL unsupported_operation: exit $rc, stderr: $(cat "$work/err")"; failures=$((failures + 1))
else
  echo "ok   unsupported_operation: $(grep -c '"type": *"skipped"' "$work/unsupported/steps.jsonl") size(s) skipped, $(head -c 200 "$work/err")"
fi
# Environment, repeated and extra arguments, second YAML documents, files not of ours in --out.
OMP_NUM_THREADS=100000 expect omp_threads_too_many "environment: OMP_NUM_THREADS=100000 is not a thread count from 1 to 4096" models
MKL_NUM_THREADS=abc expect mkl_threads_not_a_number "environment: MKL_NUM_THREADS=abc" models
expect option_given_twice "--model is given 2 times \\(mnist_cnn, vgg16\\); give it once" sweep --model mnist_cnn --model vgg16 --batch 1 --plan
printf 'model: mnist_cnn\nbatch: 1\n' > "$work/one.yaml"
expect two_config_files "two experiment files are given" sweep "$work/one.yaml" "$work/one.yaml" --plan
expect config_and_option "two experiment files are given|--config is given 2 times" sweep "$work/one.yaml" --config "$work/one.yaml" --plan
expect extra_argument "'vgg16' is an argument batchscope models does not take" models vgg16
printf 'model: mnist_cnn\nbatch: 1\n---\nmodel: vgg16\nbatch: 1\n' > "$work/two_docs.yaml"
expect second_yaml_document "two_docs.yaml:4: a second YAML document" sweep "$work/two_docs.yaml" --plan
expect plan_checks_run_options "--idle-seconds: 'nan' is not a number" sweep --model mnist_cnn --batch 1 --idle-seconds nan --plan
expect plan_checks_memory_limit "--memory-limit" sweep --model mnist_cnn --batch 1 --memory-limit 5XB --plan
expect plan_checks_shard "--shard 5/2" sweep --model mnist_cnn --batch 1 --shard 5/2 --plan
mkdir -p "$work/prices_dir.yaml"
expect prices_is_a_directory "prices_dir.yaml: is a directory" analyze "$work/kept" --prices "$work/prices_dir.yaml" --no-plots --out "$work/kept_analysis"
long="$(printf 'a%.0s' $(seq 1 300))"
printf 'model: mnist_cnn\nbatch: 1\nname: %s\n' "$long" > "$work/long_name.yaml"
expect name_too_long "long_name.yaml:3.*name is 300 characters long; give at most 200" sweep "$work/long_name.yaml" --plan
printf 'my measurements: 1 2 3' > "$work/notes.txt"
expect peak_out_not_ours "notes.txt:1: is not a file of batchscope peak records" peak --device cpu --operation matmul --size 64 --steps 1 --warmup 0 --out "$work/notes.txt"
expect maxbatch_out_not_ours "notes.txt:1: is not a file of batchscope maxbatch records" maxbatch --model mnist_cnn --device cpu --memory-limit 16MiB --out "$work/notes.txt"
[ "$(cat "$work/notes.txt")" = "my measurements: 1 2 3" ] && echo "ok   notes.txt left whole" ||
  { echo "FAIL notes.txt was changed: $(cat "$work/notes.txt")"; failures=$((failures + 1)); }
mkdir -p "$work/foreign"; printf 'a,b\n1,2\n' > "$work/foreign/steps.csv"
expect csv_without_log "foreign/steps.csv: holds rows, and the directory has no sweep log" sweep --model mnist_cnn --batch 1 --device cpu --steps 1 --warmup 0 --no-energy --out "$work/foreign"
mkdir -p "$work/foreign_train"; echo weights > "$work/foreign_train/checkpoint.pt"
expect checkpoint_without_log "checkpoint.pt: is in the output directory, and no training log" train --data mnist --epochs 1 --batch 8 --device cpu --out "$work/foreign_train"
mkdir -p "$work/foreign_study"; echo mine > "$work/foreign_study/report.md"
expect report_without_study "report.md: is in the output directory with no microbatch.jsonl" microbatch --model mnist_cnn --batch 2 --device cpu --out "$work/foreign_study"
cat "$work/kept/steps.jsonl" "$work/kept/steps.jsonl" > "$work/joined.jsonl"
expect joined_log "joined.jsonl:[0-9]+: step 0 of batch size 1 of experiment .* is in this log a second time \\(first at line 2\\)" analyze "$work/joined.jsonl" --no-plots --out "$work/joined_analysis"
mkdir -p "$work/joined_resume"; head -n 3 "$work/kept/steps.jsonl" > "$work/joined_resume/steps.jsonl"; sed -n 3p "$work/kept/steps.jsonl" >> "$work/joined_resume/steps.jsonl"
expect joined_log_resume "steps.jsonl:4: holds a second outcome of batch size 1" sweep --model mnist_cnn --batch 1:2 --device cpu --steps 1 --warmup 0 --out "$work/joined_resume"
expect empty_value "--out is given an empty value" sweep --model mnist_cnn --batch 1 --out ""
expect target_accuracy_zero "--target-accuracy 0% is no accuracy to reach" train --target-accuracy 0% --out "$work/new1"
mkdir -p "$work/kept_copy"; cp "$work/kept/steps.jsonl" "$work/kept_copy/"
expect compare_too_few_steps "kept:? has at most 1 timed steps per batch size, fewer than --min-samples 5; give --min-samples 1" compare "$work/kept" "$work/kept_copy"
BATCHSCOPE_DATA="$work/no_data" expect data_variable_named "BATCHSCOPE_DATA=.*no_data chose it.*unset BATCHSCOPE_DATA" train --data mnist --out "$work/new1"
MKL_NUM_THREADS=4, expect threads_trailing_comma "MKL_NUM_THREADS=4, is not a thread count" models
printf 'model: mnist_cnn\nbatch: 1\n---\n---\nmodel: vgg16\nbatch: 1\n' > "$work/third_doc.yaml"
expect later_yaml_document "third_doc.yaml:5: a second YAML document" sweep "$work/third_doc.yaml" --plan
expect seq_len_and_input "--seq-len 35 and --input \\[40\\] give other sequence lengths" sweep --model lstm_lm --seq-len 35 --input 40 --batch 1 --plan
expect peak_precision_not_here "--precision fp16 on cpu: fp16 runs on CUDA devices only.*--precision fp32" peak --device cpu --operation matmul --precision fp16 --size 64 --out "$work/new1/p.jsonl"
mkdir -p "$work/foreign_profile"; echo "my notes" > "$work/foreign_profile/profile.jsonl"
expect profile_without_log "profile.jsonl: is in the directory with no sweep log" sweep --model mnist_cnn --batch 1 --device cpu --steps 1 --warmup 0 --no-energy --profile --out "$work/foreign_profile"
[ ! -e "$work/new1" ] && echo "ok   nothing was written to --out by a refused command" ||
  { echo "FAIL a refused command wrote $(ls "$work/new1")"; failures=$((failures + 1)); }

if [ "$sum" != "$(md5sum "$work/kept/steps.jsonl" "$work/kept/steps.csv")" ]; then
  echo "FAIL a failing command changed an existing result"; failures=$((failures + 1))
fi
[ "$failures" -eq 0 ] && echo "bad_input: ok" || { echo "bad_input: $failures failed"; exit 1; }
