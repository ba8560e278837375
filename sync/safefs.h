/*
 * Safe filesystem operations beneath a root directory: the primitives every write of the
 * sync engine goes through, on both sides.
 *
 *   - a relative path is checked syntactically before anything touches the disk (no empty,
 *     "." or ".." component, no NUL, no leading or trailing '/', bounded length and depth);
 *   - directories are opened beneath the root by common/fsat.h's walk: openat2(RESOLVE_BENEATH |
 *     RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS) when the kernel has it, else one
 *     component at a time with O_NOFOLLOW | O_DIRECTORY (trees are removed with its
 *     sbx_rm_beneath);
 *   - the final component is always handled with *at() calls that do not follow it
 *     (renameat, unlinkat, mkdirat, symlinkat, openat with O_NOFOLLOW).
 * So no write of ours ever goes through a symlink, whatever the sandbox put in the tree.
 */
#ifndef SBX_SYNC_SAFEFS_H
#define SBX_SYNC_SAFEFS_H

#include "common/util.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* Our own temporary names start with this; scans never report them. */
#define SF_TEMP_PREFIX ".sbx-tmp-"
#define SF_STAGE_PREFIX ".sbx-stage-"

/* Checks a relative path received from the other side; 0 or -1 with a message. */
int sf_check_relpath(const char *p, size_t len, sbx_err *err);
/* True when name is one of ours (temp or staging); never synced, never accepted. */
bool sf_is_internal_name(const char *name, size_t len);

/* Opens the directory rel (may be "" for the root itself) beneath rootfd without following
 * any symlink, as an O_PATH|O_DIRECTORY fd usable with *at() calls. With create, missing
 * components are made (mode 0755). -1 with errno set and err filled (ELOOP/ENOTDIR when a
 * component is a symlink or not a directory). */
int sf_open_dir(int rootfd, const char *rel, size_t rel_len, bool create, sbx_err *err);

/* Splits rel at its last '/': *dir_len is the parent's length (0 for a top-level name),
 * *name points at the last component. */
void sf_split(const char *rel, size_t len, size_t *dir_len, const char **name);

/* Creates a fresh temporary file in dirfd named SF_TEMP_PREFIX..., O_RDWR|O_EXCL; fills
 * name (at least 64 bytes). */
int sf_mktemp(int dirfd, char *name, size_t namesz, mode_t mode);
/* Makes a unique name for a temporary symlink or directory in the same way. */
void sf_tempname(char *name, size_t namesz);

/* Compares the contents of two open regular files (from offset 0); 1 equal, 0 different,
 * -1 on a read error. */
int sf_same_content(int fd_a, int fd_b);
/* Copies an open file's content to another (for a rename across file systems). */
int sf_copy_fd(int from, int to);

/* Puts something at a conflict name beside name in dirfd:
 * "name.sbx-conflict-sandbox-YYYYMMDDTHHMMSS" in UTC, with -N added while taken (up to
 * 999), fitting NAME_MAX. place(dirfd, cname, ctx) makes the entry and must fail with
 * EEXIST, never replace, when cname is taken (sf_rename_noreplace, mkdirat): a name found
 * free and then taken (by the sandbox, by another client) is never overwritten. 0 with the
 * name in out; -1 with errno (EEXIST when every name was taken). */
int sf_conflict_place(int dirfd, const char *name, char *out, size_t outsz,
                      int (*place)(int dirfd, const char *cname, void *ctx), void *ctx);
/* renameat() that fails with EEXIST instead of replacing an existing newname
 * (renameat2's RENAME_NOREPLACE; where the file system lacks it, a check first, which a
 * race can still beat: said in the comment at its fallback). */
int sf_rename_noreplace(int olddirfd, const char *oldname, int newdirfd, const char *newname);

/* Sets mtime (ns since the epoch) on an open fd; atime too. */
int sf_set_mtime(int fd, int64_t mtime_ns);
int64_t sf_stat_mtime(const struct stat *st);
int64_t sf_stat_ctime(const struct stat *st);

#endif
