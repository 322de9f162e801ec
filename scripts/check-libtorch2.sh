#!/usr/bin/env bash
# Compiles every translation unit of the project (product, tests, bench) against LibTorch 2.6's headers
# from Debian's next release, syntax only, under the project's own flags: once against the CPU headers
# (libtorch-dev) and once against the CUDA headers (libtorch-cuda-dev) with the CUDA toolkit and
# BATCHSCOPE_WITH_CUDA, the way a PyTorch 2.x build with CUDA compiles it. Any diagnostic fails the check,
# and so does a header that still comes from the system's own LibTorch. The CUDA variant checks the units
# that reach CUDA code (the others read the same headers as in the CPU variant); --all-units checks all.
# Files are checked one by one (no unity batches), so that a diagnostic names its own file.
# Run before every use of a GPU host; CI runs it too.
# Usage: scripts/check-libtorch2.sh [--variant cpu|cuda|both] [--jobs N] [--all-units]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. scripts/lib/trixie.sh

variant=both
jobs="$(nproc)"
all_units=()
while [ $# -gt 0 ]; do
  case "$1" in
    --variant) variant="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --all-units) all_units=(--all-units); shift ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "check-libtorch2.sh: unknown argument '$1'; see --help" >&2; exit 2 ;;
  esac
done
case "$variant" in cpu|cuda|both) ;; *) echo "check-libtorch2.sh: --variant is cpu, cuda or both" >&2; exit 2 ;; esac
cuda_home="${CUDA_HOME:-/usr/local/cuda}"
if [ "$variant" != cpu ] && [ ! -f "$cuda_home/include/cuda_runtime_api.h" ]; then
  echo "check-libtorch2.sh: the CUDA variant needs the CUDA toolkit's headers in $cuda_home/include; set CUDA_HOME or pass --variant cpu" >&2
  exit 2
fi

# The two header packages, unpacked into the cache; fetched again only when trixie has a newer version.
headers="$batchscope_cache/libtorch2"
apt_dir="$headers/apt"
read -r -a apt_options <<< "$(trixie_apt_options "$apt_dir")"
if apt-get "${apt_options[@]}" -qq update 2> "$apt_dir/update.log"; then
  version="$(apt-cache "${apt_options[@]}" policy libtorch-dev | awk '/Candidate:/ {print $2}')"
  cuda_version="$(apt-cache "${apt_options[@]}" policy libtorch-cuda-dev | awk '/Candidate:/ {print $2}')"
  if [ "$(cat "$headers/versions" 2>/dev/null)" != "$version $cuda_version" ]; then
    rm -rf "$headers/cpu" "$headers/cuda" "$headers/debs"
    mkdir -p "$headers/debs"
    (cd "$headers/debs" && apt-get "${apt_options[@]}" -qq download libtorch-dev libtorch-cuda-dev)
    dpkg -x "$headers"/debs/libtorch-dev_*.deb "$headers/cpu"
    dpkg -x "$headers"/debs/libtorch-cuda-dev_*.deb "$headers/cuda"
    echo "$version $cuda_version" > "$headers/versions"
  fi
elif [ -f "$headers/versions" ]; then
  echo "check-libtorch2.sh: trixie's package lists could not be read ($(tail -1 "$apt_dir/update.log")); using the cached headers"
else
  echo "check-libtorch2.sh: trixie's package lists could not be read and nothing is cached: $(tail -1 "$apt_dir/update.log")" >&2
  exit 1
fi
echo "check-libtorch2: LibTorch headers $(cat "$headers/versions") (libtorch-dev, libtorch-cuda-dev) in $headers"

# The compile commands of every target, configured (not built) against the system's LibTorch.
check_build=build-check-libtorch2
cmake -S . -B "$check_build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DCMAKE_UNITY_BUILD=OFF -DBATCHSCOPE_PCH=OFF \
  -DCUDAToolkit_ROOT="$cuda_home" > "$check_build.configure.log" 2>&1 || {
  cat "$check_build.configure.log" >&2
  echo "check-libtorch2.sh: configuring $check_build failed (run scripts/setup.sh first)" >&2
  exit 1
}
rm -f "$check_build.configure.log"

variants=()
[ "$variant" = cuda ] || variants+=(cpu)
[ "$variant" = cpu ] || variants+=(cuda)
status=0
for v in "${variants[@]}"; do
  python3 scripts/lib/syntax_check.py --compile-commands "$check_build/compile_commands.json" \
    --headers "$headers/$v/usr/include" --variant "$v" --cuda-include "$cuda_home/include" \
    --jobs "$jobs" ${all_units[@]+"${all_units[@]}"} || status=1
done
exit "$status"
