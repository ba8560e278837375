#!/bin/bash
# The real kubectl applies every manifest of cluster/, and tenants rendered by `sbx
# render-pool` with several option sets (each its namespace, ServiceAccount, Role,
# RoleBinding, template and pool), to the fake API server (tests/kube/fake-apiserver,
# extended for cluster/ by tests/kube/cluster_kinds.py), then reads them back; the fake
# checks the agent-sandbox objects against the v1beta1 schemas (tests/kube/crd_schema.py)
# and enforces the admission policies once applied; make-kubeconfig.sh's kubeconfig
# authenticates as the tenant's ServiceAccount, whose Role allows what sbxsh uses in the
# tenant's namespace and nothing more. Each kubectl run has its own HOME (no discovery cache crosses).
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../kube/fake.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
C=$top/cluster

command -v kubectl >/dev/null || skip_all "kubectl is not installed"
why=$(fake_skip_reason)
[ -n "$why" ] && skip_all "the fake API server cannot run here: $why"
fake_start --namespace default || bail_out "the fake did not start"
export KUBECONFIG=$FAKE_KUBECONFIG
unset KUBECACHEDIR
home_n=0
k() { # kubectl with a HOME of its own
    home_n=$((home_n + 1))
    HOME=$SBX_TEST_TMP/home.$home_n kubectl --request-timeout=60s "$@"
}

# Every manifest, applied, read back, applied again.
for f in runtimeclass.yaml runtimeclass-kata.yaml admission.yaml; do
    out=$(k apply -f "$C/$f" 2>&1); rc=$?
    is "$rc" 0 "kubectl apply -f cluster/$f" || diag "$out"
    unlike "$out" 'Warning|unchanged|configured' "... every object created, without a warning"
    names='import sys, yaml, json
if sys.argv[1] == "yaml":
    docs = list(yaml.safe_load_all(open(sys.argv[2])))
else:
    d = json.load(sys.stdin)
    docs = d["items"] if d["kind"] == "List" else [d]
for d in docs:
    print(d["kind"], d["metadata"]["name"])'
    want=$(python3 -c "$names" yaml "$C/$f")
    got=$(k get -f "$C/$f" -o json | python3 -c "$names" json 2>&1)
    is "$got" "$want" "kubectl get -f cluster/$f: each object there"
    out=$(k apply -f "$C/$f" 2>&1)
    is "$(grep -vc ' unchanged$' <<<"$out")" 0 "... and applied again, unchanged" || diag "$out"
done
# Tenants with several option sets: created, read back, unchanged on a second apply.
pool() { "$SBX" render-pool --image registry.example/sbx:1 "$@"; }
sets=("--tenant acme"
      "--tenant beta --runtime kata --replicas 0 --cpu 500m --memory 1Gi --disk 20Gi"
      "--tenant gamma --cache-mount /home/sbx/.cache --egress-cidr 10.20.0.0/16:443 --egress-cidr 2001:db8::/32:8080 --dns --router-ingress"
      "--tenant delta --namespace default --replicas 5 --pool-only")
for s in "${sets[@]}"; do
    # shellcheck disable=SC2086 # an option set, one word each
    pool $s >"$SBX_TEST_TMP/pool.yaml"
    t=$(sed -n 's/^--tenant \([a-z]*\).*/\1/p' <<<"$s")
    ns=sbxsh-$t; [[ $s == *"--namespace default"* ]] && ns=default
    want="sandboxtemplate.extensions.agents.x-k8s.io/sbx-$t created
sandboxwarmpool.extensions.agents.x-k8s.io/sbx-$t created"
    [[ $s == *--pool-only* ]] || want="namespace/$ns created
serviceaccount/sbxsh-agent-host created
role.rbac.authorization.k8s.io/sbxsh-agent-host created
rolebinding.rbac.authorization.k8s.io/sbxsh-agent-host created
$want"
    out=$(k apply -f "$SBX_TEST_TMP/pool.yaml" 2>&1); rc=$?
    is "$rc:$out" "0:$want" "render-pool $s: applied" || true
    got=$(k get sandboxwarmpool "sbx-$t" -n "$ns" -o 'jsonpath={.spec.sandboxTemplateRef.name} {.spec.updateStrategy.type}')
    is "$got" "sbx-$t Recreate" "... the pool read back names its template"
    rt=gvisor; [[ $s == *kata* ]] && rt=kata
    got=$(k get sandboxtemplate "sbx-$t" -n "$ns" -o 'jsonpath={.spec.podTemplate.spec.runtimeClassName} {.spec.podTemplate.spec.automountServiceAccountToken}')
    is "$got" "$rt false" "... and the template its runtime class, no token"
    out=$(k apply -f "$SBX_TEST_TMP/pool.yaml" 2>&1)
    is "$(grep -vc ' unchanged$' <<<"$out")" 0 "... applied again: unchanged" || diag "$out"
done
is "$(k get role sbxsh-agent-host -n sbxsh-acme -o 'jsonpath={range .rules[*]}{.resources} {.verbs}{"\n"}{end}')" \
'["sandboxclaims"] ["create","get","list","watch","patch","delete"]
["sandboxes"] ["get","list","watch"]
["sandboxwarmpools","sandboxtemplates"] ["get","list"]
["pods"] ["get"]
["pods/exec"] ["create","get"]' "the tenant's Role as stored: the verbs sbxsh uses"
is "$(k get namespace sbxsh-acme -o 'jsonpath={.metadata.labels.sbxsh\.dev/sandboxes} {.metadata.labels.sbxsh\.dev/tenant}')" "true acme" \
    "the tenant's namespace carries the label the policies' bindings select, and its tenant"

# The schemas: what a CRD would refuse, the fake refuses, and kubectl says why.
# The tenant "bad": its namespace and access applied, its template and pool (good.yaml)
# the base of each variant.
pool --tenant bad | python3 -c 'import sys, yaml
print(yaml.safe_dump_all([d for d in yaml.safe_load_all(sys.stdin)
                          if d and d["kind"] not in ("SandboxTemplate", "SandboxWarmPool")]))' \
    >"$SBX_TEST_TMP/bad-access.yaml"
out=$(k apply -f "$SBX_TEST_TMP/bad-access.yaml" 2>&1) || bail_out "cannot apply the tenant bad's namespace: $out"
pool --tenant bad --pool-only >"$SBX_TEST_TMP/good.yaml"
sed 's/^  replicas: 2$/  replicas: -1/' "$SBX_TEST_TMP/good.yaml" >"$SBX_TEST_TMP/bad.yaml"
out=$(k apply -f "$SBX_TEST_TMP/bad.yaml" 2>&1); rc=$?
isnt "$rc" 0 "a pool with replicas -1: refused"
like "$out" 'spec.replicas in body should be greater than or equal to 0' "... with the schema's message"
sed 's/^    type: Recreate$/    type: Sometimes/' "$SBX_TEST_TMP/good.yaml" >"$SBX_TEST_TMP/bad.yaml"
out=$(k apply -f "$SBX_TEST_TMP/bad.yaml" 2>&1)
like "$out" 'spec.updateStrategy.type: Unsupported value: "Sometimes"' "an unknown update strategy: refused by its enum"
sed 's/^      runtimeClassName: gvisor$/      runtimeClass: gvisor/' "$SBX_TEST_TMP/good.yaml" >"$SBX_TEST_TMP/bad.yaml"
out=$(k apply -f "$SBX_TEST_TMP/bad.yaml" 2>&1)
like "$out" 'unknown field "spec.podTemplate.spec.runtimeClass"' "a misspelt pod field: refused as unknown"
sed 's/^        image: .*$//' "$SBX_TEST_TMP/good.yaml" | sed 's/^      - name: sandbox$/      - nom: sandbox/' >"$SBX_TEST_TMP/bad.yaml"
out=$(k apply -f "$SBX_TEST_TMP/bad.yaml" 2>&1)
like "$out" 'spec.podTemplate.spec.containers\[0\].name: Required value' "a container without a name: refused"

# The admission policy, once applied: in a tenant's namespace, a template that breaks it is
# denied with the rule's message; in a namespace the binding does not select, it is not.
sed 's/^      runtimeClassName: gvisor$/      runtimeClassName: runc/' "$SBX_TEST_TMP/good.yaml" >"$SBX_TEST_TMP/runc.yaml"
out=$(k apply -f "$SBX_TEST_TMP/runc.yaml" 2>&1); rc=$?
isnt "$rc" 0 "a template with runtimeClassName runc in namespace sbxsh-bad: denied"
like "$out" "ValidatingAdmissionPolicy 'sbxsh-sandbox-security' with binding 'sbxsh-sandbox-security' denied request: runtimeClassName must be gvisor or kata" \
    "... kubectl shows the policy's message"
sed 's/^      automountServiceAccountToken: false$/      automountServiceAccountToken: true/' "$SBX_TEST_TMP/good.yaml" >"$SBX_TEST_TMP/tok.yaml"
out=$(k apply -f "$SBX_TEST_TMP/tok.yaml" 2>&1)
like "$out" 'denied request: automountServiceAccountToken must be false' "a template mounting the token: denied"
sed 's/^  namespace: sbxsh-bad$/  namespace: default/' "$SBX_TEST_TMP/runc.yaml" >"$SBX_TEST_TMP/runc-default.yaml"
out=$(k apply -f "$SBX_TEST_TMP/runc-default.yaml" 2>&1); rc=$?
is "$rc" 0 "... the same template in a namespace the binding does not select: accepted" || diag "$out"
# A Sandbox written directly (as the controller writes them for claims): the same rules.
python3 - "$SBX_TEST_TMP/good.yaml" >"$SBX_TEST_TMP/sandbox.yaml" <<'PY'
import sys, yaml
t = next(d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "SandboxTemplate")
pt = t["spec"]["podTemplate"]
pt["spec"]["containers"][0]["securityContext"]["capabilities"]["add"] = ["NET_ADMIN"]
print(yaml.safe_dump({"apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox",
                      "metadata": {"name": "direct", "namespace": "sbxsh-bad"},
                      "spec": {"podTemplate": pt}}))
PY
out=$(k apply -f "$SBX_TEST_TMP/sandbox.yaml" 2>&1); rc=$?
isnt "$rc" 0 "a Sandbox adding a capability, written directly in namespace sbxsh-bad: denied"
like "$out" 'denied request: every container must drop ALL capabilities' "... by the capabilities rule"
python3 - "$C/admission.yaml" >"$SBX_TEST_TMP/badcel.yaml" <<'PY'
import sys, yaml
d = next(yaml.safe_load_all(open(sys.argv[1])))
d["metadata"]["name"] = "broken"
d["spec"]["validations"][0]["expression"] = "object.spec.podTemplate.spec.runtimeClassName in ["
print(yaml.safe_dump(d))
PY
out=$(k apply -f "$SBX_TEST_TMP/badcel.yaml" 2>&1); rc=$?
isnt "$rc" 0 "a policy whose expression does not compile: refused"
like "$out" 'spec.validations\[0\].expression: Invalid value: compilation failed' "... saying which expression"

# The tenants' isolation, once the policies are applied: in acme's namespace, gamma's
# package cache and a RoleBinding of beta's ServiceAccount are denied (403, as the real
# dispatcher answers a validation whose reason is Forbidden); acme's own cache is not.
pool --tenant acme --pool-only --cache-mount /home/sbx/.cache >"$SBX_TEST_TMP/acme-cache.yaml"
out=$(k apply -f "$SBX_TEST_TMP/acme-cache.yaml" 2>&1); rc=$?
is "$rc" 0 "acme's template mounting acme's own cache: admitted" || diag "$out"
sed 's|/var/lib/sbxsh/cache/acme|/var/lib/sbxsh/cache/gamma|' "$SBX_TEST_TMP/acme-cache.yaml" >"$SBX_TEST_TMP/acme-gamma.yaml"
out=$(k apply -f "$SBX_TEST_TMP/acme-gamma.yaml" 2>&1); rc=$?
isnt "$rc" 0 "acme's template mounting gamma's cache: denied"
like "$out" "Error from server \\(Forbidden\\).*denied request: a package cache must be the namespace's own tenant's" \
    "... as Forbidden, with the cache rule's message" || diag "$out"
cat >"$SBX_TEST_TMP/rb.yaml" <<'EOF'
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: beta-into-acme
  namespace: sbxsh-acme
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: sbxsh-agent-host
subjects:
- kind: ServiceAccount
  name: sbxsh-agent-host
  namespace: sbxsh-beta
EOF
out=$(k apply -f "$SBX_TEST_TMP/rb.yaml" 2>&1); rc=$?
isnt "$rc" 0 "a RoleBinding in acme's namespace binding beta's ServiceAccount: denied"
like "$out" "denied request: a RoleBinding in a tenant's namespace binds only ServiceAccounts of that namespace" \
    "... by the isolation policy" || diag "$out"
sed 's/^  namespace: sbxsh-acme$/  namespace: default/' "$SBX_TEST_TMP/rb.yaml" >"$SBX_TEST_TMP/rb-default.yaml"
out=$(k apply -f "$SBX_TEST_TMP/rb-default.yaml" 2>&1); rc=$?
is "$rc" 0 "... the same RoleBinding in a namespace the binding does not select: admitted" || diag "$out"

# make-kubeconfig.sh: a kubeconfig for the tenant's ServiceAccount, which kubectl then uses.
out=$(HOME=$SBX_TEST_TMP/home.mk "$C/make-kubeconfig.sh" "$FAKE_URL" acme 2>"$SBX_TEST_TMP/mk.err"); rc=$?
is "$rc" 0 "make-kubeconfig.sh $FAKE_URL acme: exit 0" || diag "$(cat "$SBX_TEST_TMP/mk.err")"
printf '%s\n' "$out" >"$SBX_TEST_TMP/sa.kubeconfig"
like "$out" '# Tenant acme: ServiceAccount sbxsh-acme/sbxsh-agent-host; the token expires [0-9]{4}-[0-9]{2}-[0-9]{2}T' "... it says whose token and when it expires"
ka() { KUBECONFIG=$SBX_TEST_TMP/sa.kubeconfig k "$@"; }
is "$(ka config view --minify -o 'jsonpath={.contexts[0].name} {.contexts[0].context.namespace} {.contexts[0].context.user}' 2>&1)" \
    "sbxsh-acme sbxsh-acme sbxsh-acme" "... its context, named for the tenant, is in the tenant's namespace"
is "$(ka auth whoami -o 'jsonpath={.status.userInfo.username}' 2>&1)" "system:serviceaccount:sbxsh-acme:sbxsh-agent-host" \
    "kubectl with it is the tenant's ServiceAccount (the CA checked, the token accepted)"
is "$(ka get sandboxwarmpools -o name 2>&1)" "sandboxwarmpool.extensions.agents.x-k8s.io/sbx-acme" \
    "... it lists the pools of its namespace (the kubeconfig's): acme's alone"
can() { ka auth can-i "$@" 2>/dev/null; }
for v in "create sandboxclaims.extensions.agents.x-k8s.io" "watch sandboxclaims.extensions.agents.x-k8s.io" \
         "patch sandboxclaims.extensions.agents.x-k8s.io" "delete sandboxclaims.extensions.agents.x-k8s.io" \
         "get sandboxes.agents.x-k8s.io" "get pods" "create pods --subresource=exec" "get pods --subresource=exec"; do
    # shellcheck disable=SC2086 # the verb and the resource
    is "$(can $v)" yes "the ServiceAccount may $v"
done
for v in "list pods" "delete pods" "create sandboxwarmpools.extensions.agents.x-k8s.io" \
         "patch sandboxtemplates.extensions.agents.x-k8s.io" "get secrets" "create pods --subresource=portforward" \
         "update sandboxclaims.extensions.agents.x-k8s.io" "create rolebindings.rbac.authorization.k8s.io"; do
    # shellcheck disable=SC2086 # the verb and the resource
    is "$(can $v)" no "... and may not $v"
done
is "$(can get sandboxclaims.extensions.agents.x-k8s.io -n default)" no "... nor anything in another namespace"
is "$(can create pods --subresource=exec -n sbxsh-beta)" no "... nor exec in another tenant's"
out=$(ka delete sandboxwarmpool sbx-acme 2>&1); rc=$?
isnt "$rc" 0 "deleting a pool with it: refused"
like "$out" 'Forbidden|forbidden' "... as Forbidden"
out=$(HOME=$SBX_TEST_TMP/home.mk "$C/make-kubeconfig.sh" "$FAKE_URL" acme sbxsh-beta 2>&1); rc=$?
is "$rc" 1 "make-kubeconfig.sh for acme in beta's namespace: refused"
like "$out" 'namespace sbxsh-beta belongs to tenant beta' "... naming whose namespace it is"
# The fake's RBAC decides as kube-apiserver's authorizer (tests/kube/cluster_kinds.py,
# _rbac_allows): a ServiceAccount "probe" of acme's namespace, bound (subject without a
# namespace: the binding's) to a Role with resourceNames, "*/exec", "pods/*" (no wildcard
# upstream) and "*" rules, and to a ClusterRole by a RoleBinding (its rules in that
# namespace only).
cat >"$SBX_TEST_TMP/probe.yaml" <<'EOF'
apiVersion: v1
kind: ServiceAccount
metadata:
  name: probe
  namespace: sbxsh-acme
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: probe
  namespace: sbxsh-acme
rules:
- apiGroups: [""]
  resources: ["pods"]
  resourceNames: ["p1"]
  verbs: ["get"]
- apiGroups: [""]
  resources: ["*/exec"]
  verbs: ["create"]
- apiGroups: [""]
  resources: ["pods/*"]
  verbs: ["delete"]
- apiGroups: ["*"]
  resources: ["sandboxes"]
  verbs: ["*"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: probe
  namespace: sbxsh-acme
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: probe
subjects:
- kind: ServiceAccount
  name: probe
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: probe-configmaps
rules:
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["list"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: probe-configmaps
  namespace: sbxsh-acme
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: probe-configmaps
subjects:
- kind: ServiceAccount
  name: probe
  namespace: sbxsh-acme
EOF
out=$(k apply -f "$SBX_TEST_TMP/probe.yaml" 2>&1); rc=$?
is "$rc" 0 "the probe's ServiceAccount, Role, ClusterRole and bindings: applied" || diag "$out"
SBX_SERVICE_ACCOUNT=probe HOME=$SBX_TEST_TMP/home.mk "$C/make-kubeconfig.sh" "$FAKE_URL" acme \
    >"$SBX_TEST_TMP/probe.kubeconfig" 2>"$SBX_TEST_TMP/mk.err" || bail_out "make-kubeconfig.sh for probe: $(cat "$SBX_TEST_TMP/mk.err")"
probe() { KUBECONFIG=$SBX_TEST_TMP/probe.kubeconfig k auth can-i "$@" 2>/dev/null; }
got=""
for v in "get pods/p1" "get pods/p2" "list pods" "create pods/x --subresource=exec" \
         "create configmaps --subresource=exec" "delete pods/x --subresource=exec" \
         "delete sandboxes.agents.x-k8s.io/s" "list configmaps" "list configmaps -n sbxsh-beta"; do
    # shellcheck disable=SC2086 # the verb and the resource
    got+="$v: $(probe $v)"$'\n'
done
is "$got" "get pods/p1: yes
get pods/p2: no
list pods: no
create pods/x --subresource=exec: yes
create configmaps --subresource=exec: yes
delete pods/x --subresource=exec: no
delete sandboxes.agents.x-k8s.io/s: yes
list configmaps: yes
list configmaps -n sbxsh-beta: no
" "the fake's RBAC: resourceNames by the request's name, */SUB for any resource, RES/* not a wildcard, * verbs and groups, a ClusterRole bound in one namespace only"
out=$(KUBECONFIG=$SBX_TEST_TMP/probe.kubeconfig k get pod p2 2>&1)
like "$out" 'pods "p2" is forbidden: User "system:serviceaccount:sbxsh-acme:probe" cannot get resource "pods"' \
    "... and a request as well as a review: get pod p2 is Forbidden" || diag "$out"
done_testing
