#!/usr/bin/env bash
# Runs experiment files on this machine's first GPU and keeps what they measured under
# results/<gpu name>/<config name>/ (steps.jsonl with its run record, steps.csv, analysis/), with the
# commands appended to results/<gpu name>/commands.txt. An interrupted sweep resumes; a complete one is
# only analysed again.
# Usage: scripts/gpu_results.sh [--bin PATH] CONFIG.yaml... [-- extra sweep options]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bin=build/batchscope
configs=()
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) configs+=("$1"); shift ;;
  esac
done
[ "${#configs[@]}" -gt 0 ] || { echo "usage: scripts/gpu_results.sh [--bin PATH] CONFIG.yaml... [-- sweep options]" >&2; exit 2; }
gpu="$("$bin" env --json | python3 -c '
import json, re, sys
gpus = json.load(sys.stdin).get("gpus") or []
print(re.sub(r"[^a-z0-9]+", "-", gpus[0]["name"].lower()).strip("-") if gpus else "")')"
[ -n "$gpu" ] || { echo "gpu_results.sh: no GPU is visible to $bin" >&2; exit 2; }
mkdir -p "results/$gpu"
for config in "${configs[@]}"; do
  out="results/$gpu/$(basename "$config" .yaml)"
  if [ -f "$out/steps.jsonl" ] && grep -q '"type":"end"' "$out/steps.jsonl"; then
    echo "$out is complete: analysing it again"
  else
    echo "$bin sweep $config --device cuda:0 --quiet --out $out ${extra[*]}" >> "results/$gpu/commands.txt"
    "$bin" sweep "$config" --device cuda:0 --quiet --out "$out" "${extra[@]}"
  fi
  echo "$bin analyze $out --quiet" >> "results/$gpu/commands.txt"
  "$bin" analyze "$out" --quiet
done
