"""crd_schema: the agent-sandbox v1beta1 schemas (Sandbox, SandboxClaim, SandboxTemplate,
SandboxWarmPool) as the fake API server checks them, so that what sbxsh and `sbx
render-pool` send is held to what a cluster's CRDs would accept.

Our own description, written from shared/docs/agent-sandbox-api.md (sections 2-5), not
upstream's CRD files: the fields, their types, the required ones, the enums and the minimums
the controller's types declare. The embedded pod spec is checked at the level mistakes are
made (the PodSpec and Container field names, containers required, the types of the fields
sbxsh's pools set); deeper Kubernetes types (probes, volumes' sources, affinity) are taken as
they come, as a structural schema with x-kubernetes-preserve-unknown-fields would.

    check(kind, obj) -> [(field, reason, detail)], empty when obj is valid

An unknown field is an error (reason FieldValueNotSupported, as under kubectl's default
fieldValidation=Strict; a real server with Warn or Ignore would drop it instead).
"""

import re

__all__ = ["check", "KINDS"]

_QUANTITY = re.compile(r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$")
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


class Obj:
    def __init__(self, props, required=(), open_=False):
        self.props, self.required, self.open = props, list(required), open_


class Str:
    def __init__(self, enum=None, pattern=None, what=None):
        self.enum, self.pattern, self.what = enum, pattern, what


class Int:
    def __init__(self, minimum=None):
        self.minimum = minimum


class List:
    def __init__(self, item, min_items=0):
        self.item, self.min_items = item, min_items


class Map:
    def __init__(self, value):
        self.value = value


class Bool:
    pass


class Any:
    pass


class Quantity:
    pass


ANY, BOOL, STR = Any(), Bool(), Str()
STRMAP = Map(STR)
TIME = Str(pattern=_RFC3339, what="an RFC3339 date-time")

_SEC_CTX = Obj({
    "allowPrivilegeEscalation": BOOL, "appArmorProfile": ANY, "capabilities": Obj({
        "add": List(STR), "drop": List(STR)}), "privileged": BOOL, "procMount": STR,
    "readOnlyRootFilesystem": BOOL, "runAsGroup": Int(0), "runAsNonRoot": BOOL,
    "runAsUser": Int(0), "seLinuxOptions": ANY, "seccompProfile": ANY, "windowsOptions": ANY})
_POD_SEC_CTX = Obj({
    "appArmorProfile": ANY, "fsGroup": Int(0), "fsGroupChangePolicy": STR, "runAsGroup": Int(0),
    "runAsNonRoot": BOOL, "runAsUser": Int(0), "seLinuxChangePolicy": STR, "seLinuxOptions": ANY,
    "seccompProfile": ANY, "supplementalGroups": List(Int(0)), "supplementalGroupsPolicy": STR,
    "sysctls": ANY, "windowsOptions": ANY})
_RESOURCES = Obj({"claims": ANY, "limits": Map(Quantity()), "requests": Map(Quantity())})
_MOUNT = Obj({"mountPath": STR, "mountPropagation": STR, "name": STR, "readOnly": BOOL,
              "recursiveReadOnly": STR, "subPath": STR, "subPathExpr": STR},
             required=["name", "mountPath"])
_CONTAINER = Obj({
    "args": List(STR), "command": List(STR), "env": List(Obj({
        "name": STR, "value": STR, "valueFrom": ANY}, required=["name"])),
    "envFrom": ANY, "image": STR, "imagePullPolicy": Str(enum=["Always", "IfNotPresent", "Never"]),
    "lifecycle": ANY, "livenessProbe": ANY, "name": STR, "ports": ANY, "readinessProbe": ANY,
    "resizePolicy": ANY, "resources": _RESOURCES, "restartPolicy": STR, "securityContext": _SEC_CTX,
    "startupProbe": ANY, "stdin": BOOL, "stdinOnce": BOOL, "terminationMessagePath": STR,
    "terminationMessagePolicy": STR, "tty": BOOL, "volumeDevices": ANY,
    "volumeMounts": List(_MOUNT), "workingDir": STR}, required=["name"])
_VOLUME = Obj({"name": STR}, required=["name"], open_=True)   # one of the many sources
_POD_SPEC = Obj({
    "activeDeadlineSeconds": Int(1), "affinity": ANY, "automountServiceAccountToken": BOOL,
    "containers": List(_CONTAINER, min_items=1), "dnsConfig": ANY,
    "dnsPolicy": Str(enum=["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"]),
    "enableServiceLinks": BOOL, "ephemeralContainers": List(_CONTAINER), "hostAliases": ANY,
    "hostIPC": BOOL, "hostNetwork": BOOL, "hostPID": BOOL, "hostUsers": BOOL, "hostname": STR,
    "imagePullSecrets": ANY, "initContainers": List(_CONTAINER), "nodeName": STR,
    "nodeSelector": STRMAP, "os": ANY, "overhead": ANY, "preemptionPolicy": STR,
    "priority": Int(), "priorityClassName": STR, "readinessGates": ANY, "resourceClaims": ANY,
    "resources": ANY, "restartPolicy": Str(enum=["Always", "OnFailure", "Never"]),
    "runtimeClassName": STR, "schedulerName": STR, "schedulingGates": ANY,
    "securityContext": _POD_SEC_CTX, "serviceAccount": STR, "serviceAccountName": STR,
    "setHostnameAsFQDN": BOOL, "shareProcessNamespace": BOOL, "subdomain": STR,
    "terminationGracePeriodSeconds": Int(0), "tolerations": ANY,
    "topologySpreadConstraints": ANY, "volumes": List(_VOLUME)}, required=["containers"])
_POD_TEMPLATE = Obj({"metadata": Obj({"labels": STRMAP, "annotations": STRMAP}),
                     "spec": _POD_SPEC}, required=["spec"])
_PVC_TEMPLATE = Obj({"metadata": Obj({"name": STR, "labels": STRMAP, "annotations": STRMAP}),
                     "spec": ANY}, required=["spec"])
_NAME_REF = Obj({"name": STR}, required=["name"])
_ADDITIONAL_META = Obj({"labels": STRMAP, "annotations": STRMAP})

# The blueprint (podTemplate, volumeClaimTemplates, service) is inline in both the Sandbox
# and the SandboxTemplate spec.
_BLUEPRINT = {"podTemplate": _POD_TEMPLATE, "volumeClaimTemplates": List(_PVC_TEMPLATE),
              "service": BOOL}

KINDS = {
    "Sandbox": Obj(dict(_BLUEPRINT, **{
        "shutdownTime": TIME, "shutdownPolicy": Str(enum=["Retain", "Delete"]),
        "operatingMode": Str(enum=["Running", "Suspended"])}), required=["podTemplate"]),
    "SandboxTemplate": Obj(dict(_BLUEPRINT, **{
        "networkPolicyManagement": Str(enum=["Managed", "Unmanaged"]),
        "networkPolicy": Obj({"ingress": List(ANY), "egress": List(ANY)}),
        "envVarsInjectionPolicy": Str(enum=["Disallowed", "Allowed", "Overrides"]),
        "volumeClaimTemplatesPolicy": Str(enum=["Disallowed", "Allowed", "Overrides"])}),
        required=["podTemplate"]),
    "SandboxWarmPool": Obj({
        "replicas": Int(0), "sandboxTemplateRef": _NAME_REF,
        "updateStrategy": Obj({"type": Str(enum=["OnReplenish", "Recreate"])})},
        required=["sandboxTemplateRef"]),
    "SandboxClaim": Obj({
        "warmPoolRef": _NAME_REF,
        "lifecycle": Obj({"shutdownTime": TIME,
                          "shutdownPolicy": Str(enum=["Retain", "Delete", "DeleteForeground"]),
                          "ttlSecondsAfterFinished": Int(0)}),
        "additionalPodMetadata": _ADDITIONAL_META,
        "env": List(Obj({"name": STR, "value": STR, "containerName": STR}, required=["name"])),
        "volumeClaimTemplates": List(_PVC_TEMPLATE)}, required=["warmPoolRef"]),
}

_TYPES = ((bool, "boolean"), (int, "integer"), (str, "string"), (list, "array"),
          (dict, "object"))


def _type_name(v):
    for t, n in _TYPES:
        if isinstance(v, t):
            return n
    return "null"


def _walk(node, v, path, out):
    def bad_type(want):
        out.append((path, "FieldValueTypeInvalid",
                    'Invalid value: "%s": %s in body must be of type %s: "%s"'
                    % (_type_name(v), path, want, _type_name(v))))

    if isinstance(node, Any):
        return
    if isinstance(node, Bool):
        if not isinstance(v, bool):
            bad_type("boolean")
        return
    if isinstance(node, Int):
        if isinstance(v, bool) or not isinstance(v, int):
            bad_type("integer")
        elif node.minimum is not None and v < node.minimum:
            out.append((path, "FieldValueInvalid",
                        "Invalid value: %d: %s in body should be greater than or equal to %d"
                        % (v, path, node.minimum)))
        return
    if isinstance(node, Quantity):
        if isinstance(v, bool) or not isinstance(v, (int, str)) or (
                isinstance(v, str) and not _QUANTITY.match(v)):
            out.append((path, "FieldValueInvalid",
                        "Invalid value: %r: quantities must match the regular expression "
                        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'" % (v,)))
        return
    if isinstance(node, Str):
        if not isinstance(v, str):
            bad_type("string")
        elif node.enum is not None and v not in node.enum:
            out.append((path, "FieldValueNotSupported", 'Unsupported value: "%s": supported values: %s'
                        % (v, ", ".join('"%s"' % e for e in node.enum))))
        elif node.pattern is not None and not node.pattern.match(v):
            out.append((path, "FieldValueInvalid", 'Invalid value: "%s": %s in body must be %s'
                        % (v, path, node.what)))
        return
    if isinstance(node, List):
        if not isinstance(v, list):
            bad_type("array")
            return
        if len(v) < node.min_items:
            out.append((path, "FieldValueInvalid", "Invalid value: %d: %s in body should have at "
                        "least %d items" % (len(v), path, node.min_items)))
        for i, x in enumerate(v):
            _walk(node.item, x, "%s[%d]" % (path, i), out)
        return
    if isinstance(node, Map):
        if not isinstance(v, dict):
            bad_type("object")
            return
        for k, x in v.items():
            _walk(node.value, x, "%s[%s]" % (path, k), out)
        return
    # Obj
    if not isinstance(v, dict):
        bad_type("object")
        return
    for k in node.required:
        if k not in v or v[k] is None:
            out.append(("%s.%s" % (path, k), "FieldValueRequired", "Required value"))
    for k, x in v.items():
        sub = "%s.%s" % (path, k)
        if k in node.props:
            if x is not None:
                _walk(node.props[k], x, sub, out)
        elif not node.open:
            out.append((sub, "FieldValueNotSupported", 'unknown field "%s"' % sub))


def check(kind, obj):
    """The schema errors of obj, a `kind` object: [(field, reason, detail)]."""
    node = KINDS.get(kind)
    if node is None:
        return []
    out = []
    spec = obj.get("spec")
    if spec is None:
        out.append(("spec", "FieldValueRequired", "Required value"))
    else:
        _walk(node, spec, "spec", out)
    for k in obj:
        if k not in ("apiVersion", "kind", "metadata", "spec", "status"):
            out.append((k, "FieldValueNotSupported", 'unknown field "%s"' % k))
    return out
