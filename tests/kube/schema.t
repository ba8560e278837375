#!/bin/bash
# Every kind of object the fake serves, through the official Kubernetes Python client's
# models (Debian's python3-kubernetes, `ApiClient.deserialize` with client-side validation):
# /version, discovery, Namespace(s), Pod(s) in each state the fake gives them (Running and
# Ready, Ready flapping, in a grace period, a cold start's Pending), their watch events, the
# agent-sandbox objects and their lists and watch events (as dicts: metadata and
# conditions), the Status of each error and of a watch's 410, an access review. A field the
# real API server always writes and the clients require (containerStatuses[].imageID was
# one) fails it.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/lib.sh"

why=$(kube_skip_reason)
[ -z "$why" ] || skip_all "$why"
/usr/bin/python3 -c 'import kubernetes' 2>/dev/null ||
    skip_all "python3-kubernetes is not installed (make deps)"
kube_fake_start --pool s=2 --pool cold=0 --cold-start-ms 8000 ||
    bail_out "the fake API server did not start"
kube_env ksc
export AGENT_SANDBOX_POOL=s
trap kube_teardown EXIT

is "$("$SBXSH" -c 'cat README')" hello "a session's claim, bound to a pod of the pool"
# objects in each state: a claim cold-starting (its pod Pending), a pod whose readiness
# fails, a pod in its grace period
fake_curl -X POST -H 'Content-Type: application/json' -o /dev/null -d '{
  "apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxClaim",
  "metadata": {"name": "cold-one"}, "spec": {"warmPoolRef": {"name": "cold"}}}' \
  /apis/extensions.agents.x-k8s.io/v1beta1/namespaces/default/sandboxclaims
members=$(pods | grep '^s-' | grep -vx "$(session_pod)")
fake_fault "pod-not-ready=$(session_pod),seconds=60" || bail_out "the fake refused a fault"
fake_fault "delete-pod=$(head -1 <<<"$members"),grace=60" || bail_out "the fake refused a fault"
for _ in $(seq 300); do [ "$(pods | grep -cx cold-one)" = 1 ] && break; sleep 0.1; done
is "$(pods | grep -cx cold-one)" 1 "a cold start's pod exists (Pending until its start)"

out=$(/usr/bin/python3 "$HERE/schema-check.py" "$FAKE_URL" "$FAKE_CA" "$FAKE_TOKEN" 2>&1)
rc=$?
is "$rc" 0 "every object the fake served passes the official client's models"
[ "$rc" = 0 ] || diag "$(grep -v '^ok ' <<<"$out")"
for kind in VersionInfo V1APIGroupList V1APIResourceList V1Namespace V1NamespaceList V1Pod \
            V1PodList V1WatchEvent crd crdlist V1Status V1SelfSubjectAccessReview; do
    ok "...among them $kind" grep -q "^ok $kind " <<<"$out"
done
is "$(grep -c '^ok V1Status' <<<"$out")" 6 "...the Status of 404, 409, 422, 405, a missing namespace and a watch's 410"
is "$(grep -c '^ok V1Pod /api' <<<"$out")" "$(pods | wc -l)" "...each pod, one by one"
done_testing
