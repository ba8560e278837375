/*
 * Command-line options, parsed as bash parses its own.
 *
 * bash's rules: GNU long options come first; then single-letter options,
 * which may be clustered (-lc, -ec); -o NAME / +o NAME and -O NAME / +O NAME
 * take the next argument; `-` or `--` ends the options. With -c, the command
 * string is the first non-option argument, the next one becomes $0 and the
 * rest $1...; without -c, the first argument is a script file (unless -s),
 * else commands come from stdin.
 *
 * Options that change how bash runs commands (-e, -u, -x, -o pipefail,
 * -O extglob, -l, --norc, ...) are kept, in order, in bash_args so the
 * sandbox's bash gets exactly what sbxsh was given.
 */
#ifndef SBX_CLI_OPTIONS_H
#define SBX_CLI_OPTIONS_H

#include "common/strvec.h"
#include "common/util.h"

#include <stdbool.h>

typedef enum sh_input_mode {
    SH_INPUT_COMMAND,     /* -c STRING */
    SH_INPUT_SCRIPT,      /* a script file */
    SH_INPUT_STDIN,       /* commands from stdin, not a terminal (or -s) */
    SH_INPUT_INTERACTIVE, /* a person at a terminal, or -i */
} sh_input_mode;

typedef enum sh_action {
    SH_ACT_RUN,           /* run commands (the default) */
    SH_ACT_CHECK,         /* -n: syntax check only, as bash -n */
    SH_ACT_AST,           /* --ast: print the syntax tree as JSON */
    SH_ACT_ROUTE,         /* --route: print where each part would run */
    SH_ACT_HELP,
    SH_ACT_VERSION,
} sh_action;

typedef struct cli_options {
    const char *argv0;        /* as sbxsh was invoked */
    const char *progname;     /* basename of argv0, without a leading '-' */
    sh_input_mode mode;
    sh_action action;
    bool json;                /* --json (with --route) */
    bool login;               /* -l, --login, or argv0 starting with '-' */
    bool interactive_flag;    /* -i */
    bool stdin_flag;          /* -s */
    bool extglob;             /* after -O/+O extglob */
    bool errexit;             /* -e / -o errexit, as given on the command line */
    const char *command;      /* -c: the command string */
    const char *script;       /* SH_INPUT_SCRIPT: the file */
    const char *dollar0;      /* $0: -c's first extra argument, the script, or argv0 */
    strvec positional;        /* $1, $2, ... */
    strvec bash_args;         /* options to hand the sandbox's bash, in order */
    const char *session;      /* --session NAME */
    bool norc, noprofile;     /* --norc, --noprofile */
    const char *rcfile;       /* --rcfile FILE (--init-file FILE) */
    bool error_without_usage; /* after a parse error: bash prints no usage for this one */
} cli_options;

void cli_options_init(cli_options *o);
void cli_options_release(cli_options *o);

/* Parses argv. On a usage error returns -1 with err->msg in bash's words
 * (e.g. "-Z: invalid option"); the caller prints "sbxsh: <msg>" and the usage
 * and exits 2, as bash does. */
int cli_options_parse(cli_options *o, int argc, char **argv, bool stdin_is_tty, sbx_err *err);
/* stdin_is_tty: stdin and stderr are both terminals (bash's test for interactive). */

/* The usage text (--help), and the short usage printed after an error. */
void cli_options_print_help(const char *progname);
void cli_options_print_usage(const char *progname);

#endif
