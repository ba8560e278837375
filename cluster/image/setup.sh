#!/bin/sh
# setup.sh PACKAGES: the runtime image's last step, run as root inside its root file system
# by both recipes (Containerfile, rootfs.sh), so that they build the same thing: PACKAGES
# installed, the sandbox user (uid 10001, as `sbx render-pool` runs pods), sbx-agent at
# /usr/local/bin, sbx-bash-interactive.so at /usr/local/lib/sbxsh, and nothing a scanner would flag as leftovers (package lists and caches,
# logs, temporary files).
set -eu
export DEBIAN_FRONTEND=noninteractive
if [ -n "${1:-}" ]; then
    apt-get update -qq
    # shellcheck disable=SC2086 # a list of package names
    apt-get install -y -qq --no-install-recommends $1
fi
# The user, written directly: minbase has no useradd.
grep -q '^sbx:' /etc/group || echo 'sbx:x:10001:' >>/etc/group
grep -q '^sbx:' /etc/passwd || echo 'sbx:x:10001:10001:sbxsh sandbox:/home/sbx:/bin/bash' >>/etc/passwd
if [ -f /etc/shadow ] && ! grep -q '^sbx:' /etc/shadow; then echo 'sbx:!:19000::::::' >>/etc/shadow; fi
install -d -o 10001 -g 10001 -m 0755 /home/sbx
chmod 0755 /usr/local/bin/sbx-agent
chmod 0644 /usr/local/lib/sbxsh/sbx-bash-interactive.so
/usr/local/bin/sbx-agent --version >/dev/null
apt-get clean
rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/debconf/*-old /var/log/apt \
    /var/log/dpkg.log /var/log/alternatives.log /var/log/bootstrap.log /tmp/* /var/tmp/* \
    /root/.cache
