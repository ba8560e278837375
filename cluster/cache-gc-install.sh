#!/bin/bash
# cache-gc-install.sh: the per-tenant package caches on one node, and a systemd timer that
# prunes them daily.
#
#   cache-gc-install.sh [--dry-run] TENANT...
#
# Each TENANT gets /var/lib/sbxsh/cache/TENANT, owned by the sandboxes' uid (10001) and
# mode 0700: the hostPath that `sbx render-pool --cache-mount PATH` mounts (the pod does not
# start on a node without it). The timer (sbxsh-cache-gc.timer, daily) deletes what was not
# read for SBX_CACHE_MAX_AGE_DAYS (default 14) days, and empty directories. It runs as the
# sandboxes' uid, without network and with the rest of the system read-only: a cache is
# written by sandboxes, so what prunes it is given no more than they have.
# Run it again with more tenants to add them; idempotent; --dry-run prints every step.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
usage() {
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0" >&2
    exit 2
}
dry=0
if [ "${1:-}" = --dry-run ]; then dry=1; shift; fi
[ $# -ge 1 ] || usage
for t in "$@"; do
    # The same rule as sbx render-pool --tenant: a DNS label of at most 40 characters.
    if ! [[ $t =~ ^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$ ]]; then
        echo "cache-gc-install.sh: '$t' is not a tenant name (a DNS label, at most 40 characters)" >&2
        exit 2
    fi
done
uid=10001
days=${SBX_CACHE_MAX_AGE_DAYS:-14}
[[ $days =~ ^[1-9][0-9]{0,3}$ ]] || { echo "cache-gc-install.sh: SBX_CACHE_MAX_AGE_DAYS must be a number of days" >&2; exit 2; }
if [ "$dry" = 0 ]; then
    [ "$(id -u)" = 0 ] || { echo "cache-gc-install.sh: run as root" >&2; exit 1; }
    [ -d /run/systemd/system ] || { echo "cache-gc-install.sh: needs systemd (the timer is a systemd unit)" >&2; exit 1; }
fi

# shellcheck source=cluster/steps.sh
. "$(cd "$(dirname "$0")" && pwd)/steps.sh"
# shellcheck disable=SC2317 # run through step
write() { # FILE MODE CONTENT: written to a temporary file, then renamed
    printf '%s\n' "$3" >"$1.tmp"
    chmod "$2" "$1.tmp"
    mv "$1.tmp" "$1"
}

step "the cache root" install -d -o root -g root -m 0755 /var/lib/sbxsh /var/lib/sbxsh/cache
for t in "$@"; do
    step "tenant $t's cache, owned by uid $uid" install -d -o "$uid" -g "$uid" -m 0700 "/var/lib/sbxsh/cache/$t"
done

step "the pruning script (cluster/cache-gc)" install -D -m 0755 "$here/cache-gc" /usr/local/libexec/sbxsh/cache-gc

service="[Unit]
Description=Prune sbxsh's per-tenant package caches
Documentation=file:///usr/local/share/doc/sbxsh/cluster/README.md

[Service]
Type=oneshot
ExecStart=/usr/local/libexec/sbxsh/cache-gc $days
User=$uid
Group=$uid
NoNewPrivileges=yes
PrivateNetwork=yes
PrivateTmp=yes
ProtectSystem=strict
ProtectHome=yes
ReadWritePaths=/var/lib/sbxsh/cache
Nice=19
IOSchedulingClass=idle"
timer="[Unit]
Description=Prune sbxsh's per-tenant package caches daily

[Timer]
OnCalendar=daily
RandomizedDelaySec=1h
Persistent=true

[Install]
WantedBy=timers.target"
step "the service unit" write /etc/systemd/system/sbxsh-cache-gc.service 0644 "$service"
step "the timer unit" write /etc/systemd/system/sbxsh-cache-gc.timer 0644 "$timer"
step "reload systemd" systemctl daemon-reload
step "enable and start the daily timer" systemctl enable --now sbxsh-cache-gc.timer
[ "$dry" = 1 ] && echo "cache-gc-install.sh: dry run: nothing was done"
exit 0
