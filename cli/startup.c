/*
 * Startup files (startup.h): startup_login_env() runs the host's profile files in the host's
 * bash for a login shell at a terminal and takes the environment they export as sbxsh's own;
 * startup_rc_text() gives the text of ~/.sbxshrc (or --rcfile) to run before the first prompt,
 * or says the sandbox's ~/.bashrc is to be sourced there. Calls common/ (strbuf, util); cli/
 * may call router/, shell/, session/ and common/, never a backend nor sync/.
 */
#include "cli/startup.h"
#include "common/run.h"
#include "common/strbuf.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The line that sources the sandbox's ~/.bashrc, in the sandbox's shell. */
#define SANDBOX_BASHRC "if [ -r ~/.bashrc ]; then . ~/.bashrc; fi\n"

/* Variables of the profile's run that are bash's own, not the person's environment. */
static bool not_imported(const char *name, size_t len)
{
    static const char *const skip[] = { "_", "SHLVL", "PWD", "OLDPWD", "BASH_EXECUTION_STRING" };
    for (size_t i = 0; i < ARRAY_SIZE(skip); i++)
        if (strlen(skip[i]) == len && !memcmp(skip[i], name, len))
            return true;
    return false;
}

void startup_login_env(const cli_options *o)
{
    /* what the profile files print reaches the terminal, as at a bash login (stdin,
     * stdout, stderr, signals and fds ours); the environment comes on fd 3 */
    char *argv[] = { "-bash", "-c", "env -0 >&3", NULL };
    sbx_run run = { .argv = argv, .file = "bash", .path_search = true, .cwd_fd = -1,
                    .stdin_inherit = true, .stderr_to = SBX_RUN_ERR_INHERIT,
                    .keep_fds = true, .sig_inherit = true, .capture_fd = 3,
                    .max = (size_t)16 << 20 };
    strbuf env = STRBUF_INIT;
    sbx_err err;
    int status;

    if (!o->login || o->noprofile || o->mode != SH_INPUT_INTERACTIVE)
        return;
    fflush(NULL);
    if (sbx_run_capture(&run, &env, &status, &err) < 0 || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
        strbuf_release(&env);
        return;
    }
    for (size_t at = 0; at < env.len;) {
        const char *e = env.buf + at, *eq = memchr(e, '=', env.len - at);
        size_t len = strnlen(e, env.len - at);
        if (eq && eq > e && (size_t)(eq - e) < len && !not_imported(e, (size_t)(eq - e))) {
            char *name = xstrndup(e, (size_t)(eq - e));
            setenv(name, eq + 1, 1);
            free(name);
        }
        at += len + 1;
    }
    strbuf_release(&env);
}

char *startup_rc_text(const cli_options *o, const char **name, bool *sandbox_bashrc)
{
    const char *home = getenv("HOME");
    char *path = NULL, *text = NULL;
    size_t len = 0;
    sbx_err err;
    strbuf out = STRBUF_INIT;

    *sandbox_bashrc = false;
    *name = NULL;
    if (o->mode != SH_INPUT_INTERACTIVE || o->norc)
        return NULL;
    if (o->rcfile)
        path = xstrdup(o->rcfile);
    else if (home && *home)
        path = xasprintf("%s/.sbxshrc", home);
    if (path && read_file(path, (size_t)16 << 20, &text, &len, &err) == 0) {
        strbuf_add(&out, text, len);
        if (len && text[len - 1] != '\n')
            strbuf_addch(&out, '\n');
        free(text);
        *name = o->rcfile ? o->rcfile : "~/.sbxshrc";
    } else if (path && o->rcfile) {
        /* bash says nothing of a missing ~/.bashrc, but names a missing --rcfile */
        fprintf(stderr, "%s: %s: %s\n", o->progname, o->rcfile, strerror(errno));
    }
    free(path);
    /* bash: a login shell reads no rc file of its own accord; --rcfile replaces ~/.bashrc */
    if (!o->login && !o->rcfile) {
        if (!out.len) {
            *sandbox_bashrc = true;      /* nothing to run now: when the shell starts */
            strbuf_release(&out);
            return NULL;
        }
        strbuf_addstr(&out, SANDBOX_BASHRC);
    }
    if (!out.len) {
        strbuf_release(&out);
        return NULL;
    }
    if (!*name)
        *name = "~/.sbxshrc";
    return strbuf_detach(&out, NULL);
}
