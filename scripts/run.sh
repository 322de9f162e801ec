#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job: the quick sweep of configs/quick.yaml on
# the first GPU, or on the CPU where there is none, then its analysis (report, analysis.json, plots).
# Extra arguments go to `batchscope sweep`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/setup.sh
out=runs/quick
previous=""
for arg in "$@"; do
  case "$previous" in -o|--out) out="$arg" ;; esac
  case "$arg" in --out=*) out="${arg#--out=}" ;; esac
  previous="$arg"
done
if [ -f "$out/steps.jsonl" ] && grep -q '"type":"end"' "$out/steps.jsonl" && [[ " $* " != *" --force "* ]]; then
  echo "$out already holds a complete sweep: analysing it again (add --force to sweep again)"
else
  build/batchscope sweep configs/quick.yaml "$@"
fi
build/batchscope analyze "$out"
