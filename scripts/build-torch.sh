#!/usr/bin/env bash
# Builds batchscope against the LibTorch of the PyTorch that Python imports (a pip or conda install, with
# CUDA where it has it): the build of the container image and of GPU hosts.
# Usage: scripts/build-torch.sh [options] [-- extra cmake arguments]
#   --build-dir DIR  the build tree (default build-gpu)
#   --deps PREFIX    libraries staged by scripts/stage-deps.sh (e.g. .devdeps/root/usr)
#   --prefix DIR     install into DIR (DIR/bin/batchscope runs with no LD_LIBRARY_PATH)
#   --no-tests       build the batchscope program only, without the tests
#   --bench          with --no-tests: build bench_overhead too (the step against PyTorch-in-Python's)
#   --remove-build   remove the build tree once installed (needs --prefix)
#   --system-torch   the LibTorch CMake finds by itself (e.g. the distribution's), not Python's
#   --python PATH    the Python whose torch is used (default: $PYTHON, else python3)
set -euo pipefail

usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; }
refuse() { echo "build-torch.sh: $*" >&2; exit 2; }
absolute() { realpath -m -- "$1"; }

build_dir=build-gpu
deps=""
prefix=""
tests=ON
remove_build=0
bench=0
system_torch=0
python="${PYTHON:-python3}"
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir|--deps|--prefix|--python)
      [ $# -ge 2 ] || refuse "$1 needs a value; see --help"
      case "$1" in
        --build-dir) build_dir="$2" ;;
        --deps) deps="$2" ;;
        --prefix) prefix="$2" ;;
        --python) python="$2" ;;
      esac
      shift 2 ;;
    --no-tests) tests=OFF; shift ;;
    --bench) bench=1; shift ;;
    --remove-build) remove_build=1; shift ;;
    --system-torch) system_torch=1; shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; break ;;
    *) refuse "unknown argument '$1'; see --help" ;;
  esac
done

# Paths are taken relative to where the script is called from, then the work happens in the project's root.
build_dir="$(absolute "$build_dir")"
[ -z "$deps" ] || deps="$(absolute "$deps")"
[ -z "$prefix" ] || prefix="$(absolute "$prefix")"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

[ "$remove_build" -eq 0 ] || [ -n "$prefix" ] || refuse "--remove-build removes what --prefix would keep; give --prefix DIR too"
case "$root/" in "${build_dir%/}"/*) refuse "the build tree $build_dir holds the sources; choose another --build-dir" ;; esac
if [ -n "$deps" ] && [ ! -d "$deps/include" ]; then
  refuse "$deps has no include/; pass the usr/ of a staged tree (scripts/stage-deps.sh stages .devdeps/root, so --deps .devdeps/root/usr)"
fi

prefix_path=()
# CMake puts the directories of linked libraries into the installed program's RUNPATH only when they lie
# outside the source and build trees; staged libraries (.devdeps/) and a project-local Python do not.
install_rpath=()
if [ "$system_torch" -eq 0 ]; then
  # Import warnings (NumPy missing, say) go to stderr and stay out of what is read here.
  info="$("$python" - <<'PY'
import os
import torch
cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
print(torch.utils.cmake_prefix_path)
print(torch._C._GLIBCXX_USE_CXX11_ABI)
print(torch.version.cuda or "")
print(os.path.join(os.path.dirname(torch.__file__), "lib"))
print(f"torch {torch.__version__}, CUDA {torch.version.cuda or 'none'}, cuDNN {cudnn or 'none'}, "
      f"CXX11 ABI {torch._C._GLIBCXX_USE_CXX11_ABI} ({torch.__file__})")
PY
)" || refuse "'$python' cannot import torch (see above); pass --python with a Python that has PyTorch, or --system-torch"
  torch_prefix="$(echo "$info" | sed -n 1p)"
  abi="$(echo "$info" | sed -n 2p)"
  torch_cuda="$(echo "$info" | sed -n 3p)"
  torch_lib="$(echo "$info" | sed -n 4p)"
  echo "$info" | sed -n 5p
  if [ "$abi" != True ]; then
    refuse "this PyTorch's LibTorch uses the old C++ ABI (torch._C._GLIBCXX_USE_CXX11_ABI is $abi), which cannot link with the distribution's yaml-cpp and spdlog; use PyTorch 2.7 or later."
  fi
  prefix_path+=("$torch_prefix")
  [ ! -d "$torch_lib" ] || install_rpath+=("$torch_lib")
else
  echo "torch: the LibTorch CMake finds by itself (its version is on the 'batchscope: LibTorch' line below)"
fi
if command -v nvidia-smi > /dev/null; then
  echo "GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)"
fi

# LibTorch's header is parsed in each unit here (BATCHSCOPE_PCH=OFF): its precompiled header has been
# built against Debian's LibTorch only, and a GPU host's cores make the build short without it
# (`-- -DBATCHSCOPE_PCH=ON` turns it on).
# Warnings are warnings here (BATCHSCOPE_WERROR=OFF): the compiler is the host's or the image's, not the
# g++ 12 and clang that CI builds with under -Werror.
cmake_args=(-DCMAKE_BUILD_TYPE=Release "-DBATCHSCOPE_BUILD_TESTS=$tests" -DBATCHSCOPE_PCH=OFF -DBATCHSCOPE_WERROR=OFF)
# The reference checks of the tests build models in PyTorch itself: with this Python's torch.
[ "$system_torch" -eq 1 ] || [ "$tests" = OFF ] || cmake_args+=("-DBATCHSCOPE_PYTHON=$(command -v "$python")")
if [ -n "$deps" ]; then
  multiarch="$(uname -m)-linux-gnu"
  prefix_path+=("$deps" "$deps/lib/$multiarch/cmake" "$deps/share/cmake")
  install_rpath+=("$deps/lib/$multiarch")
  # Only for the build: the unit tests run at build time to list their cases, and a staged library's own
  # dependencies (spdlog's fmt) are found by name. The installed program carries its RUNPATH instead.
  export LD_LIBRARY_PATH="$deps/lib/$multiarch${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
if [ "${#prefix_path[@]}" -gt 0 ]; then
  cmake_args+=("-DCMAKE_PREFIX_PATH=$(IFS=';'; echo "${prefix_path[*]}")")
fi
if [ "${#install_rpath[@]}" -gt 0 ]; then
  cmake_args+=("-DCMAKE_INSTALL_RPATH=$(IFS=';'; echo "${install_rpath[*]}")")
fi
# LibTorch's CMake files enable the CUDA language when LibTorch has CUDA; nvcc is often not on PATH.
if [ -n "${torch_cuda:-}" ]; then
  nvcc="$(command -v nvcc || true)"
  [ -n "$nvcc" ] || [ ! -x /usr/local/cuda/bin/nvcc ] || nvcc=/usr/local/cuda/bin/nvcc
  [ -z "$nvcc" ] || cmake_args+=("-DCMAKE_CUDA_COMPILER=$nvcc")
fi
# A generator can only be chosen for a new build tree.
if [ ! -f "$build_dir/CMakeCache.txt" ] && command -v ninja > /dev/null; then
  cmake_args+=(-G Ninja)
fi

cmake -S "$root" -B "$build_dir" "${cmake_args[@]}" "$@"
targets=()
[ "$tests" = ON ] || targets=(--target batchscope)
cmake --build "$build_dir" -j "$(nproc)" "${targets[@]}"
echo "built: $build_dir/batchscope"
# The overhead benchmark on its own, after the program: where it does not build, the program still runs
# (and only the benchmark's item fails).
if [ "$tests" = OFF ] && [ "$bench" -eq 1 ]; then
  if cmake --build "$build_dir" -j "$(nproc)" --target bench_overhead; then
    echo "built: $build_dir/bench_overhead"
  else
    echo "build-torch.sh: bench_overhead did not build (above); batchscope did" >&2
  fi
fi

[ -n "$prefix" ] || exit 0
cmake --install "$build_dir" --prefix "$prefix"
if [ "$remove_build" -eq 1 ]; then
  rm -rf -- "$build_dir"
  echo "removed: $build_dir"
fi
# The installed program on its own, without the LD_LIBRARY_PATH above: every library found, and it starts
# with an empty environment. The GPU driver's own libraries come with the driver at run time (an image
# is built without one), so only their absence is let pass.
installed="$prefix/bin/batchscope"
missing="$(env -i PATH=/usr/bin:/bin ldd "$installed" | awk '$2 == "=>" && $3 == "not" {print $1}')"
driver_missing="$(echo "$missing" | grep -E '^lib(cuda|nvidia-ml)\.so' || true)"
other_missing="$(echo "$missing" | grep -vE '^lib(cuda|nvidia-ml)\.so' || true)"
if [ -n "$other_missing" ]; then
  echo "build-torch.sh: the installed $installed cannot find $(tr "\n" " " <<< "$other_missing")" >&2
  exit 1
fi
if [ -z "$driver_missing" ]; then
  env -i "$installed" --version
else
  echo "no GPU driver here: $(tr "\n" " " <<< "$driver_missing")comes with it at run time"
fi
echo "installed: $installed"
