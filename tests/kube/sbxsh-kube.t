#!/bin/bash
# tests/integration/sbxsh.t (sbxsh end to end: quick start, the agent's invocation shape,
# streams, statuses, signals, background processes, stdin mode, mixed lines with a real git
# push from the host) on the kube backend, against tests/kube/fake-apiserver.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/lib.sh"

why=$(kube_skip_reason)
[ -z "$why" ] || skip_all "$why"
kube_fake_start --pool it=2 || bail_out "the fake API server did not start"
export AGENT_SANDBOX_POOL=it SBX_IT_RUNTIMES=kube
bash "$HERE/../integration/sbxsh.t"
rc=$?
fake_stop
exit $rc
