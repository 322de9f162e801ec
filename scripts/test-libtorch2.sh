#!/usr/bin/env bash
# Builds the project and runs its whole test suite against LibTorch 2.6 on the CPU, inside a Debian trixie
# root filesystem made from Debian's packages with mmdebstrap (libtorch-dev 2.6, python3-torch 2.6, GCC 14
# and every other dependency). The system's own packages are not touched. The root filesystem (and a
# compiler cache in it) is kept in the cache directory and made again only when its package list changes.
# The tests labelled orchestration (input checking, help, sharding, cluster jobs and manifests, the campaign's
# script: nothing LibTorch takes part in) run in the main suite only; --all-tests runs them here too.
# Usage: scripts/test-libtorch2.sh [--jobs N] [--new-root] [--all-tests]
#   BATCHSCOPE_CACHE (default ~/.cache/batchscope) is where the root filesystem lives (about 2 GB).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
project="$(pwd)"
. scripts/lib/trixie.sh

jobs="$(nproc)"
new_root=0
# Killing and resuming is batchscope's own, whatever LibTorch's version: cli_kill_resume too.
selection="-LE orchestration -E ^cli_kill_resume\$"
while [ $# -gt 0 ]; do
  case "$1" in
    --jobs) jobs="$2"; shift 2 ;;
    --new-root) new_root=1; shift ;;
    --all-tests) selection=""; shift ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test-libtorch2.sh: unknown argument '$1'; see --help" >&2; exit 2 ;;
  esac
done
# Making a root filesystem and entering it with chroot need root.
if [ "$(id -u)" -ne 0 ]; then
  exec sudo --preserve-env=BATCHSCOPE_CACHE,XDG_CACHE_HOME "$0" "$@"
fi
if ! command -v mmdebstrap > /dev/null; then
  echo "test-libtorch2: installing mmdebstrap"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap > /dev/null
fi

packages="libtorch-dev,python3-torch,libyaml-cpp-dev,libspdlog-dev,libcxxopts-dev,nlohmann-json3-dev,libgtest-dev"
packages+=",gnuplot-nox,libopenblas0-openmp,zlib1g-dev,cmake,make,g++,python3,ccache,mount"
# The Kubernetes client's models, whose trixie version knows every field batchscope's Job uses.
packages+=",python3-kubernetes"
# pandas, which a test reads logs with as the README shows.
packages+=",python3-pandas"
root="$batchscope_cache/trixie-root"
stamp="$packages $(trixie_mirror)"
t0=$SECONDS
if [ "$new_root" -eq 1 ] || [ "$(cat "$root.packages" 2>/dev/null)" != "$stamp" ] || [ ! -x "$root/usr/bin/cmake" ]; then
  echo "test-libtorch2: making the trixie root filesystem in $root"
  rm -rf "$root" "$root.new" "$root.packages"
  mkdir -p "$batchscope_cache"
  # Made aside and moved into place, so that an interrupted run never leaves a half-made one behind.
  mmdebstrap --quiet --variant=apt --include="$packages" trixie "$root.new" "$(trixie_mirror)"
  mv "$root.new" "$root"
  echo "$stamp" > "$root.packages"
fi
root_s=$((SECONDS - t0))
echo "test-libtorch2: $(chroot "$root" dpkg-query -W -f='libtorch-dev ${Version}, ' libtorch-dev)$(chroot "$root" g++ --version | head -1)"

# The working tree as git sees it (tracked and untracked but not ignored files), as a fresh clone has it.
rm -rf "$root/src.new"
mkdir -p "$root/src.new"
if git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
  git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
    [ -e "$f" ] && printf '%s\0' "$f"
  done | tar --null -cf - -T - | tar -xf - -C "$root/src.new"
else
  tar --exclude='./build*' --exclude=./runs --exclude=./.devdeps -cf - . | tar -xf - -C "$root/src.new"
fi
# The build directory stays between runs, and make goes by the files' times: a file keeps the time of the
# last copy where its content is the same, and takes the present time where it changed (even where the
# working tree's time is older than the last build, a file edited while that build ran). Without a last
# copy, what the build directory was built from is unknown: every file takes the present time (ccache
# makes the rebuild short).
(cd "$root/src.new" && find . -type f -print0) | while IFS= read -r -d '' f; do
  if [ -f "$root/src/$f" ] && cmp -s "$root/src.new/$f" "$root/src/$f"; then
    touch -r "$root/src/$f" "$root/src.new/$f"
  else
    touch "$root/src.new/$f"
  fi
done
rm -rf "$root/src"
mv "$root/src.new" "$root/src"

# A private mount namespace: /proc, /sys and /dev/shm are mounted for the tests and vanish with it.
inside=$(cat <<EOF
set -euo pipefail
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8
export CCACHE_DIR=/var/cache/ccache CCACHE_MAXSIZE=2G
# At -O1: this build checks that the code compiles and behaves with LibTorch 2.6, whose kernels are the
# tests' seconds, and -O1 compiles in about half -O3's time.
cmake -S /src -B /build -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache > /build.configure.log \
  || { cat /build.configure.log; exit 1; }
grep 'batchscope: LibTorch' /build.configure.log || true
start=\$(date +%s)
cmake --build /build -j $jobs
echo "test-libtorch2: build \$(( \$(date +%s) - start )) s"
start=\$(date +%s)
ctest --test-dir /build --output-on-failure -j $jobs $selection
echo "test-libtorch2: tests \$(( \$(date +%s) - start )) s"
EOF
)
t1=$SECONDS
unshare --mount --fork bash -c '
  set -e
  root="$1"
  # The root filesystem as a mount point of its own, so that the tests can make mount namespaces in it.
  mount --bind "$root" "$root"
  mount -t proc proc "$root/proc"
  mount --rbind /sys "$root/sys"
  mount -t tmpfs tmpfs "$root/dev/shm"
  exec chroot "$root" /bin/bash -c "$2"
' unshare "$root" "$inside"
echo "test-libtorch2: LibTorch 2.6 suite passed: root filesystem ${root_s} s, build and tests $((SECONDS - t1)) s"
