/*
 * sbx-runsc-compat.so: preloaded (/etc/ld.so.preload) into every
 * dynamically linked program in a runsc sandbox.
 *
 * Debian 12's gVisor (2022-12) fails statx() with EINVAL when the flags hold
 * AT_NO_AUTOMOUNT, which coreutils passes: `ls` and `stat` would fail on
 * every path. A sandbox has no automount points, so the flag means nothing
 * there; on EINVAL we retry without it. A fixed gVisor never sees the retry.
 * Built without libsbx: this runs inside other people's programs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

int statx(int dirfd, const char *restrict path, int flags, unsigned int mask,
          struct statx *restrict buf)
{
    long r = syscall(SYS_statx, dirfd, path, flags, mask, buf);
    if (r < 0 && errno == EINVAL && (flags & AT_NO_AUTOMOUNT))
        r = syscall(SYS_statx, dirfd, path, flags & ~AT_NO_AUTOMOUNT, mask, buf);
    return (int)r;
}
