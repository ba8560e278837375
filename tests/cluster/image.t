#!/bin/bash
# cluster/image/rootfs.sh builds the runtime image's root file system with debootstrap: the
# packages asked for installed and their caches gone, the sandbox user (uid 10001), and
# sbx-agent, which starts there as that user and answers a host's HELLO. Needs root,
# debootstrap and a Debian mirror (about 40 MB downloaded); skipped by name otherwise.
. "$(dirname "$0")/../lib/tap.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
mirror=${SBX_DEBIAN_MIRROR:-http://deb.debian.org/debian}

[ "$(id -u)" = 0 ] || skip_all "not root: debootstrap and chroot need it"
command -v debootstrap >/dev/null || skip_all "debootstrap is not installed (make deps)"
curl -sfI --max-time 15 "$mirror/dists/bookworm/Release" >/dev/null ||
    skip_all "the Debian mirror $mirror cannot be reached"
# The static agent of the build under test: SBXSH_BIN is build-asan/ under make check-asan.
agent=$SBXSH_BIN/sbx-agent-static
[ -x "$agent" ] || bail_out "$agent not built: run make"
# ...and its bash preload, which rootfs.sh takes from the top (plain make's) unless told:
# from a fresh clone, make check-asan builds only build-asan's
[ -f "$SBXSH_BIN/sbx-bash-interactive.so" ] || bail_out "$SBXSH_BIN/sbx-bash-interactive.so not built: run make"

root=$SBX_TEST_TMP/rootfs
# A failed build must not leave /proc mounted under what the cleanup removes.
trap 'umount "$root/proc" 2>/dev/null; rm -rf --one-file-system "$SBX_TEST_TMP"' EXIT

out=$(SBX_IMAGE_PACKAGES=jq SBX_AGENT=$agent SBX_BASH_SO=$SBXSH_BIN/sbx-bash-interactive.so \
    "$top/cluster/image/rootfs.sh" --tar "$SBX_TEST_TMP/rootfs.tar" "$root" 2>&1); rc=$?
is "$rc" 0 "rootfs.sh builds the root file system" || diag "$(tail -20 <<<"$out")"
like "$out" "rootfs.sh: $root is ready \\(and $SBX_TEST_TMP/rootfs.tar\\)" "... and says so"
ok "... and packs it with --tar" test -s "$SBX_TEST_TMP/rootfs.tar"
ok "... /proc is not left mounted" bash -c '! grep -q " $1/proc " /proc/mounts' _ "$root"
is "$(grep '^sbx:' "$root/etc/passwd")" "sbx:x:10001:10001:sbxsh sandbox:/home/sbx:/bin/bash" \
    "the sandbox user, uid 10001, as sbx render-pool's pods run"
is "$(stat -c %u:%g "$root/home/sbx")" "10001:10001" "... owning its home"
is "$(chroot --userspec=10001:10001 "$root" jq -n '1 + 1' 2>&1)" 2 "the packages asked for work there"
is "$(find "$root/var/lib/apt/lists" "$root/var/cache/apt" -type f ! -name lock | wc -l)" 0 \
    "no package lists or caches left for a scanner"
ok "no bootstrap log left" test ! -e "$root/var/log/bootstrap.log"
cmp -s "$agent" "$root/usr/local/bin/sbx-agent"
ok "sbx-agent at /usr/local/bin is the static build" test $? = 0

# sbx-agent as the sandbox user: its HELLO (protocol version, who it runs as) as soon as it
# has a stream; ours in answer; it then waits for CONFIG and ends at end of input.
out=$(python3 - "$root" <<'PY'
import struct, subprocess, sys
p = subprocess.Popen(["chroot", "--userspec=10001:10001", sys.argv[1], "/usr/local/bin/sbx-agent"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
ln, typ, fd, chan = struct.unpack("<IHHI", p.stdout.read(12))
pl = p.stdout.read(ln)
magic, ver = struct.unpack("<4sH", pl[:6])
alen = struct.unpack("<I", pl[28:32])[0]
about = pl[32:32 + alen].decode()
print("type=%d magic=%s version=%d" % (typ, magic.decode(), ver))
print(about.split(";")[0], "|", about.split(";")[-1].strip())
me = b"tests/cluster/image.t"
hello = struct.pack("<4sHHQQI", b"SBX1", ver, 0, 0, 0, 1) + struct.pack("<I", len(me)) + me
p.stdin.write(struct.pack("<IHHI", len(hello), 1, 0, 0) + hello)
p.stdin.close()
rc = p.wait(timeout=30)
print("exit=%d stderr=%r" % (rc, p.stderr.read().decode()))
PY
)
proto=$("$agent" --version | sed -n 's/.*(protocol \([0-9]*\)).*/\1/p')
is "$out" "type=1 magic=SBX1 version=$proto
sbx-agent 0.1 | uid 10001
exit=0 stderr=''" "sbx-agent starts in it as uid 10001 and answers a HELLO"
done_testing
