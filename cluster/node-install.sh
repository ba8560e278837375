#!/bin/bash
# node-install.sh: k3s on one node, the first of cluster/README.md's three steps.
#
#   SBX_NODE_IP=10.0.0.5 node-install.sh [--dry-run] server
#   SBX_NODE_IP=10.0.0.6 node-install.sh [--dry-run] agent https://10.0.0.5:6443 /root/node-token
#
# server: the control plane (and a node that runs sandboxes too); agent: a node that joins
# SERVER_URL with the token in TOKEN_FILE (the server's /var/lib/rancher/k3s/server/node-token,
# copied over). SBX_NODE_IP is the address the node is known by (VMs often have several).
#
# Idempotent: a node where k3s already runs in that role is left alone. --dry-run prints
# every step with its command and runs none of them (nor needs root).
#
# Environment:
#   SBX_NODE_IP       the node's address (required)
#   SBX_K3S_VERSION   a k3s release to pin, e.g. v1.32.4+k3s1 (default: the stable channel)
#   SBX_DL            air-gapped: a directory holding install-k3s.sh (the official
#                     installer, https://get.k3s.io), the k3s binary and optionally
#                     k3s-airgap-images-*.tar.zst; nothing is downloaded then
#   SBX_K3S_EXTRA     more flags for k3s (word-split), e.g. "--tls-san=api.example"
set -euo pipefail

usage() {
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0" >&2
    exit 2
}

dry=0
if [ "${1:-}" = --dry-run ]; then dry=1; shift; fi
role=${1:-}
case $role in
server) [ $# -eq 1 ] || usage ;;
agent)
    [ $# -eq 3 ] || usage
    server_url=$2 token_file=$3
    case $server_url in https://?*) ;; *) echo "node-install.sh: SERVER_URL must be https://HOST:PORT" >&2; exit 2 ;; esac
    # The path goes into the service's environment file: relative would mean nothing there.
    case $token_file in /*) ;; *) echo "node-install.sh: TOKEN_FILE must be an absolute path" >&2; exit 2 ;; esac
    ;;
*) usage ;;
esac
node_ip=${SBX_NODE_IP:-}
if [ -z "$node_ip" ] || ! [[ $node_ip =~ ^[0-9A-Fa-f.:]+$ ]]; then
    echo "node-install.sh: set SBX_NODE_IP to this node's address (an IPv4 or IPv6 address)" >&2
    exit 2
fi

# shellcheck source=cluster/steps.sh
. "$(cd "$(dirname "$0")" && pwd)/steps.sh"

unit=k3s
[ "$role" = agent ] && unit=k3s-agent
other=k3s-agent
[ "$role" = agent ] && other=k3s

if [ "$dry" = 0 ] && [ "$(id -u)" != 0 ]; then
    echo "node-install.sh: run as root (it installs k3s as a system service)" >&2
    exit 1
fi
if [ -x /usr/local/bin/k3s ] && command -v systemctl >/dev/null &&
    systemctl is-active --quiet "$unit" 2>/dev/null; then
    echo "node-install.sh: k3s already runs here as $unit: nothing to do"
    exit 0
fi
if command -v systemctl >/dev/null && systemctl is-active --quiet "$other" 2>/dev/null; then
    echo "node-install.sh: this node already runs $other; uninstall it first (k3s-uninstall.sh or k3s-agent-uninstall.sh)" >&2
    exit 1
fi

exec_flags=("$role" "--node-ip=$node_ip")
if [ "$role" = server ]; then
    # No ingress controller (sandboxes get none), the admin kubeconfig readable by root only.
    exec_flags+=(--disable=traefik --write-kubeconfig-mode=0600)
fi
# shellcheck disable=SC2206 # SBX_K3S_EXTRA is a list of flags, one word each
[ -n "${SBX_K3S_EXTRA:-}" ] && exec_flags+=($SBX_K3S_EXTRA)
env_vars=("INSTALL_K3S_EXEC=${exec_flags[*]}")
[ -n "${SBX_K3S_VERSION:-}" ] && env_vars+=("INSTALL_K3S_VERSION=$SBX_K3S_VERSION")
if [ "$role" = agent ]; then
    if [ "$dry" = 0 ] && [ ! -r "$token_file" ]; then
        echo "node-install.sh: cannot read the token file $token_file" >&2
        exit 1
    fi
    env_vars+=("K3S_URL=$server_url" "K3S_TOKEN_FILE=$token_file")
fi

if [ -n "${SBX_DL:-}" ]; then
    for f in install-k3s.sh k3s; do
        if [ "$dry" = 0 ] && [ ! -f "$SBX_DL/$f" ]; then
            echo "node-install.sh: SBX_DL=$SBX_DL has no $f (see cluster/README.md, air-gapped)" >&2
            exit 1
        fi
    done
    installer=$SBX_DL/install-k3s.sh
    step "install the k3s binary from $SBX_DL" install -m 0755 "$SBX_DL/k3s" /usr/local/bin/k3s
    images=("$SBX_DL"/k3s-airgap-images-*.tar*)
    if [ -e "${images[0]}" ]; then
        step "preload the k3s images" install -D -m 0644 -t /var/lib/rancher/k3s/agent/images "${images[@]}"
    fi
    env_vars+=(INSTALL_K3S_SKIP_DOWNLOAD=true)
else
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    installer=$tmp/install-k3s.sh
    step "download the official k3s installer" curl -sfL -o "$installer" https://get.k3s.io
fi
step "install and start k3s ($role) as the $unit service" env "${env_vars[@]}" sh "$installer"

if [ "$role" = server ]; then
    node=$(hostname | tr '[:upper:]' '[:lower:]')
    wait_ready() {
        local i
        for i in $(seq 60); do
            k3s kubectl get node "$node" >/dev/null 2>&1 && break
            [ "$i" = 60 ] && { echo "node-install.sh: node $node did not register in 5 minutes" >&2; return 1; }
            sleep 5
        done
        k3s kubectl wait --for=condition=Ready "node/$node" --timeout=300s
    }
    step "wait for the node $node to be Ready (at most 10 minutes)" wait_ready
fi
if [ "$dry" = 1 ]; then
    echo "node-install.sh: dry run: nothing was done"
elif [ "$role" = server ]; then
    echo "node-install.sh: the server is up. Agents join it with its token, /var/lib/rancher/k3s/server/node-token:"
    echo "  SBX_NODE_IP=ADDR node-install.sh agent https://$node_ip:6443 TOKEN_FILE"
else
    echo "node-install.sh: the agent joined $server_url; check with \`k3s kubectl get nodes\` on the server"
fi
echo "node-install.sh: next, on every node: gvisor-node.sh"
