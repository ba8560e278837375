/*
 * sync-run: a minimal host for tests: syncs code directories with an sbx-agent and runs
 * commands there (`bash -c COMMAND`, one after the other on one connection), relaying stdin,
 * stdout and stderr; exits with the last command's status (as bash would report it), or 125
 * when sync or the agent fails. Warnings go to stderr.
 *
 *   sync-run --code DIR [--code DIR2] [--state FILE] [--stats]
 *            (--agent 'SHELL COMMAND' | --socket PATH) -- COMMAND [COMMAND...]
 *
 * --agent runs the agent (through /bin/sh -c) on pipes; --socket connects to an agent
 * listening there. --stats prints the connection's counters to stderr at the end.
 */
#include "sync/conn.h"
#include "common/strvec.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_warning(void *ctx, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "sync-run: warning: %s\n", msg);
}

static void on_error(void *ctx, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "sync-run: %s\n", msg);
}

static const sync_conn_ops ops = { .warning = on_warning, .error = on_error };

int main(int argc, char **argv)
{
    strvec codes = STRVEC_INIT;
    const char *state = NULL, *agent_cmd = NULL, *sock = NULL;
    char **cmds = NULL;
    bool stats = false;
    sync_config cfg = { 0 };
    sync_host *host;
    sync_conn *conn;
    sbx_err err;
    int rfd, wfd;
    pid_t agent = 0;
    int code;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--code") && i + 1 < argc) {
            strvec_push(&codes, argv[++i]);
        } else if (!strcmp(argv[i], "--state") && i + 1 < argc) {
            state = argv[++i];
        } else if (!strcmp(argv[i], "--agent") && i + 1 < argc) {
            agent_cmd = argv[++i];
        } else if (!strcmp(argv[i], "--socket") && i + 1 < argc) {
            sock = argv[++i];
        } else if (!strcmp(argv[i], "--stats")) {
            stats = true;
        } else if (!strcmp(argv[i], "--") && i + 1 < argc) {
            cmds = argv + i + 1;
            break;
        } else {
            fprintf(stderr, "usage: sync-run --code DIR [--state F] [--stats] "
                    "(--agent CMD | --socket PATH) -- COMMAND...\n");
            return 2;
        }
    }
    if (!codes.n || !cmds || !!agent_cmd == !!sock) {
        fprintf(stderr, "sync-run: need --code, one of --agent/--socket, and a command\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    cfg.code_dirs = (const char *const *)codes.v;
    cfg.state_file = state;
    if (sync_host_new(&cfg, &host, &err) < 0) {
        fprintf(stderr, "sync-run: %s\n", err.msg);
        return 125;
    }
    if (agent_cmd) {
        int to[2], from[2];
        if (pipe2(to, O_CLOEXEC) < 0 || pipe2(from, O_CLOEXEC) < 0)
            return 125;
        agent = fork();
        if (agent == 0) {
            dup2(to[0], 0);
            dup2(from[1], 1);
            execl("/bin/sh", "sh", "-c", agent_cmd, (char *)NULL);
            _exit(127);
        }
        close(to[0]);
        close(from[1]);
        rfd = from[0];
        wfd = to[1];
    } else {
        struct sockaddr_un sun = { .sun_family = AF_UNIX };
        rfd = wfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", sock);
        /* An agent that is starting binds its socket a moment before it listens: refused
         * then, as the local backend does, try again (bounded: 20 s). */
        int tries = 0;
        while (connect(rfd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
            if ((errno != ECONNREFUSED && errno != ENOENT) || ++tries > 400) {
                perror("sync-run: connect");
                return 125;
            }
            usleep(50000);
        }
    }
    if (sync_conn_open(host, rfd, wfd, &ops, NULL, 10000, &conn, &err) < 0) {
        fprintf(stderr, "sync-run: %s\n", err.msg);
        return 125;
    }
    code = 0;
    for (uint32_t n = 0; cmds[n] && code != 125; n++) {
        const char *av[] = { "bash", "-c", cmds[n], NULL };
        extern char **environ;
        sync_fd_spec fds[] = { { 0, SYNC_FD_IN }, { 1, SYNC_FD_OUT }, { 2, SYNC_FD_OUT } };
        int hfds[] = { 0, 1, 2 };
        sync_run_req req = { .exe = "bash", .argv = av, .env = (const char *const *)environ,
                             .cwd = codes.v[0], .fds = fds, .nfds = 3 };
        sync_exit_status st;
        if (sync_conn_run_wait(conn, n + 1, &req, hfds, &st, &err) < 0) {
            fprintf(stderr, "sync-run: %s\n", err.msg);
            code = 125;
        } else if (st.kind == SYNC_SIGNALED) {
            code = 128 + st.code;
        } else {
            code = WEXITSTATUS(st.wait_status);
            if (st.kind == SYNC_SPAWN_FAILED)
                fprintf(stderr, "sync-run: %s\n", st.message);
        }
    }
    if (stats) {
        sync_conn_stats s;
        sync_conn_stats_get(conn, &s);
        fprintf(stderr, "stats: resumed=%d pushes=%llu push_entries=%llu pulls=%llu "
                "pull_entries=%llu full_scans=%llu\n", sync_conn_agent(conn)->resumed,
                (unsigned long long)s.pushes, (unsigned long long)s.push_entries,
                (unsigned long long)s.pulls, (unsigned long long)s.pull_entries,
                (unsigned long long)s.full_scans);
    }
    if (sync_host_save(host, &err) < 0)
        fprintf(stderr, "sync-run: %s\n", err.msg);
    sync_conn_free(conn);
    close(rfd);
    if (wfd != rfd)
        close(wfd);
    if (agent)
        waitpid(agent, NULL, 0);
    sync_host_free(host);
    strvec_clear(&codes);
    return code;
}
