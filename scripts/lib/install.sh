# Sourced: install_missing PACKAGE... installs from Debian's packages those not installed yet.
install_missing() {
  local missing=() p
  for p in "$@"; do
    grep -q "install ok installed" <<< "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" || missing+=("$p")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  echo "installing ${missing[*]}"
  local sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" > /dev/null
}
