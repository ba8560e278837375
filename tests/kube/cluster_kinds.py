"""cluster_kinds: what the fake API server needs to take cluster/'s manifests as a cluster
would, installed into it by one line (`cluster_kinds.install(globals())`, at the end of
fake-apiserver's definitions):

- The kinds cluster/ applies, stored and served (create, get, list, update, merge patch,
  delete; discovery and OpenAPI so that `kubectl apply` finds them): Namespace,
  ServiceAccount, ConfigMap, Role, RoleBinding, ClusterRole, ClusterRoleBinding (rbac/v1),
  RuntimeClass (node.k8s.io/v1), ValidatingAdmissionPolicy and its Binding
  (admissionregistration.k8s.io/v1). Namespace and the cluster-wide ones are cluster-scoped.
  Every namespace has the kube-root-ca.crt ConfigMap, holding the fake's CA.
- ServiceAccount tokens: `serviceaccounts/NAME/token` (TokenRequest, as `kubectl create
  token` asks) returns a token the fake then accepts, as system:serviceaccount:NS:NAME, and
  what such a user may do is decided by the stored Roles, RoleBindings, ClusterRoles and
  ClusterRoleBindings as kube-apiserver's RBAC authorizer decides it (every
  ClusterRoleBinding, then the RoleBindings of the request's namespace only; a rule's verbs,
  apiGroups, resources with `*` and `*/SUB`, resourceNames against the request's name; see
  _rbac_allows), for requests and access reviews alike (the fake's faults still apply).
  The token's expiry is not enforced.
- The agent-sandbox objects checked against crd_schema (our description of the v1beta1
  CRDs) on create, update and patch: 422 Invalid with one cause per error.
- A ValidatingAdmissionPolicy whose expressions do not compile (tests/kube/cel.py) is
  refused, as a real API server refuses it; a stored policy bound to a namespace (the
  binding's namespaceSelector matchLabels, against the stored Namespace's labels) is
  enforced on the Sandboxes, SandboxTemplates and RoleBindings written there through the API
  (not on the Sandboxes the fake's controller makes itself), with `object`, `oldObject`,
  `namespaceObject` and `variables`; a denial is the Status a real server writes (the
  validation's reason and its HTTP code: Forbidden 403, else Invalid 422).

Where it differs from a cluster: no watch on these kinds, strategic merge patch taken as a
merge patch (kubectl apply's patches of these kinds are maps only), no garbage collection
of a namespace's objects when it is deleted, no defaulting.
"""

import base64
import copy
import datetime
import json
import os
import sys
import threading
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cel  # noqa: E402
import crd_schema  # noqa: E402

RBAC = "rbac.authorization.k8s.io"
NODE = "node.k8s.io"
ADM = "admissionregistration.k8s.io"
# plural, group, version, kind, singular, namespaced, short names
KINDS = [
    ("namespaces", "", "v1", "Namespace", "namespace", False, ["ns"]),
    ("serviceaccounts", "", "v1", "ServiceAccount", "serviceaccount", True, ["sa"]),
    ("configmaps", "", "v1", "ConfigMap", "configmap", True, ["cm"]),
    ("roles", RBAC, "v1", "Role", "role", True, []),
    ("rolebindings", RBAC, "v1", "RoleBinding", "rolebinding", True, []),
    ("clusterroles", RBAC, "v1", "ClusterRole", "clusterrole", False, []),
    ("clusterrolebindings", RBAC, "v1", "ClusterRoleBinding", "clusterrolebinding", False, []),
    ("runtimeclasses", NODE, "v1", "RuntimeClass", "runtimeclass", False, []),
    ("validatingadmissionpolicies", ADM, "v1", "ValidatingAdmissionPolicy",
     "validatingadmissionpolicy", False, []),
    ("validatingadmissionpolicybindings", ADM, "v1", "ValidatingAdmissionPolicyBinding",
     "validatingadmissionpolicybinding", False, []),
]
BY_PLURAL = {k[0]: k for k in KINDS}
CA_CONFIGMAP = "kube-root-ca.crt"

_lock = threading.Lock()
_objs = {}          # (plural, ns or "", name) -> object
_rv = [5000000]
_fake = []          # the Fake instance, once made


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _stored(plural, ns, name):
    return _objs.get((plural, ns or "", name))


def _list(plural, ns=None):
    return [o for (p, n, _), o in sorted(_objs.items()) if p == plural and (ns is None or n == ns)]


def install(g):
    """Extends the fake (its module globals g) as the docstring says."""
    Res, ApiError = g["Res"], g["ApiError"]
    invalid_err = g["invalid"]
    for plural, group, version, kind, singular, namespaced, short in KINDS:
        subs = [("token", "TokenRequest", ["create"])] if plural == "serviceaccounts" else []
        r = Res(plural, group, version, kind, singular, short=short,
                verbs=("create", "delete", "get", "list", "patch", "update"), subresources=subs)
        r.cluster_scoped = not namespaced
        g["RESOURCES"][plural] = r
    for gv in ((RBAC, "v1"), (NODE, "v1"), (ADM, "v1")):
        if gv not in g["GROUPS"]:
            g["GROUPS"].append(gv)
    cluster_scoped = {k[0] for k in KINDS if not k[5]}

    orig_aggregated = g["aggregated"]

    def aggregated(fake, core, version):
        out = orig_aggregated(fake, core, version)
        for item in out["items"]:
            for v in item["versions"]:
                if core:
                    have = {e["resource"] for e in v["resources"]}
                    for plural, group, _, kind, singular, namespaced, short in KINDS:
                        if group == "" and plural not in have:
                            e = {"resource": plural, "responseKind": {"group": "", "version": "v1",
                                                                      "kind": kind},
                                 "scope": "Namespaced", "singularResource": singular,
                                 "verbs": ["create", "delete", "get", "list", "patch", "update"]}
                            if short:
                                e["shortNames"] = short
                            v["resources"].append(e)
                for e in v["resources"]:
                    if e["resource"] in cluster_scoped:
                        e["scope"] = "Cluster"
        return out
    g["aggregated"] = aggregated

    orig_resource_list = g["resource_list"]

    def resource_list(group, version):
        out = orig_resource_list(group, version)
        for e in out["resources"]:
            if e["name"].split("/")[0] in cluster_scoped:
                e["namespaced"] = False
        return out
    g["resource_list"] = resource_list

    orig_openapi = g["openapi_gv"]

    def openapi_gv(group, version):
        out = orig_openapi(group, version)
        prefix = "/apis/%s/%s" % (group, version) if group else "/api/v1"
        for plural in cluster_scoped:
            if BY_PLURAL[plural][1] != group:
                continue
            for tail in ("", "/{name}"):
                p = "%s/namespaces/{namespace}/%s%s" % (prefix, plural, tail)
                if p in out["paths"]:
                    out["paths"]["%s/%s%s" % (prefix, plural, tail)] = out["paths"].pop(p)
        return out
    g["openapi_gv"] = openapi_gv

    orig_validate = g["validate"]

    def validate(res, obj):
        orig_validate(res, obj)
        name = obj.get("metadata", {}).get("name", "")
        errs = crd_schema.check(res.kind, obj)
        if errs:
            field, reason, detail = errs[0]
            e = invalid_err(res, name, field, "", reason, detail)
            e.details["causes"] = [{"reason": r, "message": d, "field": f} for f, r, d in errs]
            if len(errs) > 1:
                e.message = "%s \"%s\" is invalid: [%s]" % (res.qualified_kind, name, ", ".join(
                    "%s: %s" % (f, d) for f, _, d in errs))
            raise e
        if res.plural in ("sandboxes", "sandboxtemplates"):
            _admit(res, obj, ApiError, None)
    g["validate"] = validate

    orig_ns_exists = g["namespace_exists"]

    def namespace_exists(fake, ns):
        return orig_ns_exists(fake, ns) or _stored("namespaces", None, ns) is not None
    g["namespace_exists"] = namespace_exists

    Fake = g["Fake"]
    orig_init = Fake.__init__

    def init(self, *a, **kw):
        orig_init(self, *a, **kw)
        _fake.append(self)
    Fake.__init__ = init

    orig_allowed = Fake.allowed

    def allowed(self, user, verb, group, resource, sub, ns, name=""):
        if not orig_allowed(self, user, verb, group, resource, sub, ns, name):
            return False
        if user.startswith("system:serviceaccount:"):
            return _rbac_allows(user, verb, group, resource, sub, ns, name or "")
        return True
    Fake.allowed = allowed

    Handler = g["Handler"]
    orig_route = Handler.route

    def route(self, path):
        parts = [p for p in path.strip("/").split("/") if p]
        target = _target(parts)
        if target is None:
            return orig_route(self, path)
        return _serve(self, target, ApiError, g)
    Handler.route = route


def _target(parts):
    """(plural, ns, name, sub) when the path is one of our kinds, else None."""
    if parts[:2] == ["api", "v1"]:
        group, rest = "", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis" and (parts[1], parts[2]) in (
            (RBAC, "v1"), (NODE, "v1"), (ADM, "v1")):
        group, rest = parts[1], parts[3:]
    else:
        return None
    ns = None
    if group == "" and len(rest) >= 3 and rest[0] == "namespaces":
        ns, rest = rest[1], rest[2:]
    elif group != "" and len(rest) >= 3 and rest[0] == "namespaces":
        ns, rest = rest[1], rest[2:]
    if not rest or rest[0] not in BY_PLURAL or BY_PLURAL[rest[0]][1] != group or len(rest) > 3:
        return None
    return rest[0], ns, rest[1] if len(rest) > 1 else None, rest[2] if len(rest) > 2 else None


def _serve(h, target, ApiError, g):
    fake = h.server.fake
    plural, ns, name, sub = target
    res = g["RESOURCES"][plural]
    namespaced = BY_PLURAL[plural][5]
    notfound = lambda: ApiError(404, "NotFound", "the server could not find the requested resource", {})  # noqa: E731
    if namespaced != (ns is not None):
        raise notfound()
    if sub is not None and not (plural == "serviceaccounts" and sub == "token"):
        raise notfound()
    m = h.command
    if m == "GET":
        if g["truthy"](h.q, "watch"):
            raise ApiError(405, "MethodNotAllowed", "the fake-apiserver does not watch %s" % plural)
        verb = "get" if name else "list"
    else:
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(m)
        if verb is None or (name is None) != (m == "POST") and not sub:
            raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
    if not fake.allowed(h.user, verb, res.group, plural, sub or "", ns, name or ""):
        raise fake.forbid(h.user, verb, plural, res.group, sub, ns, name)
    if sub == "token":
        return _token(h, ns, name, ApiError, g)
    with _lock:
        if verb == "get":
            o = _get(fake, plural, ns, name)
            if o is None:
                raise g["not_found"](res, name)
            return h.reply(200, o)
        if verb == "list":
            items = _list(plural, ns)
            if plural == "namespaces":
                names = {o["metadata"]["name"] for o in items}
                items += [_synthetic_ns(n) for n in sorted({"default", "kube-system", fake.namespace} - names)]
            if plural == "configmaps" and ns and not _stored(plural, ns, CA_CONFIGMAP):
                items.append(_ca_configmap(fake, ns))
            return h.reply(200, {"kind": res.kind + "List", "apiVersion": res.api_version,
                                 "metadata": {"resourceVersion": str(_rv[0])}, "items": items})
        if verb == "delete":
            h.body()
            h._body_read = True
            o = _objs.pop((plural, ns or "", name), None)
            if o is None:
                raise g["not_found"](res, name)
            return h.reply(200, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                 "status": "Success", "details": {"name": name, "kind": plural}})
        body = h.json_body()
        h._body_read = True
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "the body of the request must be a JSON object")
        if verb == "create":
            cur = None
            obj = body
            name = (obj.get("metadata") or {}).get("name")
            if not name:
                raise g["invalid"](res, "", "metadata.name", "", "FieldValueRequired",
                                   "Required value: name or generateName is required")
            if _get(fake, plural, ns, name) is not None and not (
                    plural == "namespaces" and _stored(plural, None, name) is None):
                raise ApiError(409, "AlreadyExists", '%s "%s" already exists' % (res.qualified, name),
                               {"name": name, "group": res.group, "kind": plural})
        else:
            cur = _get(fake, plural, ns, name)
            if cur is None:
                raise g["not_found"](res, name)
            if verb == "patch":
                ct = (h.headers.get("Content-Type") or "").split(";")[0].strip()
                if ct not in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
                    raise ApiError(415, "UnsupportedMediaType", "the body of the request was in an "
                                   "unknown format - accepted media types include: "
                                   "application/merge-patch+json, application/strategic-merge-patch+json")
                obj = g["merge_patch"](copy.deepcopy(cur), body)
            else:
                obj = body
        obj["kind"], obj["apiVersion"] = res.kind, res.api_version
        md = obj.setdefault("metadata", {})
        if md.get("namespace") not in (None, "", ns) and namespaced:
            raise ApiError(400, "BadRequest", "the namespace of the provided object does not match "
                           "the namespace sent on the request")
        if namespaced:
            md["namespace"] = ns
        else:
            md.pop("namespace", None)
        if not g["DNS1123_SUB"].match(md.get("name", "")):
            raise g["invalid"](res, md.get("name", ""), "metadata.name", "", "FieldValueInvalid",
                               'Invalid value: "%s": a lowercase RFC 1123 subdomain' % md.get("name"))
        _check(res, obj, cur, ApiError, g)
        if plural == "rolebindings":
            _admit(res, obj, ApiError, cur, locked=True)
        _rv[0] += 1
        md["resourceVersion"] = str(_rv[0])
        if cur is None or _stored(plural, ns, md["name"]) is None:
            md["uid"] = str(uuid.uuid4())
            md["creationTimestamp"] = _now()
        else:
            md["uid"], md["creationTimestamp"] = cur["metadata"]["uid"], cur["metadata"]["creationTimestamp"]
        if plural == "namespaces":
            obj.setdefault("status", {"phase": "Active"})
            md.setdefault("labels", {})["kubernetes.io/metadata.name"] = md["name"]
        _objs[(plural, ns or "", md["name"])] = obj
        return h.reply(201 if verb == "create" else 200, obj)


def _synthetic_ns(name):
    return {"kind": "Namespace", "apiVersion": "v1",
            "metadata": {"name": name, "uid": str(uuid.uuid5(uuid.NAMESPACE_DNS, name)),
                         "resourceVersion": "1", "creationTimestamp": "2026-01-01T00:00:00Z",
                         "labels": {"kubernetes.io/metadata.name": name}},
            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}


def _ca_configmap(fake, ns):
    with open(os.path.join(fake.pki, "ca.crt")) as f:
        ca = f.read()
    return {"kind": "ConfigMap", "apiVersion": "v1",
            "metadata": {"name": CA_CONFIGMAP, "namespace": ns, "resourceVersion": "1",
                         "uid": str(uuid.uuid5(uuid.NAMESPACE_DNS, "ca." + ns)),
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "data": {"ca.crt": ca}}


def _get(fake, plural, ns, name):
    o = _stored(plural, ns, name)
    if o is None and plural == "namespaces" and name in ("default", "kube-system", fake.namespace):
        return _synthetic_ns(name)
    if o is None and plural == "configmaps" and name == CA_CONFIGMAP:
        return _ca_configmap(fake, ns)
    return o


def _check(res, obj, cur, ApiError, g):
    """What a real API server refuses of these kinds, as far as cluster/ could get it wrong."""
    name = obj["metadata"]["name"]

    def bad(field, detail, reason="FieldValueInvalid"):
        raise g["invalid"](res, name, field, "", reason, detail)
    k = res.kind
    if k in ("Role", "ClusterRole"):
        for i, r in enumerate(obj.get("rules") or []):
            if not r.get("verbs"):
                bad("rules[%d].verbs" % i, "Required value: verbs must contain at least one value",
                    "FieldValueRequired")
            if not r.get("nonResourceURLs") and r.get("apiGroups") is None:
                bad("rules[%d].apiGroups" % i, "Required value: resource rules must supply at "
                    "least one api group", "FieldValueRequired")
    if k in ("RoleBinding", "ClusterRoleBinding"):
        ref = obj.get("roleRef") or {}
        if ref.get("kind") not in ("Role", "ClusterRole") or not ref.get("name") or \
                ref.get("apiGroup") != RBAC or (k == "ClusterRoleBinding" and ref.get("kind") != "ClusterRole"):
            bad("roleRef", "Invalid value: %s: roleRef must name a Role or ClusterRole of %s"
                % (json.dumps(ref), RBAC))
        if cur is not None and cur.get("roleRef") != obj.get("roleRef"):
            bad("roleRef", "Invalid value: cannot change roleRef")
        for i, s in enumerate(obj.get("subjects") or []):
            if s.get("kind") not in ("ServiceAccount", "User", "Group") or not s.get("name"):
                bad("subjects[%d]" % i, "Invalid value: a subject needs a kind and a name")
    if k == "RuntimeClass" and not g["DNS1123_SUB"].match(obj.get("handler") or ""):
        bad("handler", "Required value: a lowercase RFC 1123 label", "FieldValueRequired")
    if k == "ValidatingAdmissionPolicy":
        spec = obj.get("spec") or {}
        rules = (spec.get("matchConstraints") or {}).get("resourceRules")
        if not rules:
            bad("spec.matchConstraints.resourceRules", "Required value", "FieldValueRequired")
        if spec.get("failurePolicy") not in (None, "Fail", "Ignore"):
            bad("spec.failurePolicy", 'Unsupported value: "%s"' % spec.get("failurePolicy"),
                "FieldValueNotSupported")
        exprs = [("spec.variables[%d].expression" % i, v.get("expression"))
                 for i, v in enumerate(spec.get("variables") or [])]
        exprs += [("spec.validations[%d].expression" % i, v.get("expression"))
                  for i, v in enumerate(spec.get("validations") or [])]
        for field, src in exprs:
            try:
                cel.compile_expr(src or "")
            except cel.CelError as e:
                bad(field, "Invalid value: compilation failed: %s" % e)
    if k == "ValidatingAdmissionPolicyBinding":
        spec = obj.get("spec") or {}
        if not spec.get("policyName"):
            bad("spec.policyName", "Required value", "FieldValueRequired")
        acts = spec.get("validationActions") or []
        if not acts or any(a not in ("Deny", "Warn", "Audit") for a in acts):
            bad("spec.validationActions", "Required value: Deny, Warn or Audit",
                "FieldValueRequired")


class _Vars(dict):
    def __getitem__(self, k):
        v = dict.__getitem__(self, k)
        if isinstance(v, cel.CelError):
            raise v
        return v


# A denying validation's reason, as its HTTP code: the dispatcher sets the Status's reason
# and code from it (kubernetes staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/
# validating/dispatcher.go, reasonToCode: Unauthorized 401, Forbidden 403,
# RequestEntityTooLarge 413, anything else, and no reason, Invalid 422).
_REASON_CODE = {"Unauthorized": 401, "Forbidden": 403, "RequestEntityTooLarge": 413}


def _admit(res, obj, ApiError, old, locked=False):
    """The stored policies bound to obj's namespace, run on obj (Deny only). locked: the
    caller holds _lock."""
    ns = obj["metadata"].get("namespace")
    if not locked:
        _lock.acquire()
    try:
        nsobj = _stored("namespaces", None, ns)
        nsobj = copy.deepcopy(nsobj) if nsobj else _synthetic_ns(ns)
        labels = (nsobj.get("metadata") or {}).get("labels") or {}
        bindings = _list("validatingadmissionpolicybindings")
        policies = {p["metadata"]["name"]: p for p in _list("validatingadmissionpolicies")}
    finally:
        if not locked:
            _lock.release()
    for b in bindings:
        spec = b.get("spec") or {}
        sel = ((spec.get("matchResources") or {}).get("namespaceSelector") or {}).get("matchLabels")
        if sel and any(labels.get(k) != v for k, v in sel.items()):
            continue
        if "Deny" not in (spec.get("validationActions") or []):
            continue
        pol = policies.get(spec.get("policyName"))
        if pol is None:
            continue
        ps = pol.get("spec") or {}
        if not any(res.group in r.get("apiGroups", []) and res.plural in r.get("resources", [])
                   for r in (ps.get("matchConstraints") or {}).get("resourceRules", [])):
            continue
        variables = _Vars()
        names = {"object": obj, "oldObject": old, "namespaceObject": nsobj,
                 "variables": variables}
        for v in ps.get("variables") or []:
            try:
                variables[v["name"]] = cel.evaluate(v["expression"], names)
            except cel.CelError as e:
                variables[v["name"]] = e
        for val in ps.get("validations") or []:
            try:
                ok = cel.evaluate(val["expression"], names) is True
            except cel.CelError as e:
                ok = ps.get("failurePolicy", "Fail") == "Ignore"
                if not ok:
                    val = dict(val, message="expression '%s' resulted in error: %s"
                               % (val["expression"], e))
            if not ok:
                why = "ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s" % (
                    pol["metadata"]["name"], b["metadata"]["name"],
                    val.get("message") or "failed expression: " + val["expression"])
                reason = val.get("reason") or "Invalid"
                raise ApiError(_REASON_CODE.get(reason, 422), reason, '%s "%s" is forbidden: %s' % (
                    res.qualified, obj["metadata"].get("name"), why),
                    {"name": obj["metadata"].get("name"), "group": res.group, "kind": res.plural,
                     "causes": [{"message": why, "field": ""}]})


def _token(h, ns, name, ApiError, g):
    fake = h.server.fake
    if "protobuf" in (h.headers.get("Content-Type") or ""):
        # kubectl create token sends protobuf: "k8s\0" + runtime.Unknown{raw=2}, then
        # TokenRequest{spec=2{expirationSeconds=4}}.
        raw = h.body()
        h._body_read = True
        try:
            if not raw.startswith(b"k8s\x00"):
                raise ValueError("not a Kubernetes protobuf envelope")
            pb = g["pb_fields"]
            spec = pb(pb(pb(raw[4:]).get(2, [b""])[0]).get(2, [b""])[0])
            body = {"spec": {"expirationSeconds": spec[4][0]} if 4 in spec else {}}
        except (ValueError, IndexError) as e:
            raise ApiError(400, "BadRequest", "the body of the request could not be decoded: %s" % e)
    else:
        body = h.json_body()
        h._body_read = True
    with _lock:
        if _stored("serviceaccounts", ns, name) is None:
            raise ApiError(404, "NotFound", 'serviceaccounts "%s" not found' % name,
                           {"name": name, "kind": "serviceaccounts"})
    secs = int(((body or {}).get("spec") or {}).get("expirationSeconds") or 3600)
    exp = int(datetime.datetime.now(datetime.timezone.utc).timestamp()) + secs
    user = "system:serviceaccount:%s:%s" % (ns, name)

    def b64(d):
        return base64.urlsafe_b64encode(json.dumps(d, separators=(",", ":")).encode()).decode().rstrip("=")
    token = "%s.%s.%s" % (b64({"alg": "none", "kid": "fake"}),
                          b64({"iss": "fake-apiserver", "sub": user, "exp": exp,
                               "kubernetes.io": {"namespace": ns, "serviceaccount": {"name": name}}}),
                          base64.urlsafe_b64encode(os.urandom(18)).decode())
    fake.users[token] = (user, ["system:serviceaccounts", "system:serviceaccounts:" + ns,
                                "system:authenticated"])
    exp_ts = datetime.datetime.fromtimestamp(exp, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    h.reply(201, {"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
                  "metadata": {"name": name, "namespace": ns, "creationTimestamp": None},
                  "spec": {"audiences": ["https://kubernetes.default.svc"], "expirationSeconds": secs,
                           "boundObjectRef": None},
                  "status": {"token": token, "expirationTimestamp": exp_ts}})


def _rbac_allows(user, verb, group, resource, sub, ns, name):
    """Whether the RBAC authorizer allows the ServiceAccount user this request, as kubernetes
    decides it (plugin/pkg/auth/authorizer/rbac/rbac.go, RBACAuthorizer.Authorize over
    pkg/registry/rbac/validation/rule.go, VisitRulesFor): every ClusterRoleBinding, then,
    for a namespaced request, the RoleBindings of that namespace and no other; a binding
    applies when a subject names the user (appliesToUser: a ServiceAccount subject without a
    namespace is the binding's namespace's); its roleRef is a ClusterRole, or a Role of the
    binding's namespace; a rule allows when RuleAllows does (pkg/apis/rbac/v1/
    evaluation_helpers.go): VerbMatches ("*" or the verb), APIGroupMatches ("*" or the
    group), ResourceMatches ("*", "RES" or "RES/SUB" exactly, or "*/SUB" for a subresource;
    "RES/*" is not a wildcard), ResourceNameMatches (no resourceNames, or the request's name
    among them: a list or create, with no name, matches no rule that has them)."""
    _, _, sa_ns, sa_name = user.split(":", 3)
    groups = {"system:serviceaccounts", "system:serviceaccounts:" + sa_ns, "system:authenticated"}
    combined = resource + ("/" + sub if sub else "")

    def subject_ok(s, binding_ns):
        if s.get("kind") == "ServiceAccount":
            sns = s.get("namespace") or binding_ns
            return bool(sns) and s.get("name") == sa_name and sns == sa_ns
        if s.get("kind") == "User":
            return s.get("name") == user
        return s.get("kind") == "Group" and s.get("name") in groups

    def resource_ok(rr):
        if rr == "*" or rr == combined:
            return True
        return bool(sub) and len(rr) == len(sub) + 2 and rr.startswith("*/") and rr.endswith(sub)

    def rule_ok(rule):
        names = rule.get("resourceNames") or []
        return (any(v in ("*", verb) for v in rule.get("verbs") or [])
                and any(g in ("*", group) for g in rule.get("apiGroups") or [])
                and any(resource_ok(rr) for rr in rule.get("resources") or [])
                and (not names or name in names))
    with _lock:
        bindings = [(b, None) for b in _list("clusterrolebindings")]
        if ns:
            bindings += [(b, b["metadata"]["namespace"]) for b in _list("rolebindings", ns)]
        for b, bns in bindings:
            if not any(subject_ok(s, bns) for s in b.get("subjects") or []):
                continue
            ref = b.get("roleRef") or {}
            role = (_stored("roles", bns, ref.get("name")) if ref.get("kind") == "Role" and bns
                    else _stored("clusterroles", None, ref.get("name")) if ref.get("kind") == "ClusterRole"
                    else None)
            if role and any(rule_ok(rule) for rule in role.get("rules") or []):
                return True
    return False
