#!/usr/bin/env bash
# Help and completion: every option's default in --help, positional options listed, `help COMMAND`,
# --version in the usage, parse errors that name the option, every command's options named in README,
# and the bash completion script made from the same option definitions, run in bash.
set -uo pipefail
bin="$1"
project="$2"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
ok() { echo "ok   $*"; }

"$bin" sweep --help > "$work/sweep.txt"
# The help wraps its lines: read it as one line of single spaces.
tr -s ' \n' '  ' < "$work/sweep.txt" > "$work/sweep_flat.txt"
for wanted in "--steps arg timed steps per batch size, or auto[^-]*\(default: 20\)" "--ci-width arg [^-]*\(default: 1%\)" \
              "--min-time arg [^-]*\(default: 0\)" "--max-time arg [^-]*\(default: 10\)" "--warmup arg untimed warm-up steps per batch size \(default: 5\)" \
              "--phase arg [^-]*\(default: train\)" "--precision arg [^-]*\(default: fp32\)" "--lr arg [^-]*\(default: 0.01\)" \
              "--optimizer arg [^-]*\(default: sgd\)" "--device arg [^-]*\(default: auto\)" "--repeats arg [^-]*\(default: 1\)" \
              "--loss-scale-init arg [^-]*\(default: 65536\)" "--loss-scale-growth-interval arg [^-]*\(default: 2000\)" \
              "--config arg" "--experiment NAME" "--json"; do
  grep -Eq -- "$wanted" "$work/sweep_flat.txt" && ok "sweep --help: $wanted" || fail "sweep --help lacks $wanted"
done
grep -q -- "--checkpoint arg" <<< "$("$bin" eval --help)" && ok "eval --help lists --checkpoint" || fail "eval --help lacks --checkpoint"
grep -q -- "--logs arg" <<< "$("$bin" analyze --help)" && ok "analyze --help lists its logs" || fail "analyze --help lacks --logs"
"$bin" help sweep > "$work/help_sweep.txt"
cmp -s "$work/sweep.txt" "$work/help_sweep.txt" && ok "help sweep is sweep --help" || fail "help sweep differs from sweep --help"
grep -q -- "--version" <<< "$("$bin" --help)" && ok "the usage lists --version" || fail "the usage does not list --version"
grep -Eq "^batchscope [0-9]" <<< "$("$bin" --version)" && ok "--version" || fail "--version"

# A parse error names its option, in one sentence, with exit code 2.
"$bin" sweep --stpes 3 > /dev/null 2> "$work/err"; rc=$?
[ "$rc" -eq 2 ] && grep -q "stpes" "$work/err" && [ "$(wc -l < "$work/err")" -eq 1 ] \
  && ok "an unknown option is named: $(cat "$work/err")" || fail "unknown option: exit $rc, $(cat "$work/err")"
"$bin" sweep --model mnist_cnn --steps > /dev/null 2> "$work/err"; rc=$?
[ "$rc" -eq 2 ] && grep -q "steps" "$work/err" && ok "a missing value is named: $(cat "$work/err")" \
  || fail "missing value: exit $rc, $(cat "$work/err")"

# README names every option of every command's --help (README says what the program does, all of it).
readme="$project/README.md"
commands=()
while read -r command; do
  if [ "$command" = submit ]; then commands+=("submit slurm" "submit k8s"); else commands+=("$command"); fi
done <<< "$(sed -n '/^commands:/,/^$/p' <<< "$("$bin" --help)" | grep -Eo '^  [a-z]+' | tr -d ' ')"
undocumented=""
for command in "${commands[@]}"; do
  # $command unquoted: "submit slurm" is two words
  for option in $(grep -Eo -- "^ +(-[a-zA-Z], )?--[a-z0-9-]+" <<< "$("$bin" $command --help)" | grep -Eo -- "--[a-z0-9-]+"); do
    grep -Eq -- "$option([^a-z0-9-]|\$)" "$readme" || undocumented+=" $command $option;"
  done
done
[ "${#commands[@]}" -ge 12 ] && [ -z "$undocumented" ] && ok "README names every option of the ${#commands[@]} commands' --help" ||
  fail "README lacks options of ${#commands[@]} commands:$undocumented"

# The completion script: valid bash, every option of sweep --help in it, and completing in bash.
"$bin" completion bash > "$work/completion.bash" || fail "completion bash"
bash -n "$work/completion.bash" && ok "the completion script is valid bash" || fail "the completion script does not parse"
missing=""
for option in $(grep -Eo -- "^ +(-[a-z], )?--[a-z0-9-]+" "$work/sweep.txt" | grep -Eo -- "--[a-z0-9-]+"); do
  grep -q -- "[ \"]$option[ \"]" "$work/completion.bash" || missing+=" $option"
done
[ -z "$missing" ] && ok "every sweep option is in the completion" || fail "options missing from the completion:$missing"
complete_words() {  # the words bash would offer for the command line "$@" (the last word being typed)
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _batchscope; printf "%s\n" "${COMPREPLY[@]}"' \
    _ "$work/completion.bash" "$@"
}
[ "$(complete_words batchscope sweep --ste | tr '\n' ' ')" = "--steps " ] && ok "completes --ste to --steps" \
  || fail "completing --ste: $(complete_words batchscope sweep --ste | tr '\n' ' ')"
# peak's operations.
[ "$(complete_words batchscope peak --operation c | tr '\n' ' ')" = "conv " ] && ok "completes peak --operation c to conv" \
  || fail "completing peak --operation c: '$(complete_words batchscope peak --operation c | tr '\n' ' ')'"
# peak's precisions include TF32; a sweep's do not.
[ "$(complete_words batchscope peak --precision t | tr '\n' ' ')" = "tf32 " ] \
  && [ -z "$(complete_words batchscope sweep --precision t)" ] && ok "completes peak --precision t to tf32, and sweep's to nothing" \
  || fail "completing --precision t: peak '$(complete_words batchscope peak --precision t | tr '\n' ' ')', sweep '$(complete_words batchscope sweep --precision t | tr '\n' ' ')'"
[ "$(complete_words batchscope sweep --model vgg1 | tr '\n' ' ')" = "vgg16 vgg19 " ] && ok "completes model names" \
  || fail "completing a model: $(complete_words batchscope sweep --model vgg1 | tr '\n' ' ')"
# A model may be a TorchScript file: its path completes too.
touch "$work/my_net.pt"
[ "$(complete_words batchscope sweep --model "$work/my_n" | tr '\n' ' ')" = "$work/my_net.pt " ] && ok "completes a model file's path" \
  || fail "completing a model file: $(complete_words batchscope sweep --model "$work/my_n" | tr '\n' ' ')"
[ "$(complete_words batchscope train --lr-scaling s | tr '\n' ' ')" = "sqrt " ] && ok "completes train's --lr-scaling" \
  || fail "completing --lr-scaling: $(complete_words batchscope train --lr-scaling s | tr '\n' ' ')"
grep -qx analyze <<< "$(complete_words batchscope ana)" && ok "completes commands" || fail "completing a command"
[ "$(complete_words batchscope submit s | tr '\n' ' ')" = "slurm " ] && ok "completes submit's engines" \
  || fail "completing submit: $(complete_words batchscope submit s | tr '\n' ' ')"
grep -qx sweep <<< "$(complete_words batchscope help swe)" && ok "completes help's command" || fail "completing help"

[ "$failures" -eq 0 ] || { echo "$failures failed"; exit 1; }
echo "help_and_completion: ok"
