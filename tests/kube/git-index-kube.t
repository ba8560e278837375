#!/bin/bash
# tests/integration/git-index.t (git status alternating host/sandbox: both sides agree and
# neither re-reads what the other did not change) on the kube backend, against
# tests/kube/fake-apiserver: the index merge is the agent's and the host's, whatever the backend.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/lib.sh"

why=$(kube_skip_reason)
[ -z "$why" ] || skip_all "$why"
kube_fake_start --pool gi=2 || bail_out "the fake API server did not start"
export AGENT_SANDBOX_POOL=gi SBX_IT_RUNTIMES=kube
bash "$HERE/../integration/git-index.t"
rc=$?
fake_stop
exit $rc
