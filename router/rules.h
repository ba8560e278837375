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
    RC_SBX,                    /* sbx status|ls|release|doctor|exec|--help (sbx.c) */
    RC_POLICY,                 /* a program a policy rule accepts (policy.c) */
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
    /* RC_GIT: where git works, resolved once and held (router/README.md, "Where host git
     * runs"). The -C options are not passed on: git starts in git_cwd_fd instead. */
    char *git_cwd;             /* where git works after its -C options (for messages) */
    int git_cwd_fd;            /* ... held: O_PATH, opened beneath the code directory */
    int git_top_fd;            /* the code directory whose repository git uses */
    int git_dir_fd;            /* its own .git directory (-1 for a clone outside a repo) */
    const char *git_top;       /* its path (borrowed from the context) */
    char *git_dir;             /* "<git_top>/.git": GIT_DIR (NULL for clone) */
    char *git_ceiling;         /* GIT_CEILING_DIRECTORIES: the code directory's parent */
    strvec git_args;           /* what git gets after the safety options: argv[1..]
                                  without -C, local repository operands rewritten */
    char *clone_target;        /* clone: the absolute directory it makes (must not exist) */
    int git_sub;               /* which subcommand (git.c's enum) */
    int clone_arg;             /* clone: the target's index in git_args, or -1 (none
                                  given: git derives it from the URL) */
    const char *git_remote;    /* the repository operand as given, or NULL */
    strvec git_nicks;          /* operands that are bare words naming nothing on disk: each
                                  must be a configured remote (else git takes it for a
                                  path, which the sandbox could create meanwhile) */
    int sbx_sub;               /* RC_SBX: which subcommand (sbx.c's enum) */
    /* RC_POLICY: the rule that accepted the words (borrowed from the policy), its file
     * and line as shown, and the host variables it keeps; prog is its absolute program */
    const char *pol_rule;
    const char *pol_file;
    unsigned pol_line;
    const char *const *pol_env;
} rcmd;

typedef struct rpipe {
    rcmd cmds[ROUTE_MAX_CMDS];
    size_t n;
    bool bang;
    char *new_cwd;             /* a host cd: where it goes */
    bool cd_project;           /* ... into another project (route_ctx.cd_projects), or */
    bool cd_view;              /* ... a plain directory's view (route_ctx.cd_views) */
    /* A git command with a password or token in a URL (route_git_secret()): HOST, and the
     * runner runs nothing, it says why (n is 0). */
    bool git_secret;
} rpipe;

/* Checks one pipeline; on HOST fills rp (release it with route_rpipe_release),
 * else appends the reason why not. On HOST, a short description of what
 * runs is appended to reason as well. */
route_where route_check(const sh_parse *p, const sh_pipeline *pl, const route_ctx *ctx,
                        rpipe *rp, strbuf *reason);
void route_rpipe_release(rpipe *rp);

/* ---- paths (paths.c) ------------------------------------------------------ */

/* path equals dir or lies below it; both absolute and normalized. */
bool route_path_within(const char *path, const char *dir);
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

/* The code directory abs lies in (the innermost), or -1. */
int route_code_dir_of(const route_ctx *ctx, const char *abs);
/* An O_PATH fd of code directory `which`, or -1. */
int route_open_code_dir(const route_ctx *ctx, int which);
/* Opens abs (absolute, normalized, as route_walk gives it) as an
 * O_PATH|O_DIRECTORY fd beneath the code directory it lies in, with no
 * symlink on the way (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS from the
 * code directory's own fd): what a host part then works from, whatever
 * happens to the name. *which (if not NULL) gets the code directory's index.
 * Returns the fd, or -1 with *why. */
int route_open_dir(const route_ctx *ctx, const char *abs, int *which, const char **why);

/* bash's PATH search for name over ctx->path, skipping relative entries and
 * any file that is (or resolves to) inside the code directories or sync
 * paths. Returns 0 with the absolute path in out, or -1 with *why. */
int route_find_program(const route_ctx *ctx, const char *name, strbuf *out, const char **why);

/* ctx->path without relative entries and entries inside the code
 * directories or sync paths: the PATH host programs get. */
void route_safe_path(const route_ctx *ctx, strbuf *out);

/* ---- git (git.c) ---------------------------------------------------------- */

enum { GIT_CLONE, GIT_FETCH, GIT_PULL, GIT_PUSH, GIT_LS_REMOTE };
extern const char *const route_git_sub_names[];

/* Checks a git command's words (argv[0] == "git") for the host. Fills
 * c->git_cwd, git_sub and git_remote. Returns 0, or -1 with why. */
int route_check_git(const route_ctx *ctx, rcmd *c, strbuf *why);

/* Whether pl has a git command (its name a literal `git`) with a word whose text holds a
 * URL secret (common/urlcred.h: `https://user:TOKEN@host/r`, also quoted or expanded). In the sandbox the secret
 * would be in its command line and in the .git it writes; on the host it would be in the
 * reflog. *sub gets the word after `git` when it names a subcommand (for messages). */
bool route_git_secret(const sh_parse *p, const sh_pipeline *pl, strbuf *sub);
/* What sbxsh says instead of running such a command (one line, no secret in it). */
#define ROUTE_GIT_SECRET_WHY                                                                 \
    "not run: a password or token in a URL (user:password@host) would reach the sandbox and " \
    ".git's logs; store it with a credential helper (git config --global credential.helper " \
    "store, or your system's) and use the URL without it"

/* A URL the repository's configuration gives a remote (as `git remote -v`
 * prints it), for the repository c pins: a local path inside the code
 * directories or sync paths (or resolving there) must be the repository
 * itself, and never for push. Returns 0, or -1 with why. */
int route_check_configured_url(const route_ctx *ctx, const rcmd *c, const char *url,
                               strbuf *why);

/* The built-in git rules in the policy format, for `sbx policy show` (policy.c). */
void route_git_rules_text(strbuf *out);

/* ---- sbx (sbx.c) ---------------------------------------------------------- */

enum { SBX_STATUS, SBX_LS, SBX_RELEASE, SBX_DOCTOR, SBX_EXEC, SBX_HELP, SBX_POLICY };
extern const char *const route_sbx_sub_names[];

/* Checks `sbx SUB ...` (argv[0] == "sbx") for the host: a subcommand of
 * sbxsh's own, its options exactly as sbx spells them, this session only,
 * and the program beside sbxsh (ctx->sbx, which fills c->prog). For
 * SBX_EXEC nothing is to run, and nothing else is checked. 0 or -1 with why. */
int route_check_sbx(const route_ctx *ctx, rcmd *c, strbuf *why);

/* ---- filters (filters.c) ------------------------------------------------------ */

bool route_is_filter(const char *name);
/* Checks a filter's words (options only, from its allowlist). 0 or -1 with why. */
int route_check_filter(const route_ctx *ctx, const rcmd *c, strbuf *why);

/* ---- reasons -------------------------------------------------------------- */

/* Appends s[0..len) to sb as part of a one-line reason: control bytes and
 * non-ASCII become '?', and more than 48 bytes are cut with "...". */
void route_reason_add(strbuf *sb, const char *s, size_t len);

#endif
