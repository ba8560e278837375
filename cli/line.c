/*
 * The line executor (line.h): a parsed line run part by part, host parts here and sandbox parts
 * as a one-shot `bash -c` or on the persistent `bash -s`; line_exec_new(), line_exec_command(),
 * line_exec_finish(), line_route_ctx(). May call router/, shell/, session/ (config, client
 * library, termfilter, backend lookup) and common/; no backend, no sync/ (tests/layers.sh).
 * Untrusted: the persistent shell's reports on fd 199, which the sandbox can forge; checked by
 * shell_read_one_report() and shell_read_report(), the keys typed ahead by take_typeahead().
 */
#include "cli/line.h"
#include "cli/prompt.h"
#include "cli/policy.h"
#include "cli/view.h"
#include "common/audit.h"
#include "common/json.h"
#include "common/run.h"
#include "common/strbuf.h"
#include "session/backend.h"
#include "session/config.h"
#include "session/session.h"
#include "session/termfilter.h"
#include "router/route.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

/*
 * The persistent shell's two helpers, defined where they are used and gone
 * once called (each unsets itself first; bash runs a copy of a function's
 * body), so that `declare -F`, `set` and `typeset -f` in the user's
 * commands never show them. A function definition is not a simple command:
 * it does not fire a DEBUG trap or change $_. Only builtins are called, as
 * `builtin NAME`, so that a user's function of that name is not run.
 *
 * SETRC_DEF sets up __sbx_setrc, which sets $? (and, through its last
 * argument, $_) without a fork. REPORT_DEF sets up __sbx_report, which
 * tells us how a chunk ended, as eight NUL-terminated fields on fd 199: a
 * kind ("done" after the chunk, "next" on the line after it), the status,
 * the flags ($-), the set -o options, the cwd, PS4, PIPESTATUS (its
 * statuses, each followed by a space) and the keys typed ahead on a pty
 * (TYPEAHEAD; empty elsewhere). The cwd is what the
 * pwd builtin says (bash's own record of it, not $PWD, which the user may
 * unset or assign), followed by its newline; empty when it cannot say (a
 * deleted directory). Both are called as
 * `{ DEF; f ... && f 0 "$_"; } 2>/dev/null` (DEF read, not parsed: REPORT_CALL_FMT):
 * set -x does not trace them, $? and $_ come out as they went in, and a non-zero status
 * does not trip set -e (a failure before && never does).
 */
#define SETRC_DEF "__sbx_setrc() { builtin unset -f __sbx_setrc; return \"$1\"; }; "
/* ... which also turns set -v back on (verbose: the reports turn it off) */
#define VSETRC_DEF                                                                              \
    "__sbx_setrc() { builtin unset -f __sbx_setrc; builtin set -v; return \"$1\"; }; "
/* ... `post` writes more fields after those (interactive mode: JOBS_POST, PROMPT_POST). The
 * body's output is fd 199, redirected once for all (not each builtin's: bash saves and
 * restores fd 1 for every redirected command, four system calls each), and the fields after
 * the cwd go in one printf (one write). */
#define REPORT_DEF_FT(first, post)                                                              \
    "__sbx_report() { builtin unset -f __sbx_report; " first                                    \
    "builtin printf '%s\\0' \"$1\" \"$2\" \"$-\" \"$SHELLOPTS\"; builtin pwd; "                     \
    "case $- in *v*) builtin set +v;; esac; "                                                   \
    "builtin printf '\\0%s\\0%s \\0%s\\0' \"$PS4\" \"$__sbx_p\" \"${__sbx_t-}\"; "                 \
    post "case $2 in 0) " SETRC_DEF ";; esac; "                                              \
    "builtin unset -v __sbx_s __sbx_p __sbx_a __sbx_t __sbx_d; return \"$2\"; } >&199; "
#define REPORT_DEF_T(post) REPORT_DEF_FT("", post)

/*
 * A report of KIND, read rather than parsed. $?, PIPESTATUS and $_ are saved first, by one
 * assignment (a definition sets $? to 0, an assignment sets $_ to ""), and come back
 * through the call's arguments: `__sbx_report KIND "$?" "$_" && __sbx_setrc 0 "$_"`, where
 * __sbx_setrc is defined (by the report's function) only when the status is 0, the one case
 * in which the report's `return "$2"` lets the && run it. PIPESTATUS is kept as one string
 * (its statuses joined by spaces, whatever IFS is), not as an array: a compound assignment
 * makes bash read a "line" of input, and a non-interactive bash tells, as it reads one, of
 * the jobs a signal ended, on its stderr, which here is /dev/null (JOBS_POST).
 *
 * Why read: bash reads a script from a pipe one byte per read(2) (it must leave the rest
 * for the commands it runs), and the definitions are a kilobyte or two per chunk. Under
 * gVisor each system call is a trip to its kernel, and parsing them cost more than most
 * commands (1,900 bytes: 20 ms at load 18, against 1.5 ms for `read -N` and eval of the
 * same). So the line holds only what must run in the shell itself (saving $?, PIPESTATUS
 * and $_, the call, setting $? and $_ back), and the definitions follow as a line of their
 * own, which `read -N` takes whole (bash reads -N's count at once from a pipe) and eval
 * defines: when the line runs, bash has parsed it and its here-documents and read nothing
 * beyond, so the stream is exactly at that line. It starts with `#`: when an error abandons
 * the rest of the reporting line (the "done" report is skipped, see build_chunk), bash
 * parses it next, as a comment, which changes nothing ($?, $_ and PIPESTATUS stay the
 * user's for "next"). The read and eval run in the report's 2>/dev/null (set -x and set -v
 * show nothing), before an && (a failure trips neither set -e nor an ERR trap), except the
 * eval's own messages: eval, like every parse of a new line, is where a non-interactive
 * bash tells of the jobs a signal ended (`kill %1`: "[1]+ Terminated"), and marks them
 * told, so that JOBS_POST's `jobs -n` no longer lists them. Parsed at the top level, as
 * the definitions were, that notice reached the shell's stderr; so the eval's stderr is
 * the shell's (fd 195 for the report's span), unless set -v is on, which would echo the
 * definitions there. What it runs is one definition, no command set -x would trace there
 * (a `case` is traced); TYPEAHEAD runs inside the report's function for that reason. The
 * definitions are ASCII, so -N's count of characters is their count of bytes in any
 * locale. REPORT_FORK's subshell (a DEBUG trap may be set) keeps its text inline: read and
 * eval would be simple commands the trap sees.
 */
#define REPORT_CALL_FMT                                                                         \
    "{ __sbx_s=$? __sbx_p=\"${PIPESTATUS[@]}\" __sbx_a=$_; "                                      \
    "IFS= builtin read -r -N %zu __sbx_d && case $- in *v*) builtin eval \"${__sbx_d#?}\";; "      \
    "*) builtin eval \"${__sbx_d#?}\" 2>&195;; esac; "                                            \
    "__sbx_report %s \"$__sbx_s\" \"$__sbx_a\" && __sbx_setrc 0 \"$_\"; } 195>&2 2>/dev/null"

/* Appends a report of kind to line (REPORT_CALL_FMT), and its definitions (REPORT_DEF_FT) to
 * defs, for the caller to write right after the line ends (after its here-document bodies). */
static void add_report(strbuf *line, strbuf *defs, const char *kind, const char *def)
{
    size_t len = strlen(def) + 2;   /* the '#' and the newline */
    strbuf_addf(line, REPORT_CALL_FMT, len, kind);
    strbuf_addch(defs, '#');
    strbuf_addstr(defs, def);
    strbuf_addch(defs, '\n');
}

/*
 * Keys typed on a pty while a chunk ran that no program read (the next command typed
 * ahead, after a Ctrl-C or while `make` runs) wait in the pty's input queue, where bash
 * would have read them at its next prompt. At a chunk's end on a pty, its "next" report
 * first asks for them: `read -p typeahead` writes "typeahead" (no NUL: read's prompt) on
 * fd 199 once it has turned the pty's echo off, so that not even the mark is echoed,
 * whatever the scheduling. sbxsh then stops relaying the terminal
 * (what is typed from then on stays in the local terminal, for the prompt) and sends a NUL
 * after all it has relayed (session_tty_mark). The shell reads up to that NUL, so it
 * gets exactly the keys sent before it, none lost in flight; `read -n` turns canonical mode
 * off while it reads (a half-typed line comes too), -s keeps them from being echoed twice,
 * and the timeout only bounds a client that went away. They become the report's eighth
 * field, which sbxsh types into its prompt once checked to be what it sent
 * (take_typeahead). $? and the rest are saved before; `|| :` keeps a failed read from
 * tripping set -e or an ERR trap.
 */
#define TYPEAHEAD                                                                               \
    "IFS= builtin read -r -s -t 10 -n 65536 -d '' -p typeahead __sbx_t <&198 2>&199 || :; "

/*
 * Job control (the persistent shell at a terminal runs with set -m, as interactive bash
 * does): a non-interactive bash keeps its job table but tells of a job that stopped or
 * ended only when a signal ended it (POSIX: `jobs` is a script's only way to know), where
 * interactive bash prints each change before its next prompt. So the "next" report of
 * interactive mode asks for them with `jobs -n` (the jobs changed since last told): first
 * those that still run, which interactive bash never reports (a job just started with &,
 * one sent SIGCONT), told to /dev/null; then the stopped ones (which bash prints after a
 * newline, the cursor being after the ^Z) and the rest (Done, Exit N, Terminated) as two
 * fields, which sbxsh prints in job order before the prompt (print_job_notices). Without
 * set -m (set +m) nothing is told, as in bash. Then the running and the stopped jobs'
 * pids, one a line: \j is their number, and a lone `exit` checks the stopped ones
 * (line_exec_exit_refused). Builtins only: no fork. This comes before PROMPT_POST, whose
 * command substitution (a PS1's own, or under set -e) makes bash wait for a child, after
 * which a non-interactive bash tells (to the report's /dev/null) of the jobs a signal ended.
 * Written to the report's function's fd 1, which is fd 199 (REPORT_DEF_FT).
 */
#define JOBS_POST                                                                               \
    "case $- in *m*) builtin jobs -n -r >/dev/null; builtin jobs -n -s; "                       \
    "builtin printf '\\0'; builtin jobs -n;; *) builtin printf '\\0';; esac; "                    \
    "builtin printf '\\0'; builtin jobs -p -r; builtin printf '\\0'; "                            \
    "builtin jobs -p -s; builtin printf '\\0'; "
#define JOB_FIELDS 4
/* A subshell (REPORT_FORK) sees no jobs of the shell: the same fields, empty. */
#define JOBS_POST_EMPTY "builtin printf '\\0\\0\\0\\0' >&199; "

/*
 * What the prompt needs of the shell's state, after the "next" report of interactive mode
 * and JOBS_POST's fields (PROMPT_VAR_FIELDS more): PS1 and PS2 (each with an "s" before it
 * when set), and PS1 expanded as bash
 * would, only when it needs the shell (prompt_needs_shell: a $ or `), with $? as the
 * command left it (PROMPT_EXPAND_HERE below; in REPORT_FORK's subshell, PROMPT_EXPAND runs
 * it in a command substitution, where an error in it (`set -u`, a bad substitution) cannot
 * abandon the report, and the `x` keeps the prompt's trailing newlines). (After
 * PROMPT_COMMAND, $? is as the command before it left it: prompt_status.) Then PROMPT_COMMAND, each element (bash 5.1's array) followed by a \001
 * (which no command line that reaches the host has: control bytes send a line to the
 * sandbox). PROMPT_POST writes them from inside the report's function; PROMPT_PRE keeps
 * them in an array for REPORT_FORK's subshell.
 */
#define PROMPT_EXPAND                                                                           \
    "__sbx_c=; builtin printf -v __sbx_c '%s\\001' ${PROMPT_COMMAND[@]+\"${PROMPT_COMMAND[@]}\"}; " \
    "__sbx_e=; case ${PS1-} in *[\\$\\`]*) __sbx_e=$(builtin set +u; "                             \
    "__sbx_r() { return \"$1\"; }; __sbx_r \"$__sbx_s\"; builtin printf '%sx' \"${PS1@P}\"); "        \
    "__sbx_e=${__sbx_e%x};; esac; "
/*
 * PROMPT_POST's expansion, in the report's function itself: no subshell, so no process per
 * prompt in the sandbox (one costs 8-19 ms under gVisor; a PS1 of its own `$(...)` still
 * runs its command, as bash's would). An error in bash's ${PS1@P} does not abandon the
 * report: `${x:?}`, a bad substitution or 1/0 leave the prompt as it was written (its
 * message goes to the report's /dev/null), as interactive bash shows such a prompt; set -u
 * is off meanwhile (as the subshell had it) and back on after. Except under set -e, where
 * such an error ends a non-interactive bash (5.2, even inside an && list): then the
 * expansion runs in a command substitution, as before, a process per prompt. The function
 * runs before an &&, so the helper that gives the expansion the command's $? trips neither
 * set -e nor an ERR trap; it unsets itself, as the others do. An
 * expansion such as ${n:=1} or $((n++)) now stays in the shell, as at bash's prompt. Only a
 * PS1 with a `$` or a backquote that no backslash escapes needs it, as prompt_needs_shell
 * says on the host (${PS1//\\?/} drops each backslash and what it escapes): `\$` alone,
 * the end of most prompts, does not.
 */
#define PROMPT_EXPAND_HERE                                                                      \
    "__sbx_c=; builtin printf -v __sbx_c '%s\\001' ${PROMPT_COMMAND[@]+\"${PROMPT_COMMAND[@]}\"}; " \
    "__sbx_e=; __sbx_u=; case $- in *u*) __sbx_u=u; builtin set +u;; esac; "                    \
    "case ${PS1//\\\\?/} in *[\\$\\`]*) case $- in "                                              \
    "*e*) __sbx_e=$(__sbx_r() { return \"$1\"; }; __sbx_r \"$__sbx_s\"; "                          \
    "builtin printf '%sx' \"${PS1@P}\"); __sbx_e=${__sbx_e%x};; "                                  \
    "*) __sbx_r() { builtin unset -f __sbx_r; return \"$1\"; }; __sbx_r \"$__sbx_s\"; "            \
    "__sbx_e=${PS1@P};; esac;; esac; case $__sbx_u in u) builtin set -u;; esac; "
#define PROMPT_VARS                                                                             \
    "\"${PS1+s}${PS1-}\" \"${PS2+s}${PS2-}\" \"$__sbx_e\" \"$__sbx_c\""
#define PROMPT_POST                                                                             \
    PROMPT_EXPAND_HERE "builtin printf '%s\\0' " PROMPT_VARS "; "                                \
    "builtin unset -v __sbx_e __sbx_c __sbx_u; "
#define PROMPT_PRE                                                                              \
    PROMPT_EXPAND "__sbx_v=(" PROMPT_VARS "); builtin unset -v __sbx_e __sbx_c; "
#define PROMPT_VAR_FIELDS 4
#define PROMPT_FIELDS (JOB_FIELDS + PROMPT_VAR_FIELDS)

/*
 * The same report without a simple command in the shell itself, once the
 * input may have set a DEBUG trap or defined a function the wrapper calls
 * (see fork_reports): bash runs a DEBUG trap before every simple command
 * (assignments and function calls included), but not before a group, a
 * subshell, or the commands inside a subshell (without set -T). So the
 * report is a subshell, which sees $?, PIPESTATUS, $- and the rest as the
 * shell has them; its stdout goes to /dev/null so that a trap inherited
 * through set -T prints nothing. It leaves $? 0 and PIPESTATUS (0): the
 * next prefix restores both (status_lost). $_ is untouched (no simple
 * command ran).
 *
 * A user's function named `builtin` (or `exit`) would run instead of the
 * builtin, so the subshell first removes it, with `unset` found as the
 * special builtin it is in POSIX mode (before any function of that name).
 */
#define FORK_OWN_BUILTIN                                                                        \
    "POSIXLY_CORRECT=y; unset -f builtin exit; unset -v POSIXLY_CORRECT; "
/* `exit N` in a subshell, as the builtin whatever functions exist */
#define FORK_EXIT "POSIXLY_CORRECT=y; exit "
/* `first` runs before the first field (TYPEAHEAD: its mark must come first) */
#define REPORT_FORK_TP(kind, first, pre, post)                                                     \
    "{ ( __sbx_s=$? __sbx_p=(\"${PIPESTATUS[@]}\"); " FORK_OWN_BUILTIN first                       \
    "builtin printf '%s\\0' " kind " \"$__sbx_s\" \"$-\" \"$SHELLOPTS\" >&199; "                   \
    "builtin pwd >&199; builtin printf '\\0%s\\0' \"$PS4\" >&199; "                                \
    "builtin printf '%s ' \"${__sbx_p[@]}\" >&199; " pre "builtin printf '\\0' >&199; "         \
    "builtin printf '%s\\0' \"${__sbx_t-}\" >&199; " post                                       \
    "case ${__sbx_v[@]+s} in s) builtin printf '%s\\0' \"${__sbx_v[@]}\" >&199;; esac "         \
    ") >/dev/null; } 2>/dev/null"
#define REPORT_FORK_T(kind, pre) REPORT_FORK_TP(kind, "", pre, "")
#define REPORT_FORK(kind) REPORT_FORK_T(kind, "")

/*
 * bash's line counter. bash numbers each line as its parser reads it, and
 * every command keeps the number it was parsed at: messages ("bash: line
 * 3: ..."), $LINENO, BASH_LINENO and caller all come from it, also for a
 * function called long after its definition was read. The wrapper's own
 * lines are lines too, so after each chunk the counter is set back, to
 * the line before the one the next text starts on (blank lines written
 * before that text make up any difference: a skipped comment, a line
 * already run). Assigning LINENO sets the counter, but every simple
 * command (and for, case, ((, [[) restores the counter it found once it
 * ends, so `LINENO=N` alone is undone at once. The assignment is made
 * instead while bash expands the redirection of a group command: nothing
 * restores the counter after that, and the group's own commands restore
 * what it set. `${v[expr]-}` evaluates the subscript (an arithmetic
 * assignment) and expands to nothing, also under set -u.
 */
#define SETLINE_FMT "${__sbx_z[LINENO=%u]-}"

/*
 * The interactive marks (local/bash_interactive.c, loaded by LOAD_MARKS at a prompt's
 * shell start). bash -i's messages, its expansion errors that abandon the line and not the
 * shell, its job notices, `exit` saying exit and the `i` of `$-` hang on bash being
 * interactive, which the persistent shell, reading a script stream, cannot be throughout
 * (cli/README.md, "Messages"). So it is interactive only while the person's text runs:
 * MARK_ON is in the redirection of the group that holds it (bash expands a group's
 * redirections before its body), MARK_OFF in the redirection of the reports after it, the
 * "done" one and the "next" one on the following line (which alone runs when an error
 * abandoned the line). Each is a lookup of an invisible dynamic variable: no command, so
 * `$?`, `$_`, PIPESTATUS and a DEBUG trap see nothing, and where the object is not loaded
 * it is an unset variable expanding to nothing, and the shell is as before. Interactive
 * mode only: -c, a script and stdin mode keep bash's non-interactive behaviour.
 */
#define MARK_ON "${__sbx_ion-}"
#define MARK_OFF "${__sbx_ioff-}"
/* `exit` is the builtin whose load makes the marks (bash_interactive.c); errors, and a
 * bash that cannot load it, are quiet */
#define LOAD_MARKS                                                                              \
    "builtin enable -f " SBX_SANDBOX_BASH_SO " exit || "                                        \
    "builtin enable -f " SBX_SANDBOX_BASH_SO_IMAGE " exit; "

#define REPORT_FIELDS 8

struct line_exec {
    line_opts o;
    sbx_config cfg;
    sbx_session *sess;        /* opened on the first sandbox run */
    bool shell_running;       /* the persistent bash is up */
    int script_fd;            /* the fd it reads its script on: 0, or 196 on a pty */
    bool shell_ended;         /* ... and has exited; final_status holds its status */
    int final_status;         /* raw wait status */
    int last_status;          /* bash's $? */
    bool sandbox_stale;       /* the persistent shell has not seen last_status yet */
    bool status_lost;         /* its $? and PIPESTATUS are a report's (REPORT_FORK) */
    bool fork_reports;        /* reports run in subshells (REPORT_FORK) */
    int prompt_status;        /* running PROMPT_COMMAND: the $? to give back before each
                                 "next" report (PS1 sees it); -1 otherwise */
    unsigned shell_line;      /* bash's line counter once it has run what was written */
    char *last_arg;           /* $_ after the last host part, when it sets one */
    char *cwd;                /* where the next part runs */
    char *shell_cwd;          /* the persistent shell's $PWD as last reported */
    bool errexit, pipefail;
    bool xtrace;              /* set -x, as last reported */
    bool verbose;             /* set -v, as last reported (the report turned it off) */
    char *ps4;                /* PS4, as last reported */
    int pipestatus[16];       /* the last pipeline's statuses, when it had 2 to 16 */
    size_t npipestatus;       /* ... and how many; 0 when nothing is to be replayed */
    strvec env;               /* the sandbox commands' environment */
    strbuf typeahead;         /* keys typed ahead on the pty, for the prompt */
    line_shell_vars vars;     /* the prompt's variables, as last reported */
    bool job_control;         /* set -m, as last reported */
    bool histexpand;          /* set -H, as last reported (an interactive shell starts with it) */
    bool bash_interactive;    /* the interactive marks work: $- has i (MARK_ON) */
    unsigned njobs;           /* the shell's running and stopped jobs (\j), as last reported */
    unsigned nstopped;        /* ... of which stopped */
    bool exit_ok;             /* a lone exit ends the shell even with stopped jobs (exit_refused) */
    bool stdin_null;          /* running an eval's text with `< /dev/null` (run_eval) */
    char *start_oldpwd;       /* OLDPWD for the next shell (a cd moved it to a project) */
    bool names_dirty;         /* the shell may have redefined command names (startup files, a
                                 function, alias, source, eval...): host parts are checked
                                 against it first (host_names_unchanged) */
    strbuf notices;           /* job notices of the last report, to print before the prompt */
    /* Views of plain directories (cli/view.h) this shell gave the scratch session's sandbox,
     * one per directory, kept across moves (the scratch sandbox keeps them) until that
     * sandbox is released; with view_pending, the last one is still to be pushed, before
     * the next sandbox command there. What Tab offers outside the code directories
     * (line_exec_sandbox_sees). */
    sbx_view *views;
    size_t nviews;
    bool view_pending;
    /* OLDPWD as the person's own cds made it: the directory the last host cd left, cleared
     * once a sandbox command moved the shell (its cd, whose OLDPWD is the sandbox's) */
    char *host_oldpwd;
    /* The audit log's record of the line being run (audit_begin .. audit_end): its text,
     * and its parts as JSON objects, comma-separated; none while PROMPT_COMMAND runs. */
    char *audit_text;
    strbuf audit_parts;
    bool audit_off;
};

/* ---- the audit log (docs/undo.md) ------------------------------------------------------ */

static void audit_begin(line_exec *x, const char *text, size_t len)
{
    if (x->audit_off)
        return;
    free(x->audit_text);
    x->audit_text = xstrndup(text, len);
    strbuf_reset(&x->audit_parts);
}

/* key: an array of the JSON values in items, already comma-separated. */
static void json_array_of(sbx_json *j, const char *key, const strbuf *items)
{
    strbuf *v = sbx_json_value(j, key);
    strbuf_addch(v, '[');
    strbuf_add(v, items->buf, items->len);
    strbuf_addch(v, ']');
}

/* One part: its route and reason, its status, and (host) the commands it ran. */
static void audit_part(line_exec *x, const char *route, const char *reason, int status,
                       const strbuf *cmds)
{
    sbx_json j;
    if (x->audit_off || !x->audit_text)
        return;
    if (x->audit_parts.len)
        strbuf_addch(&x->audit_parts, ',');
    sbx_json_init(&j, &x->audit_parts);
    sbx_json_begin_obj(&j, NULL);
    sbx_json_str(&j, "route", route);
    sbx_json_str(&j, "reason", reason ? reason : "");
    if (status >= 0)
        sbx_json_int(&j, "status", status);
    if (cmds)
        json_array_of(&j, "commands", cmds);
    sbx_json_end(&j);
}

/* The line ended with bash's status: its record goes to the audit log. */
static void audit_end(line_exec *x, int status)
{
    strbuf rec = STRBUF_INIT;
    sbx_json j;
    sbx_err err;
    if (x->audit_off || !x->audit_text)
        return;
    sbx_json_init(&j, &rec);
    sbx_json_begin_obj(&j, NULL);
    sbx_json_int(&j, "time", (long long)time(NULL));
    sbx_json_str(&j, "type", "line");
    sbx_json_str(&j, "session", x->cfg.session);
    sbx_json_int(&j, "pid", (long long)getpid());
    sbx_json_str(&j, "cwd", x->cwd);
    sbx_json_str(&j, "line", x->audit_text);
    sbx_json_int(&j, "status", status);
    json_array_of(&j, "parts", &x->audit_parts);
    sbx_json_end(&j);
    if (sbx_audit_append(x->cfg.state_root, x->cfg.audit_max, rec.buf, rec.len, &err) < 0)
        fprintf(stderr, "%s: warning: %s\n", x->o.dollar0, err.msg);
    strbuf_release(&rec);
    free(x->audit_text);
    x->audit_text = NULL;
    strbuf_reset(&x->audit_parts);
}

/* The holder labels the pulls of what runs next with the line (the undo journal's). */
static void send_label(line_exec *x)
{
    if (x->sess && x->audit_text)
        session_label(x->sess, x->audit_text);
}

/*
 * The view of x->cwd, a plain directory below HOME in the scratch session (cli/view.h):
 * read now, when the person's cd lands there, and given to the sandbox before its next
 * command (push_view). It replaces an older view of the same directory (a cd there again
 * reads it afresh: what changed on the host since shows; nothing is removed in the sandbox).
 * What the view leaves out is said in one line at the prompt (say).
 */
static void queue_view(line_exec *x, bool say)
{
    sbx_view v;
    sbx_err err;
    size_t i;

    /* sbxsh's own state and sockets (AGENT_SANDBOX_STATE_DIR may be a plain directory
     * below HOME): the directory, never its files */
    bool own = (x->cfg.state_root && session_path_within(x->cwd, x->cfg.state_root)) ||
               (x->cfg.run_dir && session_path_within(x->cwd, x->cfg.run_dir));

    if (view_build(x->cwd, !own, &v, &err) < 0) {
        view_free(&v);
        sbx_error("cd: %s: the sandbox gets no view of it: %s", x->cwd, err.msg);
        return;
    }
    if (say && v.left_out)
        sbx_error("%s: the sandbox sees %zu of its entries, not %zu more (a view holds files "
                  "up to %d KiB, %d MiB and %d entries in all)", x->cwd, v.names.n, v.left_out,
                  VIEW_MAX_FILE / 1024, VIEW_MAX_BYTES / (1024 * 1024), VIEW_MAX_ENTRIES);
    for (i = 0; i < x->nviews && strcmp(x->views[i].dir, x->cwd); i++)
        ;
    if (i == x->nviews)
        x->views = xrealloc(x->views, ++x->nviews * sizeof(*x->views));
    else
        view_free(&x->views[i]);
    /* the pending one is always the last */
    if (i + 1 < x->nviews) {
        memmove(&x->views[i], &x->views[i + 1], (x->nviews - i - 1) * sizeof(*x->views));
        i = x->nviews - 1;
    }
    x->views[i] = v;
    x->view_pending = true;
}

/* Gives the sandbox the pending view, before a sandbox command runs there. A failure is
 * said, not fatal: the command then runs, or fails, as the sandbox has it. */
static void push_view(line_exec *x)
{
    sbx_err err;
    sbx_view *v;

    if (!x->view_pending || !x->nviews)
        return;
    x->view_pending = false;
    v = &x->views[x->nviews - 1];
    if (view_push(&x->cfg, &x->env, v, &err) < 0)
        sbx_error("%s: the sandbox did not get its view: %s", v->dir, err.msg);
    strbuf_release(&v->script);
}

static void cancel_view(line_exec *x)
{
    if (!x->view_pending || !x->nviews)
        return;
    view_free(&x->views[--x->nviews]);
    x->view_pending = false;
}

static void drop_views(line_exec *x)
{
    for (size_t i = 0; i < x->nviews; i++)
        view_free(&x->views[i]);
    free(x->views);
    x->views = NULL;
    x->nviews = 0;
    x->view_pending = false;
}

static bool inside_code_dirs(const line_exec *x, const char *path);
static bool may_move_to_projects(const line_exec *x);

/* Where sbxsh starts: the cwd, or "/" when it cannot be read (bash runs on). */
static char *current_dir(void)
{
    char *d = getcwd(NULL, 0);
    return d ? d : xstrdup("/");
}

int line_exec_new(const line_opts *o, line_exec **out, sbx_err *err)
{
    line_exec *x = xcalloc(1, sizeof(*x));
    sbx_config_opts co = { .session = o->session };

    x->o = *o;
    x->errexit = o->errexit;
    x->pipefail = o->pipefail;
    x->histexpand = o->interactive;
    x->cwd = current_dir();
    x->prompt_status = -1;
    strvec_init(&x->env);
    strbuf_init(&x->typeahead, 0);
    strbuf_init(&x->notices, 0);
    strbuf_init(&x->audit_parts, 0);
    if (session_config_load(&x->cfg, &co, err) < 0) {
        free(x->cwd);
        free(x);
        return -1;
    }
    session_sandbox_env(&x->cfg, false, &x->env);
    /* a person's shell started in a plain directory below HOME (a login shell in ~): its
     * sandbox gets the view a cd there would give (queue_view) */
    if (o->interactive && !x->cfg.code_dirs.n && line_may_move_to_projects(&x->cfg) &&
        route_view_dir(x->cfg.home, x->cwd))
        queue_view(x, false);
    *out = x;
    return 0;
}

int line_exec_last_status(const line_exec *x)
{
    return x->last_status;
}

const line_shell_vars *line_exec_vars(const line_exec *x)
{
    return &x->vars;
}

const char *line_exec_cwd(const line_exec *x)
{
    return x->cwd;
}

const char *line_exec_session(const line_exec *x)
{
    return x->cfg.session;
}

bool line_exec_histexpand(const line_exec *x)
{
    return x->histexpand;
}

unsigned line_exec_jobs(const line_exec *x)
{
    return x->shell_running ? x->njobs : 0;
}

void line_exec_set_status(line_exec *x, int status)
{
    x->exit_ok = false;
    x->last_status = status;
    x->sandbox_stale = true;
    x->npipestatus = 0;
    free(x->last_arg);
    x->last_arg = NULL;
}

/*
 * The names the session's shell knows, for completion: a query written on the script
 * stream, answered on fd 199 without a sync (nothing can have changed), while the terminal
 * stays the prompt's. $? and $_ are the next command's prefix's to give back, as after a
 * host part: $? is kept here, $_ comes back as the query's third record.
 */
/* Writes a query on the shell's script stream and reads its answer from fd 199: nrec
 * records into rec[] (each ended by a NUL), then the shell's $_ as the query found it,
 * which comes back as after a host part (sandbox_stale), unless the query ran in a
 * subshell (fork_reports: its last record is empty and means nothing). */
static int shell_query(line_exec *x, const char *q, size_t qlen, strbuf *const *rec,
                       size_t nrec, sbx_err *err)
{
    strbuf last = STRBUF_INIT;
    int rc = -1;
    if (session_write(x->sess, x->script_fd, q, qlen, err) < 0)
        goto out;
    for (size_t i = 0; i < nrec; i++)
        if (session_read_record(x->sess, 199, '\0', rec[i], err) < 0)
            goto out;
    if (session_read_record(x->sess, 199, '\0', &last, err) < 0)
        goto out;
    x->shell_line++;
    x->sandbox_stale = true;
    if (!x->fork_reports) {
        free(x->last_arg);
        x->last_arg = xstrndup(last.buf ? last.buf : "",
                               strnlen(last.buf ? last.buf : "", last.len));
    }
    rc = 0;
out:
    strbuf_release(&last);
    return rc;
}

#define NAMES_QUERY                                                                             \
    "{ __sbx_a=$_; { builtin compgen -A function -A alias; builtin printf '\\0'; "               \
    "builtin compgen -v; builtin printf '\\0%s\\0' \"$__sbx_a\"; } >&199 2>/dev/null; "           \
    "builtin unset -v __sbx_a; } 2>/dev/null\n"

int line_exec_names(line_exec *x, strbuf *functions, strbuf *variables, sbx_err *err)
{
    strbuf *rec[] = { functions, variables };
    if (!x->shell_running || x->fork_reports)
        return 0;   /* no shell yet (nothing defined), or one whose DEBUG trap would see this */
    return shell_query(x, NAMES_QUERY, strlen(NAMES_QUERY), rec, 2, err);
}

/*
 * Whether the session's shell still takes each command of a host part as the router did
 * (route_part_commands: "file" for a program, "builtin" for echo, printf and cd), asked with
 * `type -t`, a builtin, on fd 199. After a part that may have redefined commands (Claude
 * Code's `source SNAPSHOT && ... && eval 'git push'`, a login shell's profile, a function
 * named git), bash would run whatever git now means: only while that is still the program
 * does the part run on the host. The shell's answer is the sandbox's word, so it decides
 * only where the person's own checked command runs, never what runs: a lie can at most run
 * `git push` on the host as a line without the definitions would. A name the shell does
 * not find is a program too (no git in the sandbox's image: nothing redefined it). With a
 * DEBUG trap or a function named builtin about (fork_reports), the question is asked from a
 * subshell, which neither sees. $? and $_ come back as after a host part (sandbox_stale).
 * Sets *same; returns -1 only when the shell could not be asked.
 */
static int host_names_unchanged(line_exec *x, const sh_pipeline *pl, bool *same, sbx_err *err)
{
    strvec want = STRVEC_INIT;
    strbuf q = STRBUF_INIT, types = STRBUF_INIT, *rec[] = { &types };
    int rc = 0;

    *same = true;
    route_part_commands(pl, &want);
    if (!want.n)
        goto out;
    strbuf_addstr(&q, x->fork_reports ? "{ ( " FORK_OWN_BUILTIN "{ "
                                      : "{ __sbx_a=$_; { ");
    for (size_t i = 0; i + 1 < want.n; i += 2) {
        strbuf_addstr(&q, "builtin type -t -- ");
        strbuf_add_shell_quoted(&q, want.v[i], strlen(want.v[i]));
        strbuf_addstr(&q, " || builtin printf '\\n'; ");
    }
    if (x->fork_reports)
        strbuf_addstr(&q, "builtin printf '\\0\\0'; } >&199 2>/dev/null; ) >/dev/null; } 2>/dev/null\n");
    else
        strbuf_addstr(&q, "builtin printf '\\0%s\\0' \"$__sbx_a\"; } >&199 2>/dev/null; "
                          "builtin unset -v __sbx_a; } 2>/dev/null\n");
    if (shell_query(x, q.buf, q.len, rec, 1, err) < 0) {
        rc = -1;
        goto out;
    }
    /* one line per name, in order: its kind, or empty when not found */
    const char *t = types.buf ? types.buf : "";
    size_t tlen = strnlen(t, types.len);
    for (size_t i = 0; i + 1 < want.n; i += 2) {
        const char *nl = memchr(t, '\n', tlen);
        size_t len = nl ? (size_t)(nl - t) : tlen;
        bool file = !strcmp(want.v[i + 1], "file");
        if (!nl || !((len == strlen(want.v[i + 1]) && !memcmp(t, want.v[i + 1], len)) ||
                     (file && len == 0)))
            *same = false;
        if (!nl)
            break;
        tlen -= len + 1;
        t = nl + 1;
    }
out:
    strvec_clear(&want);
    strbuf_release(&q);
    strbuf_release(&types);
    return rc;
}

/*
 * Whether the sandbox's commands see the file name m that host completion found (as typed:
 * relative to the cwd, absolute, or after ~/). Below HOME and outside the code directories,
 * the host's names are not the sandbox's (its HOME is its own): a person's shell there
 * offers what the views it gave the scratch sandbox hold, and, for a cd's argument, the
 * directories a cd would take the shell to (another project, a plain directory: the host
 * resolves those). Elsewhere (the code directories, synced; the system directories, the
 * same files) and in other modes, every name.
 */
bool line_exec_sandbox_sees(const line_exec *x, const char *m, bool cd_arg)
{
    const char *home = x->cfg.home;
    strbuf in = STRBUF_INIT, abs = STRBUF_INIT;
    bool sees = true;
    size_t hn;

    if (!x->o.interactive || !may_move_to_projects(x) || !home || home[0] != '/')
        return true;
    if (m[0] == '~' && (m[1] == '/' || !m[1]))
        strbuf_addf(&in, "%s%s", home, m + 1);
    else if (m[0] == '/')
        strbuf_addstr(&in, m);
    else
        strbuf_addf(&in, "%s/%s", x->cwd, m);
    /* by name, as bash's logical cd: "." and ".." components, repeated slashes */
    for (char *p = in.buf, *e; *p; p = e) {
        while (*p == '/')
            p++;
        e = p + strcspn(p, "/");
        if (e == p)
            break;
        if (e - p == 1 && p[0] == '.')
            continue;
        if (e - p == 2 && p[0] == '.' && p[1] == '.') {
            char *slash = strrchr(abs.buf ? abs.buf : "", '/');
            strbuf_setlen(&abs, slash ? (size_t)(slash - abs.buf) : 0);
            continue;
        }
        strbuf_addch(&abs, '/');
        strbuf_add(&abs, p, (size_t)(e - p));
    }
    hn = strlen(home);
    if (!abs.len || strncmp(abs.buf, home, hn) || abs.buf[hn] != '/' || inside_code_dirs(x, abs.buf))
        goto out;   /* not below HOME, or synced */
    sees = false;
    if (cd_arg) {
        struct stat st;
        if (lstat(abs.buf, &st) == 0 && S_ISDIR(st.st_mode) &&
            (route_view_dir(home, abs.buf) || route_in_git_work_tree(abs.buf)))
            sees = true;
    }
    if (!sees && !x->cfg.code_dirs.n) {
        char *slash = strrchr(abs.buf, '/');
        *slash = '\0';
        for (size_t i = 0; i < x->nviews && !sees; i++)
            if (!strcmp(x->views[i].dir, abs.buf))
                sees = view_has(&x->views[i], slash + 1, strlen(slash + 1));
    }
out:
    strbuf_release(&in);
    strbuf_release(&abs);
    return sees;
}

const char *line_exec_sandbox_path(const line_exec *x)
{
    for (size_t i = 0; i < x->env.n; i++)
        if (!strncmp(x->env.v[i], "PATH=", 5))
            return x->env.v[i] + 5;
    return "";
}

void line_exec_take_typeahead(line_exec *x, strbuf *out)
{
    strbuf_add(out, x->typeahead.buf, x->typeahead.len);
    strbuf_reset(&x->typeahead);
}

bool line_exec_verbose(const line_exec *x)
{
    return x->verbose;
}

bool line_exec_shell_ended_line(const line_exec *x)
{
    return x->bash_interactive && x->shell_running && !x->sandbox_stale;
}

void line_exec_free(line_exec *x)
{
    if (!x)
        return;
    if (x->sess)
        session_close(x->sess);
    free(x->audit_text);
    strbuf_release(&x->audit_parts);
    session_config_free(&x->cfg);
    strvec_clear(&x->env);
    strbuf_release(&x->typeahead);
    strbuf_release(&x->notices);
    free(x->vars.ps1);
    free(x->vars.ps2);
    free(x->vars.ps1_expanded);
    free(x->vars.prompt_command);
    free(x->last_arg);
    free(x->cwd);
    free(x->shell_cwd);
    free(x->start_oldpwd);
    free(x->host_oldpwd);
    drop_views(x);
    free(x->ps4);
    free(x);
}

void line_exit(int wait_status)
{
    if (WIFSIGNALED(wait_status)) {
        int sig = WTERMSIG(wait_status);
        struct rlimit none = { 0, 0 };
        /* Die the same way, so our parent sees what bash's parent would;
         * without leaving a core file of sbxsh behind. */
        fflush(NULL);
        setrlimit(RLIMIT_CORE, &none);
        signal(sig, SIG_DFL);
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, sig);
        sigprocmask(SIG_UNBLOCK, &set, NULL);
        raise(sig);
        exit(128 + sig);
    }
    exit(WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : SBX_EXIT_INTERNAL);
}

/* bash's $? for a raw wait status. */
static int bash_status(int wait_status)
{
    if (WIFSIGNALED(wait_status))
        return 128 + WTERMSIG(wait_status);
    return WEXITSTATUS(wait_status);
}

static bool inside_code_dirs(const line_exec *x, const char *path)
{
    for (size_t i = 0; i < x->cfg.code_dirs.n; i++) {
        const char *d = x->cfg.code_dirs.v[i];
        size_t n = strlen(d);
        if (!strncmp(path, d, n) && (path[n] == '\0' || path[n] == '/'))
            return true;
    }
    return false;
}

static int check_sandbox_cwd(const line_exec *x, sbx_err *err)
{
    /* No code directory (a login shell in ~, a command in /tmp): nothing is synced, and
     * the command runs at the same path in the sandbox's own tree (its private HOME at ~,
     * its private /tmp). */
    if (!x->cfg.code_dirs.n || inside_code_dirs(x, x->cwd))
        return 0;
    strbuf dirs = STRBUF_INIT;
    for (size_t i = 0; i < x->cfg.code_dirs.n; i++)
        strbuf_addf(&dirs, "%s%s", i ? ":" : "", x->cfg.code_dirs.v[i]);
    sbx_errf(err,
             "the current directory %s is outside the code directories (%s), so the "
             "sandbox cannot run there; cd into one, or set AGENT_SANDBOX_CODE_DIRS",
             x->cwd, dirs.buf);
    strbuf_release(&dirs);
    return -1;
}

static int open_session(line_exec *x, sbx_err *err)
{
    if (x->sess)
        return 0;
    if (!session_backend_class_find(x->cfg.backend))
        return sbx_errf(err, "AGENT_SANDBOX_BACKEND=%s: no such backend is built (local, kube)",
                        x->cfg.backend);
    return session_open(&x->cfg, NULL, &x->sess, err);
}

/*
 * The sbx that `sbx status` and the like at sbxsh's prompt run (router/README.md): the one
 * beside the running sbxsh (/proc/self/exe's directory), which `make install` and the
 * build put there together, so that it speaks this sbxsh's holder protocol and state
 * layout. Not a PATH search: PATH is the caller's (an agent's harness sets it), and the
 * first sbx on it may be another version, or none at all. NULL when it cannot be told.
 */
static const char *sbx_beside_sbxsh(void)
{
    static char path[PATH_MAX];
    static bool done;
    char exe[PATH_MAX];
    ssize_t n;

    if (!done) {
        done = true;
        n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (n > 0 && exe[0] == '/') {
            exe[n] = '\0';
            *strrchr(exe, '/') = '\0';
            if ((size_t)snprintf(path, sizeof(path), "%s/sbx", exe) >= sizeof(path))
                path[0] = '\0';
        }
    }
    return path[0] ? path : NULL;
}

void line_route_ctx(const sbx_config *cfg, const char *cwd, route_ctx *ctx)
{
    memset(ctx, 0, sizeof(*ctx));
    ctx->code_dirs = (const char *const *)cfg->code_dirs.v;
    ctx->n_code_dirs = cfg->code_dirs.n;
    ctx->sync_paths = (const char *const *)cfg->sync_paths.v;
    ctx->n_sync_paths = cfg->sync_paths.n;
    ctx->cwd = cwd;
    ctx->path = getenv("PATH");
    ctx->home = getenv("HOME");
    ctx->cdpath = getenv("CDPATH");
    ctx->sbx = sbx_beside_sbxsh();
    ctx->session = cfg->session;
    ctx->policy = cli_policy_for(ctx);
}

/* The context for the next part: from where it runs (x->cwd follows every cd). */
static bool may_move_to_projects(const line_exec *x);
static void move_to_project(line_exec *x, const char *oldpwd);

static void route_ctx_fill(const line_exec *x, route_ctx *ctx)
{
    line_route_ctx(&x->cfg, x->cwd, ctx);
    ctx->cd_projects = may_move_to_projects(x);
    /* views and a host `cd -` only for what a person types at the prompt */
    ctx->cd_views = ctx->cd_projects && x->o.interactive;
    ctx->oldpwd = ctx->cd_views ? x->host_oldpwd : NULL;
    ctx->home_cd = ctx->cd_views ? x->cfg.home : NULL;
}

void line_exec_route_ctx(const line_exec *x, route_ctx *ctx)
{
    route_ctx_fill(x, ctx);
}

/*
 * On a pty, a first bash prepares what the real one inherits, then execs it (with SHLVL as
 * that bash alone would have it): SIGTSTP ignored, since without job control a Ctrl-Z would
 * stop the command with nothing to resume it, and a program that finds SIGTSTP ignored (vi,
 * less, an inner bash) does not suspend itself; then `extra` (the persistent shell's fds).
 * Not for the persistent shell of interactive mode, which has job control (set -m, as
 * interactive bash has it: shell_start): a signal ignored when bash starts stays ignored
 * in everything it runs, and its jobs must stop at Ctrl-Z.
 */
#define TTY_PRELUDE "trap '' TSTP; "
#define TTY_EXEC "SHLVL=$((SHLVL - 1)) exec -a \"$0\" bash \"$@\""

/* Does the persistent shell run with job control: interactive mode at a terminal. */
static bool job_control_wanted(const line_exec *x)
{
    return x->o.interactive && x->o.tty;
}

/* Starts bash in the sandbox: at the current directory, with the sandbox's
 * environment, sbxsh's signals forwarded to it, on a pty when sbxsh has the
 * terminal (argv after a first bash that runs TTY_PRELUDE, extra, TTY_EXEC). */
static int start_bash(line_exec *x, const strvec *argv, const char *extra, bool jobs,
                      const sbx_fd_map *fds, size_t nfds, sbx_err *err)
{
    strvec wrapped = STRVEC_INIT;
    sbx_command cmd = {
        .tty = x->o.tty,
        .exe = "bash",
        .argv = (const char *const *)argv->v,
        .env = (const char *const *)x->env.v,
        .cwd = x->cwd,
        .fds = fds,
        .nfds = nfds,
        .forward_signals = true,
        .ignores_term = x->o.interactive,
    };
    int rc;

    push_view(x);
    if (check_sandbox_cwd(x, err) < 0 || open_session(x, err) < 0)
        return -1;
    if (x->o.tty) {
        strvec_push(&wrapped, argv->v[0]);
        strvec_push(&wrapped, "-c");
        strvec_pushf(&wrapped, "%s%s%s", jobs ? "" : TTY_PRELUDE, extra ? extra : "", TTY_EXEC);
        strvec_pushv(&wrapped, argv->v);
        cmd.argv = (const char *const *)wrapped.v;
    }
    send_label(x);
    rc = session_start(x->sess, &cmd, err);
    strvec_clear(&wrapped);
    return rc;
}

/* ---- one-shot --------------------------------------------------------------------------- */

/*
 * A script that lies outside the code directories is not in the sandbox's tree, but bash must
 * still run it as a file: its syntax errors say "SCRIPT: line N" (not "SCRIPT: -c: line N"),
 * and BASH_SOURCE and `caller` name it. So the sandbox's bash first puts the text at the same
 * path in the sandbox's own tree (its private /tmp and HOME, where such scripts live; a
 * system directory already shows the host's file), then runs it. Where that cannot be done
 * (a read-only directory holding another file), it runs the text with -c as before.
 * Arguments: $0 sbxsh's argv[0], then the number of bash options, the options, the script's
 * name, its text, its arguments. The outer bash gets no option (-x would trace this).
 */
static const char outside_script_boot[] =
    "n=$1; shift; o=(\"${@:1:n}\"); shift \"$n\"; f=$1 t=$2; shift 2\n"
    "c=; [ -f \"$f\" ] && IFS= read -r -d '' c < \"$f\"\n"
    "if [ \"$c\" != \"$t\" ]; then\n"
    "  case $f in */*) mkdir -p -- \"${f%/*}\" 2>/dev/null;; esac\n"
    "  { printf %s \"$t\" > \"$f\"; } 2>/dev/null || exec -a \"$0\" bash \"${o[@]}\" -c \"$t\" \"$f\" \"$@\"\n"
    "fi\n"
    "exec -a \"$0\" bash \"${o[@]}\" \"$f\" \"$@\"\n";

static int run_oneshot(line_exec *x, const char *text, const char *script, const char *outside,
                       int *wait_status, sbx_err *err)
{
    strvec argv = STRVEC_INIT;
    static const sbx_fd_map fds[] = {
        { 0, SBX_FD_RELAY_IN, 0 }, { 1, SBX_FD_RELAY_OUT, 1 }, { 2, SBX_FD_RELAY_OUT, 2 },
    };
    sbx_exit st;
    int rc;

    /* argv[0] is how sbxsh was called, so $0 and bash's messages name sbxsh as
     * they would name bash. */
    strvec_push(&argv, x->o.argv0);
    if (outside) {
        size_t nopts = 0;
        char num[24];
        while (x->o.bash_args && x->o.bash_args[nopts])
            nopts++;
        snprintf(num, sizeof(num), "%zu", nopts);
        strvec_push(&argv, "-c");
        strvec_push(&argv, outside_script_boot);
        strvec_push(&argv, x->o.argv0);
        strvec_push(&argv, num);
        strvec_pushv(&argv, (char *const *)x->o.bash_args);
        strvec_push(&argv, outside);
        strvec_push(&argv, text);
        strvec_pushv(&argv, (char *const *)x->o.positional);
        goto start;
    }
    strvec_pushv(&argv, (char *const *)x->o.bash_args);
    if (script) {
        /* `bash [OPTIONS] SCRIPT ARGS`: $0 is the script as named (`--` first when the name
         * would read as an option, as sbxsh's own `--` made it an operand) */
        if (script[0] == '-' || script[0] == '+')
            strvec_push(&argv, "--");
        strvec_push(&argv, script);
    } else {
        /* `bash [OPTIONS] -c TEXT [NAME ARGS]`: `sbxsh -c -- --version` runs the command
         * `--version` (127), as bash does; without `--` the sandbox's bash would read it as
         * an option */
        strvec_push(&argv, "-c");
        if (text[0] == '-' || text[0] == '+')
            strvec_push(&argv, "--");
        strvec_push(&argv, text);
        if (x->o.dollar0 != x->o.argv0 || (x->o.positional && x->o.positional[0]))
            strvec_push(&argv, x->o.dollar0);
    }
    strvec_pushv(&argv, (char *const *)x->o.positional);
start:
    rc = start_bash(x, &argv, NULL, false, fds, ARRAY_SIZE(fds), err);
    strvec_clear(&argv);
    if (rc < 0 || session_wait(x->sess, &st, err) < 0)
        return -1;
    *wait_status = st.wait_status;
    if (st.spawn_failed)
        return sbx_errf(err, "cannot start bash in the sandbox: %s", st.message);
    return 0;
}

/* ---- the persistent shell ------------------------------------------------------------- */

/* Does bash, given these options, start as a login shell (-l, --login, a cluster with l)? */
static bool login_shell_args(const char *const *args)
{
    for (size_t i = 0; args && args[i]; i++) {
        const char *a = args[i];
        if (!strcmp(a, "--login"))
            return true;
        if (a[0] == '-' && a[1] != '-' && strchr(a, 'l'))
            return true;
        /* -o NAME, -O NAME, +o NAME, +O NAME: the next word is a name, not options */
        if ((a[0] == '-' || a[0] == '+') && strpbrk(a + 1, "oO") && args[i + 1])
            i++;
    }
    return false;
}

static int shell_start(line_exec *x, sbx_err *err)
{
    strvec argv = STRVEC_INIT;
    sbx_fd_map fds[5];
    size_t nfds = 0;
    int rc;

    if (x->o.tty) {
        /*
         * On a pty, the agent makes fds 0, 1 and 2 the terminal, so the script stream
         * comes on fd 196 and the first bash (start_bash) puts it in place: the terminal
         * becomes fd 198, the stdin of every chunk (as the user's stdin is in pipe mode),
         * and the script stream fd 0.
         */
        fds[nfds++] = (sbx_fd_map){ 0, SBX_FD_RELAY_IN, 0 };
        fds[nfds++] = (sbx_fd_map){ 1, SBX_FD_RELAY_OUT, 1 };
        fds[nfds++] = (sbx_fd_map){ 2, SBX_FD_RELAY_OUT, 2 };
        fds[nfds++] = (sbx_fd_map){ 196, SBX_FD_API_IN, -1 };
        fds[nfds++] = (sbx_fd_map){ 199, SBX_FD_API_OUT, -1 };
    } else {
        fds[nfds++] = (sbx_fd_map){ 0, SBX_FD_API_IN, -1 };
        fds[nfds++] = (sbx_fd_map){ 1, SBX_FD_RELAY_OUT, 1 };
        fds[nfds++] = (sbx_fd_map){ 2, SBX_FD_RELAY_OUT, 2 };
        if (!x->o.stdin_is_script)
            fds[nfds++] = (sbx_fd_map){ 198, SBX_FD_RELAY_IN, 0 };
        fds[nfds++] = (sbx_fd_map){ 199, SBX_FD_API_OUT, -1 };
    }
    /* `bash [OPTIONS] -s ARGS`, reading the script stream we write on fd 0 */
    strvec_push(&argv, x->o.dollar0);
    strvec_pushv(&argv, (char *const *)x->o.bash_args);
    strvec_push(&argv, "-s");
    strvec_pushv(&argv, (char *const *)x->o.positional);
    rc = start_bash(x, &argv, x->o.tty ? "exec 198<&0 0<&196 196<&-; " : NULL,
                    job_control_wanted(x), fds, nfds, err);
    strvec_clear(&argv);
    if (rc < 0)
        return -1;
    x->shell_running = true;
    x->script_fd = x->o.tty ? 196 : 0;
    free(x->shell_cwd);
    x->shell_cwd = xstrdup(x->cwd);
    /*
     * The first line: fd 197 becomes the /dev/null that commands read as
     * their stdin when the script stream is the shell's (each chunk is
     * `{ ...; } 0<&197`). Not `0</dev/null` on the group: bash saves the fd
     * it replaces on the lowest free fd from 10, and a user's `exec 10>f`
     * inside the group then loses its fd when the group ends; for `0<&N`
     * bash saves above N. $_ is kept as bash starts with it, and the line
     * counter starts from 0 (SETLINE_FMT).
     */
    strbuf w = STRBUF_INIT;
    strbuf_addstr(&w, "{ __sbx_a=$_; ");
    if (x->o.stdin_is_script && !x->o.tty)
        strbuf_addstr(&w, "exec 197</dev/null; ");
    if (x->o.interactive)
        strbuf_addstr(&w, LOAD_MARKS);
    if (x->start_oldpwd) {
        /* bash's cd exports OLDPWD */
        strbuf_addstr(&w, "OLDPWD=");
        strbuf_add_shell_quoted(&w, x->start_oldpwd, strlen(x->start_oldpwd));
        strbuf_addstr(&w, "; builtin export OLDPWD; ");
        free(x->start_oldpwd);
        x->start_oldpwd = NULL;
    }
    strbuf_addstr(&w, "__sbx_start() { builtin unset -f __sbx_start; builtin unset -v __sbx_a; }; "
                      "__sbx_start \"$__sbx_a\"; } 2>/dev/null");
    strbuf_addf(&w, SETLINE_FMT "\n", 0u);
    x->shell_line = 0;
    /* At a terminal, Ctrl-C stops the command, not the session's shell (as an
     * interactive bash survives it): a trap makes the shell outlive SIGINT. Aliases expand,
     * as an interactive bash has expand_aliases on (the sandbox's ~/.bashrc and ~/.sbxshrc
     * define them; sbxsh's own parser still routes the text as typed). On a pty, job
     * control as interactive bash has it: each job in its own process group, the pty's
     * foreground while it runs, Ctrl-Z stops it, fg and bg resume it (start_bash). A Ctrl-Z
     * that comes while the shell itself has the pty (a job not yet started, or just ended)
     * must not stop the shell: an interactive bash ignores SIGTSTP, and Linux discards it for
     * the shell anyway (a session leader's process group is orphaned), but gVisor stops the
     * shell, and nothing would ever resume it. A trap, not an ignore, so that jobs still
     * start with SIGTSTP at its default (exec resets a caught signal). set -H, as an
     * interactive bash starts with it: the prompt expands history (!!) while the shell's $-
     * has H, so a `set +H` there (OpenHands sends one) turns it off as in bash; the sandbox's
     * bash itself reads no history (set -o history is off), so it expands nothing twice. */
    if (x->o.interactive) {
        strbuf_addstr(&w, job_control_wanted(x)
                              ? "trap : INT TSTP; shopt -s expand_aliases; set -m -H; "
                                "enable -n suspend\n"
                              : "trap : INT; shopt -s expand_aliases; set -H\n");
        x->shell_line++;
    }
    if (x->o.sandbox_bashrc) {
        /* read as bash -i reads it (a Debian ~/.bashrc returns at once unless $- has i);
         * `case` turns the marks off without a simple command ($_ stays the file's) */
        strbuf_addstr(&w, x->o.interactive
                              ? "{ if [ -r ~/.bashrc ]; then . ~/.bashrc; fi; } 2>&2" MARK_ON
                                "; case " MARK_OFF " in esac\n"
                              : "if [ -r ~/.bashrc ]; then . ~/.bashrc; fi\n");
        x->shell_line++;
    }
    /* startup files (~/.bashrc, a login shell's profile) may define functions and aliases
     * (and the chunk this shell starts for may have set it already) */
    if (x->o.sandbox_bashrc || login_shell_args(x->o.bash_args))
        x->names_dirty = true;
    rc = session_write(x->sess, x->script_fd, w.buf, w.len, err);
    strbuf_release(&w);
    return rc;
}

/* Between chunks the terminal is the caller's (the prompt, host parts, messages). */
static int shell_tty_pause(line_exec *x, sbx_err *err)
{
    return x->o.tty && x->shell_running ? session_tty_pause(x->sess, err) : 0;
}

/* The persistent shell has exited: collect its status. */
static int shell_reap(line_exec *x, sbx_err *err)
{
    sbx_exit st;
    if (session_wait(x->sess, &st, err) < 0)
        return -1;
    x->shell_running = false;
    x->shell_ended = true;
    x->final_status = st.wait_status;
    x->last_status = bash_status(st.wait_status);
    if (st.spawn_failed)
        return sbx_errf(err, "cannot start bash in the sandbox: %s", st.message);
    return 0;
}

/*
 * PIPESTATUS is set by every pipeline, the wrapper's included, so the
 * wrapper would leave one status where the user's last pipeline left
 * several. The prefix of the next chunk then ends with a pipeline of the
 * same statuses, `exit A | exit B | (exit C)` (a fork per status, only after
 * such a pipeline), or `! exit A | (exit B)` after `! a | b`: it leaves
 * PIPESTATUS as the user's was, and $? as it was too (which of the two gives
 * that $? is checked first; when neither does, there is no replay). Each
 * element but the last is a child's `exit`, which never returns, so no ERR
 * trap runs there; the last is a subshell, as `shopt -s lastpipe` would run
 * it in the shell itself. A failing one is followed by `&& :`, which does
 * not run, so that neither an ERR trap nor set -e takes it for a failure
 * (bash did not either: the user's pipeline did not end the shell).
 */
static int pipestatus_replay(const line_exec *x, int *st_out)
{
    int st = 0;
    if (!x->npipestatus)
        return 0;
    if (x->pipefail) {
        for (size_t i = 0; i < x->npipestatus; i++)
            if (x->pipestatus[i])
                st = x->pipestatus[i];
    } else {
        st = x->pipestatus[x->npipestatus - 1];
    }
    *st_out = st;
    if (st == x->last_status)
        return 1;
    if (x->last_status == !st)
        return 2;
    return 0;
}

static void add_pipestatus_replay(const line_exec *x, int replay, strbuf *out)
{
    int st = 0;

    if (!replay || pipestatus_replay(x, &st) != replay)
        return;
    if (replay == 2)
        strbuf_addstr(out, "! ");
    /* fork_reports: subshells only, which a DEBUG trap does not see */
    for (size_t i = 0; i + 1 < x->npipestatus; i++)
        strbuf_addf(out, x->fork_reports ? "( " FORK_EXIT "%d ) >/dev/null | " : "exit %d | ",
                    x->pipestatus[i]);
    strbuf_addf(out, x->fork_reports ? "( " FORK_EXIT "%d ) >/dev/null%s; " : "(exit %d)%s; ",
                x->pipestatus[x->npipestatus - 1], replay == 1 && st ? " && :" : "");
}

/*
 * Appends what brings the persistent shell up to date with the host parts
 * that ran since its last report: their status as $?, the last argument as
 * $_, and a `cd` a host part made; and, after a REPORT_FORK, $? and
 * PIPESTATUS. join is how the next sandbox text joins the part before it
 * (&&, || or a plain sequence). Inside a chunk it shares the text's first
 * line (a line of its own would move the text's line numbers); standalone,
 * it is a line of its own, which sets the line counter to setline.
 */
static void add_state_prefix(line_exec *x, route_join join, bool standalone, unsigned setline,
                             strbuf *out)
{
    /* A shell not yet started starts at x->cwd: no cd (it would set OLDPWD,
     * which a fresh bash does not have). */
    bool cd = x->shell_running && strcmp(x->cwd, x->shell_cwd) != 0;
    bool andor = join == ROUTE_JOIN_AND || join == ROUTE_JOIN_OR;
    bool stale = x->sandbox_stale || x->status_lost;
    int st, replay = x->sandbox_stale ? 0 : pipestatus_replay(x, &st);
    strbuf arg = STRBUF_INIT;

    if (!stale && !cd && !andor && !replay && !x->verbose)
        return;
    if (x->sandbox_stale && x->last_arg)
        strbuf_add_shell_quoted(&arg, x->last_arg, strlen(x->last_arg));
    else
        strbuf_addstr(&arg, "\"$_\"");
    strbuf_addstr(out, "{ ");
    if (cd) {
        strbuf_addstr(out, "CDPATH= builtin cd -- ");
        strbuf_add_shell_quoted(out, x->cwd, strlen(x->cwd));
        strbuf_addstr(out, "; ");
        if (x->host_oldpwd) {
            /* several host cds since the shell last ran: bash's OLDPWD is the last one's */
            strbuf_addstr(out, "OLDPWD=");
            strbuf_add_shell_quoted(out, x->host_oldpwd, strlen(x->host_oldpwd));
            strbuf_addstr(out, "; ");
        }
    }
    if (x->fork_reports) {
        /* No simple command (REPORT_FORK): a subshell's status, and no $_
         * from a host part. `&& :` keeps set -e off a failure, and never runs. */
        if (x->verbose)
            strbuf_addstr(out, "builtin set -v; ");
        if (replay)
            add_pipestatus_replay(x, replay, out);
        else
            strbuf_addf(out, "( " FORK_EXIT "%d ) >/dev/null%s; ", x->last_status,
                        !andor && x->last_status ? " && :" : "");
    } else if (andor) {
        /* the host part's status is the left operand of the next && or || */
        strbuf_addf(out, "%s__sbx_setrc %d %s; ", x->verbose ? VSETRC_DEF : SETRC_DEF,
                    x->last_status, arg.buf);
        add_pipestatus_replay(x, replay, out);
    } else {
        /* `f N && f 0`: $? becomes N without tripping set -e */
        strbuf_addf(out, "%s__sbx_setrc %d %s && { " SETRC_DEF "__sbx_setrc 0 %s; }; ",
                    x->verbose ? VSETRC_DEF : SETRC_DEF, x->last_status, arg.buf, arg.buf);
        add_pipestatus_replay(x, replay, out);
    }
    strbuf_addstr(out, "} 2>/dev/null");
    if (andor)
        strbuf_addf(out, " %s ", join == ROUTE_JOIN_AND ? "&&" : "||");
    else if (standalone)
        strbuf_addf(out, SETLINE_FMT "\n", setline);
    else
        strbuf_addstr(out, "; ");
    x->npipestatus = 0;
    x->status_lost = false;
    strbuf_release(&arg);
}

/* Reads one report: 1 with fields[] filled (pointers into rec), 0 when the
 * shell exited instead, -1 on error. */
static int shell_read_one_report(line_exec *x, strbuf *rec,
                                 char *fields[REPORT_FIELDS + PROMPT_FIELDS], sbx_err *err)
{
    size_t starts[REPORT_FIELDS + PROMPT_FIELDS];
    int n = REPORT_FIELDS;
    strbuf_reset(rec);
    for (int i = 0; i < n; i++) {
        int r;
        starts[i] = rec->len;
        /* on a pty, a "next" report first asks for the keys typed ahead (TYPEAHEAD):
         * "typeahead" without a NUL, told from "done" and "next" by its first 4 bytes */
        if (i == 0 && x->o.tty && x->o.interactive) {
            r = session_read_bytes(x->sess, 199, 4, rec, err);
            if (r > 0 && !strcmp(rec->buf, "type")) {
                strbuf_reset(rec);
                r = session_read_bytes(x->sess, 199, 5, rec, err);
                if (r <= 0)
                    return r;
                if (strcmp(rec->buf, "ahead"))
                    return sbx_errf(err, "the sandbox's shell sent a malformed status report");
                if (session_tty_mark(x->sess, err) < 0)
                    return -1;
                strbuf_reset(rec);
                i--;
                continue;
            }
            if (r <= 0)
                return r;
        }
        r = session_read_record(x->sess, 199, '\0', rec, err);
        if (r <= 0)
            return r;
        /* interactive mode: the prompt's fields follow a "next" report (PROMPT_PRE) */
        if (i == 0 && x->o.interactive && !strcmp(rec->buf, "next"))
            n = REPORT_FIELDS + PROMPT_FIELDS;
    }
    for (int i = 0; i < REPORT_FIELDS + PROMPT_FIELDS; i++)
        fields[i] = i < n ? rec->buf + starts[i] : NULL;
    if (strcmp(fields[0], "done") && strcmp(fields[0], "next"))
        return sbx_errf(err, "the sandbox's shell sent a malformed status report");
    return 1;
}

/* Keeps a reported PIPESTATUS ("1 0 "), to be replayed before the next
 * chunk when it had more than one status (one is what any command leaves). */
static void set_pipestatus(line_exec *x, const char *text)
{
    size_t n = 0;
    char *end;

    x->npipestatus = 0;
    for (const char *p = text; *p && n < ARRAY_SIZE(x->pipestatus); p = end) {
        long v = strtol(p, &end, 10);
        if (end == p || *end != ' ' || v < 0 || v > 255)
            return;
        x->pipestatus[n++] = (int)v;
        end++;
    }
    if (n > 1)
        x->npipestatus = n;
}

/*
 * The keys the shell found typed ahead on the pty (TYPEAHEAD), kept for the prompt only if
 * they are the end of what sbxsh itself sent to the pty during the chunk (the pty turns CR
 * into NL): the sandbox can hand back only keys the person typed, never text of its own. A
 * line edited with backspace while the command ran no longer matches, and is dropped.
 *
 * The readline that gets them runs each whole line in them (as bash runs a command typed
 * ahead), so they must also start where the person started a line: at the chunk's first
 * key, or after an Enter, or after a key that made the pty drop what came before (Ctrl-C,
 * Ctrl-\, Ctrl-Z, Ctrl-U). Otherwise the sandbox could hand back the tail of a line the
 * person typed into one of its programs (`echo 'x; git push origin HEAD:y'`), cut where it
 * makes a host command, and the prompt would run it with no Enter pressed on that text.
 * So the sandbox can at most claim whole lines of the person's as unread, which is what
 * bash sees when a program leaves them: each ends with the person's own Enter.
 */
static void take_typeahead(line_exec *x, const char *t)
{
    size_t tl = strlen(t), sl;
    const char *sent;

    if (!tl || !x->o.tty || !x->sess)
        return;
    sent = session_tty_typed(x->sess, &sl);
    if (tl > sl)
        return;
    for (size_t i = 0; i < tl; i++) {
        char c = sent[sl - tl + i];
        if ((c == '\r' ? '\n' : c) != t[i])
            return;
    }
    if (tl < sl && !strchr("\r\n\003\034\032\025", sent[sl - tl - 1]))
        return;
    /* Linux's pty drops what was queued when Ctrl-C, Ctrl-\ or Ctrl-Z makes its signal, and
     * the key itself is never input; gVisor's keeps both, and readline would take the ^C as a
     * key (a bell after the prompt). So only what was typed after the last of them comes. */
    for (size_t i = tl; i > 0; i--) {
        if (strchr("\003\034\032", t[i - 1]) && t[i - 1]) {
            t += i;
            tl -= i;
            break;
        }
    }
    strbuf_add(&x->typeahead, t, tl);
}

/* The prompt's variables as the shell has them (PROMPT_PRE's fields, in that order). */
static void keep_prompt_vars(line_exec *x, char *const *f)
{
    line_shell_vars *v = &x->vars;
    char **dst[] = { &v->ps1, &v->ps2, &v->ps1_expanded, &v->prompt_command };
    for (size_t i = 0; i < ARRAY_SIZE(dst); i++) {
        free(*dst[i]);
        *dst[i] = NULL;
    }
    v->ps1 = f[0][0] == 's' ? xstrdup(f[0] + 1) : NULL;
    v->ps2 = f[1][0] == 's' ? xstrdup(f[1] + 1) : NULL;
    v->ps1_expanded = v->ps1 && prompt_needs_shell(v->ps1) ? xstrdup(f[2]) : NULL;
    v->prompt_command = strspn(f[3], " \t\n\001") < strlen(f[3]) ? xstrdup(f[3]) : NULL;
    v->known = true;
}

/* The number of lines in a report's field (a pid a line). */
static unsigned count_lines(const char *t)
{
    unsigned n = 0;
    for (; *t; t++)
        n += *t == '\n';
    return n;
}

/* Where the job notice after the one at p starts: at a line that opens with "[N]", as
 * `jobs` starts each job (a job's text may hold newlines). */
static const char *next_notice(const char *p)
{
    for (const char *q = strchr(p, '\n'); q; q = strchr(q + 1, '\n'))
        if (q[1] == '[' && q[2] >= '0' && q[2] <= '9')
            return q + 1;
    return p + strlen(p);
}

/* The job notices of a "next" report (JOBS_POST: the stopped jobs', then the others'),
 * in job order as bash prints them, each stopped one after a newline, as bash prints it
 * (the cursor is after the ^Z the pty echoed). Kept for print_job_notices. */
static void keep_job_notices(line_exec *x, const char *stopped, const char *other)
{
    const char *a = stopped, *b = other;
    strbuf_reset(&x->notices);
    while (*a || *b) {
        unsigned na = *a ? (unsigned)strtoul(a + 1, NULL, 10) : ~0U;
        unsigned nb = *b ? (unsigned)strtoul(b + 1, NULL, 10) : ~0U;
        const char **p = na <= nb ? &a : &b, *end = next_notice(*p);
        if (p == &a)
            strbuf_addch(&x->notices, '\n');
        strbuf_add(&x->notices, *p, (size_t)(end - *p));
        *p = end;
    }
}

/* Prints the job notices on stderr, with the terminal the caller's (they come before the
 * prompt, as bash's). Job texts are the sandbox's: they pass the strict filter. */
static void print_job_notices(line_exec *x)
{
    sbx_termfilter tf;
    strbuf out = STRBUF_INIT;
    if (!x->notices.len)
        return;
    session_termfilter_init(&tf);
    session_termfilter_feed(&tf, x->notices.buf, x->notices.len, &out);
    fflush(stdout);
    if (out.len && write_full(2, out.buf, out.len) < 0) {
        /* stderr went away: nothing to tell it */
    }
    strbuf_release(&out);
    strbuf_reset(&x->notices);
}

/* Reads what the shell says after a chunk. Returns 1 when the chunk ran to
 * its end, 2 when an error made bash abandon the rest of its line (as bash
 * does on an expansion error), 0 when the shell exited (exit, set -e), -1 on
 * error. The sandbox's changes are on the host when it returns 1 or 2. */
static int shell_read_report(line_exec *x, sbx_err *err)
{
    strbuf rec = STRBUF_INIT;
    char *f[REPORT_FIELDS + PROMPT_FIELDS];
    int r = shell_read_one_report(x, &rec, f, err), result;

    char *pipestatus = NULL;
    int done_status = -1;
    bool done_verbose = false;

    if (r > 0 && !strcmp(f[0], "done")) {
        result = 1;
        /* PIPESTATUS (and, after a REPORT_FORK, $?) is the chunk's as "done"
         * saw it; by "next" it is the wrapper's */
        pipestatus = xstrdup(f[6]);
        done_status = atoi(f[1]) & 0xff;
        done_verbose = strchr(f[2], 'v') != NULL;
        r = shell_read_one_report(x, &rec, f, err);  /* its "next" */
    } else {
        result = 2;
    }
    if (r > 0) {
        set_pipestatus(x, pipestatus ? pipestatus : f[6]);
        take_typeahead(x, f[7]);
        if (f[REPORT_FIELDS]) {
            char **jf = f + REPORT_FIELDS;
            keep_prompt_vars(x, f + REPORT_FIELDS + JOB_FIELDS);
            keep_job_notices(x, jf[0], jf[1]);
            x->nstopped = count_lines(jf[3]);
            x->njobs = count_lines(jf[2]) + x->nstopped;
        }
    }
    free(pipestatus);
    if (r <= 0) {
        strbuf_release(&rec);
        if (r < 0)
            return -1;
        return shell_reap(x, err) < 0 ? -1 : 0;
    }
    /* pwd's line, or nothing when it cannot tell (the directory was removed):
     * then the shell is where it last was, as far as we can know. */
    size_t cwdlen = strlen(f[4]);
    if (cwdlen && f[4][cwdlen - 1] == '\n')
        f[4][--cwdlen] = '\0';
    if (cwdlen && f[4][0] != '/') {
        strbuf_release(&rec);
        return sbx_errf(err, "the sandbox's shell sent a malformed status report");
    }
    x->last_status = done_status >= 0 ? done_status : atoi(f[1]) & 0xff;
    x->status_lost = x->fork_reports;
    x->errexit = strchr(f[2], 'e') != NULL;
    x->xtrace = strchr(f[2], 'x') != NULL;
    /* a REPORT_FORK cannot turn it off: bash echoes the wrapper then */
    x->verbose = !x->fork_reports &&
                 (done_status >= 0 ? done_verbose : strchr(f[2], 'v') != NULL);
    x->pipefail = strstr(f[3], "pipefail") != NULL;
    x->job_control = strchr(f[2], 'm') != NULL;
    x->histexpand = strchr(f[2], 'H') != NULL;
    x->bash_interactive = x->o.interactive && strchr(f[2], 'i') != NULL;
    if (cwdlen) {
        if (strcmp(x->cwd, f[4])) {
            /* the sandbox's cd: OLDPWD is the sandbox shell's now */
            free(x->host_oldpwd);
            x->host_oldpwd = NULL;
        }
        free(x->shell_cwd);
        x->shell_cwd = xstrdup(f[4]);
        free(x->cwd);
        x->cwd = xstrdup(f[4]);
    }
    free(x->ps4);
    x->ps4 = xstrdup(f[5]);
    x->sandbox_stale = false;
    strbuf_release(&rec);
    /* the terminal is cooked again for the sync (a Ctrl-C then is SIGINT here, which
     * interrupts a long pull) and whatever comes next */
    if (shell_tty_pause(x, err) < 0)
        return -1;
    print_job_notices(x);
    /* The sandbox's changes come back before anything else runs here. */
    if (session_sync(x->sess, err) < 0)
        return -1;
    return result;
}

/* Does the text name `word` followed by `(`, or after `function`: a
 * function definition of that name, as far as a look at the text says. */
static bool may_define(const char *text, size_t len, const char *word)
{
    size_t wl = strlen(word);
    for (const char *q = text; (q = memmem(q, len - (size_t)(q - text), word, wl)); q += wl) {
        const char *e = q + wl;
        while (e < text + len && (*e == ' ' || *e == '\t'))
            e++;
        if (e < text + len && *e == '(')
            return true;
        const char *b = q;
        while (b > text && (b[-1] == ' ' || b[-1] == '\t'))
            b--;
        if (b - text >= 8 && !memcmp(b - 8, "function", 8) && b < q)
            return true;
    }
    return false;
}

/* Could this text set a DEBUG trap (`trap CMD DEBUG`, through eval or a
 * function that runs later too), or define a function the cheap report
 * would call instead of a builtin? From then on the wrapper runs no simple
 * command (fork_reports), which costs two or three forks per chunk. */
static bool needs_fork_reports(const char *text, size_t len)
{
    static const char *const words[] = { "builtin", "return", "exit" };
    if (memmem(text, len, "DEBUG", 5) || memmem(text, len, "debug", 5) ||
        memmem(text, len, "Debug", 5))
        return true;
    for (size_t i = 0; i < ARRAY_SIZE(words); i++)
        if (may_define(text, len, words[i]))
            return true;
    return false;
}

/* Sends a chunk (build_chunk) to the persistent shell and waits for its
 * reports. first and last are the lines of the input the chunk's text
 * starts and ends on (0: no line numbers, as at a terminal). */
static int shell_run_chunk(line_exec *x, const char *chunk, unsigned first, unsigned last,
                           sbx_err *err)
{
    strbuf w = STRBUF_INIT, defs = STRBUF_INIT;
    int rc;

    push_view(x);
    if (!x->shell_running) {
        /* the run's own push brings the host's changes */
        if (shell_start(x, err) < 0) {
            sbx_err perr;
            shell_tty_pause(x, &perr);
            return -1;
        }
    } else if ((send_label(x), session_sync(x->sess, err)) < 0) {
        /* The shell has run since the last round: what changed on the host since then (a
         * file saved in an editor while sbxsh waited at its prompt, an agent's own write
         * between two commands) goes in before the chunk, as before a one-shot command. */
        return -1;
    }
    /* bash reads the chunk's first line as line `first` (SETLINE_FMT) */
    for (; first && x->shell_line + 1 < first; x->shell_line++)
        strbuf_addch(&w, '\n');
    strbuf_addstr(&w, chunk);
    /* PROMPT_COMMAND: $? is the last command's again before the report, so that a PS1
     * expanded there sees it, as bash's does (without tripping set -e: `&& :`) */
    if (x->prompt_status >= 0)
        strbuf_addf(&w, x->fork_reports ? "{ ( " FORK_EXIT "%d ) >/dev/null && :; } 2>/dev/null; "
                                        : "{ " SETRC_DEF "__sbx_setrc %d \"$_\" && :; } 2>/dev/null; ",
                    x->prompt_status);
    /* "next", on a line of its own, sets the line counter back: the next
     * text would otherwise find this line counted. */
    if (x->fork_reports)
        strbuf_addstr(&w, x->o.interactive
                              ? REPORT_FORK_TP("next", "", PROMPT_PRE, JOBS_POST_EMPTY)
                              : REPORT_FORK("next"));
    else if (x->o.tty && x->o.interactive)
        add_report(&w, &defs, "next", REPORT_DEF_FT(TYPEAHEAD, JOBS_POST PROMPT_POST));
    else if (x->o.interactive)
        add_report(&w, &defs, "next", REPORT_DEF_T(JOBS_POST PROMPT_POST));
    else
        add_report(&w, &defs, "next", REPORT_DEF_T(""));
    if (x->o.interactive)
        strbuf_addstr(&w, MARK_OFF);
    if (first && last) {
        strbuf_addf(&w, SETLINE_FMT, last - 1);
        x->shell_line = last - 1;
    }
    strbuf_addch(&w, '\n');
    /* its definitions, read (not parsed) by the line before */
    strbuf_add(&w, defs.buf, defs.len);
    strbuf_release(&defs);
    /* the terminal is the chunk's while it runs (raw, its size followed) */
    rc = x->o.tty ? session_tty_resume(x->sess, err) : 0;
    if (rc == 0)
        rc = session_write(x->sess, x->script_fd, w.buf, w.len, err);
    strbuf_release(&w);
    if (rc == 0)
        rc = shell_read_report(x, err);
    if (x->shell_running) {
        sbx_err perr;
        if (shell_tty_pause(x, &perr) < 0 && rc >= 0) {
            *err = perr;
            rc = -1;
        }
    }
    return rc;
}

/* Ends the persistent shell: its EXIT trap runs with $? as bash would have
 * it, and its status is the final one. exit_now sends `exit N` (errexit in a
 * host part); else end of input. */
static int shell_end(line_exec *x, bool exit_now, sbx_err *err)
{
    strbuf w = STRBUF_INIT;
    if (!x->shell_running)
        return 0;
    add_state_prefix(x, ROUTE_JOIN_SEMI, true, x->shell_line, &w);
    if (exit_now)
        strbuf_addf(&w, "exit %d\n", x->last_status);
    if (w.len && session_write(x->sess, x->script_fd, w.buf, w.len, err) < 0) {
        strbuf_release(&w);
        return -1;
    }
    strbuf_release(&w);
    /* what runs at the end (an EXIT trap, bash ending its jobs) has the terminal as a
     * chunk has it; paused, the command's end would never be seen */
    if (x->o.tty && session_tty_resume(x->sess, err) < 0)
        return -1;
    if (session_close_fd(x->sess, x->script_fd, err) < 0)
        return -1;
    return shell_reap(x, err);
}

/* ---- host output at a terminal ------------------------------------------------------ */

/*
 * What a host part prints reaches a terminal only through the same filter
 * as the sandbox's output (session/termfilter.h): git prints file names the
 * sandbox chose, and echo/printf write whatever the line says, so an OSC 52
 * (clipboard), a title or a cursor move would otherwise reach the terminal
 * raw. While a host part runs, each of sbxsh's fds 1 and 2 that is a
 * terminal is replaced by a pipe (one pipe for both when they are the same
 * terminal, so their order is kept); a relay process reads it, filters it,
 * and writes to the terminal, until every process of the part has closed it.
 * Everything that runs the part (children, in-process builtins, sbxsh's own
 * messages about it) writes to fds 1 and 2, so nothing bypasses it.
 */
typedef struct host_relay {
    int saved[3];          /* sbxsh's own fd 1 and 2 while replaced; -1: not replaced */
    pid_t pids[2];
    int npids;
} host_relay;

static bool same_terminal(int a, int b)
{
    struct stat sa, sb;
    return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && S_ISCHR(sa.st_mode) &&
           S_ISCHR(sb.st_mode) && sa.st_rdev == sb.st_rdev;
}

/* The relay: reads in, writes what the filter keeps to out, until EOF.
 * Ctrl-C and job control are for the part's processes: the relay drains
 * what they wrote and ends when they have gone. */
SBX_NORETURN static void relay_main(int in, int out)
{
    sbx_termfilter tf;
    strbuf q = STRBUF_INIT;
    char buf[16384];
    bool dead = false;

    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    signal(SIGTSTP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    if ((in = fcntl(in, F_DUPFD, 100)) < 0 || (out = fcntl(out, F_DUPFD, 101)) < 0 ||
        dup2(in, 0) < 0 || dup2(out, 1) < 0)
        _exit(1);
    close_range(2, ~0U, 0);
    session_termfilter_init(&tf);
    for (;;) {
        ssize_t n = read(0, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)     /* EOF of a pipe, EIO of a pty whose last writer is gone */
            break;
        strbuf_reset(&q);
        session_termfilter_feed(&tf, buf, (size_t)n, &q);
        /* a terminal that went away: keep reading, so that the writers never block */
        if (!dead && q.len && write_full(1, q.buf, q.len) < 0)
            dead = true;
    }
    _exit(0);
}

/* pfd[0]: the master (the relay reads it), pfd[1]: the slave the part writes to, at
 * the terminal's size, with output passed through as is. */
static int open_relay_pty(int term_fd, int pfd[2])
{
    struct winsize ws;
    struct termios tio;
    int m, s;

    if (openpty(&m, &s, NULL, NULL, ioctl(term_fd, TIOCGWINSZ, &ws) == 0 ? &ws : NULL) < 0)
        return -1;
    if (tcgetattr(s, &tio) == 0) {
        tio.c_oflag &= (tcflag_t)~OPOST;
        tio.c_lflag &= (tcflag_t)~(ECHO | ICANON | ISIG);
        tcsetattr(s, TCSANOW, &tio);
    }
    if (fcntl(m, F_SETFD, FD_CLOEXEC) < 0 || fcntl(s, F_SETFD, FD_CLOEXEC) < 0) {
        close(m);
        close(s);
        return -1;
    }
    pfd[0] = m;
    pfd[1] = s;
    return 0;
}

/* The relay as run.h's child function: it takes its fds itself (relay_main). */
typedef struct relay_fds {
    int in, out;
} relay_fds;

static int relay_child(void *ctx)
{
    relay_main(((relay_fds *)ctx)->in, ((relay_fds *)ctx)->out);
}

/* Puts the pipes and relays in place; r->saved[] says what to put back. */
static int relay_start(host_relay *r, sbx_err *err)
{
    bool tty1 = isatty(1), tty2 = isatty(2);
    bool one = tty1 && tty2 && same_terminal(1, 2);

    r->saved[0] = r->saved[1] = r->saved[2] = -1;
    r->npids = 0;
    if (!tty1 && !tty2)
        return 0;
    fflush(stdout);
    fflush(stderr);
    for (int fd = 1; fd <= 2; fd++) {
        int pfd[2];
        pid_t pid;
        relay_fds rf;
        /* a fork as it was: our signals and fds, which relay_main sets itself */
        sbx_run run = { .fn = relay_child, .file = "the terminal relay", .ctx = &rf,
                        .cwd_fd = -1, .stdin_inherit = true,
                        .stderr_to = SBX_RUN_ERR_INHERIT, .keep_fds = true,
                        .sig_inherit = true };

        if (!(fd == 1 ? tty1 : tty2) || (fd == 2 && one))
            continue;
        /* A pseudo-terminal where the kernel has one, so that git still sees a terminal
         * (colours, progress meters) while every byte passes the filter; its output
         * processing is off, the real terminal does its own. Else a pipe. */
        if (open_relay_pty(fd, pfd) < 0 && pipe2(pfd, O_CLOEXEC) < 0)
            return sbx_errno(err, "pipe");
        rf = (relay_fds){ pfd[0], fd };
        if (sbx_run_start(&run, &pid, NULL, err) < 0) {
            close(pfd[0]);
            close(pfd[1]);
            return -1;
        }
        r->pids[r->npids++] = pid;
        close(pfd[0]);
        /* the terminal itself stays out of reach of the part's processes (CLOEXEC) */
        r->saved[fd] = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (one)
            r->saved[2] = fcntl(2, F_DUPFD_CLOEXEC, 3);
        if (r->saved[fd] < 0 || (one && r->saved[2] < 0) || dup2(pfd[1], fd) < 0 ||
            (one && dup2(pfd[1], 2) < 0)) {
            close(pfd[1]);
            return sbx_errno(err, "dup2");
        }
        close(pfd[1]);
    }
    return 0;
}

/* Puts sbxsh's own fds back and waits for the relays to have written
 * everything (so that what comes next is in order after it). */
static int relay_finish(host_relay *r, sbx_err *err)
{
    int ret = 0;

    fflush(stdout);
    fflush(stderr);
    for (int fd = 1; fd <= 2; fd++) {
        if (r->saved[fd] < 0)
            continue;
        if (dup2(r->saved[fd], fd) < 0 && ret == 0)
            ret = sbx_errno(err, "dup2");
        close(r->saved[fd]);
        r->saved[fd] = -1;
    }
    for (int i = 0; i < r->npids; i++)
        while (waitpid(r->pids[i], NULL, 0) < 0 && errno == EINTR)
            ;
    r->npids = 0;
    return ret;
}

/* A lone `cd` prints nothing: no relay for it. */
static bool part_is_cd(const sh_pipeline *pl)
{
    strbuf name = STRBUF_INIT;
    bool cd = pl->cmds && !pl->cmds->next && pl->cmds->kind == SH_SIMPLE && pl->cmds->words &&
              sh_word_static_value(pl->cmds->words, &name) && !strcmp(name.buf, "cd");
    strbuf_release(&name);
    return cd;
}

/* `cd -`, as typed: the only cd whose target the host takes from what it knows (OLDPWD) */
static bool part_is_cd_dash(const sh_pipeline *pl)
{
    strbuf arg = STRBUF_INIT;
    const sh_cmd *c = pl->cmds;
    bool dash = part_is_cd(pl) && c->words->next && !c->words->next->next &&
                sh_word_static_value(c->words->next, &arg) && !strcmp(arg.buf, "-");
    strbuf_release(&arg);
    return dash;
}

/*
 * Whether the session's shell has variable name (OLDPWD, HOME) at want, the value the host
 * knows: asked on fd 199 like line_exec_names. Its answer can only keep a cd in the sandbox
 * (it must equal the host's own value), never send the host anywhere. A shell with a DEBUG
 * trap about (fork_reports) is not asked: no. $? and $_ come back as after a host part
 * (sandbox_stale).
 */
static int shell_has_value(line_exec *x, const char *name, const char *want, bool *same,
                           sbx_err *err)
{
    strbuf q = STRBUF_INIT, val = STRBUF_INIT, *rec[] = { &val };
    int rc = 0;

    *same = false;
    if (x->fork_reports)
        return 0;
    strbuf_addf(&q, "{ __sbx_a=$_; { builtin printf '%%s\\0%%s\\0' \"${%s-}\" \"$__sbx_a\"; } "
                    ">&199 2>/dev/null; builtin unset -v __sbx_a; } 2>/dev/null\n", name);
    if (shell_query(x, q.buf, q.len, rec, 1, err) < 0) {
        rc = -1;
        goto out;
    }
    *same = val.len == strlen(want) + 1 && !memcmp(val.buf, want, val.len);
out:
    strbuf_release(&q);
    strbuf_release(&val);
    return rc;
}

/*
 * The OLDPWD a `cd -` typed now would go to, when the host knows it (*out NULL otherwise):
 * the directory the person's last host cd left (host_oldpwd), when no sandbox command has
 * moved the shell since. Before the session's shell has run after that cd, that is bash's
 * OLDPWD (the next shell starts with it, or the next chunk's prefix sets it); after, the
 * shell is asked, since a command there may have assigned OLDPWD.
 */
static int confirmed_oldpwd(line_exec *x, const char **out, sbx_err *err)
{
    bool same;

    *out = NULL;
    if (!x->o.interactive || !x->host_oldpwd)
        return 0;
    if (!x->shell_running || strcmp(x->cwd, x->shell_cwd)) {
        *out = x->host_oldpwd;
        return 0;
    }
    if (shell_has_value(x, "OLDPWD", x->host_oldpwd, &same, err) < 0)
        return -1;
    if (same)
        *out = x->host_oldpwd;
    return 0;
}

/* The HOME a bare `cd`, `cd ~` or `cd ~/DIR` typed now would use, when it is the host's
 * (*out NULL otherwise): a shell not yet started gets the host's HOME (session_sandbox_env);
 * a running one is asked, since a command there may have assigned HOME. */
static int confirmed_home(line_exec *x, const char **out, sbx_err *err)
{
    bool same;

    *out = NULL;
    if (!x->o.interactive || !x->cfg.home)
        return 0;
    if (!x->shell_running) {
        *out = x->cfg.home;
        return 0;
    }
    if (shell_has_value(x, "HOME", x->cfg.home, &same, err) < 0)
        return -1;
    if (same)
        *out = x->cfg.home;
    return 0;
}

/* A cd that goes to HOME: bare (or `cd --`), or `cd ~...` */
static bool part_is_cd_home(const sh_pipeline *pl)
{
    const sh_word *arg;
    strbuf v = STRBUF_INIT;
    bool home;

    if (!part_is_cd(pl))
        return false;
    arg = pl->cmds->words->next;
    if (arg && !arg->next && sh_word_static_value(arg, &v) && !strcmp(v.buf, "--"))
        arg = NULL;
    home = !arg || (arg->flags & SH_WF_TILDE);
    strbuf_release(&v);
    return home;
}

/* ---- running a routed list ---------------------------------------------------------- */

/* The last argument of a single host command, which becomes bash's $_
 * (a pipeline leaves $_ alone). */
static char *host_last_arg(const sh_pipeline *pl)
{
    const sh_word *w, *last = NULL;
    strbuf sb = STRBUF_INIT;
    if (!pl->cmds || pl->cmds->next || pl->cmds->kind != SH_SIMPLE)
        return NULL;
    for (w = pl->cmds->words; w; w = w->next)
        last = w;
    if (!last || !sh_word_static_value(last, &sb)) {
        strbuf_release(&sb);
        return NULL;
    }
    return strbuf_detach(&sb, NULL);
}

/* Is this host part one that must run on the host (a git network command or a command
 * of the person's policy, where the credentials are, or sbxsh's own sbx, which the
 * sandbox does not have), rather than glue that could run anywhere? */
static bool part_needs_host(const route_part *part)
{
    if (part->secret)
        return true;    /* refused there: never the sandbox's */
    if (part->where != ROUTE_HOST || part->background)
        return false;
    if (part->cd_project)
        return true;
    for (const sh_cmd *c = part->pipe->cmds; c; c = c->next) {
        strbuf name = STRBUF_INIT;
        /* git, sbx, and a program of the person's policy (any HOST program the built-in
         * glue does not own): these have what the sandbox lacks, the credentials */
        bool git = c->kind == SH_SIMPLE && c->words && sh_word_static_value(c->words, &name) &&
                   (!strcmp(name.buf, "git") || !strcmp(name.buf, "sbx") ||
                    !route_policy_builtin_name(name.buf));
        strbuf_release(&name);
        if (git)
            return true;
    }
    return false;
}

/* The shell leaves its session (released, or a cd into another project): the connection
 * goes, and with it the persistent shell; the next sandbox part opens a session and starts
 * a fresh bash, with the cheap reports again (nothing there has named DEBUG yet). */
static void drop_session(line_exec *x)
{
    if (x->sess) {
        session_close(x->sess);
        x->sess = NULL;
    }
    x->shell_running = false;
    x->fork_reports = false;
    x->names_dirty = false;
}

/* A session that failed (its holder gone, the way to the sandbox lost, a Ctrl-C that got no
 * answer) fails every later call: the line that met it has said so, and the next sandbox
 * part opens a session afresh (and a new shell there, as after a release) rather than
 * repeating the old failure for ever. $? is 130 for a Ctrl-C given up, as bash's, else 125. */
static void forget_failed_session(line_exec *x)
{
    int status = x->sess ? session_failed(x->sess) : 0;
    if (!status)
        return;
    drop_session(x);
    x->last_status = status;
    x->sandbox_stale = true;
}

/* A host `sbx release` (the router lets only this shell's own session through) that
 * succeeded: the session's holder and sandbox are gone, the persistent shell with them.
 * The next sandbox part starts a new one in the same session, as the first command of a
 * shell does: a fresh bash there, with the cwd and $? carried over (and the sandbox's
 * ~/.bashrc when sbxsh reads it), but none of the old shell's variables or functions. */
static void after_host_part(line_exec *x, const sh_pipeline *pl, int status)
{
    strbuf w = STRBUF_INIT;
    bool release = false, help = false;
    size_t k = 0;

    if (pl->cmds->next)
        return;
    for (const sh_word *wd = pl->cmds->words; wd; wd = wd->next) {
        strbuf_reset(&w);
        if (!sh_word_static_value(wd, &w))
            break;
        switch (k++) {
        case 0: release = !strcmp(w.buf, "sbx"); break;
        case 1: release = release && !strcmp(w.buf, "release"); break;
        default: help = help || !strcmp(w.buf, "--help") || !strcmp(w.buf, "-h"); break;
        }
    }
    strbuf_release(&w);
    if (!release || help || status != 0 || !x->sess)
        return;
    if (x->shell_running && x->o.interactive)
        fprintf(stderr, "sbxsh: session '%s' released: the next command starts a new sandbox "
                        "(the shell's variables and functions start afresh)\n", x->cfg.session);
    /* the scratch sandbox's HOME goes with it, and the views it got */
    if (!x->cfg.code_dirs.n)
        drop_views(x);
    drop_session(x);
}

/* May the shell move to the session of the project it cd's into? When nobody chose the
 * session or the code directories (line_may_move_to_projects), in every mode: `ssh HOST 'cd
 * proj && git pull'` and `su - USER -c 'cd proj && make'` start in ~, whose session has no
 * code directory, and bash would run the rest in proj. */
static bool may_move_to_projects(const line_exec *x)
{
    return line_may_move_to_projects(&x->cfg);
}

bool line_may_move_to_projects(const sbx_config *cfg)
{
    const char *dirs = getenv("AGENT_SANDBOX_CODE_DIRS");
    return cfg->session_derived && !(dirs && *dirs);
}

/*
 * A host `cd` took the shell into another project (route_ctx.cd_projects: a git work tree
 * outside the code directories). `sbxsh -c` started there would use that project's own
 * session, with its code synced; so does the shell from now on: it leaves this session
 * (whose sandbox does not have the directory: a login shell in ~ has no code directory at
 * all) and its next sandbox part starts a bash in the project's session, at the new cwd,
 * with $? carried. Like the shell after `sbx release`, that bash starts afresh: the old
 * one's variables, functions and jobs stay in the old session (its holder keeps it until
 * its idle timeout, and a later cd back there starts a new shell in it). The line says so.
 */
/* Leaves this session for next's (whose config it takes over): the next sandbox part
 * starts a bash there, with the environment of that session, and `cd -` goes back as after
 * any cd (the new shell starts with OLDPWD: shell_start). */
static void switch_session(line_exec *x, sbx_config *next, const char *oldpwd)
{
    drop_session(x);
    free(x->start_oldpwd);
    x->start_oldpwd = xstrdup(oldpwd);
    session_config_free(&x->cfg);
    x->cfg = *next;
    strvec_clear(&x->env);
    session_sandbox_env(&x->cfg, false, &x->env);
}

static void move_to_project(line_exec *x, const char *oldpwd)
{
    sbx_config next;
    sbx_config_opts co = { .cwd = x->cwd };
    sbx_err err;

    bool project, view;

    if (!may_move_to_projects(x) || inside_code_dirs(x, x->cwd))
        return;
    project = route_in_git_work_tree(x->cwd);
    view = x->o.interactive && route_view_dir(x->cfg.home, x->cwd);
    if (!project && !view)
        return;
    /* a plain directory is no session of its own (`sbxsh -c` there would sync it whole):
     * its commands run in the scratch session, the one HOME has */
    if (!project)
        co.cwd = x->cfg.home;
    if (session_config_load(&next, &co, &err) < 0) {
        sbx_error("cd: %s: staying in session '%s': %s", x->cwd, x->cfg.session, err.msg);
        return;
    }
    if (!next.code_dirs.n) {
        /* outside every project (a dotfiles repository at ~ is none either): the scratch
         * session, with a view of the directory for its sandbox */
        if (!view) {
            session_config_free(&next);
            return;
        }
        if (strcmp(next.session, x->cfg.session)) {
            if (x->o.interactive)
                sbx_error("%s is outside every project: its commands run in session '%s' "
                          "from now on, whose sandbox sees this directory's files (a view: "
                          "nothing comes back)", x->cwd, next.session);
            switch_session(x, &next, oldpwd);
        } else {
            session_config_free(&next);
        }
        queue_view(x, x->o.interactive);
        return;
    }
    if (!strcmp(next.session, x->cfg.session)) {
        session_config_free(&next);
        return;
    }
    /* said at a prompt; a script or -c line, like bash, says nothing of where it runs */
    if (x->o.interactive && x->shell_running)
        sbx_error("%s is in project '%s': its commands run in that session's "
                  "sandbox from now on (a new shell there: variables, functions and jobs "
                  "stay in session '%s')", x->cwd, next.session, x->cfg.session);
    else if (x->o.interactive)
        sbx_error("%s is in project '%s': its commands run in that session's "
                  "sandbox from now on", x->cwd, next.session);
    /* the scratch sandbox keeps the views it got (a cd .. back finds them); one not yet
     * given is not given */
    cancel_view(x);
    switch_session(x, &next, oldpwd);
}

/* A line is split between host and sandbox only when it must be: some part
 * needs the host. Otherwise glue runs wherever the rest runs, so that a
 * line with any sandbox part is one exact `bash -c` there. */
static bool eval_needs_host(const line_exec *x, const route_part *part);

static bool plan_needs_split(const line_exec *x, const route_plan *plan)
{
    for (size_t i = 0; i < plan->n; i++)
        if (part_needs_host(&plan->parts[i]) || eval_needs_host(x, &plan->parts[i]))
            return true;
    return false;
}

static bool joins_andor(const route_part *parts, size_t n, size_t i)
{
    return i + 1 < n && (parts[i + 1].join == ROUTE_JOIN_AND || parts[i + 1].join == ROUTE_JOIN_OR);
}

/*
 * Builds the text of sandbox parts [i, j) as the persistent shell runs it:
 * the prefix that brings the shell up to date, the parts' own source, what
 * keeps set -e from firing on a last and-or list that a host part
 * continues, then the end of the group that gives the parts their stdin
 * and the "done" report, on the line the parts end on, and here-document
 * bodies. The group closes on that same line, not on a line of its own:
 * bash takes a redirection's error, a function definition's error and the
 * like at the line it has read last, which must be the user's.
 */
static void build_chunk(line_exec *x, const sh_parse *p, const route_part *parts, size_t n,
                        size_t i, size_t j, strbuf *out)
{
    sh_span span = { parts[i].span.start, parts[j - 1].span.end };
    strbuf text = STRBUF_INIT, defs = STRBUF_INIT;
    size_t span_len = sh_span_len(span);

    if (!x->fork_reports && needs_fork_reports(p->src + span.start, span_len))
        x->fork_reports = true;
    strbuf_addstr(out, "{ ");
    add_state_prefix(x, parts[i].join, false, 0, out);
    sh_span_text_with_heredocs(p, span, &text);
    strbuf_add(out, text.buf, span_len);
    if (parts[j - 1].background)
        strbuf_addstr(out, " & }");
    else if (joins_andor(parts, n, j - 1))
        strbuf_addstr(out, x->fork_reports
                               ? " && { ( " FORK_EXIT "0 ) >/dev/null; } 2>/dev/null; }"
                               : " && { " SETRC_DEF "__sbx_setrc 0 \"$_\"; } 2>/dev/null; }");
    else
        strbuf_addstr(out, "; }");
    /* An error that makes bash abandon the rest of the line skips "done",
     * and only "next" comes. */
    strbuf_addstr(out, x->stdin_null ? " 0</dev/null"
                       : x->o.stdin_is_script && !x->o.tty ? " 0<&197" : " 0<&198");
    strbuf_addstr(out, x->o.interactive ? MARK_ON "; " : "; ");
    if (x->fork_reports)
        strbuf_addstr(out, REPORT_FORK("done"));
    else
        add_report(out, &defs, "done", REPORT_DEF_T(""));
    if (x->o.interactive)
        strbuf_addstr(out, MARK_OFF);
    if (text.len > span_len)
        strbuf_add(out, text.buf + span_len, text.len - span_len);
    else
        strbuf_addch(out, '\n');
    /* the report's definitions, after the here-document bodies bash reads with the line */
    strbuf_add(out, defs.buf, defs.len);
    strbuf_release(&defs);
    strbuf_release(&text);
}

/*
 * Agents wrap the command they were asked to run in `eval` (Claude Code:
 * `source SNAPSHOT && eval 'git push origin HEAD' < /dev/null && pwd -P >| CWDFILE`).
 * Bash runs the eval's text as a line of its own, in the same shell; the router has
 * parsed and planned that text when it is known before it runs (route_part.eval), and a
 * text that needs the host (git's network commands, sbx) runs here part by part, its
 * `< /dev/null` given to each. Not under set -e, whose exemptions inside an and-or list
 * the chunks could not reproduce: then the eval runs in the sandbox whole, as before.
 */
static bool eval_needs_host(const line_exec *x, const route_part *part)
{
    return part->eval && !x->errexit && plan_needs_split(x, &part->eval->plan);
}

static int run_parts(line_exec *x, const sh_parse *p, route_plan *plan, unsigned line_base,
                     bool *exited, sbx_err *err);

/* Runs an eval part's text as bash would: its parts in turn, in this shell; the eval's
 * status is the text's last. */
static int run_eval(line_exec *x, const sh_parse *p, const route_part *part, unsigned line_base,
                    bool *exited, sbx_err *err)
{
    bool saved = x->stdin_null;
    int rc;
    unsigned base = line_base ? line_base - 1 + route_line_of(p, part->span.start) : 0;

    if (part->eval->stdin_null)
        x->stdin_null = true;
    /* an empty text leaves $? 0, as bash's eval does */
    x->last_status = 0;
    rc = run_parts(x, &part->eval->parse, &part->eval->plan, base, exited, err);
    x->stdin_null = saved;
    return rc;
}

/* Runs a routed list. line_base is added to line numbers (0: none, as in
 * stdin mode). Sets *exited when the shell ended. */
static int run_parts(line_exec *x, const sh_parse *p, route_plan *plan, unsigned line_base,
                     bool *exited, sbx_err *err)
{
    route_part *parts = plan->parts;
    size_t n = plan->n;

    *exited = false;
    for (size_t i = 0; i < n;) {
        if ((parts[i].where == ROUTE_HOST && !parts[i].background) || parts[i].secret) {
            route_join j = parts[i].join;
            route_ctx ctx;
            /* bash names itself in a message as $0 in a script, as its argv[0]'s
             * basename at its prompt */
            strbuf hostcmds = STRBUF_INIT;
            route_run_opts ro = { .errname = x->o.interactive ? x->o.promptname : x->o.dollar0,
                                  .pipefail = x->pipefail, .audit = &hostcmds };
            strbuf newcwd = STRBUF_INIT;
            int status, rc;

            if ((j == ROUTE_JOIN_AND && x->last_status != 0) ||
                (j == ROUTE_JOIN_OR && x->last_status == 0)) {
                i++;
                continue;
            }
            if (x->shell_running && !x->shell_ended && !parts[i].secret &&
                (parts[i].names_unknown || x->names_dirty)) {
                bool same;
                if (host_names_unchanged(x, parts[i].pipe, &same, err) < 0)
                    return -1;
                if (!same) {
                    /* the shell runs another git (a function, an alias): bash's, there */
                    parts[i].where = ROUTE_SANDBOX;
                    continue;
                }
            }
            route_ctx_fill(x, &ctx);
            bool dash = part_is_cd_dash(parts[i].pipe);
            if (dash && confirmed_oldpwd(x, &ctx.oldpwd, err) < 0)
                return -1;
            if (ctx.cd_views && part_is_cd_home(parts[i].pipe) &&
                confirmed_home(x, &ctx.home_cd, err) < 0)
                return -1;
            /* bash expands PS4 before each trace; one with expansions is shown as
             * bash's default rather than expanded here */
            if (x->xtrace)
                ro.xtrace = x->ps4 && !strpbrk(x->ps4, "$`\\") ? x->ps4 : "+ ";
            if (line_base)
                ro.line = line_base - 1 + route_line_of(p, parts[i].span.start);
            /* inside `eval '...' < /dev/null`: the part's stdin is /dev/null, put back after */
            int saved_in = -1;
            if (x->stdin_null) {
                int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
                saved_in = fcntl(0, F_DUPFD_CLOEXEC, 10);
                if (nul < 0 || saved_in < 0 || dup2(nul, 0) < 0) {
                    if (nul >= 0)
                        close(nul);
                    if (saved_in >= 0)
                        close(saved_in);
                    return sbx_errno(err, "cannot give a host part /dev/null as its stdin");
                }
                close(nul);
            }
            if (part_is_cd(parts[i].pipe)) {
                rc = route_run_host(p, parts[i].pipe, &ctx, &ro, &status, &newcwd, err);
            } else {
                host_relay relay;
                sbx_err rerr;
                rc = relay_start(&relay, err);
                if (rc == 0)
                    rc = route_run_host(p, parts[i].pipe, &ctx, &ro, &status, &newcwd, err);
                if (relay_finish(&relay, &rerr) < 0 && rc >= 0) {
                    *err = rerr;
                    rc = -1;
                }
            }
            if (saved_in >= 0) {
                dup2(saved_in, 0);
                close(saved_in);
            }
            if (rc < 0) {
                strbuf_release(&newcwd);
                strbuf_release(&hostcmds);
                return -1;
            }
            if (rc == ROUTE_RAN)
                audit_part(x, "host", parts[i].reason, status, &hostcmds);
            strbuf_release(&hostcmds);
            if (rc == ROUTE_NOT_HOST && parts[i].secret) {
                /* A git command with a URL secret that the host would not run from here
                 * (the cwd outside the code directories, a background `&`): not the
                 * sandbox's either, where the secret would be the sandbox's. */
                fprintf(stderr, "%s: git: not run: a password or token in a URL would reach "
                        "the sandbox; store it with a credential helper (git credential, gh "
                        "auth login) and use the URL without it\n", x->o.dollar0);
                rc = ROUTE_RAN;
                status = 2;
            }
            if (rc == ROUTE_NOT_HOST) {
                /* The cwd moved since the plan was made: it runs in the sandbox. */
                parts[i].where = ROUTE_SANDBOX;
                strbuf_release(&newcwd);
                continue;
            }
            fflush(stdout);
            after_host_part(x, parts[i].pipe, status);
            x->last_status = status;
            x->sandbox_stale = true;
            free(x->last_arg);
            x->last_arg = host_last_arg(parts[i].pipe);
            if (newcwd.len) {
                char *old = x->cwd;
                x->cwd = strbuf_detach(&newcwd, NULL);
                if (dash) {
                    /* bash's `cd -` says where it went */
                    printf("%s\n", x->cwd);
                    fflush(stdout);
                }
                if (x->o.interactive) {
                    free(x->host_oldpwd);
                    x->host_oldpwd = xstrdup(old);
                    /* a shell not yet started starts with the OLDPWD this cd made */
                    if (!x->shell_running) {
                        free(x->start_oldpwd);
                        x->start_oldpwd = xstrdup(old);
                    }
                }
                move_to_project(x, old);
                free(old);
            }
            strbuf_release(&newcwd);
            if (x->errexit && status != 0 && !parts[i].pipe->bang && !joins_andor(parts, n, i)) {
                *exited = true;
                if (x->shell_running) {
                    if (shell_end(x, true, err) < 0)
                        return -1;
                } else {
                    x->final_status = W_EXITCODE(status, 0);
                }
                return 0;
            }
            i++;
            continue;
        }

        size_t j = i;
        strbuf chunk = STRBUF_INIT;
        unsigned first = 0, lastl = 0;
        int r;
        /* the sandbox parts up to the next host part, or to an eval that needs the host */
        while (j < n && (parts[j].where == ROUTE_SANDBOX || parts[j].background) &&
               !eval_needs_host(x, &parts[j]))
            j++;
        if (j == i) {
            route_join jn = parts[i].join;
            if (!((jn == ROUTE_JOIN_AND && x->last_status != 0) ||
                  (jn == ROUTE_JOIN_OR && x->last_status == 0))) {
                r = run_eval(x, p, &parts[i], line_base, exited, err);
                if (r < 0 || *exited)
                    return r < 0 ? -1 : 0;
            }
            i++;
            continue;
        }
        build_chunk(x, p, parts, n, i, j, &chunk);
        for (size_t k = i; k < j; k++)
            audit_part(x, "sandbox", parts[k].reason, -1, NULL);
        for (size_t k = i; k < j && !x->names_dirty; k++)
            x->names_dirty = route_may_redefine(parts[k].pipe);
        if (line_base) {
            sh_span last = parts[j - 1].span;
            first = line_base - 1 + route_line_of(p, parts[i].span.start);
            lastl = line_base - 1 +
                    route_line_of(p, last.end > last.start ? last.end - 1 : last.end);
        }
        r = shell_run_chunk(x, chunk.buf, first, lastl, err);
        strbuf_release(&chunk);
        if (r < 0)
            return -1;
        if (r == 0) {
            *exited = true;
            return 0;
        }
        i = j;
        if (r == 2) {
            /* bash abandoned the rest of the line (an expansion error): so do we */
            while (i < n && parts[i].join != ROUTE_JOIN_NEWLINE)
                i++;
        }
    }
    return 0;
}

int line_exec_program(line_exec *x, const char *text, size_t len, bool extglob,
                      const char *script, int *wait_status, sbx_err *err)
{
    sh_parse p;
    sh_parse_opts po = { .extglob = extglob, .track_shopt = true };
    route_plan plan;
    route_ctx ctx;
    size_t host = 0;
    bool exited;
    const char *outside = NULL;

    int rc = 0;

    if (script) {
        /* The sandbox can run the file itself only if it is synced there; else it is put
         * there first (outside_script_boot). */
        char *real = realpath(script, NULL);
        if (!real || !inside_code_dirs(x, real)) {
            outside = script;
            script = NULL;
        }
        free(real);
    }
    audit_begin(x, text, len);
    sh_parse_all(&p, text, len, &po, true);
    if (p.status != SH_OK) {
        /* bash itself reports it, after running what comes before it */
        sh_parse_free(&p);
        audit_part(x, "sandbox", "bash reports the syntax error", -1, NULL);
        rc = run_oneshot(x, text, script, outside, wait_status, err);
        if (rc == 0)
            audit_end(x, bash_status(*wait_status));
        return rc;
    }
    route_ctx_fill(x, &ctx);
    route_plan_build(&plan, &p, &ctx);
    for (size_t i = 0; i < plan.n; i++)
        host += plan.parts[i].where == ROUTE_HOST && !plan.parts[i].background;
    if (host < plan.n && !plan_needs_split(x, &plan)) {
        for (size_t i = 0; i < plan.n; i++)
            audit_part(x, "sandbox", plan.parts[i].reason, -1, NULL);
        route_plan_release(&plan);
        sh_parse_free(&p);
        rc = run_oneshot(x, text, script, outside, wait_status, err);
        if (rc == 0)
            audit_end(x, bash_status(*wait_status));
        return rc;
    }
    rc = run_parts(x, &p, &plan, 1, &exited, err);
    route_plan_release(&plan);
    sh_parse_free(&p);
    if (rc < 0)
        return -1;
    if (!exited && line_exec_finish(x, wait_status, err) < 0)
        return -1;
    if (exited)
        *wait_status = x->final_status;
    audit_end(x, bash_status(*wait_status));
    return 0;
}

bool line_lone_command(const sh_parse *p, strvec *args)
{
    const sh_andor *ao = p->root ? p->root->items : NULL;
    const sh_cmd *c;

    if (!ao || ao->next || !ao->pipes || ao->pipes->next || ao->pipes->bang ||
        ao->pipes->timed || ao->sep == SH_SEP_AMP)
        return false;
    c = ao->pipes->cmds;
    if (!c || c->next || c->kind != SH_SIMPLE || c->redirs || c->assigns || !c->words)
        return false;
    for (const sh_word *w = c->words; w; w = w->next) {
        strbuf sb = STRBUF_INIT;
        if (!sh_word_static_value(w, &sb)) {
            strbuf_release(&sb);
            strvec_clear(args);
            return false;
        }
        strvec_push(args, sb.buf);
        strbuf_release(&sb);
    }
    return true;
}

bool line_exec_exit_refused(line_exec *x, bool eof)
{
    /* as interactive bash: once, unless the command before was an exit or `jobs` */
    if (!x->shell_running || !x->job_control || !x->nstopped || x->exit_ok)
        return false;
    line_exec_set_status(x, 1);
    x->exit_ok = true;
    fflush(stdout);
    fprintf(stderr, "%sThere are stopped jobs.\n", eof ? "exit\n" : "");
    return true;
}

/*
 * The commands of interactive mode that job control makes sbxsh's to answer, when typed
 * alone (fixed words): `exit` or `logout` with stopped jobs is refused once, as bash does
 * (the sandbox's shell is not interactive and would end at once, its stopped jobs killed);
 * `suspend` stops sbxsh itself, as it stops interactive bash (in the sandbox it would stop
 * the sandbox's shell, which nothing could resume: there it is disabled, shell_start).
 * Returns true when the command was answered here.
 */
static bool job_builtin(line_exec *x, const sh_parse *p)
{
    strvec args = STRVEC_INIT;
    bool lone = x->o.interactive && line_lone_command(p, &args), done = false;
    const char *name = lone ? args.v[0] : "";
    bool is_exit = !strcmp(name, "exit") || !strcmp(name, "logout");

    if (is_exit && line_exec_exit_refused(x, false)) {
        done = true;
    } else if (!strcmp(name, "suspend") && x->job_control) {
        bool force = args.n == 2 && !strcmp(args.v[1], "-f");
        done = true;
        if (args.n > 2 || (args.n == 2 && !force)) {
            fprintf(stderr, "%s: suspend: usage: suspend [-f]\n", x->o.promptname);
            line_exec_set_status(x, 2);
        } else if (x->o.login && !force) {
            fprintf(stderr, "%s: suspend: cannot suspend a login shell\n", x->o.promptname);
            line_exec_set_status(x, 1);
        } else {
            fflush(NULL);
            raise(SIGSTOP);
            line_exec_set_status(x, 0);
        }
    }
    x->exit_ok = done ? x->exit_ok : lone && (is_exit || !strcmp(name, "jobs"));
    strvec_clear(&args);
    return done;
}

int line_exec_command(line_exec *x, const sh_parse *p, unsigned first_line, bool *exited,
                      int *wait_status, sbx_err *err)
{
    route_plan plan;
    route_ctx ctx;
    int rc;

    *exited = false;
    if (job_builtin(x, p))
        return 0;
    route_ctx_fill(x, &ctx);
    route_plan_build(&plan, p, &ctx);
    if (!plan_needs_split(x, &plan))
        route_plan_to_sandbox(&plan);   /* all of it in the sandbox's shell, as one chunk:
                                         * exact bash */
    audit_begin(x, p->src, strlen(p->src));
    rc = run_parts(x, p, &plan, first_line, exited, err);
    if (rc == 0)
        audit_end(x, *exited ? bash_status(x->final_status) : x->last_status);
    route_plan_release(&plan);
    forget_failed_session(x);
    if (rc == 0 && *exited)
        *wait_status = x->final_status;
    return rc;
}

/* Like line_exec_command, but every part in the sandbox's shell: no host builtin, no
 * job builtin, no route to the host (what the sandbox chose runs where it came from). */
static int exec_in_sandbox(line_exec *x, const sh_parse *p, bool *exited, int *wait_status,
                           sbx_err *err)
{
    route_plan plan;
    route_ctx ctx;
    int rc;

    *exited = false;
    route_ctx_fill(x, &ctx);
    route_plan_build(&plan, p, &ctx);
    route_plan_to_sandbox(&plan);
    rc = run_parts(x, p, &plan, 0, exited, err);
    route_plan_release(&plan);
    forget_failed_session(x);
    if (rc == 0 && *exited)
        *wait_status = x->final_status;
    return rc;
}

int line_exec_prompt_command(line_exec *x, const sh_parse *p, bool sandbox_only, bool *exited,
                             int *wait_status, sbx_err *err)
{
    int saved = x->last_status, pipestatus[ARRAY_SIZE(x->pipestatus)], rc;
    size_t npipestatus = x->npipestatus;
    bool stale = x->sandbox_stale;

    bool exit_ok = x->exit_ok;

    memcpy(pipestatus, x->pipestatus, sizeof(pipestatus));
    x->prompt_status = saved;
    x->audit_off = true;   /* PROMPT_COMMAND is not the person's line */
    rc = sandbox_only ? exec_in_sandbox(x, p, exited, wait_status, err)
                      : line_exec_command(x, p, 0, exited, wait_status, err);
    x->audit_off = false;
    x->prompt_status = -1;
    /* not a command of the person's: an exit refused just before is still refused once */
    x->exit_ok = exit_ok;
    if (rc < 0 || *exited)
        return rc;
    /* A last part in the sandbox left its $? at `saved` already (shell_run_chunk); after a
     * host part, the next chunk's prefix sets it. PIPESTATUS is replayed as it was. */
    if (x->last_status != saved)
        x->sandbox_stale = true;
    x->last_status = saved;
    x->sandbox_stale |= stale;
    x->npipestatus = npipestatus;
    memcpy(x->pipestatus, pipestatus, sizeof(pipestatus));
    return 0;
}

int line_exec_raw_rest(line_exec *x, const char *text, size_t len, unsigned first_line,
                       int in_fd, int *wait_status, sbx_err *err)
{
    strbuf w = STRBUF_INIT;
    char buf[65536];

    if (!x->shell_running && shell_start(x, err) < 0)
        return -1;
    /* bash reads text's first line as line first_line (SETLINE_FMT) */
    add_state_prefix(x, ROUTE_JOIN_SEMI, true, first_line ? first_line - 1 : x->shell_line, &w);
    if (w.len && first_line)
        x->shell_line = first_line - 1;
    for (; first_line && x->shell_line + 1 < first_line; x->shell_line++)
        strbuf_addch(&w, '\n');
    strbuf_add(&w, text, len);
    if (session_write(x->sess, x->script_fd, w.buf, w.len, err) < 0) {
        strbuf_release(&w);
        return -1;
    }
    strbuf_release(&w);
    for (;;) {
        ssize_t r = read(in_fd, buf, sizeof(buf));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        if (session_write(x->sess, x->script_fd, buf, (size_t)r, err) < 0)
            return -1;
    }
    if (session_close_fd(x->sess, x->script_fd, err) < 0 || shell_reap(x, err) < 0)
        return -1;
    *wait_status = x->final_status;
    return 0;
}

int line_exec_finish(line_exec *x, int *wait_status, sbx_err *err)
{
    if (x->shell_running && shell_end(x, false, err) < 0)
        return -1;
    *wait_status = x->shell_ended ? x->final_status : W_EXITCODE(x->last_status, 0);
    return 0;
}
