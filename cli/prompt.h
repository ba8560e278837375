/*
 * bash's prompt strings (PS1, PS2): the backslash escapes, expanded here on the host, so that
 * a prompt needs no sandbox (the first one shows before any sandbox starts) and \w follows
 * every cd at once. A prompt that also needs the shell's expansions ($VAR, $(cmd), `cmd`)
 * is expanded by the sandbox's bash instead (${PS1@P}, cli/line.c), as its variables live
 * there.
 */
#ifndef SBX_CLI_PROMPT_H
#define SBX_CLI_PROMPT_H

#include "common/strbuf.h"

#include <stdbool.h>
#include <time.h>

typedef struct prompt_ctx {
    const char *user;        /* \u */
    const char *host;        /* \H; \h is up to its first '.' */
    const char *cwd;         /* \w, \W */
    const char *home;        /* \w and \W show it as ~ */
    const char *shell;       /* \s: the basename of $0 */
    const char *version;     /* \v */
    const char *release;     /* \V */
    const char *tty;         /* \l: the terminal's name, basename */
    unsigned jobs;           /* \j */
    unsigned history_number; /* \! */
    unsigned command_number; /* \# */
    bool root;               /* \$ is # */
    time_t now;              /* \t \T \@ \A \d \D{} */
} prompt_ctx;

/* Appends ps with bash's escapes expanded: \a \d \D{fmt} \e \h \H \j \l \n \r \s \t \T \@
 * \A \u \v \V \w \W \! \# \$ \NNN (octal) \\, and \[ \] as readline's markers around
 * characters that take no room (RL_PROMPT_START_IGNORE, RL_PROMPT_END_IGNORE). Anything
 * else after a backslash is kept as written, as bash does. Then, as bash's default
 * promptvars does, the result is read as if in double quotes: a backslash before $ ` " \
 * goes (so '\\"' shows ", '\"' shows "), one before a newline goes with it. */
void prompt_expand(const char *ps, const prompt_ctx *c, strbuf *out);

/* Does ps need the shell's own expansions: a $ or ` that no backslash escapes? */
bool prompt_needs_shell(const char *ps);

/* Appends to out what of a prompt (expanded; the sandbox may have chosen it) may reach the
 * terminal: text, SGR (colours) and titles (OSC 0, 1, 2 without controls), with readline's
 * \001 and \002 markers; never the clipboard (OSC 52), a query whose answer the terminal
 * would type into the line (DSR, DA, DECRQSS), cursor movement or any other sequence. */
void prompt_filter(const char *ps, size_t len, strbuf *out);

#endif
