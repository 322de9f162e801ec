#!/usr/bin/env bash
# Installs what batchscope needs from Debian's packages (only what is missing), then configures and
# builds it into build/. Usage: scripts/setup.sh [--bench]   (--bench adds PyTorch for Python, the
# reference of build/bench_overhead)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# LibTorch on Debian calls whichever BLAS is installed; without OpenBLAS that is the slow reference one.
packages=(g++ cmake make python3 libtorch-dev libyaml-cpp-dev libspdlog-dev libcxxopts-dev nlohmann-json3-dev
          libgtest-dev gnuplot-nox libopenblas0-openmp zlib1g-dev)
[ "${1:-}" = "--bench" ] && packages+=(python3-torch)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" > /dev/null
fi

jobs="$(nproc)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j "$jobs"
echo "setup: built build/batchscope"
