/*
 * The file system beneath a held directory fd: the no-symlink walk every host-side write
 * and every read of a directory the sandbox can change goes through, mkdir -p and rm -rf
 * on top of it, and the one path-based mkdir -p for the trusted directories (state, config)
 * that sbxsh makes for itself.
 *
 * Why beneath an fd: the sandbox writes the code directories (and some of the session's
 * state), so any path under them may be a symlink it planted, or may be swapped for one
 * between a check and a use. Opening each directory relative to one held before, with no
 * symlink followed anywhere on the way, makes "the directory we checked" and "the directory
 * we write in" the same inode; what a later rename does no longer matters.
 *
 * sbx-agent links this too (libc only, musl static): no header beyond libc and the kernel's
 * syscall numbers.
 */
#ifndef SBX_COMMON_FSAT_H
#define SBX_COMMON_FSAT_H

#include <stddef.h>
#include <sys/types.h>

#include "common/util.h"

/* Opens the directory rel (len bytes; "" for dirfd itself, empty components skipped)
 * beneath dirfd, following no symlink and never leaving dirfd: openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS) where the kernel has it, else one component
 * at a time with O_NOFOLLOW (a ".." component is then refused outright). flags is O_PATH
 * (for *at() calls) or O_RDONLY (for readdir); O_DIRECTORY and O_CLOEXEC are added. Returns
 * the fd, or -1 with errno: ELOOP when a component is a symlink or the path would leave
 * dirfd, ENOTDIR, ENOENT, ENAMETOOLONG (a component over NAME_MAX, rel over PATH_MAX). */
int sbx_open_beneath(int dirfd, const char *rel, size_t len, int flags);
/* The same, making each missing component with mkdirat(mode) (mkdir -p beneath dirfd). */
int sbx_mkdir_beneath(int dirfd, const char *rel, size_t len, int flags, mode_t mode);

/* For tests: take the component walk from now on, as on a kernel without openat2. */
void sbx_fsat_walk_only(void);

/* rm -rf of name in dirfd: never follows a symlink (one is removed as itself), never
 * crosses into another file system (a mount point beneath stays, and so does its parent),
 * opens up a directory the sandbox made unreadable (chmod 000) and walks it. A missing
 * name is success. 0, or -1 with errno from the first failure (the rest is still tried).
 * It holds a few fds whatever the depth (a tree deeper than the fd limit is removed too),
 * and stops (ESTALE) where the sandbox moved a directory away under it. */
int sbx_rm_beneath(int dirfd, const char *name);

/* mkdir -p of an absolute or relative path, mode for what it makes. It follows symlinks
 * like mkdir(1): only for directories sbxsh owns and the sandbox cannot write (state,
 * config, the agent's own roots); anything the sandbox writes goes through
 * sbx_mkdir_beneath. err may be NULL (errno is kept either way). */
int sbx_mkdir_p(const char *path, mode_t mode, sbx_err *err);

#endif
