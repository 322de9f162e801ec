#!/usr/bin/env bash
# Runs every fuzz target of a BATCHSCOPE_FUZZ build for a bounded time on its corpus in
# tests/fuzz/corpus/<target>/ (the seeds and every crash found so far, as regressions; the experiment
# file target also starts from configs/), then prints
# the executions per target. A crash, a sanitizer finding, a leak or an uncaught exception fails it;
# the input that did it is left in BUILD/fuzz-artifacts/: fix the bug, then add the input to the
# target's corpus directory so that it stays fixed.
# Targets run side by side, one a core (FUZZ_JOBS=N sets how many at a time).
# usage: tests/fuzz/run.sh BUILD_DIR [SECONDS_PER_TARGET (60)] [TARGET...]
set -uo pipefail
build="$(cd "$1" && pwd)"; seconds="${2:-60}"; shift; [ $# -gt 0 ] && shift
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
targets=("$@")
[ "${#targets[@]}" -eq 0 ] && targets=(batch_spec experiment_file sweep_log idx checkpoint)
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-}:suppressions=$src/tests/fuzz/lsan.supp"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
for t in "${targets[@]}"; do
  [ -x "$build/tests/fuzz/fuzz_$t" ] || { echo "fuzz: $build/tests/fuzz/fuzz_$t is missing (configure with -DBATCHSCOPE_FUZZ=ON)"; exit 2; }
done
artifacts="$build/fuzz-artifacts"
mkdir -p "$artifacts"

# fuzz TARGET: runs it for the time given (one core: libFuzzer's one process), its exit code beside its log.
fuzz() {
  local t="$1"
  local seeds=("$src/tests/fuzz/corpus/$t")
  # The experiment files the project ships are seeds too, read where they are.
  [ "$t" = experiment_file ] && seeds+=("$src/configs")
  local found="$build/fuzz-work/$t"
  mkdir -p "$found"
  # New inputs go to the work directory; the seed corpus in the tree is only read.
  "$build/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$artifacts/$t-" "$found" "${seeds[@]}" > "$build/fuzz-work/$t.log" 2>&1
  echo $? > "$build/fuzz-work/$t.rc"
}

# As many targets at a time as there are cores (FUZZ_JOBS): each still fuzzes for SECONDS on a core of its own.
jobs="${FUZZ_JOBS:-$(nproc)}"
running=0
for t in "${targets[@]}"; do
  rm -f "$build/fuzz-work/$t.rc"
  fuzz "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n
    running=$((running - 1))
  fi
done
wait

failed=0; summary=()
for t in "${targets[@]}"; do
  log="$build/fuzz-work/$t.log"
  rc="$(cat "$build/fuzz-work/$t.rc" 2> /dev/null || echo "?")"
  runs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)"
  cov="$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')"
  if [ "$rc" != 0 ]; then
    failed=$((failed + 1))
    echo "fuzz: $t FAILED (exit $rc); the input is in $artifacts:"
    grep -E "ERROR|SUMMARY|runtime error|Assertion|terminate|what\(\)|Test unit written" "$log" | head -20
    summary+=("$t: FAILED after ${runs:-?} executions")
  else
    summary+=("$t: ${runs:-?} executions in ${seconds} s, coverage ${cov:-?} edges, $(ls "$build/fuzz-work/$t" | wc -l) new inputs")
  fi
done
printf 'fuzz: %s\n' "${summary[@]}"
[ "$failed" -eq 0 ]
