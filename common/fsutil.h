/*
 * Small file-system and process helpers, by path, for the host's own files (a session's
 * state and runtime directories, its logs, programs on PATH): the local backend, sbx-kube,
 * sbx and sbx-egress use them; the agent does not link them.
 */
#ifndef SBX_COMMON_FSUTIL_H
#define SBX_COMMON_FSUTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/fsat.h"
#include "common/util.h"

/* rm -rf of a path whose parent is sbxsh's own (a session's state): the parent opened by
 * its path, the tree beneath it by common/fsat.h's sbx_rm_beneath (no symlink followed, no
 * other file system crossed, unreadable directories opened up). A missing path is
 * success. (mkdir -p is common/fsat.h's sbx_mkdir_p.) */
int sbx_rm_rf(const char *path, sbx_err *err);
/* Writes data to path by write-to-temp + rename (mode for the new file). */
int sbx_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode,
                          sbx_err *err);
/* The start time of a process (field 22 of /proc/PID/stat, clock ticks since
 * boot), or 0 when it does not exist. A pid plus its start time names a
 * process without the risk of pid reuse. */
uint64_t sbx_proc_starttime(pid_t pid);
/* Looks for an executable in PATH, then /usr/sbin, /usr/bin, /sbin, /bin.
 * Malloc'd path or NULL. */
char *sbx_which(const char *name);
/* The last max bytes of a file, for error messages ("" when unreadable). */
char *sbx_file_tail(const char *path, size_t max);

#endif
