#!/usr/bin/env bash
# Runs every fuzz target of a BATCHSCOPE_FUZZ build for a bounded time on its corpus in
# tests/fuzz/corpus/<target>/ (the seeds and every crash found so far, as regressions; the experiment
# file target also starts from configs/), then prints
# the executions per target. A crash, a sanitizer finding, a leak or an uncaught exception fails it;
# the input that did it is left in BUILD/fuzz-artifacts/: fix the bug, then add the input to the
# target's corpus directory so that it stays fixed.
# usage: tests/fuzz/run.sh BUILD_DIR [SECONDS_PER_TARGET (60)] [TARGET...]
set -uo pipefail
build="$(cd "$1" && pwd)"; seconds="${2:-60}"; shift; [ $# -gt 0 ] && shift
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
targets=("$@")
[ "${#targets[@]}" -eq 0 ] && targets=(batch_spec experiment_file sweep_log idx checkpoint)
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-}:suppressions=$src/tests/fuzz/lsan.supp"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
failed=0; summary=()
for t in "${targets[@]}"; do
  bin="$build/tests/fuzz/fuzz_$t"
  [ -x "$bin" ] || { echo "fuzz: $bin is missing (configure with -DBATCHSCOPE_FUZZ=ON)"; exit 2; }
  seeds=("$src/tests/fuzz/corpus/$t")
  # The experiment files the project ships are seeds too, read where they are.
  [ "$t" = experiment_file ] && seeds+=("$src/configs")
  found="$build/fuzz-work/$t"; artifacts="$build/fuzz-artifacts"
  mkdir -p "$found" "$artifacts"
  log="$build/fuzz-work/$t.log"
  # New inputs go to the work directory; the seed corpus in the tree is only read.
  "$bin" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$artifacts/$t-" "$found" "${seeds[@]}" > "$log" 2>&1
  rc=$?
  runs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)"
  cov="$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')"
  if [ "$rc" -ne 0 ]; then
    failed=$((failed + 1))
    echo "fuzz: $t FAILED (exit $rc); the input is in $artifacts:"
    grep -E "ERROR|SUMMARY|runtime error|Assertion|terminate|what\(\)|Test unit written" "$log" | head -20
    summary+=("$t: FAILED after ${runs:-?} executions")
  else
    summary+=("$t: ${runs:-?} executions in ${seconds} s, coverage ${cov:-?} edges, $(ls "$found" | wc -l) new inputs")
  fi
done
printf 'fuzz: %s\n' "${summary[@]}"
[ "$failed" -eq 0 ]
