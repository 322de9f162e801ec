#!/usr/bin/env bash
# A sweep killed with SIGKILL part-way resumes with the same command: the batch sizes finished before
# the kill are kept byte for byte, none is repeated, and the result is complete.
set -euo pipefail
bin="$1"; src="$2"
work="$(mktemp -d)"; trap 'kill -9 "${pid:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT
args=(sweep --model mnist_cnn --batch 1:40 --device cpu --steps 4 --warmup 1 --out "$work/run" --quiet)

"$bin" "${args[@]}" > /dev/null &
pid=$!
points() { grep -c '"type":"point"' "$work/run/steps.jsonl" 2>/dev/null || true; }
for _ in $(seq 1 600); do
  [ "$(points)" -ge 5 ] && break
  sleep 0.1
done
kill -9 "$pid"; wait "$pid" 2>/dev/null || true
done_before="$(points)"
[ "$done_before" -ge 5 ] && [ "$done_before" -lt 40 ] || { echo "kill came at $done_before of 40 batch sizes"; exit 1; }
# Everything up to the last complete line must survive the resume unchanged.
cp "$work/run/steps.jsonl" "$work/before.jsonl"
python3 - "$work/before.jsonl" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
cut = data.rfind(b"\n") + 1  # drop a half-written last line, if any
open(sys.argv[1], "wb").write(data[:cut])
PY

"$bin" "${args[@]}" > "$work/resume.txt"
grep -q "resumed and completed" "$work/resume.txt"
cmp -n "$(stat -c %s "$work/before.jsonl")" "$work/before.jsonl" "$work/run/steps.jsonl"
python3 "$src/tests/integration/check_run.py" "$work/run" 1 "$(seq -s, 1 40)" 4 --resumes 1
echo "kill_resume: ok ($done_before of 40 batch sizes before the kill)"
