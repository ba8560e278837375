/* sbx-agent as git's fsmonitor in the sandbox (git's hook protocol, version 2): the journal of
 * what changed in the watched trees (fed by the manifest's inotify events, see mf_observer),
 * the answers the agent gives on its fsmonitor socket, and the hook that git runs
 * (`sbx-agent --fsmonitor-hook SOCKET 2 TOKEN`), which asks the agent and prints its answer.
 *
 * A token is "sbx1:<the agent's instance, 16 hex>:<sequence number>". The agent answers
 * "everything" (`/`) to any token it cannot vouch for: another instance's (a restarted agent),
 * one older than what its journal holds, one from before every directory was watched, or
 * anything unknown. Over-reporting is always safe (git re-checks what is named); leaving out
 * a path that changed is the one thing it must never do. */
#ifndef SYNC_FSMONITOR_H
#define SYNC_FSMONITOR_H

#include "common/strbuf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FSM_REQUEST_MAGIC "sbx-fsmonitor-1"
/* sbx-agent run under this name is the hook, asking FSM_DEFAULT_SOCKET: core.fsmonitor can
 * then be a path alone, which git executes itself, where a command with arguments goes
 * through /bin/sh (one more process, 10-30 ms under gVisor). */
#define FSM_HOOK_NAME "sbx-fsmonitor-hook"
#define FSM_DEFAULT_SOCKET "/tmp/.sbxsh-fsmonitor.sock"
#define FSM_TOKEN_MAX 128
#define FSM_CWD_MAX 4096
#define FSM_REQUEST_MAX (sizeof(FSM_REQUEST_MAGIC) + FSM_TOKEN_MAX + FSM_CWD_MAX + 3)
/* More journal entries (or bytes) than this and it is dropped: older tokens get `/`. */
#define FSM_LOG_MAX 200000
#define FSM_LOG_BYTES_MAX (16u << 20)
/* An answer longer than this is `/` instead (git would re-check that much anyway). */
#define FSM_ANSWER_MAX (16u << 20)
/* More never-watched (excluded) directories than this: every answer is `/`. */
#define FSM_BLIND_MAX 4096
/* A directory git must list again is named as DIR/FSM_DUMMY: git 2.39 takes a changed path's
 * directory for the one whose untracked-cache listing is stale (`DIR/` or `DIR` only
 * invalidates DIR's parent's). No index entry needs to have that name. */
#define FSM_DUMMY ".sbx-fsmonitor"
/* Walking the directories that are not watched (fresh, excluded) at an answer: past this
 * many entries, the answer is `/`. */
#define FSM_WALK_MAX 50000

typedef struct fsm_ent {
    uint64_t seq;
    uint16_t root;
    char *path;           /* relative to the root; a directory's ends in '/' */
} fsm_ent;

typedef struct fsm_dir {
    uint16_t root;
    char *path;           /* relative to the root, no trailing '/' */
} fsm_dir;

typedef struct fsm_state {
    uint64_t instance;    /* random per agent process: a restarted agent knows no token */
    uint64_t seq;         /* the last journal entry's; a token names the seq it was made at */
    uint64_t valid_from;  /* tokens older than this get `/` */
    uint64_t issued;      /* the seq of the last token given out */
    bool ready;           /* a scan has watched every directory, and watching is still on */
    fsm_ent *log;         /* ordered by seq */
    size_t nlog, alog, log_bytes;
    /* Directories made or moved in since the last scan: not watched yet (or watched under
     * their old path), so every directory in them is named in every answer until the scan
     * has watched them: git lists each again. */
    fsm_dir *fresh;
    size_t nfresh, afresh;
    /* Directories the sync excludes (never watched): named in every answer. */
    fsm_dir *blind;
    size_t nblind, ablind;
} fsm_state;

void fsm_init(fsm_state *s, uint64_t instance);
void fsm_release(fsm_state *s);
/* What happened before now is unknown (events lost, a new tree): older tokens get `/`;
 * with !watching, every answer is `/` until the next scan that watches everything. */
void fsm_lost(fsm_state *s, bool watching);
/* An event: path (relative to root) changed; is_dir when it is a directory; fresh when it is
 * a directory that was made or moved in (see fsm_state.fresh). */
void fsm_note(fsm_state *s, uint16_t root, const char *path, size_t len, bool is_dir, bool fresh);
/* A directory the scan excluded (never watched). */
void fsm_note_blind(fsm_state *s, uint16_t root, const char *path, size_t len);
/* A scan ended; watching: every directory it kept is watched. bases: each root's absolute
 * directory (to walk the fresh directories). */
void fsm_scanned(fsm_state *s, bool watching, char *const *bases, size_t nbases);

/* The answer to token for the work tree at prefix (relative to root, "" for its top):
 * the new token, NUL, then the changed paths relative to the work tree, each NUL-terminated,
 * or `/` for everything. known: whether the work tree is inside a watched root at all. */
void fsm_answer(fsm_state *s, const char *token, bool known, uint16_t root, const char *base,
                const char *prefix, strbuf *out);

/* Parses a request (FSM_REQUEST_MAGIC, the token, the hook's working directory, each
 * NUL-terminated, nothing after); 0 and the fields (pointing into buf), or -1. */
int fsm_parse_request(const char *buf, size_t len, const char **token, const char **cwd);
/* Whether an answer is one git can take (a token of [A-Za-z0-9:._-], then non-empty
 * NUL-terminated paths); the hook prints nothing else. */
bool fsm_answer_ok(const char *buf, size_t len);

/* The hook: argv is SOCKET VERSION TOKEN (what follows --fsmonitor-hook). Prints a valid
 * answer (`/` if the agent cannot be asked) and returns 0; 1 for a version it does not
 * speak. */
int fsm_hook_main(int argc, char **argv);

#endif
