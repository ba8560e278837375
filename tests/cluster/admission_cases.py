"""The admission policies (cluster/admission.yaml) run on templates, sandboxes and
RoleBindings: what `sbx render-pool` prints passes them, and each kind of violation is
denied with its own message (a tenant's sandbox mounting another tenant's cache, a
RoleBinding in a tenant's namespace binding another namespace's identity among them). The expressions are the policy file's own, evaluated by tests/kube/cel.py (see
there for how faithful that is). Prints TAP; run by admission.t.

    python3 admission_cases.py TOP SBX
"""

import copy
import subprocess
import sys

import yaml

sys.path.insert(0, __file__.rsplit("/", 2)[0] + "/kube")
import cel  # noqa: E402

top, sbx = sys.argv[1], sys.argv[2]
n = 0
failed = 0


def result(ok, name, *diag):
    global n, failed
    n += 1
    print("%s %d - %s" % ("ok" if ok else "not ok", n, name))
    if not ok:
        failed += 1
        for d in diag:
            for line in str(d).splitlines():
                print("# " + line)


class _Vars(dict):
    """`variables`: a variable whose expression failed raises when it is read, as in a VAP."""

    def __getitem__(self, k):
        v = dict.__getitem__(self, k)
        if isinstance(v, cel.CelError):
            raise v
        return v


def denials(policy, obj, nsobj):
    """The messages of the validations obj (in the namespace nsobj) fails (an evaluation
    error fails: failurePolicy Fail), in the policy's order."""
    spec = policy["spec"]
    variables = _Vars()
    names = {"object": obj, "variables": variables, "oldObject": None, "namespaceObject": nsobj}
    for v in spec.get("variables", []):
        try:
            variables[v["name"]] = cel.evaluate(v["expression"], names)
        except cel.CelError as e:
            variables[v["name"]] = e
    out = []
    for val in spec["validations"]:
        try:
            ok = cel.evaluate(val["expression"], names) is True
        except cel.CelError:
            ok = False
        if not ok:
            out.append(val["message"])
    return out


docs = list(yaml.safe_load_all(open(top + "/cluster/admission.yaml")))
policies = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ValidatingAdmissionPolicy"}
bindings = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ValidatingAdmissionPolicyBinding"}
policy = policies["sbxsh-sandbox-security"]
iso = policies["sbxsh-tenant-isolation"]
msgs = {k: next(v["message"] for v in policy["spec"]["validations"] if k in v["message"])
        for k in ("runtimeClassName", "non-root", "capabilities", "automountServiceAccountToken",
                  "limits", "hostPath", "package cache must")}
msgs["cache"] = msgs.pop("package cache must")
iso_msgs = {k: next(v["message"] for v in iso["spec"]["validations"] if k in v["message"])
            for k in ("only ServiceAccounts", "no User", "no group")}

result(sorted(bindings) == sorted(policies)
       and all(bindings[n]["spec"]["policyName"] == n and bindings[n]["spec"]["validationActions"] == ["Deny"]
               for n in policies),
       "each policy has its binding, with Deny")
rules = policy["spec"]["matchConstraints"]["resourceRules"]
result(sorted((g, r) for rule in rules for g in rule["apiGroups"] for r in rule["resources"])
       == [("agents.x-k8s.io", "sandboxes"), ("extensions.agents.x-k8s.io", "sandboxtemplates")],
       "the security policy matches Sandboxes (claim-made ones included) and SandboxTemplates")
rules = iso["spec"]["matchConstraints"]["resourceRules"]
result(sorted((g, r) for rule in rules for g in rule["apiGroups"] for r in rule["resources"])
       == [("rbac.authorization.k8s.io", "rolebindings")],
       "the isolation policy matches RoleBindings")


def rendered(*args, tenant="acme"):
    out = subprocess.run([sbx, "render-pool", "--tenant", tenant, "--image",
                          "registry.example/sbx:1", *args], check=True,
                         capture_output=True, text=True).stdout
    return {d["kind"]: d for d in yaml.safe_load_all(out) if d}


acme = rendered()
nsobj = acme["Namespace"]
result(all(all(nsobj["metadata"]["labels"].get(k) == v for k, v in
               b["spec"]["matchResources"]["namespaceSelector"]["matchLabels"].items())
           for b in bindings.values()),
       "the bindings select the tenant's namespace render-pool prints")
got = denials(iso, acme["RoleBinding"], nsobj)
result(got == [], "render-pool's RoleBinding passes the isolation policy", got)

for args in ([], ["--runtime", "kata", "--cache-mount", "/home/sbx/.cache", "--dns",
                  "--egress-cidr", "10.0.0.0/8:443"]):
    t = rendered(*args)["SandboxTemplate"]
    got = denials(policy, t, nsobj)
    result(got == [], "a template from render-pool%s passes" % "".join(" " + a for a in args), got)
    # The Sandbox the controller makes from it (warm pool or claim): the template's
    # podTemplate, as the controller copies it.
    sb = {"apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox",
          "metadata": {"name": "sbx-acme-x7k2p"},
          "spec": {"podTemplate": copy.deepcopy(t["spec"]["podTemplate"])}}
    got = denials(policy, sb, nsobj)
    result(got == [], "... and so does the Sandbox made from it", got)

base = rendered("--cache-mount", "/home/sbx/.cache")["SandboxTemplate"]


def variant(change):
    t = copy.deepcopy(base)
    change(t["spec"]["podTemplate"]["spec"])
    return t


def c0(p):
    return p["containers"][0]


init = {"name": "setup", "image": "registry.example/sbx:1",
        "securityContext": copy.deepcopy(base["spec"]["podTemplate"]["spec"]["containers"][0]
                                         ["securityContext"]),
        "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}

cases = [
    ("no runtime class", "runtimeClassName", lambda p: p.pop("runtimeClassName")),
    ("runtime class runc", "runtimeClassName", lambda p: p.update(runtimeClassName="runc")),
    ("no pod securityContext", "non-root", lambda p: p.pop("securityContext")),
    ("runAsNonRoot false", "non-root", lambda p: p["securityContext"].update(runAsNonRoot=False)),
    ("runAsUser 0 on the pod", "non-root", lambda p: p["securityContext"].update(runAsUser=0)),
    ("a container's runAsUser 0", "non-root",
     lambda p: c0(p)["securityContext"].update(runAsUser=0)),
    ("runAsNonRoot \"true\" as a string", "non-root",
     lambda p: p["securityContext"].update(runAsNonRoot="true")),
    ("capabilities not dropped", "capabilities",
     lambda p: c0(p)["securityContext"].pop("capabilities")),
    ("drop without ALL", "capabilities",
     lambda p: c0(p)["securityContext"]["capabilities"].update(drop=["NET_RAW"])),
    ("a capability added", "capabilities",
     lambda p: c0(p)["securityContext"]["capabilities"].update(add=["NET_ADMIN"])),
    ("privilege escalation allowed", "capabilities",
     lambda p: c0(p)["securityContext"].update(allowPrivilegeEscalation=True)),
    ("privileged", "capabilities", lambda p: c0(p)["securityContext"].update(privileged=True)),
    ("an init container keeping its capabilities", "capabilities",
     lambda p: p.update(initContainers=[dict(copy.deepcopy(init), securityContext={
         "allowPrivilegeEscalation": False})])),
    ("service-account token mounted", "automountServiceAccountToken",
     lambda p: p.update(automountServiceAccountToken=True)),
    ("service-account token left to the default", "automountServiceAccountToken",
     lambda p: p.pop("automountServiceAccountToken")),
    ("no limits", "limits", lambda p: c0(p)["resources"].pop("limits")),
    ("no memory limit", "limits", lambda p: c0(p)["resources"]["limits"].pop("memory")),
    ("an init container without limits", "limits",
     lambda p: p.update(initContainers=[dict(copy.deepcopy(init), resources={})])),
    ("host network", "hostPath", lambda p: p.update(hostNetwork=True)),
    ("host PID", "hostPath", lambda p: p.update(hostPID=True)),
    ("another tenant's package cache", "cache",
     lambda p: p["volumes"][-1]["hostPath"].update(path="/var/lib/sbxsh/cache/beta")),
    ("a subdirectory of the tenant's cache", "cache",
     lambda p: p["volumes"][-1]["hostPath"].update(path="/var/lib/sbxsh/cache/acme/x")),
    ("the caches' root", "cache",
     lambda p: p["volumes"][-1]["hostPath"].update(path="/var/lib/sbxsh/cache/")),
    ("a hostPath outside the caches", ("hostPath", "cache"),
     lambda p: p["volumes"].append({"name": "etc", "hostPath": {"path": "/etc"}})),
    ("a cache hostPath climbing out with ..", ("hostPath", "cache"),
     lambda p: p["volumes"].append({"name": "x", "hostPath": {
         "path": "/var/lib/sbxsh/cache/../../../etc"}})),
]
for name, kind, change in cases:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    got = denials(policy, variant(change), nsobj)
    result(got == [msgs[k] for k in kinds], "denied: %s, by the %s rule" % (name, " and ".join(kinds)),
           "got: %r" % got)

# The tenant's own cache, in a namespace that does not say whose it is, or another
# tenant's namespace: denied; in the tenant's own: admitted (above, render-pool's).
unlabelled = copy.deepcopy(nsobj)
del unlabelled["metadata"]["labels"]["sbxsh.dev/tenant"]
got = denials(policy, base, unlabelled)
result(got == [msgs["cache"]], "denied: a cache in a namespace without sbxsh.dev/tenant", got)
got = denials(policy, base, rendered(tenant="beta")["Namespace"])
result(got == [msgs["cache"]], "denied: acme's cache in beta's namespace", got)
got = denials(policy, rendered("--cache-mount", "/c", tenant="beta")["SandboxTemplate"],
              rendered(tenant="beta")["Namespace"])
result(got == [], "admitted: beta's cache in beta's namespace", got)

# RoleBindings in acme's namespace: each subject that would give another namespace's
# identity acme's sessions is denied by its rule; acme's own, a person, a group of its own
# ServiceAccounts, admitted.
rb = acme["RoleBinding"]


def binding(*subjects):
    b = copy.deepcopy(rb)
    b["subjects"] = list(subjects)
    return b


SA = "ServiceAccount"
for name, subj, kind in [
    ("beta's ServiceAccount", {"kind": SA, "name": "sbxsh-agent-host", "namespace": "sbxsh-beta"},
     "only ServiceAccounts"),
    ("the old shared namespace's ServiceAccount",
     {"kind": SA, "name": "sbxsh-agent-host", "namespace": "sbxsh"}, "only ServiceAccounts"),
    ("beta's ServiceAccount named as a User",
     {"kind": "User", "name": "system:serviceaccount:sbxsh-beta:sbxsh-agent-host"}, "no User"),
    ("every ServiceAccount", {"kind": "Group", "name": "system:serviceaccounts"}, "no group"),
    ("beta's ServiceAccounts", {"kind": "Group", "name": "system:serviceaccounts:sbxsh-beta"},
     "no group"),
    ("every authenticated user", {"kind": "Group", "name": "system:authenticated"}, "no group"),
]:
    got = denials(iso, binding(rb["subjects"][0], subj), nsobj)
    result(got == [iso_msgs[kind]], "denied: a RoleBinding in acme's namespace binding %s" % name,
           "got: %r" % got)
for name, subj in [
    ("its own ServiceAccount without a namespace", {"kind": SA, "name": "sbxsh-agent-host"}),
    ("its own ServiceAccount as a User",
     {"kind": "User", "name": "system:serviceaccount:sbxsh-acme:other"}),
    ("a person", {"kind": "User", "name": "alice@example.com"}),
    ("its own ServiceAccounts", {"kind": "Group", "name": "system:serviceaccounts:sbxsh-acme"}),
    ("an OIDC group", {"kind": "Group", "name": "oidc:acme-admins"}),
]:
    got = denials(iso, binding(subj), nsobj)
    result(got == [], "admitted: a RoleBinding in acme's namespace binding %s" % name, got)
got = denials(iso, {k: v for k, v in rb.items() if k != "subjects"}, nsobj)
result(got == [], "admitted: a RoleBinding without subjects", got)

# No containers at all is an error in the expressions, so the request is denied.
got = denials(policy, variant(lambda p: p.pop("containers")), nsobj)
result(len(got) >= 1, "a pod spec without containers cannot be evaluated: denied", got)

# The evaluator's own error semantics, which the policy's has() guards rely on.
E = cel.evaluate
result(E("false && {}.x".replace("{}", "m"), {"m": {}}) is False,
       "cel: false && (a missing key) is false, as in CEL")
result(E("m.x || true", {"m": {}}) is True, "cel: (a missing key) || true is true")
try:
    E("m.x && true", {"m": {}})
    result(False, "cel: (a missing key) && true is an error")
except cel.CelError:
    result(True, "cel: (a missing key) && true is an error")
result(E("1 == true", {}) is False and E("'1' in [1]", {}) is False,
       "cel: equality across types is false")
result(E("[1, 2].all(x, x > 0) && ![1, -1].all(x, x > 0) && [1, -1].exists(x, x < 0)", {})
       is True, "cel: all() and exists()")

print("1..%d" % n)
sys.exit(1 if failed else 0)
