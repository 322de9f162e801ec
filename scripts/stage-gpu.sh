#!/usr/bin/env bash
# Prepares a session on a GPU host (PyTorch with CUDA, no package registry), run here, in the project root,
# on a machine with Debian's registry: checks that every file compiles against LibTorch 2.x (CPU and CUDA
# headers), stages the C++ dependencies the host lacks into .devdeps/, and fetches MNIST into data/mnist.
# It then prints what to bring along and the one command to run there.
# Usage: scripts/stage-gpu.sh [--skip-check]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ "${1:-}" != "--skip-check" ]; then
  scripts/check-libtorch2.sh
fi
scripts/stage-deps.sh
scripts/get_datasets.sh --mnist-only
# Compressed, MNIST travels in 11 MB instead of 55 (batchscope reads IDX files plain or gzipped).
for f in data/mnist/*-ubyte; do
  [ -f "$f" ] && gzip -9 -f "$f"
done
echo "staged: .devdeps ($(du -sh .devdeps | cut -f1)), data/mnist ($(du -sh data/mnist | cut -f1))"
echo "on the GPU host, with .devdeps and data/mnist brought along, from the project root:"
echo "  scripts/gpu_campaign.sh --copy-to DIR --budget-s 540    # again and again until it exits 0"
echo "  (or --archive DIR/results.tar.gz: the same files as one archive, made again after every item)"
