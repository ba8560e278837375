#!/bin/bash
# The Role `sbx render-pool` prints for a tenant grants exactly the verbs sbxsh asks for:
# the list sbx doctor checks with SelfSubjectAccessReviews (kube/tool_doctor.c's table),
# plus get and list on pools and templates, which sbx doctor reads (and needs no review
# for), in the tenant's namespace only, bound to the tenant's ServiceAccount there and to
# nothing else. Skipped by name in a tree without the kube backend's doctor.
. "$(dirname "$0")/../lib/tap.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
src=$top/kube/tool_doctor.c
[ -f "$src" ] || skip_all "kube/tool_doctor.c is not in this tree (the kube backend is not merged)"
python3 -c 'import yaml' 2>/dev/null || skip_all "python3-yaml is not installed (make deps)"
"$SBX" render-pool --tenant acme --image registry.example/sbx:1 >"$SBX_TEST_TMP/acme.yaml" ||
    bail_out "sbx render-pool failed"
out=$(python3 - "$src" "$SBX_TEST_TMP/acme.yaml" <<'PY'
import re, sys, yaml
asked = set()
for g, r, s, verbs in re.findall(r'\{\s*"([^"]*)",\s*"([^"]*)",\s*"([^"]*)",\s*"([a-z ]+)"\s*\}', open(sys.argv[1]).read()):
    for v in verbs.split():
        asked.add((g, r + ("/" + s if s else ""), v))
docs = [d for d in yaml.safe_load_all(open(sys.argv[2])) if d]
role = next(d for d in docs if d["kind"] == "Role")
rb = next(d for d in docs if d["kind"] == "RoleBinding")
sa = next(d for d in docs if d["kind"] == "ServiceAccount")
print("kinds", sorted(d["kind"] for d in docs))
print("scope", sorted({d["metadata"].get("namespace", "-") for d in (role, rb, sa)}))
print("binding", rb["roleRef"]["kind"], rb["roleRef"]["name"] == role["metadata"]["name"],
      [(s["kind"], s["name"] == sa["metadata"]["name"], s["namespace"]) for s in rb["subjects"]])
granted = {(g, r, v) for rule in role["rules"] for g in rule["apiGroups"]
           for r in rule["resources"] for v in rule["verbs"]}
reads = {("extensions.agents.x-k8s.io", r, v) for r in ("sandboxwarmpools", "sandboxtemplates")
         for v in ("get", "list")}
print("asked", len(asked))
print("missing", sorted(asked - granted))
print("extra", sorted(granted - asked - reads))
PY
)
like "$out" "kinds \\['Namespace', 'Role', 'RoleBinding', 'SandboxTemplate', 'SandboxWarmPool', 'ServiceAccount'\\]" \
    "render-pool prints the tenant's namespace, ServiceAccount, Role and RoleBinding with its pool" || diag "$out"
like "$out" "scope \\['sbxsh-acme'\\]" "... all three in the tenant's namespace, sbxsh-acme" || diag "$out"
like "$out" "binding Role True \\[\\('ServiceAccount', True, 'sbxsh-acme'\\)\\]" \
    "... the Role (not a ClusterRole) bound to that namespace's ServiceAccount alone" || diag "$out"
like "$out" $'(^|\n)asked [1-9]' "kube/tool_doctor.c's verb table is read" || diag "$out"
like "$out" $'\nmissing \\[\\]' "every verb sbxsh asks for is in the tenant's Role" || diag "$out"
like "$out" $'\nextra \\[\\]$' "... and nothing more than those and the pool and template reads" || diag "$out"
done_testing
