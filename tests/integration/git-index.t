#!/bin/bash
# The git index ping-pong (issue 22), on each runtime: `git status` alternating on the host (an
# IDE polling git) and in the sandbox (`sbxsh -c`) says the same on both sides after edits on
# either side (edits in the same second as the sync, a same-size change with the old mtime
# put back, a `git add` on either side), and neither side's git re-reads a file the other did
# not change: each side keeps its own stat data in .git/index (sync/README.md, "The git
# index"). What git re-read is counted with strace (every openat of a tracked file), not timed.
. "$(dirname "$0")/lib.sh"

runtimes=${SBX_IT_RUNTIMES:-runsc bwrap}
command -v strace >/dev/null || skip_all "strace is not installed: the files git re-reads cannot be counted"
NFILES=120

# The tracked files `git status` opened (read) on the host, sorted, space-separated. Rename
# detection is off: it reads a stat-clean file in place of a blob, which is no re-hash.
host_reads() {
    strace -f -e trace=openat -o "$SBX_TEST_TMP/strace.log" \
        git -c status.renames=false status --porcelain >/dev/null 2>&1
    grep -v ENOENT "$SBX_TEST_TMP/strace.log" | grep -oE '"f[0-9]+"' | tr -d '"' | sort -u |
        tr '\n' ' '
}

# ... in the sandbox, the same way.
sandbox_reads() {
    "$SBXSH" -c 'strace -f -e trace=openat -o /tmp/strace.log git -c status.renames=false \
        status --porcelain >/dev/null 2>&1; grep -v ENOENT /tmp/strace.log |
        grep -oE "\"f[0-9]+\"" | tr -d "\"" | sort -u | tr "\n" " "'
}

# What git may re-read at a status, on either side: the files modified in the work tree
# (porcelain's second column: git reads a same-size one at every status), and those this test
# touched (git itself re-reads a racily clean file, one changed in the second its index was
# written, until an index written later says otherwise). The other files, which only the
# first sync wrote, must never be read again: that was the ping-pong.
may_read() {
    { git status --porcelain | awk 'substr($0, 2, 1) == "M" { print $2 }'
      find . -maxdepth 1 -name 'f*' -newermt '2020-01-02' -printf '%f\n'; } | sort -u
}

# The files of list $1 that are not in list $2 (space-separated), as a list.
extra() {
    comm -23 <(tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -u) <(tr ' ' '\n' <<<"$2" | sort -u) |
        tr '\n' ' '
}

# One alternation: host, then sandbox; both must agree, and read nothing but what they may
# (STRICT=1: nothing at all).
alternate() { # WHAT
    local hp sp hr sr may
    hp=$(git status --porcelain 2>&1)
    sp=$("$SBXSH" -c 'git status --porcelain' 2>&1)
    is "$sp" "$hp" "$rt: $1: git status in the sandbox says what it says on the host" ||
        diag "host: $hp" "sandbox: $sp"
    may=$([ "${STRICT:-}" = 1 ] || may_read)
    hr=$(host_reads)
    sr=$(sandbox_reads)
    is "$(extra "$hr" "$may")" "" "$rt: $1: git status on the host re-reads no file it has no reason to" ||
        diag "it read $(wc -w <<<"$hr") files: $(cut -d' ' -f1-8 <<<"$hr")..."
    is "$(extra "$sr" "$may")" "" "$rt: $1: git status in the sandbox re-reads no file it has no reason to" ||
        diag "it read $(wc -w <<<"$sr") files: $(cut -d' ' -f1-8 <<<"$sr")..."
}

# Git compares ctime and mtime by the second (Debian's git has no USE_NSEC): a same-size
# change that puts the old mtime back, in the very second git recorded the file, is one git
# cannot see on any machine. The test makes such a change in a later second than the last
# recording: it waits for the clock, bounded, which synchronises with nothing else.
next_second() {
    local s
    s=$(date +%s)
    for _ in $(seq 60); do [ "$(date +%s)" != "$s" ] && return; sleep 0.05; done
}

for rt in $runtimes; do
    if ! why=$(runtime_usable "$rt"); then
        skip "git index on $rt: $why"
        continue
    fi
    setup_session "gi-$rt-$$" "$rt"
    rm -rf "${CODE:?}"/* "$CODE"/.[!.]* 2>/dev/null
    cd "$CODE" || bail_out "no code dir"
    printf '[user]\n\tname = T\n\temail = t@example.com\n' > "$HOME/.gitconfig"
    git init -q . && git symbolic-ref HEAD refs/heads/main
    for i in $(seq 1 $NFILES); do printf 'file %03d\n' "$i" > "f$i"; done
    touch -d '2020-01-01' f*   # nothing racily clean: only what this test does is
    git add -A && git commit -qm c1

    # The first sync: the sandbox's git reads every file once (its index arrived with no
    # stat data of the sandbox's), then writes an index the host merges.
    is "$("$SBXSH" -c 'git status --porcelain' 2>&1)" "" "$rt: the first git status in the sandbox is clean"
    is "$(sandbox_reads)" "" "$rt: the sandbox's index kept its stat data: nothing re-read"
    for r in 1 2 3; do
        STRICT=1 alternate "clean round $r"
    done
    is "$(git ls-files --debug f7 | sed -n 's/.*ino: \([0-9]*\).*/\1/p')" "$(stat -c %i f7)" \
        "$rt: the host's index holds the host's inode for an unchanged file"

    # Edits on the host: another size, then a same-size change with the old mtime put back
    # (only ctime and the content tell).
    printf 'host edit\n' > f5
    next_second
    m=$(stat -c %Y f9)
    printf 'file X09\n' > f9 && touch -d "@$m" f9
    alternate "host edits (f5, f9 same size and mtime)"
    # The same in the sandbox.
    next_second
    "$SBXSH" -c 'printf "sandbox edit\n" > f6; m=$(stat -c %Y f10); printf "file X10\n" > f10 &&
                 touch -d "@$m" f10'
    alternate "sandbox edits (f6, f10 same size and mtime)"

    # Racy git: a file added and changed again (same size) within the same second, the sync
    # in between or right after, on each side.
    printf 'racy h1\n' > f20 && git add f20 && printf 'racy h2\n' > f20
    alternate "host: add, then a same-size change in the same second"
    "$SBXSH" -c 'printf "racy s1\n" > f21 && git add f21 && printf "racy s2\n" > f21'
    alternate "sandbox: add, then a same-size change in the same second"
    # An edit right after a sync came back, in the same second as the index it brought.
    "$SBXSH" -c 'git add f5 f6' && printf 'late x\n' > f30
    alternate "host edit in the second of the sync (f30)"
    "$SBXSH" -c 'git status >/dev/null; printf "late y\n" > f31'
    alternate "sandbox edit after its git status (f31)"

    # Staged on one side, committed on the other: both sides end clean but for the rest.
    git add -A && "$SBXSH" -c 'git commit -qm c2'
    alternate "add on the host, commit in the sandbox"
    is "$(git status --porcelain)" "" "$rt: everything committed: the host's status is clean"
    is "$(git log -1 --format=%s)" "c2" "$rt: the sandbox's commit is the host's HEAD"
    # Once the clock has moved past every edit, nothing is racily clean: after one round in
    # which each side's git settles its own racy entries, nothing at all is read.
    next_second
    alternate "clean again"
    for r in 1 2; do
        STRICT=1 alternate "clean again, strictly, round $r"
    done
    ok "$rt: git fsck on the host accepts the merged index" git fsck --no-progress --no-dangling
    end_session
done

done_testing
