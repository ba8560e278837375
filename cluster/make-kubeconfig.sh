#!/bin/bash
# make-kubeconfig.sh: a kubeconfig for one tenant's agent host (AGENT_SANDBOX_KUBECONFIG),
# printed on standard output, for the ServiceAccount `sbx render-pool` puts in the tenant's
# namespace: a bound token that expires (kubectl create token, SBX_TOKEN_DURATION, default
# 720h; the API server may cap it) and the cluster's CA (the namespace's kube-root-ca.crt
# ConfigMap). Its context's namespace is the tenant's, so sbxsh needs no
# AGENT_SANDBOX_NAMESPACE; its names (context, user) carry the tenant's, so two tenants'
# kubeconfigs merged by KUBECONFIG do not take each other's token.
#
#   make-kubeconfig.sh SERVER TENANT [NAMESPACE] > sbxsh-TENANT.kubeconfig
#
# SERVER is the API server's URL as the agent host reaches it (https://10.0.0.5:6443).
# NAMESPACE defaults to sbxsh-TENANT (render-pool's); a namespace labelled for another
# tenant (sbxsh.dev/tenant) is refused. Run with a kubeconfig that may create tokens for
# that ServiceAccount (the cluster admin's); KUBECONFIG and kubectl's flags apply as usual.
# Run it again before the token expires (sbx doctor says when it no longer works).
set -euo pipefail

usage() {
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0" >&2
    exit 2
}
if [ $# -lt 2 ] || [ $# -gt 3 ]; then usage; fi
server=$1 tenant=$2 ns=${3:-sbxsh-$2}
sa=${SBX_SERVICE_ACCOUNT:-sbxsh-agent-host}
duration=${SBX_TOKEN_DURATION:-720h}
[[ $server =~ ^https://[][A-Za-z0-9.:-]+(/[A-Za-z0-9._/-]*)?$ ]] ||
    { echo "make-kubeconfig.sh: SERVER must be an https:// URL, such as https://10.0.0.5:6443" >&2; exit 2; }
# As sbx render-pool's --tenant: a DNS label of at most 40 characters.
[[ $tenant =~ ^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$ ]] ||
    { echo "make-kubeconfig.sh: '$tenant' is not a tenant name (a-z, 0-9, '-', at most 40)" >&2; exit 2; }
[[ $ns =~ ^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$ ]] ||
    { echo "make-kubeconfig.sh: '$ns' is not a namespace name" >&2; exit 2; }

# The namespace must be this tenant's: a token for another tenant's ServiceAccount would
# give this agent host that tenant's sessions.
owner=$(kubectl get namespace "$ns" -o 'jsonpath={.metadata.labels.sbxsh\.dev/tenant}')
if [ -n "$owner" ] && [ "$owner" != "$tenant" ]; then
    echo "make-kubeconfig.sh: namespace $ns belongs to tenant $owner (its sbxsh.dev/tenant label), not $tenant" >&2
    exit 1
fi
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
# Tenant $tenant: ServiceAccount $ns/$sa; the token expires $expiry. Keep this file mode 0600.
apiVersion: v1
kind: Config
clusters:
- name: sbxsh
  cluster:
    server: $server
    certificate-authority-data: $(printf '%s\n' "$ca" | base64 -w0)
users:
- name: sbxsh-$tenant
  user:
    token: $token
contexts:
- name: sbxsh-$tenant
  context:
    cluster: sbxsh
    user: sbxsh-$tenant
    namespace: $ns
current-context: sbxsh-$tenant
EOF
