# Sourced by scripts/gpu_campaign.sh (and its smoke test): the GPU-path tests once for each state of the code.

# A fingerprint of the code the tests check: the program's sources and the tests themselves.
code_fingerprint() {
  find app lib models tests/integration CMakeLists.txt -type f -not -path '*/__pycache__/*' -print0 |
    sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16
}

# tests_ran_on DIR CODE: whether DIR/tests.ran says the tests ran on CODE, passed or not.
tests_ran_on() {
  [ "$(cat "$1/tests.ran" 2>/dev/null)" = "$2" ]
}

# run_tests DIR CODE LIMIT_S COMMAND...: runs COMMAND (at most LIMIT_S seconds) into DIR/tests.log, marks
# DIR/tests.passed where it passed, and DIR/tests.ran with CODE, passed or not: a failing test is reported
# but costs no more GPU time until the code changes (remove tests.ran to run them again). An earlier code's
# log is kept beside, as tests-ITSCODE.log ("unknown" for one from before fingerprints).
run_tests() {
  local dir="$1" code="$2" limit="$3" ran aside
  shift 3
  ran="$(cat "$dir/tests.ran" 2>/dev/null || true)"
  aside="$dir/tests-${ran:-unknown}.log"
  [ ! -e "$aside" ] || aside="$dir/tests-${ran:-unknown}-$(date +%Y%m%d-%H%M%S).log"
  [ ! -f "$dir/tests.log" ] || mv "$dir/tests.log" "$aside"
  rm -f "$dir/tests.passed"
  # timeout puts itself and everything the tests start in a process group of its own (its pid), sends
  # SIGTERM to all of it at the limit and SIGKILL 10 s later where the tests have not ended. A test's
  # sweep stops after its batch size on SIGTERM, and may outlive the tests' own process: whatever of the
  # group is left when they end is killed, so that nothing of it shares the GPU with the first item.
  local pid rc=0
  timeout -k 10 "$limit" "$@" > "$dir/tests.log" 2>&1 &
  pid=$!
  wait "$pid" || rc=$?
  kill -KILL -- "-$pid" 2>/dev/null || true
  [ "$rc" -ne 0 ] || touch "$dir/tests.passed"
  echo "$code" > "$dir/tests.ran"
}
