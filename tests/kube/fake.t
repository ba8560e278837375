#!/bin/bash
# tests/kube/fake-apiserver where kubectl does not look, with curl and ws-exec.py: the
# authentication, the Status bodies (201/200/404/409/415/422), watch (fieldSelector,
# resourceVersion and resuming from it, timeoutSeconds, bookmarks, 410 both ways), merge patch
# and optimistic locking, the controller (one MODIFIED binding a warm claim, the FNV name hash,
# expiry by shutdownTime under Delete and Retain), the faults (status storms, stall-watch,
# delete-pod, 401/403, deny, drop-exec-after), the exec subprotocols (v5, v4, channel.k8s.io),
# and nothing left behind after SIGTERM.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/fake.sh"

why=$(fake_skip_reason)
[ -n "$why" ] && skip_all "the fake API server cannot run pods: $why"
command -v jq >/dev/null || skip_all "jq is not installed (make deps)"

printf '#!/bin/sh\necho agent-here "$@"\n' >"$SBX_TEST_TMP/agent"
chmod +x "$SBX_TEST_TMP/agent"
fake_start --pool p=1 --pool cold=0 --cold-start-ms 300 --agent "$SBX_TEST_TMP/agent" || bail_out "the fake did not start"
WS=$(dirname "$0")/ws-exec.py
EXT=/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/default
C=$EXT/sandboxclaims
SB=/apis/agents.x-k8s.io/v1beta1/namespaces/default/sandboxes
PODS=/api/v1/namespaces/default/pods
J='Content-Type: application/json'
MP='Content-Type: application/merge-patch+json'
token_of() { awk -v u="$1" '/^users:/ { s = 1 } s && $0 == "- name: " u { f = 1 } f && /token:/ { print $2; exit }' "$FAKE_KUBECONFIG"; }
# code PATH [CURL ARGS...]: the HTTP status only
code() { local p=$1; shift; fake_curl -o /dev/null -w '%{http_code}' "$@" "$p"; }
# wait_for DESCRIPTION JQ-TEST PATH: polls (bounded, 30 s) until the object at PATH passes
wait_for() {
    for _ in $(seq 300); do
        fake_curl "$3" | jq -e "$2" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    diag "timed out waiting for $1"
    return 1
}
claim_json() { # NAME POOL [LIFECYCLE-JSON]
    printf '{"apiVersion":"extensions.agents.x-k8s.io/v1beta1","kind":"SandboxClaim","metadata":{"name":"%s","labels":{"t":"fake"}},"spec":{"warmPoolRef":{"name":"%s"}%s}}' \
        "$1" "$2" "${3:+,\"lifecycle\":$3}"
}

# -- authentication
out=$(curl -s --cacert "$FAKE_CA" "$FAKE_URL/api")
is "$(jq -c '[.kind,.code,.reason,.message]' <<<"$out")" '["Status",401,"Unauthorized","Unauthorized"]' \
   "no credentials: 401 with a Status"
is "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$FAKE_CA" -H "Authorization: Bearer $(token_of fake-401)" "$FAKE_URL/version")" \
   "401" "an unknown token: 401, even on /version"
T403=$(token_of fake-403)
is "$(curl -s --cacert "$FAKE_CA" -H "Authorization: Bearer $T403" "$FAKE_URL/version" | jq -r .minor)" "32" \
   "a user without rights still reads /version (minor 32, for kubectl's dispatcher)"
out=$(curl -s --cacert "$FAKE_CA" -H "Authorization: Bearer $T403" "$FAKE_URL$C")
is "$(jq -c '[.code,.reason,.details.kind,.details.group]' <<<"$out")" \
   '[403,"Forbidden","sandboxclaims","extensions.agents.x-k8s.io"]' "...but gets 403 on resources"
awk '/client-certificate-data:/ { print $2 }' "$FAKE_KUBECONFIG" | base64 -d >"$SBX_TEST_TMP/c.crt"
awk '/client-key-data:/ { print $2 }' "$FAKE_KUBECONFIG" | base64 -d >"$SBX_TEST_TMP/c.key"
out=$(curl -s --cacert "$FAKE_CA" --cert "$SBX_TEST_TMP/c.crt" --key "$SBX_TEST_TMP/c.key" -X POST -H "$J" \
      -d '{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}' \
      "$FAKE_URL/apis/authentication.k8s.io/v1/selfsubjectreviews")
is "$(jq -c '.status.userInfo | [.username, .groups]' <<<"$out")" '["fake-cert-user",["system:authenticated","fake-group"]]' \
   "a client certificate is a user (SelfSubjectReview)"
ssar() { # VERB RESOURCE SUBRESOURCE
    fake_curl -X POST -H "$J" -d "{\"apiVersion\":\"authorization.k8s.io/v1\",\"kind\":\"SelfSubjectAccessReview\",\"spec\":{\"resourceAttributes\":{\"namespace\":\"default\",\"verb\":\"$1\",\"resource\":\"$2\",\"subresource\":\"$3\"}}}" \
        /apis/authorization.k8s.io/v1/selfsubjectaccessreviews | jq -c .status.allowed
}
is "$(ssar create pods exec)" "true" "SelfSubjectAccessReview: pods/exec create allowed"

# -- discovery
ct=$(fake_curl -o /dev/null -w '%{content_type}' -H 'Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json' /apis)
is "$ct" "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList" "aggregated discovery v2 when asked"
is "$(fake_curl /apis | jq -c '[.kind, (.groups | map(.name) | sort | index("extensions.agents.x-k8s.io") != null)]')" \
   '["APIGroupList",true]' "legacy discovery otherwise"
is "$(fake_curl /apis/extensions.agents.x-k8s.io/v1beta1 | jq -c '[.resources[].name] | sort')" \
   '["sandboxclaims","sandboxclaims/status","sandboxtemplates","sandboxwarmpools","sandboxwarmpools/status"]' \
   "the group's resources"

# -- CRUD and Status bodies
wait_for "the pool's member" '.status.readyReplicas == 1' "$EXT/sandboxwarmpools/p"
out=$(fake_curl -w '\n%{http_code}' -X POST -H "$J" -d "$(claim_json w1 p)" "$C")
is "${out##*$'\n'}" "201" "create: 201"
body=${out%$'\n'*}
is "$(jq -c '[(.metadata.uid|length>0), (.metadata.resourceVersion|length>0), .metadata.generation, (.metadata.creationTimestamp|test("Z$")), .status]' <<<"$body")" \
   '[true,true,1,true,{}]' "...with uid, resourceVersion, generation 1, creationTimestamp, an empty status"
rv0=$(jq -r .metadata.resourceVersion <<<"$body")
out=$(fake_curl -w '\n%{http_code}' -X POST -H "$J" -d "$(claim_json w1 p)" "$C")
is "${out##*$'\n'}" "409" "the same name again: 409"
is "$(jq -c '[.kind,.status,.reason,.message,.details]' <<<"${out%$'\n'*}")" \
   '["Status","Failure","AlreadyExists","sandboxclaims.extensions.agents.x-k8s.io \"w1\" already exists",{"name":"w1","group":"extensions.agents.x-k8s.io","kind":"sandboxclaims"}]' \
   "...AlreadyExists, details naming the resource"
out=$(fake_curl -X POST -H "$J" -d '{"apiVersion":"extensions.agents.x-k8s.io/v1beta1","kind":"SandboxClaim","metadata":{"name":"bad"},"spec":{}}' "$C")
is "$(jq -c '[.code,.reason,.details.kind,.details.causes[0].field,.details.causes[0].reason]' <<<"$out")" \
   '[422,"Invalid","SandboxClaim","spec.warmPoolRef.name","FieldValueRequired"]' "no warmPoolRef.name: 422 Invalid with the field"
out=$(fake_curl "$C/nosuch")
is "$(jq -c '[.code,.reason,.message]' <<<"$out")" '[404,"NotFound","sandboxclaims.extensions.agents.x-k8s.io \"nosuch\" not found"]' \
   "a missing claim: 404 NotFound"
is "$(code "$C/w1" -X PATCH -H 'Content-Type: application/strategic-merge-patch+json' -d '{}')" "415" \
   "a strategic merge patch on a custom resource: 415"

# -- the warm claim, as its watch saw it from the create's resourceVersion
wait_for "w1 Ready" '.status.conditions[0].status == "True"' "$C/w1"
ev=$(fake_curl "$C?watch=1&fieldSelector=metadata.name%3Dw1&resourceVersion=$rv0&timeoutSeconds=1")
is "$(jq -r '.object.metadata.name' <<<"$ev" | sort -u)" "w1" "the watch (fieldSelector) shows only w1"
is "$(jq -r .type <<<"$ev" | sort -u)" "MODIFIED" "...every event after the create is a MODIFIED"
is "$(jq -c 'select(.object.status.sandbox.name != null) | [.object.status.conditions[0].status, .object.status.conditions[0].reason]' <<<"$ev")" \
   '["True","DependenciesReady"]' "one MODIFIED binds it: sandbox.name set and Ready True at once"
sbname=$(fake_curl "$C/w1" | jq -r .status.sandbox.name)
is "$(fake_curl "$C/w1" | jq -r '.metadata.annotations["agents.x-k8s.io/sandbox-name"]')" "$sbname" \
   "the claim's sandbox-name annotation"
is "$(fake_curl "$C/w1" | jq -c '.status.sandbox.podIPs | length')" "1" "...and status.sandbox.podIPs"
is "$(fake_curl "$PODS?labelSelector=agents.x-k8s.io/sandbox-name-hash%3D$(fake_curl "$SB/$sbname" | jq -r '.status.selector | split("=")[1]')" | jq -r '.items[].metadata.name')" \
   "$sbname" "the pod is found by the sandbox's name-hash label"
lastrv=$(jq -r .object.metadata.resourceVersion <<<"$ev" | tail -n 1)
is "$(fake_state | jq -c '.claims[] | select(.name == "w1") | [.readyMs > 0, .launchType]')" '[true,"warm"]' \
   "/fake/state gives the fake's own time from POST to bound and Ready (for bench/)"

# -- resume, patch, conflicts
out=$(fake_curl -w '\n%{http_code}' -X PATCH -H "$MP" -d '{"metadata":{"labels":{"seen":"yes"}}}' "$C/w1")
is "${out##*$'\n'}" "200" "a merge patch: 200"
ev=$(fake_curl "$C?watch=true&fieldSelector=metadata.name%3Dw1&resourceVersion=$lastrv&timeoutSeconds=1")
is "$(jq -c '[.type, .object.metadata.labels.seen]' <<<"$ev")" '["MODIFIED","yes"]' \
   "a watch resumed from the last resourceVersion gets exactly the change since"
is "$(code "$C/w1" -X PATCH -H "$MP" -d "{\"metadata\":{\"resourceVersion\":\"$lastrv\",\"labels\":{\"x\":\"1\"}}}")" "409" \
   "a patch carrying a stale resourceVersion: 409 Conflict"
is "$(fake_curl "$C?labelSelector=seen%3Dyes,t" | jq -r '.items[].metadata.name')" "w1" "list with a label selector"
is "$(fake_curl "$C?labelSelector=seen%21%3Dyes" | jq -r '.items | length')" "0" "...and a != selector"
ev=$(fake_curl "$C?watch=1&fieldSelector=metadata.name%3Dw1&timeoutSeconds=1")
is "$(jq -r .type <<<"$ev")" "ADDED" "a watch without resourceVersion starts with a synthetic ADDED"
ev=$(fake_curl "$C?watch=1&resourceVersion=$(fake_state | jq -r .resourceVersion)&allowWatchBookmarks=true&timeoutSeconds=2")
like "$(jq -r .type <<<"$ev" | sort -u | tr '\n' ' ')" "BOOKMARK" "allowWatchBookmarks: BOOKMARK events while idle"

# -- 410 for a resourceVersion older than the history
fake_curl -X POST /fake/compact >/dev/null
ev=$(fake_curl "$C?watch=1&resourceVersion=$rv0&timeoutSeconds=5")
is "$(jq -c '[.type, .object.kind, .object.code, .object.reason]' <<<"$ev")" '["ERROR","Status",410,"Expired"]' \
   "a too-old resourceVersion: an ERROR event carrying 410 Expired"
fake_fault watch-gone=http
is "$(code "$C?watch=1&resourceVersion=$rv0&timeoutSeconds=5")" "410" "...or, by a fault, an HTTP 410"
fake_fault clear
is "$(fake_curl "$C" | jq -r '.metadata.resourceVersion | tonumber > 0')" "true" \
   "a relist gives a fresh resourceVersion to watch from"

# -- the name hash agent-sandbox uses (FNV-1a), on a cold sandbox named after its claim
fake_curl -X POST -H "$J" -d "$(claim_json sandbox-claim-1a2b3c4d cold)" "$C" >/dev/null
wait_for "the cold claim Ready" '.status.conditions[0].status == "True"' "$C/sandbox-claim-1a2b3c4d"
is "$(fake_curl "$SB/sandbox-claim-1a2b3c4d" | jq -r .status.selector)" \
   "agents.x-k8s.io/sandbox-name-hash=32ea6318" "the sandbox's selector carries NameHash (FNV-1a 32)"

# -- expiry by shutdownTime
soon=$(date -u -d '+2 seconds' +%Y-%m-%dT%H:%M:%SZ)
fake_curl -X POST -H "$J" -d "$(claim_json exp-del cold "{\"shutdownTime\":\"$soon\",\"shutdownPolicy\":\"Delete\"}")" "$C" >/dev/null
out=$(fake_curl -X POST -H "$J" -d "$(claim_json exp-ret cold "{\"shutdownTime\":\"$soon\",\"shutdownPolicy\":\"Retain\"}")" "$C")
rvx=$(jq -r .metadata.resourceVersion <<<"$out")
ok "a claim past its shutdownTime under Delete is deleted" wait_for "exp-del gone" '.code == 404' "$C/exp-del"
ev=$(fake_curl "$C?watch=1&fieldSelector=metadata.name%3Dexp-del&resourceVersion=$((rvx - 1))&timeoutSeconds=1")
is "$(jq -r 'select(.object.status.conditions[0].reason == "ClaimExpired" or .type == "DELETED") | .type' <<<"$ev" | uniq | tr '\n' ' ')" \
   "MODIFIED DELETED " "...first a MODIFIED with ClaimExpired, then DELETED"
ok "...its sandbox and pod go with it" wait_for "exp-del's pod gone" '.code == 404' "$PODS/exp-del"
ok "under Retain the claim stays, ClaimExpired" \
    wait_for "exp-ret expired" '.status.conditions[0].reason == "ClaimExpired" and .status.sandbox == null' "$C/exp-ret"
is "$(fake_curl "$C/exp-ret" | jq -r .status.conditions[0].message)" "Claim expired. Sandbox cleanup initiated." \
   "...with the controller's message"
ok "...and its sandbox is deleted" wait_for "exp-ret's sandbox gone" '.code == 404' "$SB/exp-ret"

# -- faults
fake_fault 'status=503,count=2'
is "$(code /version) $(code /version) $(code /version)" "503 503 200" "status=503,count=2: two 503s, then 200"
fake_fault 'status=429,count=1'
hdr=$(fake_curl -D - -o "$SBX_TEST_TMP/body" /version | tr -d '\r')
like "$hdr" $'^HTTP/1.1 429 [^\n]*\n' "status=429: 429"
like "$hdr" $'\nRetry-After: 1(\n|$)' "...with Retry-After"
is "$(jq -c '[.reason, .details.retryAfterSeconds]' "$SBX_TEST_TMP/body")" '["TooManyRequests",1]' "...and a TooManyRequests Status"
fake_fault 'status=500,seconds=0.5'
is "$(code /version)" "500" "status=500,seconds=S: 500 for a while"
for _ in $(seq 100); do [ "$(code /version)" = 200 ] && break; sleep 0.1; done
is "$(code /version)" "200" "...and then no more"
fake_fault 'stall-watch,count=1'
is "$(fake_curl -w '[%{http_code}]' "$C?watch=1&timeoutSeconds=2")" "[200]" \
   "stall-watch: the watch is accepted (200) and sends nothing until its timeout"
like "$(fake_curl "$C?watch=1&timeoutSeconds=1" | head -c 20)" '^\{"type": "ADDED"' "...and only once (count=1)"
fake_fault '401=fake-admin'
is "$(code "$C")" "401" "401=USER: that user's requests get 401"
fake_fault '403=fake-admin'
fake_fault 'clear'
is "$(code "$C")" "200" "clear: the faults are gone (the admin endpoint works through them)"
fake_fault 'deny=create:pods/exec'
is "$(ssar create pods exec)" "false" "deny=VERB:RESOURCE: the access review says no"
out=$("$WS" "$FAKE_URL$PODS/$sbname/exec" "$FAKE_CA" "$FAKE_TOKEN" v5.channel.k8s.io -- true)
is "$(jq -c '[.status, (.body | fromjson | .reason)]' <<<"$out")" '[403,"Forbidden"]' "...and exec is refused with 403"
fake_fault clear

# -- exec subprotocols (ws-exec.py), pings, the end of a stream
out=$("$WS" "$FAKE_URL$PODS/$sbname/exec" "$FAKE_CA" "$FAKE_TOKEN" v4.channel.k8s.io -- sh -c 'echo hi; exit 3')
is "$(jq -c '[.status, .protocol, .first, .stdout, .close]' <<<"$out")" '[101,"v4.channel.k8s.io","01","hi\n",1000]' \
   "v4: 101, the subprotocol, the initial empty message on channel 1, the output, Close 1000"
is "$(jq -r .error <<<"$out" | jq -c '[.status, .reason, .details.causes[0].reason, .details.causes[0].message]')" \
   '["Failure","NonZeroExitCode","ExitCode","3"]' "...and the exit code in the channel-3 Status"
out=$("$WS" "$FAKE_URL$PODS/$sbname/exec" "$FAKE_CA" "$FAKE_TOKEN" v5.channel.k8s.io -- true)
is "$(jq -r .error <<<"$out")" '{"metadata":{},"status":"Success"}' "v5: success is a bare Success Status"
out=$("$WS" "$FAKE_URL$PODS/$sbname/exec" "$FAKE_CA" "$FAKE_TOKEN" channel.k8s.io -- sh -c 'exit 3')
is "$(jq -c '[.protocol, .error]' <<<"$out")" \
   '["channel.k8s.io","command terminated with non-zero exit code: error executing command [sh -c exit 3], exit code 3"]' \
   "channel.k8s.io: the error as plain text"
out=$("$WS" "$FAKE_URL$PODS/$sbname/exec" "$FAKE_CA" "$FAKE_TOKEN" v5.channel.k8s.io --stdin 'abc' --close-stdin --ping -- sh -c 'cat; echo; echo done')
is "$(jq -c '[.stdout, .pong]' <<<"$out")" '["abc\ndone\n",true]' "v5: stdin, its CLOSE signal [255,0] ending cat; a ping answered"
out=$("$WS" "$FAKE_URL$PODS/$sbname/exec" "$FAKE_CA" "$FAKE_TOKEN" v4.channel.k8s.io --stdin 'abc' -- sh -c 'head -c 3; echo')
is "$(jq -c .stdout <<<"$out")" '"abc\n"' "v4: stdin (no CLOSE signal there)"
out=$("$WS" "$FAKE_URL$PODS/$sbname/exec" "$FAKE_CA" "$FAKE_TOKEN" v5.channel.k8s.io -- sbx-agent --version)
is "$(jq -c .stdout <<<"$out")" '"agent-here --version\n"' "--agent: the pod has it at /usr/local/bin/sbx-agent, on PATH"
out=$("$WS" "$FAKE_URL$PODS/$sbname/exec" "$FAKE_CA" "$FAKE_TOKEN" v3.channel.k8s.io -- true)
is "$(jq -c .status <<<"$out")" "400" "an unknown subprotocol: 400"
fake_fault 'drop-exec-after=1000,count=1'
out=$("$WS" "$FAKE_URL$PODS/$sbname/exec" "$FAKE_CA" "$FAKE_TOKEN" v5.channel.k8s.io -- sh -c 'head -c 100000 /dev/zero | tr "\0" x')
is "$(jq -c '[(.stdout | length), .close, .error]' <<<"$out")" '[1000,null,""]' \
   "drop-exec-after=1000: 1000 bytes, then the connection ends without a Close or a status"
out=$("$WS" "$FAKE_URL$PODS/$sbname/exec" "$FAKE_CA" "$FAKE_TOKEN" v5.channel.k8s.io -- sh -c 'head -c 100000 /dev/zero | tr "\0" x')
is "$(jq -c '[(.stdout | length), .close]' <<<"$out")" '[100000,1000]' "...once (count=1): the next stream is whole"

# -- delete-pod: the sandbox makes a new pod of the same name; the old one's processes go
"$WS" "$FAKE_URL$PODS/$sbname/exec" "$FAKE_CA" "$FAKE_TOKEN" v5.channel.k8s.io -- \
    sh -c "setsid sh -c 'exec sleep $((800000 + RANDOM))' </dev/null >/dev/null 2>&1 &" >/dev/null
olduid=$(fake_curl "$PODS/$sbname" | jq -r .metadata.uid)
oldpids=$(fake_state | jq -r --arg n "$sbname" '.pods[] | select(.name == $n) | .pids[]')
L=$((700000 + RANDOM))
"$WS" "$FAKE_URL$PODS/$sbname/exec" "$FAKE_CA" "$FAKE_TOKEN" v5.channel.k8s.io -- \
    sh -c "echo started; exec sleep $L" >"$SBX_TEST_TMP/ws.out" &
wspid=$!
for _ in $(seq 100); do pgrep -f "^sleep $L\$" >/dev/null && break; sleep 0.1; done
fake_fault "delete-pod=$sbname"
for _ in $(seq 300); do kill -0 $wspid 2>/dev/null || break; sleep 0.1; done
kill $wspid 2>/dev/null; wait $wspid
is "$(jq -c '[.stdout, (.error | fromjson | .details.causes[0].message), .close]' "$SBX_TEST_TMP/ws.out")" '["started\n","137",1000]' \
   "delete-pod under a running exec: the command dies as by SIGKILL (exit code 137), the stream ends cleanly"
ok "delete-pod: a new pod of that name becomes ready" \
    wait_for "the new pod" ".metadata.uid != \"$olduid\" and (.status.conditions // [] | map(select(.type == \"Ready\"))[0].status == \"True\")" "$PODS/$sbname"
left=""
for p in $oldpids; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
is "$left" "" "...and the old pod's processes are gone"
ok "the claim is Ready again on the new pod" wait_for "w1 Ready again" '.status.conditions[0].status == "True"' "$C/w1"

# -- claim delete: immediate DELETED, then the cascade
"$WS" "$FAKE_URL$PODS/$sbname/exec" "$FAKE_CA" "$FAKE_TOKEN" v5.channel.k8s.io -- \
    sh -c 'mkdir -p /workspace/locked/sub && touch /workspace/locked/sub/f && chmod 000 /workspace/locked/sub /workspace/locked' >/dev/null
poddir=$(fake_state | jq -r --arg n "$sbname" '.pods[] | select(.name == $n) | .dir')
out=$(fake_curl -X DELETE -H "$J" -d '{"propagationPolicy":"Background"}' "$C/w1")
is "$(jq -c '[.kind, .status, .details.name, .details.kind]' <<<"$out")" '["Status","Success","w1","sandboxclaims"]' \
   "delete: 200 with a Success Status"
is "$(code "$C/w1")" "404" "...the claim is gone at once"
ok "...then its sandbox" wait_for "w1's sandbox gone" '.code == 404' "$SB/$sbname"
ok "...and its pod" wait_for "w1's pod gone" '.code == 404' "$PODS/$sbname"
ok "...and the pod's directory, unreadable corners and all" test -n "$poddir" -a ! -e "$poddir"

# -- SIGTERM: every pod stopped, nothing left
pids=$(fake_state | jq -r '.pods[].pids[]' | tr '\n' ' ')
like "$pids" '^[0-9]' "pods are running before the end"
fake_stop
is "$?" "0" "SIGTERM: the fake exits 0"
left=""
for p in $pids; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
is "$left" "" "no pod process is left"
ok "the state directory is removed" test ! -e "$FAKE_STATE"

done_testing
