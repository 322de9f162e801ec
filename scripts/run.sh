#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job: the quick sweep of configs/quick.yaml, the
# same device's measured peaks, then its analysis against them (report, analysis.json, plots). Debian's
# LibTorch has no CUDA, so this build sweeps the CPU (scripts/build-torch.sh builds one that sweeps the
# first GPU). Extra arguments go to `batchscope sweep`; a relative --out is taken from the checkout's root.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/setup.sh --program-only  # the tests and benchmarks are scripts/test.sh's
out=runs/quick
device=auto
threads=""
precision=""
previous=""
for arg in "$@"; do
  case "$previous" in
    -o|--out) out="$arg" ;; -d|--device) device="$arg" ;; --threads) threads="$arg" ;; --precision) precision="$arg" ;;
  esac
  case "$arg" in
    --out=*) out="${arg#--out=}" ;; --device=*) device="${arg#--device=}" ;;
    --threads=*) threads="${arg#--threads=}" ;; --precision=*) precision="${arg#--precision=}" ;;
  esac
  previous="$arg"
done
swept=0
if [ -f "$out/steps.jsonl" ] && grep -q '"type":"end"' "$out/steps.jsonl" && [[ " $* " != *" --force "* ]]; then
  echo "$out already holds a complete sweep: analysing it again (add --force to sweep again)"
else
  build/batchscope sweep configs/quick.yaml "$@"
  swept=1
fi
# The rates the sweep's TFLOP/s is read against: the device's matrix product and convolution, measured
# in a few seconds with the sweep's device, threads and precision, once for each sweep into this output
# directory (written beside, then put in place of the last one).
peak="$out/peak.jsonl"
peak_args=(--device "$device")
[ -z "$threads" ] || peak_args+=(--threads "$threads")
[ -z "$precision" ] || [ "$precision" = fp32 ] || peak_args+=(--precision "fp32,$precision")
if [ "$swept" -eq 1 ] || [ ! -s "$peak" ]; then
  rm -f "$peak.new"
  build/batchscope peak "${peak_args[@]}" --out "$peak.new"
  mv "$peak.new" "$peak"
fi
build/batchscope analyze "$out" --peak "$peak"
