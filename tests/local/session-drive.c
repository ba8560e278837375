/*
 * Drives the client library (session/session.h) the way the front end's
 * stdin mode does, so that tests/local/session.t can check it without the
 * front end: a persistent bash in the sandbox reads its script from fd 0
 * (an API input), reports on fd 199 (an API output), and relays 1 and 2.
 *
 *   session-drive CMD...   runs each CMD in the one shell, in order; after
 *                          each, prints "status N" from the shell's report
 *                          (or "no report" when the shell ended) and does a
 *                          sync round; then ends the shell and prints
 *                          "exit N". The commands' stdout and stderr both go
 *                          to our stderr, so that stdout holds only what the
 *                          API reads (the two are not ordered with each
 *                          other: separate pipes). A CMD "@wait PATH" waits
 *                          (up to 60 s) for PATH to exist on the host, then
 *                          syncs, so a test can change the host in between.
 *
 * The session comes from the environment (AGENT_SANDBOX_*), as for sbx.
 */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/strbuf.h"
#include "session/config.h"
#include "session/session.h"

static int fail(const char *what, const sbx_err *err)
{
    fprintf(stderr, "session-drive: %s: %s\n", what, err->msg);
    return 125;
}

int main(int argc, char **argv)
{
    sbx_config cfg;
    sbx_session *s;
    sbx_err err;
    sbx_exit st;
    strvec env = STRVEC_INIT;
    char cwd[4096];

    if (session_config_load(&cfg, NULL, &err) < 0)
        return fail("config", &err);
    if (session_open(&cfg, NULL, &s, &err) < 0)
        return fail("open", &err);
    if (!getcwd(cwd, sizeof(cwd)))
        return 125;
    session_sandbox_env(&cfg, false, &env);
    sbx_fd_map fds[] = {
        { 0, SBX_FD_API_IN, -1 },
        { 1, SBX_FD_RELAY_OUT, 2 },
        { 2, SBX_FD_RELAY_OUT, 2 },
        { 199, SBX_FD_API_OUT, -1 },
    };
    sbx_command cmd = {
        .exe = "bash",
        .argv = (const char *[]){ "bash", "-s", NULL },
        .env = (const char *const *)env.v,
        .cwd = cwd,
        .fds = fds,
        .nfds = 4,
        .forward_signals = true,
    };
    if (session_start(s, &cmd, &err) < 0)
        return fail("start", &err);
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "@wait ", 6)) {
            for (int k = 0; k < 1200 && access(argv[i] + 6, F_OK) < 0; k++)
                usleep(50000);
            if (session_sync(s, &err) < 0)
                return fail("sync", &err);
            continue;
        }
        strbuf script = STRBUF_INIT, rec = STRBUF_INIT;
        /* The command, then its status as a record on fd 199. */
        strbuf_addf(&script, "%s\nprintf 'status %%d\\n' $? >&199\n", argv[i]);
        if (session_write(s, 0, script.buf, script.len, &err) < 0)
            return fail("write", &err);
        int r = session_read_record(s, 199, '\n', &rec, &err);
        if (r < 0)
            return fail("read", &err);
        printf("%s", r ? rec.buf : "no report\n");
        fflush(stdout);
        strbuf_release(&script);
        strbuf_release(&rec);
        if (r && session_sync(s, &err) < 0)
            return fail("sync", &err);
    }
    if (session_close_fd(s, 0, &err) < 0 || session_wait(s, &st, &err) < 0)
        return fail("wait", &err);
    printf("exit %d\n", WIFEXITED(st.wait_status) ? WEXITSTATUS(st.wait_status)
                                                  : 128 + WTERMSIG(st.wait_status));
    session_close(s);
    strvec_clear(&env);
    session_config_free(&cfg);
    return 0;
}
