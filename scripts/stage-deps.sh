#!/usr/bin/env bash
# Stages the C++ libraries that a host or image with only PyTorch lacks (yaml-cpp, spdlog, fmt, cxxopts,
# nlohmann-json, GoogleTest, zlib): Debian 12 (bookworm) packages, downloaded and unpacked, not installed,
# so they can travel to a machine that reaches no package registry. scripts/build-torch.sh takes the
# result with --deps DIR/usr.
# Usage: scripts/stage-deps.sh [--into DIR]   (default: .devdeps/root in the project's root)
#        EXTRA_DEBS="pkg ..." adds packages to the list.
set -euo pipefail

into=""
while [ $# -gt 0 ]; do
  case "$1" in
    --into) [ $# -ge 2 ] || { echo "stage-deps.sh: --into needs a directory" >&2; exit 2; }
            into="$2"; shift 2 ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "stage-deps.sh: unknown argument '$1'; see --help" >&2; exit 2 ;;
  esac
done

if [ -z "$into" ]; then
  cd "$(dirname "${BASH_SOURCE[0]}")/.."
  into=.devdeps/root
  # .gitignore has /.devdeps/ already; the exclude line keeps an older checkout's status clean too.
  if exclude="$(git rev-parse --git-path info/exclude 2>/dev/null)"; then
    mkdir -p "$(dirname "$exclude")"
    grep -qx '/.devdeps/' "$exclude" 2>/dev/null || echo '/.devdeps/' >> "$exclude"
  fi
fi
mkdir -p "$into"
into="$(cd "$into" && pwd)"

# The versioned names (libyaml-cpp0.7, libspdlog1.10, libfmt9) are bookworm's.
pkgs="libyaml-cpp-dev libyaml-cpp0.7 libspdlog-dev libspdlog1.10 libfmt-dev libfmt9 libcxxopts-dev
      nlohmann-json3-dev libgtest-dev googletest zlib1g-dev zlib1g ${EXTRA_DEBS:-}"
debs="$(mktemp -d)"
trap 'rm -rf "$debs"' EXIT
# apt's download user must be able to write there, or apt warns that it fetches as root.
chmod 755 "$debs"
# shellcheck disable=SC2086  # the list is split into package names on purpose
if ! (cd "$debs" && apt-get download $pkgs > /dev/null 2>&1); then
  # A fresh system (a debian:bookworm image) has no package lists yet.
  if ! (apt-get update > /dev/null && cd "$debs" && apt-get download $pkgs); then
    echo "stage-deps.sh: apt-get could not download the packages; they are Debian 12 (bookworm)'s, so run this on bookworm (or in a debian:bookworm container) with its package sources reachable" >&2
    exit 1
  fi
fi
for f in "$debs"/*.deb; do dpkg -x "$f" "$into"; done

# Development symlinks that point at an absolute path (libz.so -> /lib/...) would lead out of the staged
# tree on the machine that uses it: they are made relative to their staged target where it exists.
find "$into" -type l | while read -r link; do
  target="$(readlink "$link")"
  case "$target" in
    /*) if [ -e "$into$target" ]; then
          ln -sfn "$(realpath --relative-to="$(dirname "$link")" "$into$target")" "$link"
        fi ;;
  esac
done
echo "stage-deps: $(du -sh "$into" | cut -f1) staged in $into; build with scripts/build-torch.sh --deps $into/usr"
