#!/bin/bash
# gvisor-node.sh: gVisor on one k3s node (after node-install.sh): runsc and its containerd
# shim, k3s's containerd told about the `runsc` runtime, and a check that a pod starts under
# it. No KVM needed (runsc's default platform, systrap, runs on ordinary VMs).
#
#   gvisor-node.sh [--dry-run]      on the node, as root
#   gvisor-node.sh --check NODE     from any machine with kubectl and the admin kubeconfig:
#                                   start one pod under gvisor on NODE (the last step, which
#                                   an agent node without a kubeconfig cannot do itself)
#   gvisor-node.sh --template-only  only the containerd template(s), nothing installed or
#                                   restarted: for a node image baked before k3s first starts
#
# The runtime goes into k3s's containerd config *template*, not config.toml (k3s rewrites
# that at every start): config-v3.toml.tmpl (containerd 2.x, k3s 1.31+) and config.toml.tmpl
# (containerd 1.x), both starting from k3s's own base template ({{ template "base" . }}) so
# that a k3s upgrade keeps its defaults and ours. An existing template of yours gets the
# runsc section appended (once); if you keep only config.toml.tmpl, only that one is written.
# Idempotent; --dry-run prints every step and runs none (nor needs root).
#
# Environment:
#   SBX_GVISOR_RELEASE  a gVisor release such as 20250512 (default: latest)
#   SBX_DL              air-gapped: a directory holding runsc, containerd-shim-runsc-v1 and
#                       their .sha512 files; nothing is downloaded then
#   SBX_CHECK_IMAGE     the image of the check pod (default docker.io/library/busybox:1.36;
#                       air-gapped: one your registry has)
#   SBX_K3S_DATA_DIR    k3s's data directory (default /var/lib/rancher/k3s)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
usage() {
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0" >&2
    exit 2
}

dry=0 check_node='' template_only=0
case ${1:-} in
--dry-run) dry=1; [ $# -eq 1 ] || usage ;;
--template-only) template_only=1; [ $# -eq 1 ] || usage ;;
--check) [ $# -eq 2 ] || usage; check_node=$2 ;;
"") ;;
*) usage ;;
esac

# shellcheck source=cluster/steps.sh
. "$(cd "$(dirname "$0")" && pwd)/steps.sh"
# done_step DESCRIPTION: a step already done on this node.
done_step() {
    n=$((n + 1))
    printf 'step %d: %s: already done\n' "$n" "$1"
}

# The check: one pod under the gvisor RuntimeClass on NODE, whose dmesg must be gVisor's.
check_pod() {
    local node=$1 kc=(kubectl) pod=sbxsh-gvisor-check i phase=
    command -v kubectl >/dev/null || kc=(k3s kubectl)
    "${kc[@]}" apply -f "$here/runtimeclass.yaml"
    "${kc[@]}" -n default delete pod "$pod" --ignore-not-found --wait=true >/dev/null
    "${kc[@]}" -n default apply -f - <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $pod
  labels: {app.kubernetes.io/managed-by: sbxsh}
spec:
  nodeName: $node
  runtimeClassName: gvisor
  restartPolicy: Never
  automountServiceAccountToken: false
  containers:
  - name: check
    image: ${SBX_CHECK_IMAGE:-docker.io/library/busybox:1.36}
    command: ["dmesg"]
    resources: {limits: {cpu: 100m, memory: 64Mi}}
EOF
    for i in $(seq 90); do
        phase=$("${kc[@]}" -n default get pod "$pod" -o 'jsonpath={.status.phase}' 2>/dev/null || true)
        case $phase in Succeeded | Failed) break ;; esac
        [ "$i" = 90 ] || sleep 2
    done
    local log
    log=$("${kc[@]}" -n default logs "$pod" 2>&1 || true)
    "${kc[@]}" -n default delete pod "$pod" --ignore-not-found --wait=false >/dev/null
    if [ "$phase" != Succeeded ] || ! grep -q gVisor <<<"$log"; then
        echo "gvisor-node.sh: the check pod on $node did not run under gVisor (phase: ${phase:-none})" >&2
        printf '%s\n' "$log" | tail -5 >&2
        echo "gvisor-node.sh: see \`kubectl -n default describe pod $pod\` and the node's k3s log" >&2
        return 1
    fi
    echo "gvisor-node.sh: a pod on $node runs under gVisor"
}

if [ -n "$check_node" ]; then
    check_pod "$check_node"
    exit
fi

data=${SBX_K3S_DATA_DIR:-/var/lib/rancher/k3s}
tmpl_dir=$data/agent/etc/containerd
if [ "$dry" = 0 ] && [ "$template_only" = 0 ] && [ "$(id -u)" != 0 ]; then
    echo "gvisor-node.sh: run as root (it installs binaries and edits k3s's containerd template)" >&2
    exit 1
fi
if [ "$template_only" = 1 ]; then
    unit=none
elif [ -f /etc/systemd/system/k3s.service ]; then
    unit=k3s
elif [ -f /etc/systemd/system/k3s-agent.service ]; then
    unit=k3s-agent
elif [ "$dry" = 1 ]; then
    unit=k3s
    echo "gvisor-node.sh: no k3s service here yet (node-install.sh first); assuming a server"
else
    echo "gvisor-node.sh: no k3s service here: run node-install.sh first" >&2
    exit 1
fi

# 1. runsc and containerd-shim-runsc-v1, checked against their sha512 files.
bins=(runsc containerd-shim-runsc-v1)
if [ "$template_only" = 1 ]; then
    :
elif [ -x /usr/local/bin/runsc ] && [ -x /usr/local/bin/containerd-shim-runsc-v1 ]; then
    done_step "runsc and containerd-shim-runsc-v1 in /usr/local/bin"
else
    if [ -n "${SBX_DL:-}" ]; then
        src=$SBX_DL
    else
        src=$(mktemp -d)
        trap 'rm -rf "$src"' EXIT
        url=https://storage.googleapis.com/gvisor/releases/release/${SBX_GVISOR_RELEASE:-latest}/$(uname -m)
        # shellcheck disable=SC2317 # run through step
        fetch() {
            local b
            for b in "${bins[@]}"; do
                curl -fsSL -o "$src/$b" "$url/$b"
                curl -fsSL -o "$src/$b.sha512" "$url/$b.sha512"
            done
        }
        step "download runsc and containerd-shim-runsc-v1 from $url" fetch
    fi
    # The .sha512 files name the binaries relative to their directory.
    step "check their sha512 sums" bash -c 'cd "$1" && sha512sum -c runsc.sha512 containerd-shim-runsc-v1.sha512' _ "$src"
    step "install them in /usr/local/bin (on k3s's PATH)" install -m 0755 "$src/runsc" "$src/containerd-shim-runsc-v1" /usr/local/bin/
fi

# 2. The runsc runtime in k3s's containerd template(s).
begin='# BEGIN sbxsh: gVisor (cluster/gvisor-node.sh)'
end='# END sbxsh'
block_v3="$begin
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runsc]
  runtime_type = 'io.containerd.runsc.v1'
$end"
block_v2="$begin
[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runsc]
  runtime_type = \"io.containerd.runsc.v1\"
$end"
# add_runsc FILE BLOCK: FILE made from k3s's base template plus BLOCK, or BLOCK appended.
# shellcheck disable=SC2317 # run through step
add_runsc() {
    mkdir -p "$(dirname "$1")"
    if [ -f "$1" ]; then
        printf '\n%s\n' "$2" >>"$1"
    else
        printf '{{ template "base" . }}\n\n%s\n' "$2" >"$1.sbxsh-tmp"
        mv "$1.sbxsh-tmp" "$1"
    fi
}
v3=$tmpl_dir/config-v3.toml.tmpl v2=$tmpl_dir/config.toml.tmpl
targets=()
if [ -f "$v3" ]; then
    targets=(v3)
elif [ -f "$v2" ]; then
    # Yours, and k3s with containerd 2 falls back to it when there is no v3 template: a v3
    # template of ours beside it would hide it.
    targets=(v2)
else
    targets=(v3 v2)
fi
changed=0
for t in "${targets[@]}"; do
    if [ "$t" = v3 ]; then f=$v3 b=$block_v3; else f=$v2 b=$block_v2; fi
    if [ -f "$f" ] && grep -qF "$begin" "$f"; then
        done_step "the runsc runtime in $f"
    elif [ -f "$f" ]; then
        step "append the runsc runtime to your $f" add_runsc "$f" "$b"
        changed=1
    else
        step "write $f: k3s's base template and the runsc runtime" add_runsc "$f" "$b"
        changed=1
    fi
done

[ "$template_only" = 1 ] && exit 0

# 3. k3s regenerates config.toml from the template at start.
# shellcheck disable=SC2317 # run through step
wait_config() {
    local i
    for i in $(seq 60); do
        grep -q 'io.containerd.runsc.v1' "$tmpl_dir/config.toml" 2>/dev/null && return 0
        [ "$i" = 60 ] || sleep 2
    done
    echo "gvisor-node.sh: $tmpl_dir/config.toml has no runsc runtime after 2 minutes; see \`journalctl -u $unit\`" >&2
    return 1
}
if [ "$changed" = 1 ] || ! grep -q 'io.containerd.runsc.v1' "$tmpl_dir/config.toml" 2>/dev/null; then
    step "restart $unit so that containerd reads the template" systemctl restart "$unit"
    step "wait for containerd's config to name runsc (at most 2 minutes)" wait_config
else
    done_step "containerd's config names runsc"
fi

# 4. One pod under gvisor on this node, where a kubeconfig is at hand (a server).
node=$(hostname | tr '[:upper:]' '[:lower:]')
if [ "$unit" = k3s ]; then
    step "start one pod under the gvisor RuntimeClass on $node" check_pod "$node"
else
    echo "gvisor-node.sh: an agent node has no kubeconfig: check it from the server with"
    echo "  cluster/gvisor-node.sh --check $node"
fi
[ "$dry" = 1 ] && echo "gvisor-node.sh: dry run: nothing was done"
exit 0
