#!/bin/bash
# tests/integration/git-fsmonitor.t (git status through sbx-agent's fsmonitor hook agreeing
# with git without it, after every kind of change in the sandbox and from the host; the
# setting never reaching the host's git; AGENT_SANDBOX_GIT_FSMONITOR=0) on the kube backend,
# against tests/kube/fake-apiserver: the pod's agent links itself as the hook
# (/run/sbxsh/sbx-fsmonitor-hook) and answers it, whatever the backend.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/lib.sh"

why=$(kube_skip_reason)
[ -z "$why" ] || skip_all "$why"
kube_fake_start --pool fm=2 || bail_out "the fake API server did not start"
export AGENT_SANDBOX_POOL=fm SBX_IT_RUNTIMES=kube
bash "$HERE/../integration/git-fsmonitor.t"
rc=$?
fake_stop
exit $rc
