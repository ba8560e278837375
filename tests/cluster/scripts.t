#!/bin/bash
# The node scripts' --dry-run step lists (what a platform team reads before running them),
# their decisions from the node's state (an existing containerd template is appended to,
# once), and their refusals of bad arguments.
. "$(dirname "$0")/../lib/tap.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
C=$top/cluster
T=$SBX_TEST_TMP
node=$(hostname | tr '[:upper:]' '[:lower:]')

steps() { grep '^step ' <<<"$1" | sed 's/^step [0-9]*: //'; }
cmd_of() { # OUTPUT N: the command line of step N
    awk -v n="$2" '/^step /{s++} s==n && /^  \$/{print; exit}' <<<"$1"
}

# node-install.sh
out=$(SBX_NODE_IP=10.0.0.5 "$C/node-install.sh" --dry-run server 2>&1); rc=$?
is "$rc" 0 "node-install.sh --dry-run server: exit 0"
is "$(steps "$out")" "download the official k3s installer
install and start k3s (server) as the k3s service
wait for the node $node to be Ready (at most 10 minutes)" "node-install.sh server: the steps"
like "$(cmd_of "$out" 1)" 'curl -sfL -o .*/install-k3s.sh https://get.k3s.io$' "... the installer from get.k3s.io"
like "$(cmd_of "$out" 2)" '^  \$ env INSTALL_K3S_EXEC=server\\ --node-ip=10\.0\.0\.5\\ --disable=traefik\\ --write-kubeconfig-mode=0600 sh ' \
    "... run with INSTALL_K3S_EXEC: the role, SBX_NODE_IP, no traefik, a root-only kubeconfig"
like "$out" 'dry run: nothing was done' "... and says it did nothing"

mkdir -p "$T/dl"
touch "$T/dl/install-k3s.sh" "$T/dl/k3s" "$T/dl/k3s-airgap-images-amd64.tar.zst"
out=$(SBX_NODE_IP=10.0.0.6 SBX_DL=$T/dl SBX_K3S_VERSION=v1.32.4+k3s1 \
      "$C/node-install.sh" --dry-run agent https://10.0.0.5:6443 /root/node-token 2>&1); rc=$?
is "$rc" 0 "node-install.sh --dry-run agent (air-gapped): exit 0"
is "$(steps "$out")" "install the k3s binary from $T/dl
preload the k3s images
install and start k3s (agent) as the k3s-agent service" "node-install.sh agent, air-gapped: the steps"
is "$(cmd_of "$out" 3)" "  \$ env INSTALL_K3S_EXEC=agent\\ --node-ip=10.0.0.6 INSTALL_K3S_VERSION=v1.32.4+k3s1 K3S_URL=https://10.0.0.5:6443 K3S_TOKEN_FILE=/root/node-token INSTALL_K3S_SKIP_DOWNLOAD=true sh $T/dl/install-k3s.sh" \
    "... SBX_DL's installer, the server, the token file, the pinned version, no download"

out=$("$C/node-install.sh" --dry-run server 2>&1); rc=$?
is "$rc:$out" "2:node-install.sh: set SBX_NODE_IP to this node's address (an IPv4 or IPv6 address)" \
    "node-install.sh without SBX_NODE_IP: refused"
out=$(SBX_NODE_IP=10.0.0.6 "$C/node-install.sh" --dry-run agent http://10.0.0.5:6443 /t 2>&1); rc=$?
is "$rc:$out" "2:node-install.sh: SERVER_URL must be https://HOST:PORT" "node-install.sh agent with an http URL: refused"
out=$(SBX_NODE_IP=10.0.0.6 "$C/node-install.sh" --dry-run agent https://10.0.0.5:6443 node-token 2>&1); rc=$?
is "$rc:$out" "2:node-install.sh: TOKEN_FILE must be an absolute path" "node-install.sh agent with a relative token file: refused"
out=$(SBX_NODE_IP='10.0.0.6;reboot' "$C/node-install.sh" --dry-run server 2>&1); rc=$?
is "$rc" 2 "node-install.sh with SBX_NODE_IP not an address: refused"
out=$(SBX_NODE_IP=10.0.0.6 "$C/node-install.sh" --dry-run 2>&1); rc=$?
is "$rc" 2 "node-install.sh without a role: the usage, exit 2"
like "$out" 'node-install.sh \[--dry-run\] server' "... which shows both forms"

# gvisor-node.sh on a node with no template yet: both templates written from k3s's base.
k3s=$T/k3s
out=$(SBX_K3S_DATA_DIR=$k3s "$C/gvisor-node.sh" --dry-run 2>&1); rc=$?
is "$rc" 0 "gvisor-node.sh --dry-run: exit 0"
tmpl=$k3s/agent/etc/containerd
if [ -x /usr/local/bin/runsc ] && [ -x /usr/local/bin/containerd-shim-runsc-v1 ]; then
    bins="runsc and containerd-shim-runsc-v1 in /usr/local/bin: already done"
else
    bins="download runsc and containerd-shim-runsc-v1 from https://storage.googleapis.com/gvisor/releases/release/latest/$(uname -m)
check their sha512 sums
install them in /usr/local/bin (on k3s's PATH)"
fi
is "$(steps "$out")" "$bins
write $tmpl/config-v3.toml.tmpl: k3s's base template and the runsc runtime
write $tmpl/config.toml.tmpl: k3s's base template and the runsc runtime
restart k3s so that containerd reads the template
wait for containerd's config to name runsc (at most 2 minutes)
start one pod under the gvisor RuntimeClass on $node" "gvisor-node.sh: the steps on a fresh node"
like "$out" "plugins.\\\\'io.containerd.cri.v1.runtime\\\\'.containerd.runtimes.runsc\]" \
    "... the v3 template names runsc under containerd 2's CRI runtime plugin"
like "$out" 'runtime_type = \\.io\.containerd\.runsc\.v1' "... with the runsc shim's runtime type"
like "$out" 'plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runsc' "... the v2 one under containerd 1's"
[ -e "$tmpl" ] && diag "the dry run wrote $tmpl"
ok "... and the dry run wrote nothing" test ! -e "$tmpl"

# A template of the platform team's own: appended to, and not hidden by a new v3 one.
mkdir -p "$tmpl"
printf 'version = 2\n[plugins."io.containerd.grpc.v1.cri".registry]\n' >"$tmpl/config.toml.tmpl"
out=$(SBX_K3S_DATA_DIR=$k3s SBX_DL=$T/dl "$C/gvisor-node.sh" --dry-run 2>&1)
is "$(steps "$out" | grep -v 'sha512\|/usr/local/bin')" "append the runsc runtime to your $tmpl/config.toml.tmpl
restart k3s so that containerd reads the template
wait for containerd's config to name runsc (at most 2 minutes)
start one pod under the gvisor RuntimeClass on $node" "gvisor-node.sh with your config.toml.tmpl: appended to, no v3 template beside it"
unlike "$out" 'download' "... and SBX_DL's binaries are used: nothing downloaded"

# Already done: the marker in the v3 template and runsc in the generated config.
rm "$tmpl/config.toml.tmpl"
printf '{{ template "base" . }}\n# BEGIN sbxsh: gVisor (cluster/gvisor-node.sh)\n# END sbxsh\n' >"$tmpl/config-v3.toml.tmpl"
printf "runtime_type = 'io.containerd.runsc.v1'\n" >"$tmpl/config.toml"
out=$(SBX_K3S_DATA_DIR=$k3s SBX_DL=$T/dl "$C/gvisor-node.sh" --dry-run 2>&1)
is "$(steps "$out" | grep -v 'sha512\|/usr/local/bin')" "the runsc runtime in $tmpl/config-v3.toml.tmpl: already done
containerd's config names runsc: already done
start one pod under the gvisor RuntimeClass on $node" "gvisor-node.sh run again: nothing to redo but the check"
# The templates written for real (--template-only: no binaries, no restart, no root needed).
k3s2=$T/k3s2
t2=$k3s2/agent/etc/containerd
out=$(SBX_K3S_DATA_DIR=$k3s2 "$C/gvisor-node.sh" --template-only 2>&1); rc=$?
is "$rc" 0 "gvisor-node.sh --template-only: exit 0" || diag "$out"
is "$(cat "$t2/config-v3.toml.tmpl" 2>&1)" "{{ template \"base\" . }}

# BEGIN sbxsh: gVisor (cluster/gvisor-node.sh)
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runsc]
  runtime_type = 'io.containerd.runsc.v1'
# END sbxsh" "... config-v3.toml.tmpl: k3s's base template, then the runsc runtime (containerd 2)"
is "$(cat "$t2/config.toml.tmpl" 2>&1)" "{{ template \"base\" . }}

# BEGIN sbxsh: gVisor (cluster/gvisor-node.sh)
[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runsc]
  runtime_type = \"io.containerd.runsc.v1\"
# END sbxsh" "... config.toml.tmpl: the same for containerd 1"
before=$(cat "$t2"/*.tmpl)
out=$(SBX_K3S_DATA_DIR=$k3s2 "$C/gvisor-node.sh" --template-only 2>&1)
is "$(cat "$t2"/*.tmpl)" "$before" "... run again: the templates unchanged"
like "$out" 'already done' "... and it says so"
rm -rf "$k3s2"
mkdir -p "$t2"
printf 'version = 2
[plugins."io.containerd.grpc.v1.cri".registry]
  config_path = "/etc/x"
' >"$t2/config.toml.tmpl"
SBX_K3S_DATA_DIR=$k3s2 "$C/gvisor-node.sh" --template-only >/dev/null 2>&1
SBX_K3S_DATA_DIR=$k3s2 "$C/gvisor-node.sh" --template-only >/dev/null 2>&1
is "$(head -3 "$t2/config.toml.tmpl")" 'version = 2
[plugins."io.containerd.grpc.v1.cri".registry]
  config_path = "/etc/x"' "your config.toml.tmpl keeps what it had"
is "$(grep -c 'containerd.runtimes.runsc\]' "$t2/config.toml.tmpl")" 1 "... with the runsc section appended once, after two runs"
ok "... and no config-v3.toml.tmpl hides it" test ! -e "$t2/config-v3.toml.tmpl"

out=$("$C/gvisor-node.sh" --bogus 2>&1); rc=$?
is "$rc" 2 "gvisor-node.sh with an unknown option: the usage, exit 2"

# cache-gc-install.sh
out=$("$C/cache-gc-install.sh" --dry-run acme beta 2>&1); rc=$?
is "$rc" 0 "cache-gc-install.sh --dry-run: exit 0"
is "$(steps "$out")" "the cache root
tenant acme's cache, owned by uid 10001
tenant beta's cache, owned by uid 10001
the pruning script (cluster/cache-gc)
the service unit
the timer unit
reload systemd
enable and start the daily timer" "cache-gc-install.sh: the steps"
like "$(cmd_of "$out" 2)" 'install -d -o 10001 -g 10001 -m 0700 /var/lib/sbxsh/cache/acme$' "... a tenant's directory is the sandboxes' own, mode 0700"
like "$out" 'User=10001' "... the pruning runs as the sandboxes' uid"
like "$out" 'PrivateNetwork=yes' "... without network"
like "$out" 'OnCalendar=daily' "... daily"
out=$("$C/cache-gc-install.sh" --dry-run '../etc' 2>&1); rc=$?
is "$rc" 2 "cache-gc-install.sh with a tenant name that is a path: refused"

# cache-gc itself on a cache a sandbox wrote: what was not read for 14 days goes, with the
# directories left empty; a planted link goes as a link, what it points to stays; a tenant
# directory that is a link is not entered.
cache=$T/cache
mkdir -p "$cache/acme/sub" "$T/outside/dir"
echo keep >"$T/outside/precious"
echo keep >"$T/outside/dir/old-elsewhere"
touch -a -d '20 days ago' "$T/outside/dir/old-elsewhere"
echo a >"$cache/acme/old.tgz"; echo b >"$cache/acme/new.tgz"; echo c >"$cache/acme/sub/old2"
ln -s "$T/outside/precious" "$cache/acme/link"
ln -s "$T/outside/dir" "$cache/evil"
touch -a -d '20 days ago' "$cache/acme/old.tgz" "$cache/acme/sub/old2"
touch -h -a -d '20 days ago' "$cache/acme/link"
out=$("$C/cache-gc" 14 "$cache" 2>&1); rc=$?
is "$rc:$out" "0:" "cache-gc 14 ROOT: exit 0, quiet"
is "$(cd "$cache" && find . | sort | tr '\n' ' ')" ". ./acme ./acme/new.tgz ./evil " \
    "... the old files, the planted link and the emptied directory gone, the new file kept"
is "$(cat "$T/outside/precious" "$T/outside/dir/old-elsewhere" 2>&1)" "keep
keep" "... and nothing outside the tenants' directories touched"
out=$("$C/cache-gc" 'x' "$cache" 2>&1); rc=$?
is "$rc" 2 "cache-gc with DAYS not a number: refused"

# The image's two recipes are one: rootfs.sh installs the Containerfile's package list, and
# both end with setup.sh (image.t builds the debootstrap one).
F=$C/image/Containerfile
pkgs=$(sed -n 's/^ARG PACKAGES="\(.*\)"$/\1/p' "$F")
for p in bash coreutils git make gcc python3; do
    like " $pkgs " " $p " "the image's package list has $p"
done
is "$(grep -cE '^COPY sbx-agent-static /usr/local/bin/sbx-agent$|^COPY cluster/image/setup.sh /tmp/setup.sh$|^RUN sh /tmp/setup.sh "\$PACKAGES"$|^USER 10001:10001$' "$F")" 4 \
    "the Containerfile: sbx-agent-static, setup.sh with the package list, uid 10001"
is "$(grep -c 'default_pkgs=\|chroot "\$dir" /bin/sh /tmp/setup.sh "\$pkgs"' "$C/image/rootfs.sh")" 2 \
    "rootfs.sh: the Containerfile's list, through the same setup.sh"

# make-kubeconfig.sh's refusals (its run against the fake API server is in cluster-kubectl.t).
# None of them reaches kubectl (one that leaves a mark comes first in PATH).
mkdir -p "$SBX_TEST_TMP/bin"
printf '#!/bin/sh\ntouch "%s/kubectl-ran"; exit 1\n' "$SBX_TEST_TMP" >"$SBX_TEST_TMP/bin/kubectl"
chmod +x "$SBX_TEST_TMP/bin/kubectl"
mk() { PATH=$SBX_TEST_TMP/bin:$PATH "$C/make-kubeconfig.sh" "$@" 2>&1; }
out=$(mk http://10.0.0.5:6443 acme); rc=$?
is "$rc" 2 "make-kubeconfig.sh with an http:// server: refused"
out=$(mk https://10.0.0.5:6443); rc=$?
is "$rc" 2 "make-kubeconfig.sh without a tenant: refused"
like "$out" 'make-kubeconfig.sh SERVER TENANT \[NAMESPACE\]' "... with its usage"
out=$(mk https://10.0.0.5:6443 'Acme'); rc=$?
is "$rc:$out" "2:make-kubeconfig.sh: 'Acme' is not a tenant name (a-z, 0-9, '-', at most 40)" \
    "make-kubeconfig.sh with a bad tenant: refused"
out=$(mk https://10.0.0.5:6443 acme 'Bad_NS'); rc=$?
is "$rc" 2 "make-kubeconfig.sh with a bad namespace: refused"
ok "... each before running kubectl" test ! -e "$SBX_TEST_TMP/kubectl-ran"
done_testing
