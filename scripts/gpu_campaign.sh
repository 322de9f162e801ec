#!/usr/bin/env bash
# The whole GPU measurement campaign in one command, for a GPU host with PyTorch (and its LibTorch) but no
# package registry, run from the project root with the C++ dependencies staged in .devdeps/
# (scripts/stage-gpu.sh does that, and more, on a machine with Debian's registry):
#   1. builds against the host's PyTorch with scripts/build-torch.sh (the Dockerfile's recipe) into
#      build-gpu/, or reuses that build;
#   2. runs the GPU-path tests once for each state of the code (--all-tests: builds the tests too and runs
#      the whole suite; --skip-tests: none), logged under the results;
#   3. runs the experiments in priority order (scripts/lib/campaign.py lists them), each into
#      results/<gpu-name>/, printing an estimate of each before it starts, and copies logs, records and
#      reports to --copy-to after every one.
# It stops cleanly before --budget-s seconds (a sweep that is running writes its batch size and stops), so
# that a run with a hard time limit never loses work; the same command later continues where it stopped.
# A command that cannot resume (peak, train --compare) starts only where the budget leaves it
# its estimate, or more than it ran before the budget stopped it once; otherwise the items after it go first.
# --smoke runs the same campaign on the CPU with tiny shapes (build/batchscope, results in
# runs/campaign-smoke), so that it is tested where there is no GPU.
# Usage: scripts/gpu_campaign.sh [--copy-to DIR] [--archive FILE.tar.gz] [--budget-s 540] [--reserve-s 30] [--target-s 1500]
#                                [--smoke] [--bin PATH] [--results DIR] [--python PATH] [--replan] [--skip-tests|--all-tests]
#        [--plan-only [--assume-gpu NAME]] [--analyze-only]
#   --archive: the same as --copy-to copies, as one gzipped tar made again after every item (written beside
#   and renamed, so a run killed mid-write leaves the last whole one), for hosts that hand back few files.
#   --python: the Python with PyTorch that the benchmark items (batchscope's train loop against PyTorch's)
#   run (default: $PYTHON, else python3).
#   --budget-s: seconds for the whole command, the build and the tests included (0: no limit).
#   --reserve-s: seconds kept back at the end for stopping a command, analysing and copying.
#   --replan: make the plan again; the items the old plan started or finished keep their commands.
#   --plan-only: print the plan (every command and its estimate) and run nothing; with --bin and
#   --assume-gpu 'NVIDIA H100 80GB HBM3' it plans a GPU campaign on any machine.
#   --analyze-only --bin build/batchscope --results results/<gpu-name>: analyses every sweep brought
#   back from a GPU host again, plots included (they are not copied back). The plan's paths follow
#   --results: results moved or copied elsewhere are analysed (and continued) where they are.
# Exit codes: 0 the campaign is complete, 3 stopped at the budget (run again), 1 something failed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

usage() { awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0"; }
python="${PYTHON:-python3}"; copy_to=""; archive=""; budget=540; reserve=30; target=1500; smoke=0; bin=""; results=""; replan=(); skip_tests=0; all_tests=0; plan_only=(); assume=()
while [ $# -gt 0 ]; do
  case "$1" in
    --copy-to) copy_to="$2"; shift 2 ;;
    --archive) archive="$2"; shift 2 ;;
    --budget-s) budget="$2"; shift 2 ;;
    --target-s) target="$2"; shift 2 ;;
    --reserve-s) reserve="$2"; shift 2 ;;
    --smoke) smoke=1; shift ;;
    --bin) bin="$2"; shift 2 ;;
    --results) results="$2"; shift 2 ;;
    --python) python="$2"; shift 2 ;;
    --replan) replan=(--replan); shift ;;
    --skip-tests) skip_tests=1; shift ;;
    --all-tests) all_tests=1; shift ;;
    --plan-only) plan_only=(--plan-only); shift ;;
    --analyze-only) plan_only=(--analyze-only); shift ;;
    --assume-gpu) assume=(--assume-gpu "$2"); shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "gpu_campaign.sh: unknown argument '$1'; see --help" >&2; exit 2 ;;
  esac
done
[[ "$budget" =~ ^[0-9]+$ ]] || { echo "gpu_campaign.sh: --budget-s takes whole seconds, e.g. 540" >&2; exit 2; }
# The benchmark items start their Python by its path (no search of PATH): a bare name is looked up here.
if [[ "$python" != */* ]]; then
  found="$(command -v "$python" || true)"
  [ -n "$found" ] && python="$found"
fi
start=$SECONDS
note() { echo "[campaign +$((SECONDS - start))s] $*"; }

extra=()
if [ "$smoke" -eq 1 ]; then
  bin="${bin:-build/batchscope}"
  results="${results:-runs/campaign-smoke}"
  [ -x "$bin" ] || { echo "gpu_campaign.sh: $bin is not built; run scripts/setup.sh first" >&2; exit 2; }
  # A few hundred generated MNIST-like images stand in for the real files.
  data="$results-data"
  [ -f "$data/train-images-idx3-ubyte" ] || python3 tests/data/make_idx.py "$data" --train 512 --test 128 > /dev/null
  extra+=(--data "$data")
elif [ "${#plan_only[@]}" -gt 0 ] && [ -n "$bin" ]; then
  results="${results:-runs/campaign-plan}"
else
  deps="$PWD/.devdeps/root/usr"
  if [ ! -d "$deps" ]; then
    echo "gpu_campaign.sh: .devdeps/root is missing; on a machine with Debian's registry run scripts/stage-gpu.sh and bring .devdeps along" >&2
    exit 2
  fi
  export LD_LIBRARY_PATH="$deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
  if [ -z "$bin" ]; then
    note "building into build-gpu/ with scripts/build-torch.sh"
    build_log="$(mktemp)"
    # The program (and the overhead benchmark, an item of the campaign) unless the whole suite is asked
    # for: the GPU-path tests need no test binaries.
    test_build=(--no-tests --bench)
    [ "$all_tests" -eq 0 ] || test_build=()
    if ! scripts/build-torch.sh --build-dir build-gpu --deps "$deps" ${test_build[@]+"${test_build[@]}"} > "$build_log" 2>&1; then
      tail -40 "$build_log"
      # Where the results would have gone: --copy-to, else beside --archive.
      kept="$copy_to"
      [ -n "$kept" ] || [ -z "$archive" ] || kept="$(dirname "$archive")"
      [ -n "$kept" ] && mkdir -p "$kept" && cp "$build_log" "$kept/build-failed.log"
      echo "gpu_campaign.sh: the build failed (log above$([ -n "$kept" ] && echo ", and in $kept/build-failed.log"))" >&2
      exit 1
    fi
    grep -E '^(torch|GPU:|batchscope:)' "$build_log" || true
    bin=build-gpu/batchscope
    note "built"
  fi
  gpu="$("$bin" env --json | python3 -c '
import json, re, sys
gpus = json.load(sys.stdin).get("gpus") or []
print(re.sub(r"[^a-z0-9]+", "-", gpus[0]["name"].lower()).strip("-") if gpus else "")')"
  [ -n "$gpu" ] || { echo "gpu_campaign.sh: $bin sees no GPU" >&2; exit 1; }
  results="${results:-results/$gpu}"
  mkdir -p "$results/campaign"
  [ -n "${build_log:-}" ] && mv "$build_log" "$results/campaign/build-$(date +%Y%m%d-%H%M%S).log"
  "$bin" env --json > "$results/campaign/env.json"
  source scripts/lib/tests_once.sh
  if [ "$skip_tests" -eq 0 ] && [ -d build-gpu ]; then
    # The GPU-path tests by default (CI runs the rest against LibTorch 2.6); --all-tests: the whole suite.
    if [ "$all_tests" -eq 1 ]; then
      what="the whole test suite in build-gpu/"; limit=240
      tests=(ctest --test-dir build-gpu -j "$(nproc)" --output-on-failure --timeout 200)
    else
      what="the GPU-path tests"; limit=180
      tests=(tests/integration/gpu_paths.sh "$bin" "$PWD")
    fi
    code="$(code_fingerprint)"
    if tests_ran_on "$results/campaign" "$code"; then
      note "$what ran on this code already ($(test -f "$results/campaign/tests.passed" && echo passed || echo failed), $results/campaign/tests.log): not again"
    else
      note "running $what (at most $limit s)"
      run_tests "$results/campaign" "$code" "$limit" "${tests[@]}"
      tail -3 "$results/campaign/tests.log"
      grep '^FAIL' "$results/campaign/tests.log" || true
      grep -E '^\s*[0-9]+ - .*\((Failed|Timeout|Not Run|SEGFAULT|Subprocess aborted)' "$results/campaign/tests.log" || true
    fi
  fi
fi

mkdir -p "$results"
left=$((budget - (SECONDS - start)))
# A budget the build and tests spent already leaves the experiments 1 s (they start nothing, copy and
# exit 3): 0 or less would mean no budget at all to campaign.py.
[ "$budget" -eq 0 ] || [ "$left" -ge 1 ] || left=1
[ "${#plan_only[@]}" -gt 0 ] || note "running the experiments with $left s of the budget left"
rc=0
python3 scripts/lib/campaign.py --bin "$bin" --results "$results" --python "$python" --budget-s "$left" --reserve-s "$reserve" --target-s "$target" \
  ${copy_to:+--copy-to "$copy_to"} ${archive:+--archive "$archive"} ${replan[@]+"${replan[@]}"} ${extra[@]+"${extra[@]}"} \
  ${plan_only[@]+"${plan_only[@]}"} ${assume[@]+"${assume[@]}"} $([ "$smoke" -eq 1 ] && echo --smoke) || rc=$?
[ "${#plan_only[@]}" -gt 0 ] && exit "$rc"
case "$rc" in
  0) note "the campaign is complete: $results" ;;
  3) note "stopped before the budget ran out: run the same command again to continue" ;;
  *) note "finished with failures (exit $rc): see $results/campaign/log.txt" ;;
esac
exit "$rc"
