#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job: the quick sweep of configs/quick.yaml on
# the first GPU, or on the CPU where there is none, the same device's measured peaks (once), then its
# analysis against them (report, analysis.json, plots). Extra arguments go to `batchscope sweep`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/setup.sh --program-only  # the tests and benchmarks are scripts/test.sh's
out=runs/quick
device=auto
previous=""
for arg in "$@"; do
  case "$previous" in -o|--out) out="$arg" ;; -d|--device) device="$arg" ;; esac
  case "$arg" in --out=*) out="${arg#--out=}" ;; --device=*) device="${arg#--device=}" ;; esac
  previous="$arg"
done
if [ -f "$out/steps.jsonl" ] && grep -q '"type":"end"' "$out/steps.jsonl" && [[ " $* " != *" --force "* ]]; then
  echo "$out already holds a complete sweep: analysing it again (add --force to sweep again)"
else
  build/batchscope sweep configs/quick.yaml "$@"
fi
# The rates the sweep's TFLOP/s is read against: the device's matrix product and convolution, measured
# in a few seconds, once for this output directory.
peak="$out/peak.jsonl"
[ -s "$peak" ] || build/batchscope peak --device "$device" --out "$peak"
build/batchscope analyze "$out" --peak "$peak"
