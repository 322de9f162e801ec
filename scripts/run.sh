#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job: the quick sweep of configs/quick.yaml on
# the first GPU, or on the CPU where there is none. Extra arguments go to `batchscope sweep`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/setup.sh
build/batchscope sweep configs/quick.yaml "$@"
