#!/bin/bash
# make-kubeconfig.sh: a kubeconfig for the agent host (AGENT_SANDBOX_KUBECONFIG), printed on
# standard output, for rbac.yaml's ServiceAccount: a bound token that expires (kubectl
# create token, SBX_TOKEN_DURATION, default 720h; the API server may cap it) and the
# cluster's CA (the namespace's kube-root-ca.crt ConfigMap).
#
#   make-kubeconfig.sh SERVER [NAMESPACE] > sbxsh.kubeconfig
#
# SERVER is the API server's URL as the agent host reaches it (https://10.0.0.5:6443).
# NAMESPACE defaults to sbxsh (rbac.yaml's). Run with a kubeconfig that may create tokens
# for that ServiceAccount (the cluster admin's); KUBECONFIG and kubectl's flags apply as
# usual. Run it again before the token expires (sbx doctor says when it no longer works).
set -euo pipefail

usage() {
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0" >&2
    exit 2
}
if [ $# -lt 1 ] || [ $# -gt 2 ]; then usage; fi
server=$1 ns=${2:-sbxsh}
sa=${SBX_SERVICE_ACCOUNT:-sbxsh-agent-host}
duration=${SBX_TOKEN_DURATION:-720h}
[[ $server =~ ^https://[][A-Za-z0-9.:-]+(/[A-Za-z0-9._/-]*)?$ ]] ||
    { echo "make-kubeconfig.sh: SERVER must be an https:// URL, such as https://10.0.0.5:6443" >&2; exit 2; }
[[ $ns =~ ^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$ ]] ||
    { echo "make-kubeconfig.sh: '$ns' is not a namespace name" >&2; exit 2; }

token=$(kubectl -n "$ns" create token "$sa" --duration="$duration")
ca=$(kubectl -n "$ns" get configmap kube-root-ca.crt -o 'jsonpath={.data.ca\.crt}')
if [ -z "$token" ] || [ -z "$ca" ]; then
    echo "make-kubeconfig.sh: no token or no CA from the cluster" >&2
    exit 1
fi
# The token's expiry, from its payload (base64url JSON), for the comment.
expiry=unknown
payload=$(cut -d. -f2 <<<"$token" | tr '_-' '/+')
while [ $((${#payload} % 4)) != 0 ]; do payload+='='; done
if exp=$(base64 -d <<<"$payload" 2>/dev/null | grep -o '"exp": *[0-9]*' | grep -o '[0-9]*$') && [ -n "$exp" ]; then
    expiry=$(date -u -d "@$exp" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || echo "$exp")
fi

cat <<EOF
# For AGENT_SANDBOX_KUBECONFIG on the agent host (made by cluster/make-kubeconfig.sh).
# ServiceAccount $ns/$sa; the token expires $expiry. Keep this file mode 0600.
apiVersion: v1
kind: Config
clusters:
- name: sbxsh
  cluster:
    server: $server
    certificate-authority-data: $(printf '%s\n' "$ca" | base64 -w0)
users:
- name: $sa
  user:
    token: $token
contexts:
- name: sbxsh
  context:
    cluster: sbxsh
    user: $sa
    namespace: $ns
current-context: sbxsh
EOF
