# Sourced by the end-to-end scripts, after they set `bin` and `work`: counting failures and checking
# a command's exit code and output.
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
ok() { echo "ok   $*"; }
# expect CODE NAME PATTERN ARGS...: batchscope ARGS exits with CODE and prints a line matching PATTERN.
expect() {
  local code="$1" name="$2" pattern="$3"; shift 3
  "$bin" "$@" > "$work/out" 2> "$work/err"
  local rc=$?
  if [ "$rc" -ne "$code" ] || ! grep -Eq -- "$pattern" "$work/err" "$work/out"; then
    fail "$name: exit $rc, stdout: $(tail -3 "$work/out"), stderr: $(tail -3 "$work/err")"
  else
    ok "$name: $(grep -Eh -- "$pattern" "$work/err" "$work/out" | head -1)"
  fi
}
