#!/usr/bin/env bash
# Every kind of bad input gets one sentence on stderr that names where the problem is, exit code 2,
# and leaves an existing result untouched.
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
expect cli_unknown_model "vgg17.*vgg16" sweep --model vgg17 --batch 1 --out "$work/kept"
expect cli_inverted "70:1" sweep --model mnist_cnn --batch 70:1 --out "$work/kept"
expect cli_missing_cuda "cuda:3" sweep --model mnist_cnn --batch 1 --device cuda:3 --out "$work/kept"
expect cli_bad_option "command line" sweep --model mnist_cnn --batchez 1 --out "$work/kept"
expect cli_no_model "--model" sweep --batch 1:2 --out "$work/kept"
expect cli_small_input "mnist_cnn" sweep --model mnist_cnn --input 1,4,4 --batch 1 --out "$work/kept"
expect unknown_command "unknown command" swep
expect unwritable_out "cannot be created" sweep --model mnist_cnn --batch 1 --steps 1 --out "$work/kept/steps.csv/sub"
expect other_run_in_out "different experiments" sweep --model mnist_cnn --batch 1:3 --device cpu --steps 1 --warmup 0 --out "$work/kept"
expect complete_run_in_out "complete" sweep --model mnist_cnn --batch 1:2 --device cpu --steps 1 --warmup 0 --out "$work/kept"

if [ "$sum" != "$(md5sum "$work/kept/steps.jsonl" "$work/kept/steps.csv")" ]; then
  echo "FAIL a failing command changed an existing result"; failures=$((failures + 1))
fi
[ "$failures" -eq 0 ] && echo "bad_input: ok" || { echo "bad_input: $failures failed"; exit 1; }
