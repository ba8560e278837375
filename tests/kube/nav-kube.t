#!/bin/bash
# tests/integration/nav.t (issue 21: cd through plain directories below ~ gives the scratch
# sandbox a pushed view; cd .., cd -, Tab) on the kube backend, against
# tests/kube/fake-apiserver: the view travels as a script on the agent's stdin, no mount.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/lib.sh"

why=$(kube_skip_reason)
[ -z "$why" ] || skip_all "$why"
kube_fake_start --pool it=3 || bail_out "the fake API server did not start"
export AGENT_SANDBOX_POOL=it SBX_IT_RUNTIMES=kube
bash "$HERE/../integration/nav.t"
rc=$?
fake_stop
exit $rc
