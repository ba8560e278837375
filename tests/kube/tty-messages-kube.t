#!/bin/bash
# tests/integration/tty-messages.t (issue 21: what the prompt shows against bash -i, the
# session shell interactive while a typed line runs) on the kube backend, against
# tests/kube/fake-apiserver, whose pods hold sbx-bash-interactive.so where the runtime image
# installs it (/usr/local/lib/sbxsh).
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/lib.sh"

why=$(kube_skip_reason)
[ -z "$why" ] || skip_all "$why"
[ -f "$SBXSH_BIN/sbx-bash-interactive.so" ] || skip_all "sbx-bash-interactive.so is not built"
kube_fake_start --pool it=3 --bash-so "$SBXSH_BIN/sbx-bash-interactive.so" ||
    bail_out "the fake API server did not start"
export AGENT_SANDBOX_POOL=it SBX_IT_RUNTIMES=kube
bash "$HERE/../integration/tty-messages.t"
rc=$?
fake_stop
exit $rc
