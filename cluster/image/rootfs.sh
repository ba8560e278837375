#!/bin/bash
# rootfs.sh: the runtime image's root file system built with debootstrap, for places
# without a container registry (the same as the Containerfile's: both end with setup.sh).
#
#   rootfs.sh [--tar FILE] DIR     as root, after `make` (it copies sbx-agent-static)
#
# DIR must not exist or be empty. --tar packs it as FILE afterwards (numeric owners), which
# `ctr -n k8s.io image import` or your own packaging can take.
#
# Environment:
#   SBX_DEBIAN_SUITE     the Debian release (default bookworm)
#   SBX_DEBIAN_MIRROR    the mirror (default http://deb.debian.org/debian)
#   SBX_IMAGE_PACKAGES   the packages setup.sh installs (default: the Containerfile's list)
#   SBX_AGENT            the sbx-agent to install (default: sbx-agent-static at the top)
#   SBX_BASH_SO          the sbx-bash-interactive.so to install (default: the top's)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
usage() {
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0" >&2
    exit 2
}
tar_out=
if [ "${1:-}" = --tar ]; then
    [ $# -ge 2 ] || usage
    tar_out=$2
    shift 2
fi
[ $# -eq 1 ] || usage
dir=$1
[ "$(id -u)" = 0 ] || { echo "rootfs.sh: run as root (debootstrap and chroot need it)" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "rootfs.sh: debootstrap is not installed (apt-get install debootstrap)" >&2; exit 1; }
if [ -e "$dir" ] && [ -n "$(ls -A "$dir")" ]; then
    echo "rootfs.sh: $dir is not empty" >&2
    exit 1
fi
agent=${SBX_AGENT:-$top/sbx-agent-static}
[ -x "$agent" ] || { echo "rootfs.sh: no $agent: run make first" >&2; exit 1; }
[ -f "${SBX_BASH_SO:-$top/sbx-bash-interactive.so}" ] ||
    { echo "rootfs.sh: no ${SBX_BASH_SO:-$top/sbx-bash-interactive.so}: run make first" >&2; exit 1; }
# The Containerfile's package list, so that the two stay one.
default_pkgs=$(sed -n 's/^ARG PACKAGES="\(.*\)"$/\1/p' "$here/Containerfile")
pkgs=${SBX_IMAGE_PACKAGES-$default_pkgs}

debootstrap --variant=minbase "${SBX_DEBIAN_SUITE:-bookworm}" "$dir" \
    "${SBX_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
install -D -m 0755 "$agent" "$dir/usr/local/bin/sbx-agent"
# the prompt's shell loads it (local/bash_interactive.c); built for the image's bash (Debian's)
install -D -m 0644 "${SBX_BASH_SO:-$top/sbx-bash-interactive.so}" \
    "$dir/usr/local/lib/sbxsh/sbx-bash-interactive.so"
install -m 0644 "$here/setup.sh" "$dir/tmp/setup.sh"
# apt's maintainer scripts want /proc; unmounted whatever happens.
mount -t proc proc "$dir/proc"
trap 'umount "$dir/proc" 2>/dev/null || true' EXIT
chroot "$dir" /bin/sh /tmp/setup.sh "$pkgs"
umount "$dir/proc"
trap - EXIT
if [ -n "$tar_out" ]; then
    tar --numeric-owner -C "$dir" -cf "$tar_out" .
fi
echo "rootfs.sh: $dir is ready${tar_out:+ (and $tar_out)}"
