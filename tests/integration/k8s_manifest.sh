#!/usr/bin/env bash
# batchscope submit k8s writes a ConfigMap and an Indexed Job that the Kubernetes API's schema accepts
# (checked with python3-kubernetes's models, since no cluster runs here): for a GPU sweep and a CPU one.
set -uo pipefail
bin="$1"; src="$2"; python="${3:-python3}"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
source "$src/tests/integration/checks.sh"
"$python" -c "import kubernetes" 2> /dev/null || {
  echo "k8s_manifest: skipped: python3-kubernetes is not installed (scripts/setup.sh --cluster installs it)"
  exit 77
}
check() {  # check NAME MANIFEST ARGS...: the manifest passes the schema check
  local name="$1"; shift
  if "$python" "$src/tests/integration/k8s_manifest_check.py" "$@" > "$work/check.txt" 2>&1; then
    ok "$name: $(tail -1 "$work/check.txt")"
  else
    fail "$name: $(cat "$work/check.txt")"
  fi
}
expect 0 "submit k8s, GPU sweep" "kubectl apply -f .*k8s-job.yaml" submit k8s "$src/configs/quick.yaml" \
  --image registry.example.com/batchscope:1 --shards 6 --max-parallel 3 --out "$work/gpu" -- --steps 8
check "GPU manifest" "$work/gpu/k8s-job.yaml" --shards 6 --parallel 3 --gpus 1 --command-has=--steps --command-has=8
expect 0 "submit k8s, CPU sweep" "kubectl apply -f" submit k8s "$src/configs/quick.yaml" --image registry.example.com/batchscope:1 \
  --out "$work/cpu" --name "CPU sweep #2" --gpus-per-task 0 -- --device cpu
check "CPU manifest" "$work/cpu/k8s-job.yaml" --shards 8 --parallel 8 --gpus 0 --command-has=cpu
grep -q "name: cpu-sweep-2$" "$work/cpu/k8s-job.yaml" && ok "the name is made DNS-safe" || fail "the job name: $(grep -m2 'name:' "$work/cpu/k8s-job.yaml")"
# The checker itself fails a manifest with a misspelt field, a wrong type, or a missing required field.
sed 's/claimName:/claimname:/' "$work/gpu/k8s-job.yaml" > "$work/bad1.yaml"
sed 's/completions: 6/completions: "6"/' "$work/gpu/k8s-job.yaml" > "$work/bad2.yaml"
sed '/^        - name: batchscope$/d' "$work/gpu/k8s-job.yaml" | sed 's/^          image:/        - image:/' > "$work/bad3.yaml"
for bad in bad1 bad2 bad3; do
  if "$python" "$src/tests/integration/k8s_manifest_check.py" "$work/$bad.yaml" --shards 6 --parallel 3 --gpus 1 > "$work/check.txt" 2>&1; then
    fail "the checker passed a broken manifest ($bad)"
  else
    ok "the checker fails $bad: $(grep -v note "$work/check.txt" | head -1)"
  fi
done
expect 2 "submit k8s without --image" "needs the container image" submit k8s "$src/configs/quick.yaml" --out "$work/x"
echo "$failures failed"
[ "$failures" -eq 0 ]
