#!/bin/bash
# 20 sessions claiming at once from a warm pool of 5 (the other 15 cold-start): each gets a
# pod of its own, all release cleanly, and nothing leaks: no claim, no pod beyond the pool's
# own, no holder.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/lib.sh"

why=$(kube_skip_reason)
[ -z "$why" ] || skip_all "$why"
kube_fake_start --pool c=5 --cold-start-ms 300 || bail_out "the fake API server did not start"
kube_env kc
export AGENT_SANDBOX_POOL=c
trap kube_teardown EXIT
# the pool's members, once all 5 are there
for _ in $(seq 300); do [ "$(pods | wc -l)" = 5 ] && break; sleep 0.1; done
is "$(pods | wc -l)" 5 "the pool has its 5 warm pods"

N=20
pids=()
for i in $(seq $N); do
    AGENT_SANDBOX_SESSION=kc-$i "$SBXSH" -c 'hostname' >"$SBX_TEST_TMP/out.$i" 2>"$SBX_TEST_TMP/err.$i" &
    pids+=($!)
done
fails=0
for p in "${pids[@]}"; do wait "$p" || fails=$((fails + 1)); done
is "$fails" 0 "$N sessions claiming at once all run their command"
[ "$fails" = 0 ] || diag "$(cat "$SBX_TEST_TMP"/err.* | sort | uniq -c)"
is "$(cat "$SBX_TEST_TMP"/out.* | sort -u | wc -l)" $N "...each in a pod of its own"
is "$(claims | wc -l)" $N "...one claim each"

pids=()
for i in $(seq $N); do "$SBX" release --session "kc-$i" >/dev/null 2>&1 & pids+=($!); done
fails=0
for p in "${pids[@]}"; do wait "$p" || fails=$((fails + 1)); done
is "$fails" 0 "all $N release cleanly"
for _ in $(seq 300); do [ -z "$(claims)" ] && [ "$(pods | wc -l)" = 5 ] && break; sleep 0.1; done
is "$(claims)" "" "no claim is left"
is "$(pods | wc -l)" 5 "no pod is left but the pool's 5"
for _ in $(seq 100); do [ "$(holders)" = 0 ] && break; sleep 0.1; done
is "$(holders)" 0 "no holder is left"
is "$(pgrep -f "sbx-kube stream --state $AGENT_SANDBOX_STATE_DIR" | wc -l)" 0 "no sbx-kube stream is left"
is "$(find "$AGENT_SANDBOX_STATE_DIR" -mindepth 1 -maxdepth 1 ! -name 'audit.*' -printf '%f\n')" "" "no session state is left (the audit log stays: docs/undo.md)"
done_testing
