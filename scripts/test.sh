#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: unit tests and the real binary on the CPU.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/setup.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
