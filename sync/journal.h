/*
 * The undo journal of a session (docs/undo.md): before a pull overwrites or deletes anything
 * on the host, what was there goes to the journal, so that `sbx undo` can put it back.
 *
 * It lives in the session's state directory (STATE/SESSION/journal/, never inside a code
 * directory, never reachable from the sandbox) and is reached only by fds: the caller opens
 * the state directory and gives its fd; everything here is an *at() call beneath it or
 * beneath a code directory's held fd (tests/host-no-path-calls.sh checks this object too).
 *
 *   journal/log        the entries, one line per record (the format is in journal.c)
 *   journal/objects/   the previous contents, content-addressed (HASH-SIZE), hard-linked
 *                      from the host file where the file system allows (a pull replaces a
 *                      file by rename and never writes into it, so the old inode is the
 *                      journal's alone afterwards), else reflinked (FICLONE), else copied
 *   journal/lock       flock: a pull's commit and an undo never interleave
 *
 * An entry is one pull (the command it belonged to as its label) or one undo; each change of
 * it is a path under a code directory with its state before and after. The journal is bounded
 * (AGENT_SANDBOX_UNDO_MAX): past the bound the oldest entries go, and the caller is told.
 *
 * The host side of a pull (hostwrite.c) calls jnl_begin(), then for each host write
 * jnl_take() before it (the old state, saved) and jnl_record() after it, then jnl_end().
 * `sbx undo` calls jnl_undo(); `sbx log` reads entries with jnl_read().
 */
#ifndef SBX_SYNC_JOURNAL_H
#define SBX_SYNC_JOURNAL_H

#include "common/strbuf.h"
#include "common/util.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* A path's state: absent, a directory, a regular file (content saved as obj, or "" when
 * only described: the state a pull left, which is in the tree), or a symlink. */
typedef struct jnl_state {
    char type;            /* '-' absent, 'd', 'f', 'l' */
    uint32_t mode;        /* permission bits (07777) */
    uint64_t size;        /* 'f': bytes */
    uint64_t hash;        /* 'f': the manifest's content hash (mf_hash_fd) */
    int64_t mtime_ns;     /* 'f' */
    char obj[48];         /* 'f': the object's name in objects/, or "" */
    char *target;         /* 'l': the link's target (owned) */
} jnl_state;

typedef struct jnl_change {
    char *root;           /* the code directory's absolute path */
    char *path;           /* relative to it, checked (sf_check_relpath) */
    jnl_state old, cur;   /* before and after */
} jnl_change;

typedef struct jnl_entry {
    uint64_t id;
    int64_t time;         /* seconds since the epoch */
    char kind[8];         /* "pull" or "undo" */
    char *label;          /* the command (bytes from the sandbox's side: print filtered) */
    jnl_change *changes;
    size_t n, alloc;
} jnl_entry;

typedef struct jnl_log {
    jnl_entry *v;         /* oldest first */
    size_t n, alloc;
} jnl_log;

typedef struct jnl jnl;

/* Called after each entry is written, with it (the holder's audit record of a pull). */
typedef void (*jnl_notify_fn)(void *ctx, const jnl_entry *e);
/* A warning for the person (an entry dropped past the bound, a save that failed). */
typedef void (*jnl_warn_fn)(void *ctx, const char *msg);

/* Opens (making it) the journal beneath statefd (the session's state directory); max_bytes
 * is the bound (0: the default, JNL_DEFAULT_MAX). The fd is duplicated. */
#define JNL_DEFAULT_MAX (2ULL << 30)
int jnl_open(int statefd, uint64_t max_bytes, jnl **out, sbx_err *err);
void jnl_free(jnl *j);
void jnl_set_label(jnl *j, const char *label);
void jnl_set_notify(jnl *j, jnl_notify_fn fn, void *ctx);

/* A pull's commit: jnl_begin() takes the lock (at most 10 s; false: no journal for this
 * pull, and warn said so); jnl_take() saves what is at dfd/name now (cur: its lstat, NULL
 * when absent) into *old; jnl_record() adds the change once the write is done; jnl_end()
 * writes the entry (when it has changes), applies the bound and lets the lock go. */
bool jnl_begin(jnl *j, jnl_warn_fn warn, void *ctx);
void jnl_take(jnl *j, int dfd, const char *name, const struct stat *cur, jnl_state *old);
void jnl_record(jnl *j, const char *root, const char *path, size_t len, jnl_state *old,
                const jnl_state *cur);
void jnl_end(jnl *j);

/* The whole log, parsed (entries oldest first). A line that does not parse, or an entry cut
 * short, is skipped: the log is ours, but a crash may leave half a record. */
int jnl_read(jnl *j, jnl_log *out, sbx_err *err);
int jnl_parse(const char *buf, size_t len, jnl_log *out);
void jnl_log_free(jnl_log *l);
/* The log's text for l (what jnl_parse() reads back as l). */
void jnl_log_format(const jnl_log *l, strbuf *out);
void jnl_state_free(jnl_state *s);

/* One code directory for an undo: its absolute path and a held fd. */
typedef struct jnl_root {
    const char *base;
    int fd;
} jnl_root;

/* One path an undo would change (the plan), or why it cannot (a conflict). */
typedef struct jnl_step {
    char *root, *path;
    jnl_state target;      /* what the undo puts there */
    char now;              /* what the host has now: '-', 'd', 'f', 'l' */
    char *conflict;        /* the host changed it since (or it cannot be reached), or NULL */
} jnl_step;

typedef struct jnl_plan {
    jnl_step *v;
    size_t n, alloc;
    size_t conflicts;
    strbuf ids;            /* "5, 4" */
} jnl_plan;

/* Plans undoing the entries of the log whose ids are in [from, to] (newest first): for each
 * path, the oldest entry's old state; a path whose state on the host is not what the newest
 * entry left is a conflict. */
int jnl_plan_make(jnl *j, const jnl_root *roots, size_t nroots, uint64_t from, uint64_t to,
                  jnl_plan *plan, sbx_err *err);
/* Carries out the plan (conflicts too with force, else none may be left): the host's state of
 * each path is saved first as a new "undo" entry, so that undoing it redoes. The number of
 * paths that could not be changed is returned in *failed (each said through warn). */
int jnl_apply(jnl *j, const jnl_root *roots, size_t nroots, jnl_plan *plan, bool force,
              jnl_warn_fn warn, void *ctx, size_t *failed, sbx_err *err);
void jnl_plan_free(jnl_plan *plan);

/* The test knob SBXSH_TEST_JOURNAL_COPY=copy|clone|link (not a setting): how objects are
 * saved, for the benchmark (default: link, then clone, then copy). */
void jnl_set_save_mode(jnl *j, const char *mode);

#endif
