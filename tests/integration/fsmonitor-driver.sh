#!/bin/bash
# fsmonitor-driver.sh SEED ROUNDS [FIRST ORDER] (run in the sandbox by git-fsmonitor.t, at the
# top of a work tree): ROUNDS random changes to the work tree (edits, same-size
# rewrites, new files and directories, deletions, renames of files and directories, .gitignore
# edits, files becoming directories, mode changes, symlinks, git add, commit, stash, reset,
# clean and checkout), and after
# each one `git status --porcelain` (through sbx-agent's fsmonitor and the untracked cache)
# against git with neither (which writes no index, so it leaves the fsmonitor's token alone).
# Prints "MISMATCH ..." with the difference for each round where they differ, then
# "ROUNDS n" and "USED y|n": whether the hook named a file this command changed.
# Each change's kind is random; with FIRST and ORDER, round r makes kind ORDER[FIRST + r - 1]
# (ORDER: the kinds 0-23, space-separated, used cyclically), so that commands sharing one
# ORDER and consecutive FIRSTs make every kind in few rounds (the short run of make check).
# To look into a mismatch: FSM_DRIVER_GIT (options for the first git instead, e.g.
# "-c core.untrackedCache=false" to leave the untracked cache out) and FSM_DRIVER_DEBUG=1
# (stop at the first one, after asking the agent whether it sees a change in that directory),
# both passed through by git-fsmonitor.t.
seed=$1 rounds=$2 first=${3:-}
read -ra order <<<"${4:-}"
RANDOM=$seed
hook=$(git config --get core.fsmonitor)

# The work tree's files (F) and directories (D, "." first), from one find: each process
# costs 10-20 ms under gVisor.
scan() {
    local t p
    F=() D=(.)
    while IFS=' ' read -r t p; do
        case $t in
        d) [ -n "$p" ] && D+=("$p") ;;
        *) F+=("$p") ;;
        esac
    done < <(find . -path ./.git -prune -o -printf '%y %P\n')
}
pats=('*.log' 'new*' 'nd*/' 'sub' '!new1*' 'mv*' '*' '!*.txt' 'd*/' 'x*')

change() {
    local f='' d s
    scan
    ((${#F[@]})) && f=${F[RANDOM % ${#F[@]}]}
    d=${D[RANDOM % ${#D[@]}]}
    op=$((RANDOM % 24))
    [ -n "$first" ] && op=${order[(first + r - 1) % ${#order[@]}]}
    case $op in
    0|1|2) [ -f "$f" ] && echo "r$RANDOM" >>"$f" ;;
    3) [ -f "$f" ] && [ ! -L "$f" ] && s=$(<"$f") && printf '%s\n' "${s//?/$((RANDOM % 10))}" >"$f" ;;
    4|5) echo "n$RANDOM" >"$d/new$RANDOM.txt" ;;
    6) echo "l" >"$d/x$RANDOM.log" ;;
    7) [ -n "$f" ] && rm -f "$f" ;;
    8) [ -n "$f" ] && mv "$f" "$d/mv$RANDOM" 2>/dev/null ;;
    9) s=.; [[ $d == */* ]] && s=${d%/*}; [ "$d" != . ] && mv "$d" "$s/d$RANDOM" ;;
    10) s=$d/nd$RANDOM; mkdir -p "$s/sub" && echo a >"$s/f" && echo b >"$s/sub/g$RANDOM" ;;
    11) [ "$d" != . ] && rm -rf "$d" ;;
    12) if ((RANDOM % 3)); then echo "${pats[RANDOM % ${#pats[@]}]}" >>"$d/.gitignore"
        else rm -f "$d/.gitignore"; fi ;;
    13) git add -A -- "$d" >/dev/null 2>&1 ;;
    14) git add -A >/dev/null 2>&1; git commit -qm "c$RANDOM" >/dev/null 2>&1 ;;
    15) [ -f "$f" ] && chmod "$( ((RANDOM % 2)) && echo +x || echo -x)" "$f" ;;
    16) [ -f "$f" ] && rm -f "$f" && mkdir "$f" && echo i >"$f/in" ;;
    17) [ "$d" != . ] && rm -rf "$d" && echo was-a-dir >"$d" ;;
    18) ln -s "../$RANDOM" "$d/ln$RANDOM" 2>/dev/null ;;
    19) [ -n "$f" ] && git rm -q --cached -- "$f" >/dev/null 2>&1 ;;
    20) git stash -q >/dev/null 2>&1 && git stash pop -q >/dev/null 2>&1 ;;
    21) git reset -q --hard >/dev/null 2>&1 ;;
    22) git clean -fdq >/dev/null 2>&1 ;;
    23) git checkout -q "HEAD~$((RANDOM % 2 + 1))" >/dev/null 2>&1 || git checkout -q - >/dev/null 2>&1 ;;
    esac
    # Keep the tree populated.
    if [ "${#F[@]}" -lt 40 ]; then
        for _ in 1 2 3 4 5 6 7 8; do mkdir -p "p$RANDOM" 2>/dev/null; done
        scan
        for p in "${D[@]:0:20}"; do echo "$RANDOM" >"$p/new$RANDOM.txt"; done
    fi
}

for ((r = 1; r <= rounds; r++)); do
    change
    u=; ((r % 2)) && u=-uall
    # shellcheck disable=SC2086 # FSM_DRIVER_GIT: options to try instead (-c NAME=VALUE ...)
    a=$(git ${FSM_DRIVER_GIT:-} status --porcelain $u 2>&1)
    b=$(git --no-optional-locks -c core.fsmonitor=false -c core.untrackedCache=false \
        status --porcelain $u 2>&1)
    if [ "$a" != "$b" ]; then
        echo "MISMATCH seed $seed round $r $u (change $op: $f $d)"
        diff <(echo "$b") <(echo "$a") | head -20
        # which of the two makes the difference
        c=$(git --no-optional-locks -c core.fsmonitor=false status --porcelain $u 2>&1)
        [ "$c" = "$b" ] || echo "(the untracked cache alone differs too)"
        tok=$(grep -aoE 'sbx1:[0-9a-f]{16}:[0-9]+' .git/index | tail -1)
        echo "index token $tok; the hook's answer to it now: $("$hook" 2 "$tok" |
            tr '\0' '\n' | head -12 | tr '\n' ' ')"
        if [ -n "${FSM_DRIVER_DEBUG:-}" ]; then
            t2=$("$hook" 2 "$tok" | tr '\0' '\n' | head -1)
            q=$(diff <(echo "$b") <(echo "$a") | sed -n 's/^[<>] ...//p' | head -1)
            touch "$q"; touch "${q%/*}/zz-new"
            echo "after touching $q and ${q%/*}/zz-new: $("$hook" 2 "$t2" | tr '\0' '\n' | tr '\n' ' ')"
            echo "stat: $(stat -c '%i %y' "${q%/*}")"
            exit 1
        fi
        for p in $(diff <(echo "$b") <(echo "$a") | sed -n 's/^[<>] ...//p' | head -3); do
            find "$p" -maxdepth 1 -printf '%M %s %p\n' 2>&1 | head -5
        done
    fi
done
echo "ROUNDS $rounds"
# Whether the fsmonitor answered with a list (not "everything") naming a file changed now.
echo probe >>"probe-$seed"
if GIT_TRACE_FSMONITOR=1 git status --porcelain 2>&1 >/dev/null |
        grep -q "fsmonitor_refresh_callback 'probe-$seed'"; then
    echo "USED y"
else
    echo "USED n"
fi
