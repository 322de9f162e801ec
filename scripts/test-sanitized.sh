#!/usr/bin/env bash
# The checking build: everything compiled by clang with AddressSanitizer and UndefinedBehaviorSanitizer
# (any finding is fatal) into build-sanitize/, the unit tests and most end-to-end CLI tests run on it,
# then every libFuzzer target for a bounded time on its corpus (tests/fuzz/run.sh).
# usage: scripts/test-sanitized.sh [--fuzz-seconds N (60)] [--no-tests] [--no-fuzz]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
fuzz_seconds=60; run_tests=1; run_fuzz=1
while [ $# -gt 0 ]; do
  case "$1" in
    --fuzz-seconds) fuzz_seconds="$2"; shift 2 ;;
    --no-tests) run_tests=0; shift ;;
    --no-fuzz) run_fuzz=0; shift ;;
    *) echo "test-sanitized.sh: unknown option $1; see the usage line at the top of the script" >&2; exit 2 ;;
  esac
done
source scripts/lib/install.sh
# The main build's packages first (setup.sh's list), then clang and its sanitizer and libFuzzer runtimes.
scripts/setup.sh --bench --packages-only
install_missing clang libclang-rt-14-dev

# -O1 with line tables only: symbolised reports at half the compile time of -O2 -g.
cmake -S . -B build-sanitize -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" -DBATCHSCOPE_FUZZ=ON > /dev/null
cmake --build build-sanitize -j "$(nproc)"

# LibTorch and its libraries are not built with the sanitizers: the allocations they keep for the
# process's lifetime are not the program's leaks.
# LeakSanitizer stops the process's threads the way a debugger does; where that is not allowed (some
# containers), it cannot run at all, and leaks are then left unchecked rather than failing every test.
leaks=1
if ASAN_OPTIONS=detect_leaks=1 build-sanitize/tests/unit_core --gtest_list_tests > build-sanitize/lsan-probe.log 2>&1; then
  :
elif grep -q "LeakSanitizer has encountered a fatal error" build-sanitize/lsan-probe.log; then
  leaks=0
  echo "test-sanitized: LeakSanitizer cannot run on this machine; leaks are not checked (AddressSanitizer and UBSan still are)"
fi
export ASAN_OPTIONS="detect_leaks=$leaks:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1"
export LSAN_OPTIONS="suppressions=$PWD/tests/fuzz/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
if [ "$run_tests" -eq 1 ]; then
  # Every unit test, and the CLI tests but those that add little a sanitizer sees that the others do not
  # and take minutes under it (a process that loads LibTorch takes two to three seconds to start here):
  # - the campaign smoke run, the install test, the Slurm cluster and the sharded sweeps, processes
  #   started by scripts (the shard plan and status are unit_cluster's cases);
  # - the killed and resumed sweeps, searches and trainings (resuming is unit_lib's, unit_maxbatch's and
  #   unit_training's), and two sweeps compared (unit_profile's comparison cases), which runs alone;
  # - the overhead benchmark (a sweep's step, as cli_sweep_records runs it, against Python's) and the
  #   checks whose work is Python's (the reference parameter counts, the pandas recipe, the Kubernetes
  #   manifest against its schema), and the shell scripts' lint, which runs no program of ours.
  # The 1.13 suite runs them all.
  skipped="campaign_smoke|cli_install|slurm_cluster|cli_shards|cli_kill_resume|cli_compare"
  skipped+="|bench_smoke|reference_parameters|pandas_recipe|k8s_manifest|script_pipes"
  ctest --test-dir build-sanitize --output-on-failure -j "$(nproc)" -E "^($skipped)\$"
fi
if [ "$run_fuzz" -eq 1 ]; then
  tests/fuzz/run.sh build-sanitize "$fuzz_seconds"
fi
