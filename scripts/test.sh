#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: unit tests and the real binary on the CPU.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# --bench adds PyTorch for Python: the reference the sequence models' parameter counts are checked against;
# --cluster adds Slurm and munge (a single-node Slurm runs a sharded sweep) and python3-kubernetes. The
# Slurm test needs root, and installing Slurm starts its daemons' services: as another user, only the
# Kubernetes client (--kubernetes), and the Slurm test says it is skipped.
if [ "$(id -u)" -eq 0 ]; then cluster=--cluster; else cluster=--kubernetes; fi
scripts/setup.sh --bench "$cluster"
ctest --test-dir build --output-on-failure -j "$(nproc)"
