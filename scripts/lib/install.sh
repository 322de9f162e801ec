# Sourced: install_missing PACKAGE... installs from Debian's packages those not installed yet.
install_missing() {
  local missing=() p
  for p in "$@"; do
    grep -q "install ok installed" <<< "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" || missing+=("$p")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  echo "installing ${missing[*]}"
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo > /dev/null; then
      echo "install.sh: installing needs root, and sudo is not installed: run this as root, or install sudo," \
           "or install these packages yourself: ${missing[*]}" >&2
      return 1
    fi
    sudo=(sudo)
  fi
  "${sudo[@]}" apt-get update -qq
  # Through env: sudo's env_reset would drop a variable set before it, and a question asked with its
  # output sent to /dev/null would wait unseen.
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" > /dev/null
}
