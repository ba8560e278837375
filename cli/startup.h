/*
 * Startup files, as bash reads them, each where it can do its job:
 *
 *   - the sandbox's HOME holds the user's own ~/.bashrc, ~/.bash_profile, ~/.bash_login,
 *     ~/.profile, ~/.bash_aliases, ~/.bash_logout and the home-directory files they source,
 *     filtered of secrets (sync/rcfile.h), put there by the sync connection as ~/.gitconfig
 *     is. So every bash the sandbox runs reads the person's files, as their bash would:
 *     the sandbox's login bash (sbxsh -l -c, and a login sbxsh's session shell) its profile,
 *     Claude Code's snapshot script the ~/.bashrc it sources, the session's shell the
 *     ~/.bashrc below.
 *   - a login shell at a terminal (-l, --login, argv[0] starting with '-': login(1), su -):
 *     the host's profile files (/etc/profile, then the first of ~/.bash_profile,
 *     ~/.bash_login, ~/.profile), run by the host's bash, and the environment they export
 *     becomes sbxsh's own. They set up the person's environment on the host (PATH, the
 *     locale, SSH_AUTH_SOCK for host git) and often hold secrets, so they never run in the
 *     sandbox, which sees of that environment only what session_sandbox_env lets through.
 *     --noprofile skips them. (The sandbox's bash is a login bash too, and reads the
 *     filtered copies of the same files there, for the shell's functions and aliases: a
 *     profile's output shows twice.) A non-interactive `sbxsh -l -c` runs no host profile:
 *     an agent calls it for every command, from an environment that is already a login's
 *     (its sandbox bash, a login bash, still reads the filtered copies).
 *   - every interactive shell: ~/.sbxshrc (or --rcfile FILE), a host file, run as typed
 *     commands in the session (so in the sandbox's shell, where variables, functions,
 *     PS1 and HISTCONTROL live; a git network command in it runs on the host), before the
 *     first prompt; then, for a non-login shell without --rcfile, the sandbox's ~/.bashrc
 *     (the user's, filtered, unless the sandbox has written over it since), sourced in the
 *     sandbox's shell (which is not interactive: a .bashrc that returns when $- has no i,
 *     as Debian's, does nothing). --norc skips both.
 */
#ifndef SBX_CLI_STARTUP_H
#define SBX_CLI_STARTUP_H

#include "cli/line.h"
#include "cli/options.h"

/* Before the session is set up: the host's profile files' environment, for an interactive
 * login shell. */
void startup_login_env(const cli_options *o);

/* The text to run before the first prompt (rc file and the sandbox's ~/.bashrc), or NULL;
 * *name is what messages call it. Sets *sandbox_bashrc when the sandbox's ~/.bashrc is to
 * be sourced lazily, when its shell starts (no rc text to run it after). */
char *startup_rc_text(const cli_options *o, const char **name, bool *sandbox_bashrc);

#endif
