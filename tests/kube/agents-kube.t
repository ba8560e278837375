#!/bin/bash
# tests/integration/agents.t (the agents' shapes, Claude Code's snapshot step, the user's startup
# files filtered into the sandbox's HOME, the create-only snapshot directory, pushes to a real
# git daemon from the host) on the kube backend, against tests/kube/fake-apiserver.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/lib.sh"

why=$(kube_skip_reason)
[ -z "$why" ] || skip_all "$why"
kube_fake_start --pool it=2 || bail_out "the fake API server did not start"
export AGENT_SANDBOX_POOL=it SBX_IT_RUNTIMES=kube
bash "$HERE/../integration/agents.t"
rc=$?
fake_stop
exit $rc
