#!/bin/bash
# The caller's environment: what crosses into the sandbox and what never does.
# Tools put `PATH=node_modules/.bin:$PATH` and their own variables in front of
# `$SHELL -c` (npm's script-shell, make, direnv); the sandbox must see the PATH
# entries that lie in the code directories, the terminal and locale variables,
# and what AGENT_SANDBOX_FORWARD_ENV names or matches, and nothing else.
# The environment is built by the front end, the same for every runtime, so one
# runtime is enough here: bubblewrap when it works (it starts fastest), else runsc.
. "$(dirname "$0")/lib.sh"

rt=
for r in bwrap runsc; do
    if runtime_usable "$r" >/dev/null; then rt=$r; break; fi
done
if [ -z "$rt" ]; then
    skip_all "no sandbox runtime can start here: $(runtime_usable bwrap); $(runtime_usable runsc)"
fi
setup_session "env-$$" "$rt"
cd "$CODE" || bail_out "no code dir"
git init -q .
mkdir -p node_modules/.bin scripts
printf '#!/bin/sh\necho "mytool ran in $(pwd -P)"\n' >node_modules/.bin/mytool
chmod +x node_modules/.bin/mytool
mkdir -p "$SBX_TEST_TMP/hostonly/bin"

# PATH: entries inside the code directories come first, in the caller's order;
# host-only entries are dropped (the sandbox has no such directories).
out=$(PATH="$CODE/node_modules/.bin:$SBX_TEST_TMP/hostonly/bin:$CODE/scripts:$PATH" \
      "$SBXSH" -c 'mytool; echo "$PATH"' 2>&1)
is "$out" "mytool ran in $CODE
$CODE/node_modules/.bin:$CODE/scripts:$SANDBOX_PATH" \
   "PATH entries in the code directory are carried, host-only ones are not"
out=$(PATH="$CODE/../x/../code/node_modules/.bin:$PATH" "$SBXSH" -c 'echo "$PATH"' 2>&1)
is "$out" "$SANDBOX_PATH" "a PATH entry that climbs out with .. is not carried"

# Terminal and locale variables are carried; secrets are not.
out=$(TERM=xterm-256color COLORTERM=truecolor NO_COLOR=1 LANG=C.UTF-8 LC_ALL=C TZ=UTC \
      GITHUB_TOKEN=secret-token AWS_SECRET_ACCESS_KEY=secret-key \
      "$SBXSH" -c 'echo "$TERM|$COLORTERM|$NO_COLOR|$LANG|$LC_ALL|$TZ|${GITHUB_TOKEN-unset}|${AWS_SECRET_ACCESS_KEY-unset}"' 2>&1)
is "$out" "xterm-256color|truecolor|1|C.UTF-8|C|UTC|unset|unset" \
   "TERM, COLORTERM, NO_COLOR, LANG, LC_ALL, TZ carried; tokens stay on the host"

# Locale variables by exact name only (issue 20, attack 10): a host LC_DEPLOY_TOKEN (any
# LC_ name) stays on the host; every glibc locale category is carried.
out=$(LC_DEPLOY_TOKEN=x LC_ALL=C.UTF-8 "$SBXSH" -c env 2>&1)
like "$out" '(^|
)LC_ALL=C\.UTF-8(
|$)' "LC_DEPLOY_TOKEN=x LC_ALL=C.UTF-8 sbxsh -c env: LC_ALL is there"
unlike "$out" 'LC_DEPLOY_TOKEN' "...LC_DEPLOY_TOKEN is not"
cats=(LC_CTYPE LC_NUMERIC LC_TIME LC_COLLATE LC_MONETARY LC_MESSAGES LC_PAPER LC_NAME LC_ADDRESS
      LC_TELEPHONE LC_MEASUREMENT LC_IDENTIFICATION LANGUAGE)
out=$(unset LC_ALL; for v in "${cats[@]}"; do export "$v=C"; done; export LC_=x LC_ALLX=x LC_ctype=x TERMX=x
      "$SBXSH" -c 'env | grep -E "^(LC_|LANGUAGE=|TERMX)" | cut -d= -f1 | sort | tr "\n" " "' 2>&1)
is "$out" "$(printf '%s\n' "${cats[@]}" | sort | tr '\n' ' ')" \
   "every locale category is carried; LC_, LC_ALLX, LC_ctype, TERMX are not"

# AGENT_SANDBOX_FORWARD_ENV: names and patterns, comma-separated.
out=$(npm_package_version=1.2.3 npm_lifecycle_event=test NODE_ENV=production OTHER=x \
      AGENT_SANDBOX_FORWARD_ENV='npm_*,NODE_ENV' \
      "$SBXSH" -c 'echo "$npm_package_version|$npm_lifecycle_event|$NODE_ENV|${OTHER-unset}"' 2>&1)
is "$out" "1.2.3|test|production|unset" "FORWARD_ENV takes patterns (npm_*) and names, with commas"
out=$(npm_package_version=1.2.3 "$SBXSH" -c 'echo "${npm_package_version-unset}"' 2>&1)
is "$out" "unset" "without FORWARD_ENV, npm's variables stay on the host"
out=$(A=1 B=2 AGENT_SANDBOX_FORWARD_ENV='A:B' "$SBXSH" -c 'echo "$A$B"' 2>&1)
rc=$?
is "$rc" 125 "a colon-separated FORWARD_ENV is refused (125), not silently ignored"
like "$out" "separate names with commas" "...with a message that says how to write it"

# npm run with sbxsh as its script shell: the project's tools and npm's variables work.
if command -v npm >/dev/null; then
    cat >package.json <<'EOF'
{ "name": "envtest", "version": "4.5.6", "scripts": { "t": "mytool && echo version=$npm_package_version" } }
EOF
    out=$(AGENT_SANDBOX_FORWARD_ENV='npm_*' npm run --silent --script-shell "$SBXSH" t 2>&1)
    is "$out" "mytool ran in $CODE
version=4.5.6" "npm run with script-shell=sbxsh finds node_modules/.bin and npm's variables"
else
    skip "npm not installed: npm run with script-shell=sbxsh not tried"
fi

done_testing
