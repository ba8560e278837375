#!/bin/bash
# cluster/rbac.yaml's Role grants exactly the verbs sbxsh asks for: the list sbx doctor
# checks with SelfSubjectAccessReviews (kube/tool_doctor.c's table), plus get and list on
# pools and templates, which sbx doctor reads (and needs no review for). Skipped by name in
# a tree without the kube backend's doctor.
. "$(dirname "$0")/../lib/tap.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
src=$top/kube/tool_doctor.c
[ -f "$src" ] || skip_all "kube/tool_doctor.c is not in this tree (the kube backend is not merged)"
python3 -c 'import yaml' 2>/dev/null || skip_all "python3-yaml is not installed (make deps)"
out=$(python3 - "$src" "$top/cluster/rbac.yaml" <<'PY'
import re, sys, yaml
asked = set()
for g, r, s, verbs in re.findall(r'\{\s*"([^"]*)",\s*"([^"]*)",\s*"([^"]*)",\s*"([a-z ]+)"\s*\}', open(sys.argv[1]).read()):
    for v in verbs.split():
        asked.add((g, r + ("/" + s if s else ""), v))
role = next(d for d in yaml.safe_load_all(open(sys.argv[2])) if d["kind"] == "Role")
granted = {(g, r, v) for rule in role["rules"] for g in rule["apiGroups"]
           for r in rule["resources"] for v in rule["verbs"]}
reads = {("extensions.agents.x-k8s.io", r, v) for r in ("sandboxwarmpools", "sandboxtemplates")
         for v in ("get", "list")}
print("asked", len(asked))
print("missing", sorted(asked - granted))
print("extra", sorted(granted - asked - reads))
PY
)
like "$out" '^asked [1-9]' "kube/tool_doctor.c's verb table is read" || diag "$out"
like "$out" $'\nmissing \\[\\]' "every verb sbxsh asks for is in rbac.yaml's Role" || diag "$out"
like "$out" $'\nextra \\[\\]$' "... and nothing more than those and the pool and template reads" || diag "$out"
done_testing
