#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: unit tests and the real binary on the CPU.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# --bench adds PyTorch for Python: the reference the sequence models' parameter counts are checked against.
scripts/setup.sh --bench
ctest --test-dir build --output-on-failure -j "$(nproc)"
