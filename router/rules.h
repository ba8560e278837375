/*
 * The router's internals, shared by its files (not an interface for other
 * parts): the checked form of a host pipeline, which the runner executes
 * as it is, and the rule helpers.
 */
#ifndef SBX_ROUTER_RULES_H
#define SBX_ROUTER_RULES_H

#include "router/route.h"

#include "common/strbuf.h"
#include "common/strvec.h"

typedef enum rcmd_kind {
    RC_ECHO,
    RC_PRINTF,
    RC_CD,
    RC_GIT,
    RC_FILTER,
} rcmd_kind;

/* A redirection the host allows, in the order bash applies them. */
typedef struct rredir {
    int fd;                    /* 0, 1 or 2 */
    enum { RR_NULL_IN, RR_NULL_OUT, RR_DUP } op;
    int src;                   /* RR_DUP: the fd copied to fd (1 or 2) */
} rredir;

#define RCMD_MAX_REDIRS 8

typedef struct rcmd {
    rcmd_kind kind;
    strvec argv;               /* the words' values; argv.v[0] is the command name */
    strvec env;                /* NAME=VALUE from the allowed assignment prefixes */
    char *prog;                /* git and filters: the absolute program path */
    rredir redirs[RCMD_MAX_REDIRS];
    size_t n_redirs;
    bool pipe_stderr;          /* followed by |& */
    uint32_t line_off;         /* bash numbers a command's messages with the line this
                                  offset is on (see command_line_off()) */
    /* RC_GIT */
    char *git_cwd;             /* where git works after its -C options */
    int git_sub;               /* which subcommand (git.c's enum) */
    const char *git_remote;    /* the repository operand as given, or NULL */
} rcmd;

typedef struct rpipe {
    rcmd cmds[ROUTE_MAX_CMDS];
    size_t n;
    bool bang;
    char *new_cwd;             /* a host cd: where it goes */
} rpipe;

/* Checks one pipeline; on HOST fills rp (release it with rpipe_release),
 * else appends the reason why not. On HOST, a short description of what
 * runs is appended to reason as well. */
route_where route_check(const sh_parse *p, const sh_pipeline *pl, const route_ctx *ctx,
                        rpipe *rp, strbuf *reason);
void rpipe_release(rpipe *rp);

/* ---- paths (paths.c) ------------------------------------------------------ */

/* path equals dir or lies below it; both absolute and normalized. */
bool path_within(const char *path, const char *dir);
bool route_in_code_dirs(const route_ctx *ctx, const char *abs);
/* Inside a code directory or matching (or below) a sync path entry. */
bool route_in_synced(const route_ctx *ctx, const char *abs);

enum {
    WALK_DIR = 1,          /* every component, the last included, must be a directory */
    WALK_MISSING_OK = 2,   /* the path may end in components that do not exist */
};

/* Resolves path (absolute, or relative to base) component by component on
 * the real filesystem, refusing symlinks. out gets the normalized absolute
 * path; *exists whether all of it exists. Returns 0, or -1 with *why. */
int route_walk(const char *base, const char *path, unsigned flags, strbuf *out, bool *exists,
               const char **why);

/* bash's PATH search for name over ctx->path, skipping relative entries and
 * any file that is (or resolves to) inside the code directories or sync
 * paths. Returns 0 with the absolute path in out, or -1 with *why. */
int route_find_program(const route_ctx *ctx, const char *name, strbuf *out, const char **why);

/* ctx->path without relative entries and entries inside the code
 * directories or sync paths: the PATH host programs get. */
void route_safe_path(const route_ctx *ctx, strbuf *out);

/* ---- git (git.c) ---------------------------------------------------------- */

enum { GIT_CLONE, GIT_FETCH, GIT_PULL, GIT_PUSH, GIT_LS_REMOTE };
extern const char *const git_sub_names[];

/* Checks a git command's words (argv[0] == "git") for the host. Fills
 * c->git_cwd, git_sub and git_remote. Returns 0, or -1 with why. */
int route_check_git(const route_ctx *ctx, rcmd *c, strbuf *why);

/* Whether a repository operand (URL, path or remote name) is safe for the
 * host to use from cwd; push forbids local repositories altogether.
 * Returns 0, or -1 with why. */
int route_check_repo(const route_ctx *ctx, const char *cwd, const char *repo, bool push,
                     strbuf *why);

/* A URL the repository's configuration gives a remote (as `git remote -v`
 * prints it): refused when it is a local repository the sandbox can write
 * (push: any; fetch: a bare repository, a symlink, a foreign gitfile). */
int route_check_configured_url(const route_ctx *ctx, const char *cwd, const char *url, bool push,
                               strbuf *why);

/* ---- filters (filters.c) ------------------------------------------------------ */

bool route_is_filter(const char *name);
/* Checks a filter's words (options only, from its allowlist). 0 or -1 with why. */
int route_check_filter(const route_ctx *ctx, const rcmd *c, strbuf *why);

/* ---- reasons -------------------------------------------------------------- */

/* Appends s[0..len) to sb as part of a one-line reason: control bytes and
 * non-ASCII become '?', and more than 48 bytes are cut with "...". */
void reason_add(strbuf *sb, const char *s, size_t len);

#endif
