#!/bin/sh
# Installs every Debian 12 package sbxsh needs to build, run and test.
# Run as root (or through sudo). Idempotent.
set -eu
pkgs="
  build-essential clang libclang-rt-14-dev pkg-config
  libcjson-dev libreadline-dev libcurl4-openssl-dev libyaml-dev libssl-dev musl-tools
  bash git openssh-client perl python3 python3-yaml openssl jq curl
  runsc bubblewrap iproute2 util-linux procps psmisc
  rsync tar hyperfine valgrind strace shellcheck debootstrap tmux
"
if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null; then exec sudo "$0" "$@"; fi
    echo "deps.sh: run as root (it installs Debian packages with apt-get)" >&2
    exit 1
fi
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "deps.sh: installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $missing
fi
echo "deps.sh: all packages present"
