#!/usr/bin/env bash
# Installs what batchscope needs from Debian's packages (only what is missing), then configures and
# builds it into build/. Usage: scripts/setup.sh [--bench] [--cluster | --kubernetes] [--program-only | --packages-only]
#   --bench adds PyTorch for Python (the reference of build/bench_overhead) and pandas (a test reads logs
#   with it as the README shows); --cluster adds Slurm, munge and the Kubernetes client's models, which
#   the cluster tests run a single-node Slurm with and check manifests against (the Slurm test needs root,
#   and Debian starts the daemons' services on installing them); --kubernetes adds the Kubernetes client's
#   models alone; --program-only builds
#   build/batchscope alone (not the tests and benchmarks: about half the build; the tests are not even
#   configured, so GoogleTest is not installed); --packages-only installs and does not build.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# LibTorch on Debian calls whichever BLAS is installed; without OpenBLAS that is the slow reference one.
packages=(g++ cmake make python3 libtorch-dev libyaml-cpp-dev libspdlog-dev libcxxopts-dev nlohmann-json3-dev
          gnuplot-nox libopenblas0-openmp zlib1g-dev)
build=1
targets=()
tests=ON
for a in "$@"; do
  case "$a" in
    --bench) packages+=(python3-torch python3-pandas) ;;
    --cluster) packages+=(slurmctld slurmd slurm-client munge python3-kubernetes) ;;
    --kubernetes) packages+=(python3-kubernetes) ;;
    --program-only) targets=(--target batchscope); tests=OFF ;;
    --packages-only) build=0 ;;
    *) echo "setup.sh: unknown option $a; use --bench, --cluster, --kubernetes, --program-only or --packages-only" >&2; exit 2 ;;
  esac
done

# The tests need GoogleTest, and are configured only where they are built.
[ "$tests" = ON ] && packages+=(libgtest-dev)
source scripts/lib/install.sh
install_missing "${packages[@]}"
[ "$build" -eq 1 ] || exit 0

jobs="$(nproc)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DBATCHSCOPE_BUILD_TESTS="$tests" > /dev/null
cmake --build build -j "$jobs" "${targets[@]}"
echo "setup: built build/batchscope"
# Bash completion made from the program's own options, where bash-completion looks for a user's own.
completions="${XDG_DATA_HOME:-${HOME:-}/.local/share}/bash-completion/completions"
if [ -n "${XDG_DATA_HOME:-${HOME:-}}" ] && mkdir -p "$completions" 2> /dev/null &&
   build/batchscope completion bash > "$completions/batchscope.new"; then
  mv "$completions/batchscope.new" "$completions/batchscope"
  echo "setup: bash completion in $completions/batchscope (new shells complete batchscope's commands and options)"
fi
