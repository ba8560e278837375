#!/bin/bash
# sbx render-pool: what it prints for several option sets (parsed as YAML: the fields a
# platform team relies on), and its refusals: a bad or hostile value prints nothing on
# stdout and exits 2. (kubectl against the fake API server: cluster-kubectl.t.)
. "$(dirname "$0")/../lib/tap.sh"
python3 -c 'import yaml' 2>/dev/null || skip_all "python3-yaml is not installed (make deps)"

# q ARGS... -- EXPR...: renders with ARGS, then prints each Python EXPR over t (the
# template), p (the pool), c (the container), s (the pod spec), n (the namespace), r (the
# Role), b (the RoleBinding), docs (every object by kind), one per line.
q() {
    local args=()
    while [ "$1" != -- ]; do args+=("$1"); shift; done
    shift
    "$SBX" render-pool "${args[@]}" >"$SBX_TEST_TMP/out.yaml" || return
    python3 - "$SBX_TEST_TMP/out.yaml" "$@" <<'PY'
import sys, yaml
docs = {d["kind"]: d for d in yaml.safe_load_all(open(sys.argv[1])) if d}
t, p = docs["SandboxTemplate"], docs["SandboxWarmPool"]
n, r, b = docs.get("Namespace"), docs.get("Role"), docs.get("RoleBinding")
s = t["spec"]["podTemplate"]["spec"]
c = s["containers"][0]
for e in sys.argv[2:]:
    print(eval(e))
PY
}

out=$(q --tenant acme --image registry.example/sbx:1 -- \
    'sorted(["SandboxTemplate", "SandboxWarmPool"])' 't["apiVersion"]' 'p["apiVersion"]' \
    't["metadata"]["name"], p["metadata"]["name"], t["metadata"]["namespace"]' \
    'p["spec"]["sandboxTemplateRef"]["name"], p["spec"]["replicas"], p["spec"]["updateStrategy"]["type"]' \
    's["runtimeClassName"], s["automountServiceAccountToken"]' \
    's["securityContext"]["runAsNonRoot"], s["securityContext"]["runAsUser"]' \
    'c["securityContext"]["capabilities"]["drop"], c["securityContext"]["allowPrivilegeEscalation"], c["securityContext"]["readOnlyRootFilesystem"]' \
    'c["resources"]["limits"]' \
    't["spec"]["envVarsInjectionPolicy"], t["spec"]["networkPolicyManagement"]' \
    't["spec"]["networkPolicy"]' \
    'sorted(m["mountPath"] for m in c["volumeMounts"])' 'c["image"]' 'c["command"], c["env"]')
is "$out" "['SandboxTemplate', 'SandboxWarmPool']
extensions.agents.x-k8s.io/v1beta1
extensions.agents.x-k8s.io/v1beta1
('sbx-acme', 'sbx-acme', 'sbxsh-acme')
('sbx-acme', 2, 'Recreate')
('gvisor', False)
(True, 10001)
(['ALL'], False, True)
{'cpu': '2', 'memory': '4Gi', 'ephemeral-storage': '10Gi'}
('Disallowed', 'Managed')
{'ingress': [], 'egress': []}
['/home', '/run/sbxsh', '/tmp']
registry.example/sbx:1
(['/bin/sh', '-c', 'mkdir -p \"\$HOME\" && exec sleep infinity'], [{'name': 'HOME', 'value': '/home/sbx'}])" "the defaults: the names, Recreate, gvisor, no token, non-root, no capabilities, limits, no ingress or egress"
out=$(q --tenant acme --image registry.example/sbx:1 -- \
    'sorted(docs)' 'n["metadata"]["name"], n["metadata"]["labels"]["sbxsh.dev/sandboxes"], n["metadata"]["labels"]["sbxsh.dev/tenant"]' \
    'sorted({d["metadata"].get("namespace") for k, d in docs.items() if k != "Namespace"})' \
    'b["subjects"], b["roleRef"]["name"] == r["metadata"]["name"]' \
    'docs["ServiceAccount"]["automountServiceAccountToken"]')
is "$out" "['Namespace', 'Role', 'RoleBinding', 'SandboxTemplate', 'SandboxWarmPool', 'ServiceAccount']
('sbxsh-acme', 'true', 'acme')
['sbxsh-acme']
([{'kind': 'ServiceAccount', 'name': 'sbxsh-agent-host', 'namespace': 'sbxsh-acme'}], True)
False" "the tenant's own namespace sbxsh-acme (labelled for admission.yaml, with its tenant), its ServiceAccount bound to its Role there, every object in it"
out=$(q --tenant beta --image registry.example/sbx:1 --namespace team-b -- \
    'n["metadata"]["name"], n["metadata"]["labels"]["sbxsh.dev/tenant"], b["subjects"][0]["namespace"], r["metadata"]["namespace"]')
is "$out" "('team-b', 'beta', 'team-b', 'team-b')" "--namespace team-b: the namespace, the binding and the Role there"
out=$(q --tenant acme --image registry.example/sbx:1 --pool-only -- 'sorted(docs)' 't["metadata"]["namespace"]')
is "$out" "['SandboxTemplate', 'SandboxWarmPool']
sbxsh-acme" "--pool-only: the template and the pool alone, in the tenant's namespace"
out=$("$SBX" render-pool --tenant acme --image registry.example/sbx:1)
like "$out" '# - namespace sbxsh-acme for this tenant alone, its ServiceAccount bound there only: a
#   namespace shared by tenants means any agent host can exec into any session' "the output says why a namespace per tenant"
like "$out" 'cluster/make-kubeconfig.sh SERVER acme > sbxsh-acme.kubeconfig' "... and how to make the tenant's kubeconfig"
like "$out" '# - egress: none\. git.s network commands run on the agent host' "the output names the egress trade-off"
like "$out" 'automountServiceAccountToken false: the sandbox cannot reach the API server' "... and the token's"

out=$(q --tenant beta --image r.example/sbx@sha256:0123abcd --runtime kata --replicas 0 \
        --cache-mount /home/sbx/.cache --egress-cidr 10.20.0.0/16:443 --egress-cidr 2001:db8::/32:8080 \
        --dns --router-ingress --cpu 500m --memory 1Gi --disk 20Gi --namespace team-b -- \
    's["runtimeClassName"], p["spec"]["replicas"], t["metadata"]["namespace"]' \
    'c["resources"]["requests"]' \
    '[(r["to"][0].get("ipBlock", {}).get("cidr"), [x["port"] for x in r["ports"]]) for r in t["spec"]["networkPolicy"]["egress"]]' \
    't["spec"]["networkPolicy"]["ingress"][0]["from"][0]["podSelector"]["matchLabels"]' \
    '[v["hostPath"] for v in s["volumes"] if "hostPath" in v]' \
    '[m["mountPath"] for m in c["volumeMounts"] if m["name"] == "cache"]' \
    'c["resources"]["limits"]')
is "$out" "('kata', 0, 'team-b')
{'cpu': '250m', 'memory': '1Gi'}
[('10.20.0.0/16', [443]), ('2001:db8::/32', [8080]), (None, [53, 53])]
{'app': 'sandbox-router'}
[{'path': '/var/lib/sbxsh/cache/beta', 'type': 'Directory'}]
['/home/sbx/.cache']
{'cpu': '500m', 'memory': '1Gi', 'ephemeral-storage': '20Gi'}" \
    "every option: kata, no warm pods, the egress rules (IPv6 too) and DNS, the router, the cache, the limits"

# Refusals: exit 2, nothing on stdout, a message naming the option.
refuse() { # NAME WANT-IN-STDERR ARGS...
    local name=$1 want=$2
    shift 2
    "$SBX" render-pool "$@" >"$SBX_TEST_TMP/o" 2>"$SBX_TEST_TMP/e"
    local rc=$?
    is "$rc:$(cat "$SBX_TEST_TMP/o")" "2:" "refused, nothing printed: $name" || diag "$(cat "$SBX_TEST_TMP/e")"
    like "$(cat "$SBX_TEST_TMP/e")" "$want" "... the message names $want"
}
I=(--image registry.example/sbx:1)
refuse "no tenant" "--tenant and --image are required" "${I[@]}"
refuse "a tenant with a newline and a key" "--tenant" --tenant $'a\nkind: Secret' "${I[@]}"
refuse "an upper-case tenant" "--tenant" --tenant Acme "${I[@]}"
refuse "a tenant longer than 40" "--tenant" --tenant "$(printf 'a%.0s' {1..41})" "${I[@]}"
refuse "an image with a space" "--image" --tenant acme --image 'sbx:1 # x'
refuse "an image with a quote" "--image" --tenant acme --image 'sbx:1"'
refuse "runtime runc" "--runtime" --tenant acme "${I[@]}" --runtime runc
refuse "replicas -1" "--replicas" --tenant acme "${I[@]}" --replicas -1
refuse "a cache over /etc" "--cache-mount" --tenant acme "${I[@]}" --cache-mount /etc
refuse "a relative cache path" "--cache-mount" --tenant acme "${I[@]}" --cache-mount home/.cache
refuse "a cache path with .." "--cache-mount" --tenant acme "${I[@]}" --cache-mount /home/../etc
refuse "a cache over the agent's directory" "--cache-mount" --tenant acme "${I[@]}" --cache-mount /run/sbxsh/x
refuse "an egress rule without a port" "--egress-cidr" --tenant acme "${I[@]}" --egress-cidr 10.0.0.0/8
refuse "an egress rule with a host name" "--egress-cidr" --tenant acme "${I[@]}" --egress-cidr example.com/32:443
refuse "an egress prefix /33" "--egress-cidr" --tenant acme "${I[@]}" --egress-cidr 10.0.0.0/33:443
refuse "an egress port 0" "--egress-cidr" --tenant acme "${I[@]}" --egress-cidr 10.0.0.0/8:0
refuse "a memory limit with a newline" "--memory" --tenant acme "${I[@]}" --memory $'4Gi\n  x: y'
refuse "a cpu limit 0" "--cpu" --tenant acme "${I[@]}" --cpu 0
refuse "a namespace with a dot" "--namespace" --tenant acme "${I[@]}" --namespace a.b
out=$(q --tenant acme "${I[@]}" --cpu 100m -- 'c["resources"]["requests"]["cpu"], c["resources"]["limits"]["cpu"]')
is "$out" "('100m', '100m')" "a CPU limit under a quarter of a CPU: the request is the limit, not above it"
out=$(q --tenant acme "${I[@]}" --cpu 0.1 -- 'c["resources"]["requests"]["cpu"]')
is "$out" "0.1" "... in CPUs too"
refuse "an operand" "unexpected argument" --tenant acme "${I[@]}" extra
refuse "an unknown option" "unknown or incomplete option" --tenant acme "${I[@]}" --bogus
out=$("$SBX" render-pool --help); rc=$?
is "$rc" 0 "render-pool --help: exit 0"
like "$out" '^usage: sbx render-pool --tenant T --image IMG' "... the usage"
done_testing
