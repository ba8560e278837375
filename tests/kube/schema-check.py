#!/usr/bin/python3
"""schema-check.py URL CA TOKEN: reads every kind of object the fake API server serves and
puts each through the official Kubernetes Python client's models (Debian's
python3-kubernetes: `ApiClient.deserialize`, with client-side validation on, so a required
field missing or of the wrong type raises), printing one line per object:

    ok KIND WHERE
    FAIL KIND WHERE: the client's error

and exits 1 when any failed, 2 when it cannot run. The agent-sandbox objects have no model
there (they are custom resources): they are checked as the client hands them over, dicts,
whose metadata must be a valid V1ObjectMeta (ownerReferences included) and whose status
conditions valid metav1 Conditions (V1Condition), as agent-sandbox's Go types declare them.
"""
import json
import ssl
import sys
import urllib.error
import urllib.request

try:
    from kubernetes.client import ApiClient, Configuration
except ImportError as e:
    print('cannot import the kubernetes client (python3-kubernetes): %s' % e)
    sys.exit(2)

url, ca, token = sys.argv[1:4]
ctx = ssl.create_default_context(cafile=ca)
conf = Configuration()
conf.client_side_validation = True
api = ApiClient(conf)
failed = 0


class Resp:
    """What ApiClient.deserialize reads: the body as .data."""
    def __init__(self, data):
        self.data = data


def fetch(path, method='GET', body=None, ok_codes=(200, 201)):
    req = urllib.request.Request(url + path, method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={'Authorization': 'Bearer ' + token,
                                          'Accept': 'application/json',
                                          'Content-Type': 'application/json'})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def check(kind, where, raw):
    """raw: bytes or an object; kind: a model name, or 'crd' / 'crdlist'."""
    global failed
    text = raw if isinstance(raw, (bytes, str)) else json.dumps(raw)
    try:
        if kind in ('crd', 'crdlist'):
            obj = json.loads(text)
            assert isinstance(obj, dict), 'not an object'
            items = obj['items'] if kind == 'crdlist' else [obj]
            if kind == 'crdlist':
                api.deserialize(Resp(json.dumps(obj.get('metadata', {}))), 'V1ListMeta')
            for it in items:
                assert isinstance(it.get('apiVersion'), str) and isinstance(it.get('kind'), str), \
                    'apiVersion or kind missing'
                api.deserialize(Resp(json.dumps(it['metadata'])), 'V1ObjectMeta')
                for c in (it.get('status') or {}).get('conditions') or []:
                    api.deserialize(Resp(json.dumps(c)), 'V1Condition')
        else:
            api.deserialize(Resp(text), kind)
        print('ok %s %s' % (kind, where))
    except Exception as e:  # the client's ValueError, TypeError, KeyError...
        failed += 1
        print('FAIL %s %s: %s: %s' % (kind, where, type(e).__name__, str(e)[:300]))


def get(kind, path):
    code, body = fetch(path)
    if code != 200:
        global failed
        failed += 1
        print('FAIL %s %s: HTTP %d' % (kind, path, code))
        return None
    check(kind, path, body)
    return json.loads(body)


def watch(kind, path):
    """The watch's events (synthetic ADDED for what exists), each as V1WatchEvent and its
    object as kind."""
    code, body = fetch(path + ('&' if '?' in path else '?') + 'watch=1&timeoutSeconds=1')
    n = 0
    for line in body.splitlines():
        if not line.strip():
            continue
        ev = json.loads(line)
        check('V1WatchEvent', 'watch %s (%s)' % (path, ev.get('type')), line)
        check('V1Status' if ev.get('type') == 'ERROR' else kind,
              'watch %s: the object' % path, ev['object'])
        n += 1
    return n


core = '/api/v1/namespaces/default'
ext = '/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/default'
agents = '/apis/agents.x-k8s.io/v1beta1/namespaces/default'

get('VersionInfo', '/version')
get('V1APIVersions', '/api')
get('V1APIGroupList', '/apis')
get('V1APIGroup', '/apis/extensions.agents.x-k8s.io')
get('V1APIResourceList', '/api/v1')
get('V1APIResourceList', '/apis/extensions.agents.x-k8s.io/v1beta1')
get('V1APIResourceList', '/apis/agents.x-k8s.io/v1beta1')
get('V1Namespace', core)
get('V1NamespaceList', '/api/v1/namespaces')
pods = get('V1PodList', core + '/pods') or {'items': []}
for p in pods['items']:
    get('V1Pod', core + '/pods/' + p['metadata']['name'])
watch('V1Pod', core + '/pods')
for res, base in (('sandboxclaims', ext), ('sandboxwarmpools', ext), ('sandboxtemplates', ext),
                  ('sandboxes', agents)):
    lst = get('crdlist', base + '/' + res) or {'items': []}
    for it in lst['items']:
        get('crd', base + '/' + res + '/' + it['metadata']['name'])
    watch('crd', base + '/' + res)
# a watch from a resourceVersion the history forgot: an ERROR event with a Status
code, body = fetch('/fake/compact', method='POST')
watch('V1Pod', core + '/pods?resourceVersion=1')
# Status objects of errors, as kubectl and the clients read them
for what, path, method, body in (
        ('404', ext + '/sandboxclaims/no-such-claim', 'GET', None),
        ('409', ext + '/sandboxwarmpools', 'POST', None),
        ('422', ext + '/sandboxclaims', 'POST',
         {'apiVersion': 'extensions.agents.x-k8s.io/v1beta1', 'kind': 'SandboxClaim',
          'metadata': {'name': 'bad'}, 'spec': {'warmPoolRef': {}}}),
        ('405', '/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/default/sandboxclaims',
         'PUT', {}),
        ('404 namespace', '/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/nowhere/sandboxclaims',
         'POST', {'apiVersion': 'extensions.agents.x-k8s.io/v1beta1', 'kind': 'SandboxClaim',
                  'metadata': {'name': 'x'}, 'spec': {'warmPoolRef': {'name': 'p'}}})):
    if what == '409':
        first = (get('crdlist', ext + '/sandboxwarmpools') or {'items': [{}]})['items'][0]
        body = {'apiVersion': 'extensions.agents.x-k8s.io/v1beta1', 'kind': 'SandboxWarmPool',
                'metadata': {'name': first['metadata']['name']}, 'spec': first.get('spec', {})}
    code, raw = fetch(path, method, body)
    check('V1Status', '%s (HTTP %d from %s %s)' % (what, code, method, path), raw)
# an access review, as `kubectl auth can-i` and sbx doctor ask
code, raw = fetch('/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', 'POST',
                  {'apiVersion': 'authorization.k8s.io/v1', 'kind': 'SelfSubjectAccessReview',
                   'spec': {'resourceAttributes': {'verb': 'create', 'resource': 'pods',
                                                   'subresource': 'exec',
                                                   'namespace': 'default'}}})
check('V1SelfSubjectAccessReview', 'POST selfsubjectaccessreviews (HTTP %d)' % code, raw)
print('%d failed' % failed)
sys.exit(1 if failed else 0)
