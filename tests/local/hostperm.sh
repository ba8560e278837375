# shellcheck shell=bash
# What the sandbox makes never becomes a dangerous host file, on one runtime; sourced by
# hostperm-runsc.t and hostperm-bwrap.t with RT set. In its private HOME and in the code
# directory, a command makes a setuid and a setgid executable, a fifo, a socket, and 0777,
# sticky and setgid directories: on the host (the state directory, where HOME used to be a
# bound host directory, and the code directory after the pull) `find -perm` finds nothing
# setuid, setgid, sticky or world-writable, and no fifo, socket or device; the code
# directory's files and directories did come back, with plain modes. Inside, HOME is a tmpfs
# mounted nosuid,nodev. Every sbxsh call is bounded (timeout -s KILL).
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/tap.sh"
. "$HERE/lib.sh"

umask 022
runtime_env "hostperm-$RT"
teardown() {
    timeout -s KILL 30 "$SBX" release >/dev/null 2>&1
    local_teardown
    tap_cleanup
}
trap teardown EXIT
S() { timeout -s KILL "$1" "$SBXSH" -c "$2"; }   # SECONDS LINE

# make DIR: the dangerous kinds of entry, in DIR (inside the sandbox).
make_all='make_all() {
    mkdir -p "$1" && cd "$1" &&
    cp /bin/true suid && chmod 4755 suid && cp /bin/true sgid && chmod 2755 sgid &&
    mkfifo fifo && python3 -c "import socket; socket.socket(socket.AF_UNIX).bind(\"sock\")" &&
    mkdir -m 0777 open && mkdir sticky && chmod 1777 sticky && mkdir sgiddir &&
    chmod 2775 sgiddir && echo made in "$1"
}'
out=$(S 120 "$make_all; (make_all ~/danger) && (make_all $PROJ/danger) && ls -l ~/danger")
is "$(printf '%s\n' "$out" | grep -c '^made in')" 2 "$RT: the sandbox made them in HOME and the code directory"
like "$out" "rws.*suid" "$RT: ...a setuid executable among them (inside, where it is inert)"

# Inside: HOME is a tmpfs, nosuid and nodev.
opts=$(S 60 'awk -v h="$HOME" '"'"'$5 == h { print $6, $(NF-2), $NF }'"'"' /proc/self/mountinfo')
like "$opts" "tmpfs" "$RT: inside, HOME is a tmpfs ($opts)"
if [ "$RT" = bwrap ]; then
    like "$opts" "nosuid" "$RT: ...mounted nosuid"
    like "$opts" "nodev" "$RT: ...and nodev"
else
    # gVisor's mountinfo prints only rw/ro of a mount; the options it was given are in the
    # bundle's config.json.
    cfg=$(ls "$AGENT_SANDBOX_STATE_DIR"/*/config.json)
    home_opts=$(python3 -c 'import json,sys
spec = json.load(open(sys.argv[1]))
print(" ".join(o for m in spec["mounts"] if m["destination"] == sys.argv[2]
               for o in [m["type"]] + m.get("options", [])))' "$cfg" "$HOME")
    like "$home_opts" "^tmpfs .*nosuid" "$RT: ...mounted nosuid (config.json: $home_opts)"
    like "$home_opts" "nodev" "$RT: ...and nodev"
fi

# The host: nothing setuid, setgid, sticky, world-writable, nor a special file (but sbxsh's
# own sockets: the agent's, and runsc's control socket).
dangerous() {
    find "$@" \( -perm -4000 -o -perm -2000 -o -perm -1000 -o -perm -0002 -o -type p \
        -o -type s -o -type b -o -type c \) ! -type l ! -path '*/agent/agent.sock' \
        ! -path '*/runsc/runsc-*.sock' -print 2>/dev/null
}
is "$(dangerous "$AGENT_SANDBOX_STATE_DIR")" "" \
   "$RT: the state directory (where HOME was a host directory) holds none of it"
is "$(dangerous "$PROJ")" "" "$RT: the code directory holds none of it after the pull"
is "$(cd "$PROJ/danger" 2>/dev/null && find . -mindepth 1 -printf '%p %y %m\n' | sort | tr '\n' ' ')" \
   "./open d 755 ./sgid f 755 ./sgiddir d 755 ./sticky d 755 ./suid f 755 " \
   "$RT: ...its files and directories came back with plain modes, no fifo or socket"
is "$(S 60 'echo next')" next "$RT: the session goes on"

done_testing
