#!/bin/bash
# The host half of a pull calls the file system only by fd (SECURITY.md, I2 and I3): the
# objects that perform or decide every write the sandbox can cause on the host import no
# path-based file system call, only the *at() calls, which sync/ makes beneath directory fds
# it holds (sf_open_dir, sbx_open_beneath: no symlink followed on the way). A path
# re-resolves every component at each call, so a symlink the sandbox plants, or swaps in
# between a check and a use, would redirect it; an fd keeps the directory that was checked.
# Exits 1 listing each object and the calls it imports; 0 when there are none.
#
#   tests/host-no-path-calls.sh [BUILD [OBJ...]]   BUILD: the build tree (default TOP/build);
#                                                  OBJ: objects to check (default: the list below)
#
# What nm cannot see: which fd an *at() call is given. AT_FDCWD would make it a path again,
# so each object's source (TOP/DIR/FILE.c beside BUILD/DIR/FILE.o) must not name it; a raw
# syscall() is left to review.
top=${TOP:-$(cd "$(dirname "$0")/.." && pwd)}
build=${1:-$top/build}
[ $# -gt 0 ] && shift

# The host's apply (sync/hostwrite.c) and its undo journal (sync/journal.c), the frame handling it shares with the agent
# (sync/apply.c), and what they call to check and place a file: the safe-fs helpers, the
# .git allowlists and ref parsers, the reflog secret restore, the index merge and its hash,
# the wire decoders. (common/fsat.c is left out: beside the walk it holds the one path-based
# mkdir -p, for sbxsh's own state directories, which the sandbox never writes.)
objs=("$@")
if [ ${#objs[@]} -eq 0 ]; then
    for o in sync/hostwrite sync/journal sync/apply sync/safefs sync/gitpolicy sync/gitcred sync/gitindex \
             sync/githash sync/wire; do
        objs+=("$build/$o.o")
    done
fi

# The path-based calls: each file system call that takes a path (and the libc wrappers
# that do: stdio's fopen, opendir, realpath, the fortified and old-glibc stat entry points).
forbidden='open open64 __open_2 __open64_2 creat creat64 fopen fopen64 freopen freopen64
    stat stat64 lstat lstat64 __xstat __xstat64 __lxstat __lxstat64 statx statfs statfs64
    statvfs statvfs64 access euidaccess eaccess
    unlink remove rename mkdir rmdir mkfifo mknod chmod lchmod chown lchown symlink link
    readlink __readlink_chk realpath __realpath_chk canonicalize_file_name
    opendir scandir nftw nftw64 ftw glob glob64
    truncate truncate64 utime utimes lutimes futimesat
    chdir chroot mkstemp mkstemp64 mkostemp mkdtemp tmpfile tmpnam tempnam
    setxattr lsetxattr getxattr lgetxattr removexattr lremovexattr listxattr llistxattr
    execve execv execvp execvpe execl execlp system popen posix_spawn posix_spawnp'

bad=0
for o in "${objs[@]}"; do
    if [ ! -f "$o" ]; then
        echo "${o#"$build"/}: not built (run make)"
        bad=1
        continue
    fi
    calls=$(nm -u "$o" | awk -v list="$forbidden" '
        BEGIN { n = split(list, l, /[ \t\n]+/); for (i = 1; i <= n; i++) if (l[i] != "") f[l[i]] = 1 }
        { s = $NF; sub(/@.*/, "", s); if (s in f) printf "%s ", s }')
    if [ -n "$calls" ]; then
        echo "${o#"$build"/}: calls ${calls% }: a path-based file system call; use an *at() call beneath a held directory fd (sync/safefs.h, common/fsat.h)"
        bad=1
    fi
    src=$top/${o#"$build"/}
    src=${src%.o}.c
    if [ -f "$src" ] && grep -q 'AT_FDCWD' "$src"; then
        grep -n 'AT_FDCWD' "$src" | sed "s|^|${src#"$top"/}:|; s|\$|: AT_FDCWD resolves a path from the cwd; use a held directory fd|"
        bad=1
    fi
done
exit $bad
