/*
 * The router: for every part of a parsed command line, HOST or SANDBOX, with
 * a one-line reason; and the host runner that executes the HOST parts.
 *
 * A part is one pipeline of the line's top-level list. The default is
 * SANDBOX; a part is HOST only when every rule in router/README.md holds,
 * and anything the router does not fully understand, or that is past a
 * limit, goes to the sandbox. The sandbox is hostile: a wrong HOST decision
 * runs its wish where the credentials are.
 *
 *   route_ctx ctx = { .code_dirs = dirs.v, .n_code_dirs = dirs.n,
 *                     .cwd = cwd, .path = getenv("PATH") };
 *   route_plan plan;
 *   route_plan_build(&plan, &parse, &ctx);        // parse.status == SH_OK
 *   for (size_t i = 0; i < plan.n; i++)
 *       if (plan.parts[i].where == ROUTE_HOST)
 *           route_run_host(&parse, plan.parts[i].pipe, &ctx, &opts, &st, &newcwd, &err);
 *   route_plan_release(&plan);
 *
 * route_run_host() classifies its pipeline again against the context it is
 * given (the cwd may have changed since the plan was made) and refuses to
 * run anything that is no longer HOST: a caller cannot run an unchecked
 * pipeline on the host by mistake.
 */
#ifndef SBX_ROUTER_ROUTE_H
#define SBX_ROUTER_ROUTE_H

#include "common/arena.h"
#include "common/strbuf.h"
#include "common/strvec.h"
#include "common/util.h"
#include "shell/ast.h"
#include "shell/parse.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Limits: past any of them a part (or the whole line) goes to the sandbox. */
#define ROUTE_MAX_LINE   65536   /* bytes in the parsed text */
#define ROUTE_MAX_PARTS  64      /* pipelines in the top-level list */
#define ROUTE_MAX_CMDS   16      /* commands in one host pipeline */
#define ROUTE_MAX_WORDS  256     /* words (and assignments) in one host command */
#define ROUTE_MAX_WORD   8192    /* bytes in one word's value */
#define ROUTE_MAX_OUTPUT (1 << 20) /* bytes a host printf/echo may produce */

typedef enum route_where {
    ROUTE_SANDBOX = 0,
    ROUTE_HOST = 1,
} route_where;

/* How a part joins the one before it. */
typedef enum route_join {
    ROUTE_JOIN_NONE,     /* the first part */
    ROUTE_JOIN_SEMI,     /* after `;` */
    ROUTE_JOIN_AMP,      /* after `&`: the previous and-or list runs in the background */
    ROUTE_JOIN_NEWLINE,  /* after a newline */
    ROUTE_JOIN_AND,      /* after `&&` */
    ROUTE_JOIN_OR,       /* after `||` */
} route_join;

/* "", ";", "&", "\n", "&&", "||" */
const char *route_join_text(route_join j);

/* What the rules need to know about the host. Everything is borrowed. */
typedef struct route_ctx {
    const char *const *code_dirs;   /* real absolute paths (see session/config.h) */
    size_t n_code_dirs;
    const char *const *sync_paths;  /* AGENT_SANDBOX_SYNC_PATHS entries; globs allowed */
    size_t n_sync_paths;
    const char *cwd;                /* absolute; host git needs it inside a code dir */
    const char *path;               /* the host PATH programs resolve through; NULL = unset */
    const char *home;               /* $HOME (jq reads ~/.jq); may be NULL */
    const char *cdpath;             /* $CDPATH; a non-empty one sends relative `cd` away */
    /* `sbx status|ls|release|doctor` run on the host as the program sbx (an absolute path:
     * the one installed beside sbxsh; NULL: sbx stays a sandbox command), with the
     * session's name as AGENT_SANDBOX_SESSION and the code directories as
     * AGENT_SANDBOX_CODE_DIRS, so that it sees the session this shell uses. */
    const char *sbx;
    const char *session;
    /* At sbxsh's prompt: a `cd` into another project (a directory inside a git work tree
     * that is not one of the code directories) runs on the host, as a cd within them does,
     * and the shell then moves to that project's own session (cli/line.c); without it, that
     * cd runs in the sandbox, which does not have the directory. */
    bool cd_projects;
    /* At sbxsh's prompt only (with cd_projects): a `cd` into a plain directory below $HOME
     * (no component below HOME starts with '.', not inside a git work tree, not in the code
     * directories) runs on the host too, and the shell then runs in the scratch session,
     * whose sandbox gets a push-only view of that directory (cli/view.c). */
    bool cd_views;
    /* With cd_projects: what OLDPWD is, as the host knows it from the person's own cds and
     * the session's shell confirmed (cli/line.c); NULL when not known. `cd -` then goes
     * there on the host when that is another project or a plain directory's view. */
    const char *oldpwd;
    /* With cd_views: HOME as the session's shell has it (cli/line.c confirms it), for a bare
     * `cd`, `cd ~` and `cd ~/DIR`, which then go on the host like `cd DIR`; NULL: those stay
     * the sandbox's. */
    const char *home_cd;
    /* The host-command policy (router/policy.h): consulted after the built-in rules, for a
     * program none of them owns; NULL: no policy, every such program is the sandbox's. */
    const struct route_policy *policy;
} route_ctx;

struct route_eval;

typedef struct route_part {
    route_where where;
    const char *reason;        /* one printable line, lives in the plan */
    const sh_pipeline *pipe;   /* the pipeline, in the parse's arena */
    route_join join;
    bool background;           /* its and-or list ends with `&` */
    unsigned andor;            /* index of its and-or list in the line */
    sh_span span;              /* the pipeline's source */
    /* HOST from the cwd the plan last knew, after a sandbox `cd` whose target it
     * cannot know (a variable, `cd -`): HOST only while the cwd is still inside the
     * code directories, else the runner sends it to the sandbox. Its reason starts
     * with ROUTE_CWD_UNKNOWN. */
    bool cwd_unknown;
    /* HOST after a sandbox part that may have redefined commands (a function, alias,
     * source, eval, shopt, or a compound command): HOST only while the sandbox's shell
     * still takes each command name of the part as the plan does (route_part_commands:
     * a program for git, a builtin for echo), else the runner sends it to the sandbox,
     * where bash would run the new meaning. Its reason starts with ROUTE_NAMES_UNKNOWN. */
    bool names_unknown;
    /* HOST: a `cd` into another project (route_ctx.cd_projects) or a plain directory's view
     * (route_ctx.cd_views); it must run on the host, even in a line that is otherwise the
     * sandbox's, for the shell to follow it there. */
    bool cd_project;
    /* SANDBOX: an `eval` whose text is known before it runs (`eval` and literal words, at most `< /dev/null`) and has a
     * HOST part: its text, parsed and planned from where this part runs, for the line
     * executor to run part by part as bash runs an eval's text; NULL otherwise. */
    struct route_eval *eval;
    /* A git command with a password or token in a URL (however the part is routed: in the
     * background, after a redefinition, in a line sent whole to the sandbox): the executor
     * gives it to the host runner, which refuses it and runs nothing, never to the sandbox,
     * where the secret would be the sandbox's. */
    bool secret;
} route_part;

#define ROUTE_CWD_UNKNOWN "host if the cwd is still inside the code directories, else sandbox"
#define ROUTE_NAMES_UNKNOWN "host if the sandbox's shell has not redefined its commands, else sandbox"
#define ROUTE_EVAL "eval: its text runs part by part, as a line of its own"

typedef struct route_plan {
    route_part *parts;
    size_t n;
    arena mem;                 /* parts and reasons */
} route_plan;

/* An eval's text as a line of its own (route_part.eval). Offsets in its parts' spans are
 * into text. */
typedef struct route_eval {
    strbuf text;               /* the words joined by spaces, as eval joins them */
    bool stdin_null;           /* the eval had `< /dev/null`: every part of the text gets it */
    sh_parse parse;
    route_plan plan;
} route_eval;

#define ROUTE_EVAL_DEPTH 8     /* evals seen through, one inside another */


/* Splits p's top-level list (p->status must be SH_OK) into parts and routes
 * each. Never fails: whatever cannot be decided is SANDBOX. A `cd` changes
 * the cwd that later parts of the line are checked against: a host one, and a
 * sandbox one with a literal target (where bash's logical cd lands); after a
 * sandbox cd it cannot follow, a part that is HOST only from inside the code
 * directories gets cwd_unknown. */
void route_plan_build(route_plan *plan, const sh_parse *p, const route_ctx *ctx);

/* Whether a SANDBOX pipeline may change what a later command name means (a function,
 * alias, hash, enable, source, eval, shopt, or a compound command that may hold one). */
bool route_may_redefine(const sh_pipeline *pl);

/* What a HOST pipeline's commands must be in the sandbox's shell for running it on the
 * host to be what bash would do there: for each command, its name and the kind bash's
 * `type -t` must give ("builtin" for echo, printf and cd, whose builtins the host runner
 * reproduces; "file" for the programs), pushed to out as name, kind, name, kind... */
void route_part_commands(const sh_pipeline *pl, strvec *out);
void route_plan_release(route_plan *plan);
/* Makes every part of plan the sandbox's, as a line the executor must run wholly there (a
 * line with nothing that needs the host, or text the sandbox chose): SANDBOX, no cd into a
 * project, and no eval seen through (its nested plan, which could hold HOST parts, is
 * dropped: the eval runs whole). A part with `secret` keeps it: refused, never sent. */
void route_plan_to_sandbox(route_plan *plan);

/* Routes one pipeline of p against ctx; on SANDBOX (and on HOST) appends a
 * one-line reason to reason. For a HOST `cd`, new_cwd (if not NULL) gets
 * the directory it enters. */
route_where route_classify(const sh_parse *p, const sh_pipeline *pl, const route_ctx *ctx,
                           strbuf *reason, strbuf *new_cwd);

/* How a host part reports itself and decides its status. */
typedef struct route_run_opts {
    const char *errname;   /* bash's $0 in messages: "sbxsh", or the script's name */
    unsigned line;         /* the line the pipeline starts on (route_line_of() of its
                              span start, plus the line the parsed text starts at); each
                              command's messages say the line bash would; 0 = interactive:
                              no "line N: " */
    bool pipefail;         /* set -o pipefail */
    const char *xtrace;    /* set -x: the PS4 to print before each command's assignments
                              and words, as bash's xtrace does; NULL: no trace */
    strbuf *audit;         /* when set: each command run is appended as a JSON object
                              (comma-separated): argv as executed, program, cwd, the
                              environment's names, status (the audit log, docs/undo.md) */
} route_run_opts;

enum {
    ROUTE_RAN = 0,         /* the part ran; *status is its exit status */
    ROUTE_NOT_HOST = 1,    /* it is not (or no longer) HOST: nothing ran; err says why */
};

/* Runs one HOST pipeline with sbxsh's own stdin, stdout and stderr, in
 * ctx->cwd: pipes, fork and exec of each checked argv, echo and printf
 * in-process (forked inside a pipeline), never a host shell. The status is
 * bash's (127, 126, 128+n, `!`, pipefail). For a successful `cd`, new_cwd
 * (if not NULL) is set to the new directory; it is left empty otherwise.
 * Returns ROUTE_RAN, ROUTE_NOT_HOST, or -1 when sbxsh itself failed
 * (fork, pipe): err is set and nothing meaningful ran. */
int route_run_host(const sh_parse *p, const sh_pipeline *pl, const route_ctx *ctx,
                   const route_run_opts *o, int *status, strbuf *new_cwd, sbx_err *err);

/* For a program the person chose to run on the host outside any line (fc's editor, from
 * sbxsh's own FCEDIT or EDITOR): bash's PATH search over ctx->path as for host parts, never
 * a file that is, or resolves to, inside the code directories or sync paths (a name with a
 * `/` is taken as it is, under the same rule); and the PATH to give it (without relative
 * entries or entries inside them). 0 with the path in out, or -1 with *why. */
int route_find_host_program(const route_ctx *ctx, const char *name, strbuf *out,
                            const char **why);
void route_host_path(const route_ctx *ctx, strbuf *out);
/* abs (absolute, real) lies inside the code directories or sync paths: the sandbox's to
 * change. */
bool route_sandbox_writable(const route_ctx *ctx, const char *abs);

/* Whether abs (absolute, normalized) is a directory a prompt's `cd` may give the scratch
 * sandbox a view of (route_ctx.cd_views): home itself or below it, with no component below
 * home starting with '.' (never ~/.ssh, ~/.config or anything under one). By name only:
 * the caller walks it without symlinks (route_walk) and opens it with no symlink on the
 * way (cli/view.c). */
bool route_view_dir(const char *home, const char *abs);
/* abs (an existing directory, real) is inside a git work tree: it or a parent holds a
 * `.git` directory or gitfile, as session/config.c finds a code directory. */
bool route_in_git_work_tree(const char *abs);

/* The 1-based line of byte offset off in p's text, as bash counts lines. */
unsigned route_line_of(const sh_parse *p, uint32_t off);

/* --route: writes the plan, one line per part: "host<TAB>reason<TAB>text"
 * (the text with \n, \t, \r and \\ escaped), or with json a JSON object
 * {"cwd":..., "code_dirs":[...], "parts":[{"route":..., "reason":...,
 * "join":..., "background":..., "start":..., "end":..., "text":...}]}. */
void route_print(const route_plan *plan, const sh_parse *p, const route_ctx *ctx, bool json,
                 strbuf *out);

#endif
