# Sourced by the LibTorch 2.x checks. Debian's next release (trixie) ships LibTorch 2.6; it is reached
# through apt's own options with a private sources list and state directory, so the system's sources and
# its installed packages are never touched.

# Where fetched packages and the trixie root filesystem are kept between runs on this machine.
batchscope_cache="${BATCHSCOPE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/batchscope}"

# The Debian mirror the system already uses (its deb822 or one-line sources), else Debian's own.
trixie_mirror() {
  local uri=""
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    uri="$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)"
  fi
  if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
    uri="$(awk '$1 == "deb" && $0 !~ /security/ {for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; exit}}' /etc/apt/sources.list)"
  fi
  echo "${uri:-http://deb.debian.org/debian}"
}

# Prints apt's options for a private trixie setup under $1 (created if missing): its own sources list,
# state, cache and an empty dpkg status, so nothing installed here shapes what apt picks.
trixie_apt_options() {
  local dir="$1"
  mkdir -p "$dir/etc/sources.list.d" "$dir/etc/preferences.d" "$dir/state/lists/partial" \
           "$dir/cache/archives/partial"
  : > "$dir/state/status"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $(trixie_mirror) trixie main contrib" \
    > "$dir/etc/sources.list"
  echo "-o Dir::Etc::SourceList=$dir/etc/sources.list -o Dir::Etc::SourceParts=$dir/etc/sources.list.d" \
       "-o Dir::Etc::Preferences=$dir/etc/preferences -o Dir::Etc::PreferencesParts=$dir/etc/preferences.d" \
       "-o Dir::State=$dir/state -o Dir::State::status=$dir/state/status -o Dir::Cache=$dir/cache" \
       "-o Debug::NoLocking=1 -o APT::Sandbox::User=root"
}
