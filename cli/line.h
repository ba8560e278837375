/*
 * The line executor: runs parsed command lines part by part, host parts
 * here and sandbox parts in the session's sandbox, with bash's semantics.
 *
 * Three ways to run a sandbox part:
 *   - one-shot: a line (or script) whose parts all go to the sandbox runs as
 *     one `bash [OPTIONS] -c TEXT [NAME ARGS...]` there: exact bash, the
 *     fastest path, and what almost every agent command takes;
 *   - host only: a line whose parts all go to the host never touches the
 *     sandbox at all;
 *   - mixed lines, scripts and stdin mode use one persistent `bash -s` in the
 *     sandbox per sbxsh process, so variables, functions, options, traps and
 *     the cwd carry from part to part and from command to command as in one
 *     bash. Its fd 0 is a script stream this file writes; each chunk of
 *     consecutive sandbox parts is sent as its original source text wrapped
 *     so that it reads the user's stdin (fd 198) and reports its status,
 *     flags and $PWD on fd 199; a sync round follows each report so the
 *     sandbox's changes are on the host before the next host part runs.
 *
 * && and || around host parts are decided here; around sandbox parts by the
 * sandbox's bash, which is told the status of the host part before it (a
 * host part is represented in the sandbox's and-or list by a function that
 * returns its status), so `make && git push || echo failed` behaves as in
 * bash wherever each part ran. errexit (-e) and pipefail follow the flags the
 * sandbox's bash reports.
 */
#ifndef SBX_CLI_LINE_H
#define SBX_CLI_LINE_H

#include "common/strvec.h"
#include "common/util.h"
#include "router/route.h"
#include "session/config.h"
#include "shell/parse.h"

#include <stdbool.h>

/* The route context, the one both --route and execution use: cfg's checked code
 * directories and sync paths, cwd, and this process's PATH, HOME and CDPATH.
 * Borrows cfg and cwd. */
void line_route_ctx(const sbx_config *cfg, const char *cwd, route_ctx *ctx);
/* Whether a shell of cfg follows a `cd` into another project to that project's session
 * (route_ctx.cd_projects): when nobody chose the session or the code directories. */
bool line_may_move_to_projects(const sbx_config *cfg);

/* The whole of --route for sbxsh's main(): loads the configuration as execution
 * does (with --session, so a bad AGENT_SANDBOX_* or session name fails here as it
 * fails there), routes p from the cwd and prints the plan on stdout. Returns 0, or
 * -1 with err set (exit 125). */
int line_print_route(const sh_parse *p, bool json, const char *session, sbx_err *err);

typedef struct line_opts {
    const char *argv0;           /* how sbxsh was invoked: $0 of a one-shot -c */
    const char *dollar0;         /* $0 for the persistent shell and messages */
    const char *errname;         /* prefix of sbxsh's own messages ("sbxsh") */
    const char *promptname;      /* how bash at its prompt names itself in a message:
                                    argv[0]'s basename, a login shell's '-' kept ("-sbxsh") */
    const char *const *bash_args;   /* options for the sandbox's bash (-e, -o pipefail...) */
    const char *const *positional;  /* $1, $2, ... */
    const char *session;         /* --session, or NULL */
    bool errexit;                /* -e given on the command line */
    bool pipefail;               /* -o pipefail given on the command line */
    bool stdin_is_script;        /* stdin mode: commands come from stdin, so sandbox
                                    commands get an empty stdin instead of ours */
    bool interactive;            /* a person at a terminal: no line numbers, tty */
    /* sbxsh's stdin, stdout and stderr are one terminal (and not stdin mode): sandbox
     * commands run on a pty of its size, the terminal raw while they run, as bash would
     * give a program the terminal. Else pipes. */
    bool tty;
    /* the persistent shell sources the sandbox's ~/.bashrc when it starts (cli/startup.h) */
    bool sandbox_bashrc;
    bool login;                  /* a login shell (-l, --login, argv[0] "-..."): no suspend */
} line_opts;

typedef struct line_exec line_exec;

int line_exec_new(const line_opts *o, line_exec **out, sbx_err *err);

/* Runs a whole -c string or script in one go. Parses it (extglob and
 * shopt tracking as bash would execute it); a line that is all sandbox, or
 * that sbxsh's parser refuses, runs one-shot in the sandbox (so bash itself
 * reports any syntax error, after running what came before it, as it
 * would); all host runs here; mixed runs part by part. *status is the exit
 * status sbxsh should end with (a raw wait status when the sandbox's bash was
 * killed by a signal: see line_exit()). script names the file for `bash
 * SCRIPT` when it is inside the code directories, else NULL. */
int line_exec_program(line_exec *x, const char *text, size_t len, bool extglob,
                      const char *script, int *wait_status, sbx_err *err);

/* Runs one complete command of stdin or interactive mode (already parsed
 * with sh_parse_next). first_line is the input line it starts on, for host
 * parts' messages (0: none, as at a terminal). Sets *exited when the shell
 * has ended (exit, errexit); then *wait_status is final. */
int line_exec_command(line_exec *x, const sh_parse *p, unsigned first_line, bool *exited,
                      int *wait_status, sbx_err *err);

/* sbxsh's parser refused a command of stdin mode: from here on bash in the
 * sandbox reads the rest of the input itself (text, then all of fd in_fd),
 * so that it reports the error in its own words (or, if sbxsh's parser was
 * wrong, runs it) and exits as bash would. first_line is the input line
 * text starts on, so that bash's messages name it (0: no line numbers).
 * *wait_status is final. */
int line_exec_raw_rest(line_exec *x, const char *text, size_t len, unsigned first_line,
                       int in_fd, int *wait_status, sbx_err *err);

/* At the end of input: ends the persistent shell (its EXIT trap runs) and
 * gives the final status. */
int line_exec_finish(line_exec *x, int *wait_status, sbx_err *err);

/* bash's $? after the last command. */
int line_exec_last_status(const line_exec *x);

/* Is set -v on in the persistent shell? Its reports turn it off (bash would
 * echo the wrapper's lines) and the next command's prefix back on, so the
 * caller echoes each command's input lines to stderr before running it, as
 * bash does when it reads them. */
bool line_exec_verbose(const line_exec *x);
/* Did the sandbox's shell end the last line itself, as bash -i does (the newline after a
 * Ctrl-C's ^C): its part ran last there and the interactive marks work (line.c MARK_ON) */
bool line_exec_shell_ended_line(const line_exec *x);

/* Interactive mode: the prompt's variables as the sandbox's shell had them after the last
 * command; all NULL (and known false) before it ran one. The sandbox's to choose: data for
 * display (PS1, PS2), and a PROMPT_COMMAND that runs in the sandbox unless the person set
 * that very value (cli/run.c). The history's settings are not among them: the host's
 * history follows only the host's values (cli/interactive.c). */
typedef struct line_shell_vars {
    bool known;
    char *ps1, *ps2;            /* NULL: unset */
    char *ps1_expanded;         /* ${PS1@P} there, when PS1 needs the shell's expansions */
    char *prompt_command;       /* PROMPT_COMMAND's elements, each followed by \001; NULL: unset
                                   or empty */
} line_shell_vars;
const line_shell_vars *line_exec_vars(const line_exec *x);

/* The route context for where the next command runs (line_route_ctx). */
void line_exec_route_ctx(const line_exec *x, route_ctx *ctx);

/* Where the next command runs (\w), and the session's name. */
const char *line_exec_cwd(const line_exec *x);
const char *line_exec_session(const line_exec *x);

/* Runs PROMPT_COMMAND (parsed) before a prompt, as a command of its own: routed like any
 * line, or with sandbox_only every part of it in the sandbox's shell (a value the sandbox
 * chose); then $? (and PIPESTATUS) are the last command's again, also for a PS1 the
 * sandbox's shell expands, as bash keeps them. Otherwise as line_exec_command. */
int line_exec_prompt_command(line_exec *x, const sh_parse *p, bool sandbox_only, bool *exited,
                             int *wait_status, sbx_err *err);

/* A command sbxsh ran itself (`history`) ended with status: $? for what follows. */
void line_exec_set_status(line_exec *x, int status);

/* The words of a line that is one simple command alone (no list, pipe, &, redirection
 * or assignment) whose words are all fixed text, into args; false (args empty) otherwise.
 * What sbxsh itself may run at its prompt is recognized this way (history, fc, exit). */
bool line_lone_command(const sh_parse *p, strvec *args);

/* Interactive mode with job control: an exit (eof: Ctrl-D at the prompt) while the
 * sandbox's shell has stopped jobs is refused once, as bash refuses it: prints bash's
 * "There are stopped jobs." and returns true (then $? is 1). Else false: go on and end. */
bool line_exec_exit_refused(line_exec *x, bool eof);

/* Does the prompt expand history (!!, !$): set -H in the sandbox's shell as last reported,
 * on in an interactive shell until it says otherwise (bash's default there). */
bool line_exec_histexpand(const line_exec *x);

/* The sandbox shell's jobs (running or stopped) after the last command: the prompt's \j. */
unsigned line_exec_jobs(const line_exec *x);

/* For completion: the names of the session shell's functions and aliases, and of its
 * variables, newline-separated (nothing before its shell has started). */
int line_exec_names(line_exec *x, strbuf *functions, strbuf *variables, sbx_err *err);
/* The PATH sandbox commands start with. */
const char *line_exec_sandbox_path(const line_exec *x);
/* Whether the sandbox's commands see file name m (as completion found it on the host:
 * relative to the cwd, absolute or ~/...); cd_arg: it is a cd's argument. Outside the code
 * directories below HOME, only what the views given to the scratch sandbox hold (and, for
 * cd, the directories a host cd takes), so that Tab offers what the sandbox has. */
bool line_exec_sandbox_sees(const line_exec *x, const char *m, bool cd_arg);

/* At a terminal: the keys typed while the last command ran that no program read (the next
 * command typed ahead), moved to out, for the prompt to read first as bash would. */
void line_exec_take_typeahead(line_exec *x, strbuf *out);

void line_exec_free(line_exec *x);

/* Ends the process the way the status says: exit(code), or for a command
 * killed by a signal, the same signal (so our parent sees what bash's parent
 * would). Only main() should call this. */
SBX_NORETURN void line_exit(int wait_status);

#endif
