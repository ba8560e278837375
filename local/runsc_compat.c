/*
 * sbx-runsc-compat.so: preloaded (/etc/ld.so.preload) into every
 * dynamically linked program in a runsc sandbox.
 *
 * Debian 12's gVisor (2022-12) fails statx() with EINVAL when the flags hold
 * AT_NO_AUTOMOUNT, which coreutils passes: `ls` and `stat` would fail on
 * every path. A sandbox has no automount points, so the flag means nothing
 * there; on EINVAL we retry without it. A fixed gVisor never sees the retry.
 *
 * It also lacks TCSETSF, the ioctl behind tcsetattr(fd, TCSAFLUSH, ...), and TCFLSH: on
 * its pty the call fails with ENOTTY, and `top` gives up ("failed tty set"). TCSAFLUSH is
 * TCSADRAIN plus discarding the input not yet read; we retry as TCSADRAIN, which gVisor has,
 * so the settings apply and only unread input is kept rather than discarded. A gVisor with
 * TCSETSF never gets to the retry.
 * Built without libsbx: this runs inside other people's programs.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

int statx(int dirfd, const char *restrict path, int flags, unsigned int mask,
          struct statx *restrict buf)
{
    long r = syscall(SYS_statx, dirfd, path, flags, mask, buf);
    if (r < 0 && errno == EINVAL && (flags & AT_NO_AUTOMOUNT))
        r = syscall(SYS_statx, dirfd, path, flags & ~AT_NO_AUTOMOUNT, mask, buf);
    return (int)r;
}

int tcsetattr(int fd, int act, const struct termios *t)
{
    static int (*real)(int, int, const struct termios *);
    if (!real)
        real = (int (*)(int, int, const struct termios *))dlsym(RTLD_NEXT, "tcsetattr");
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    int r = real(fd, act, t);
    if (r < 0 && errno == ENOTTY && act == TCSAFLUSH)
        r = real(fd, TCSADRAIN, t);
    return r;
}
