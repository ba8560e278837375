/*
 * sbxsh at a terminal, as bash's interactive mode feels: the prompt (PS1 and PS2 with
 * bash's escapes; cli/prompt.h), readline with its history in
 * $XDG_STATE_HOME/sbxsh/history (HISTSIZE, HISTFILESIZE, HISTCONTROL, HISTIGNORE; appended
 * at exit, as bash with histappend, so sessions share it), history expansion (`!!`, `!$`,
 * `!n`, `^a^b`), the `history` builtin, Tab completion, Ctrl-C at the prompt, the signals
 * bash ignores there, and the keys typed ahead while a command ran.
 */
#ifndef SBX_CLI_INTERACTIVE_H
#define SBX_CLI_INTERACTIVE_H

#include "cli/line.h"
#include "cli/options.h"
#include "common/strbuf.h"
#include "shell/parse.h"

typedef struct interactive interactive;

interactive *interactive_new(const cli_options *o, line_exec *x);
/* Ends the session: appends this session's history to the file (then cut to
 * HISTFILESIZE lines). */
void interactive_free(interactive *ia);

/* Reads one line (PS2 when continuation) with history expansion done, and appends it with
 * its newline to buf. Returns 1, or 0 at end of input (Ctrl-D, a hung-up terminal). A line
 * whose expansion failed or only printed (`!x:p`) adds only a newline. */
int interactive_read(interactive *ia, bool continuation, strbuf *buf);

/* The command the lines read since the last PS1 make is complete (or wrong): it goes into
 * the history once, as bash's cmdhist does (one entry for a multi-line command). */
void interactive_command_seen(interactive *ia);

/* `history` and `fc` as bash has them, run by sbxsh itself when p is that one simple
 * command (words without expansions, no redirection): the history is the person's, on the
 * host, and never the sandbox's to read (fc's editor runs on the host too: see
 * interactive.c). Returns true when it ran (its status set with line_exec_set_status);
 * false for anything else, which runs as usual. */
bool interactive_builtin(interactive *ia, const sh_parse *p);

/* p is a line the person typed (or sbxsh's own startup file): the assignments in it to
 * PROMPT_COMMAND and the history's settings (HISTSIZE, HISTFILESIZE, HISTCONTROL,
 * HISTIGNORE) are noted as the host's values of them, the only ones the host obeys (the
 * sandbox shell's report of them is its own to choose). ia may be NULL (not interactive). */
void interactive_note_typed(interactive *ia, const sh_parse *p);

/* PROMPT_COMMAND as the person last assigned it, in the report's form (each element
 * followed by \001), or NULL when they did not (or not as fixed text). */
const char *interactive_typed_prompt_command(const interactive *ia);

/* PROMPT_COMMAND is about to run: it has no history entry (so an fc in it sees every
 * entry as the commands before it, and drops none). */
void interactive_prompt_command_starts(interactive *ia);

/* What `fc` (-s, or the editor) has the shell run next, as if typed: appended to text.
 * Returns false when there is nothing. */
bool interactive_take_rerun(interactive *ia, strbuf *text);

/* A command of that text is complete: echoed on stderr and added to the history, as bash
 * does with what fc runs (it counts as part of the fc for \#). */
void interactive_command_replayed(interactive *ia, const char *text, size_t len);

/* Saved history and whether SIGHUP ended the session (main then dies of it, as bash). */
bool interactive_hung_up(const interactive *ia);

#endif
