#!/bin/sh
# Installs every Debian 12 package sbxsh needs to build, run and test.
# Installing needs root (it uses sudo if there); with everything present, any user gets
# "all packages present" (so that `make deps && make check` runs as any user). Idempotent.
set -eu
pkgs="
  build-essential clang libclang-rt-14-dev pkg-config
  libcjson-dev libpcre2-dev libreadline-dev libcurl4-openssl-dev libyaml-dev libssl-dev musl-tools
  bash git openssh-client perl python3 python3-yaml python3-pexpect python3-kubernetes openssl jq curl
  bubblewrap iproute2 util-linux procps psmisc nghttp2-proxy
  rsync tar hyperfine valgrind strace shellcheck debootstrap tmux less vim-tiny
  nodejs
"
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
# npm installs the MCP TypeScript SDK that tests/mcp/sdk.t drives `sbx mcp` with. Debian's
# nodejs comes without it (the npm package); NodeSource's nodejs has its own and conflicts
# with Debian's npm, so the package only when the command is missing.
command -v npm >/dev/null 2>&1 || missing="$missing npm"

# gVisor. Debian 12's own runsc (2022-12) has only the ptrace platform, where every system
# call of a sandboxed program costs 30-100 us: `git status` of 10,000 files 15x the host's,
# the first sync of a big tree 20x. bookworm-backports has runsc 2024-07, whose systrap
# platform makes a system call cost a few microseconds (docs/performance.md), so on
# Debian 12 runsc comes from there; newer Debian releases have it in main. The backports
# suite is added with the mirror this machine already uses; SBX_DEPS_DEBIAN_RUNSC=1 keeps
# Debian 12's own runsc instead.
runsc_min=0.0~20240729
runsc_have=$(dpkg-query -W -f='${Status} ${Version}' runsc 2>/dev/null | sed -n 's/^install ok installed //p')
runsc_ok=''
runsc_want=" runsc>=$runsc_min"
if [ -n "$runsc_have" ] && { [ "${SBX_DEPS_DEBIAN_RUNSC:-}" = 1 ] ||
        dpkg --compare-versions "$runsc_have" ge "$runsc_min"; }; then
    runsc_ok=1
    runsc_want=''
fi

# Only installing needs root: with everything present, any user (a CI job that is not root,
# `make deps && make check`) gets the answer without sudo.
if [ -z "$missing" ] && [ -n "$runsc_ok" ]; then
    echo "deps.sh: all packages present (runsc $runsc_have)"
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null; then exec sudo "$0" "$@"; fi
    echo "deps.sh: run as root (it installs Debian packages with apt-get); missing:$missing$runsc_want" >&2
    exit 1
fi

if [ -n "$missing" ]; then
    echo "deps.sh: installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $missing
fi

if [ -n "$runsc_ok" ]; then
    :
elif [ "${SBX_DEPS_DEBIAN_RUNSC:-}" != 1 ] && grep -q '^VERSION_CODENAME=bookworm$' /etc/os-release 2>/dev/null; then
    list=/etc/apt/sources.list.d/sbxsh-bookworm-backports.sources
    if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
        mirror=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | grep -v security | head -n 1)
        [ -n "$mirror" ] || mirror=$(sed -n 's/^deb \(\[[^]]*\] \)\{0,1\}\([^ ]*\) bookworm .*/\2/p' /etc/apt/sources.list 2>/dev/null | head -n 1)
        [ -n "$mirror" ] || mirror=http://deb.debian.org/debian
        echo "deps.sh: adding bookworm-backports ($mirror) for gVisor's runsc 2024-07: $list"
        printf 'Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
            "$mirror" >"$list"
    fi
    echo "deps.sh: installing runsc from bookworm-backports"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends -t bookworm-backports runsc
else
    echo "deps.sh: installing runsc"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq --no-install-recommends runsc
fi
echo "deps.sh: all packages present (runsc $(dpkg-query -W -f='${Version}' runsc))"
