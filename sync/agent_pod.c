/*
 * sbx-agent --connect SOCKET --start [--resume ID] [options]: the agent's end when every
 * host connection is a new process in the sandbox (a pods/exec of the Kubernetes backend).
 *
 * --start: when no agent answers on SOCKET, start one, detached (a new session, nobody's
 * child), as `sbx-agent --listen SOCKET options...`, and wait for it; so the first exec
 * starts the daemon and the later ones find it, with its manifest, running commands and
 * background processes, as `--listen` does locally. A lock beside the socket lets only one
 * of two racing execs start it.
 *
 * --resume ID: the exec's stdio carries a resumable stream (sync/resume.h), not the agent
 * protocol itself. Its pod-side end is a keeper, one per stream ID, detached too: it holds
 * the connection to the agent and what the host has not acknowledged, and listens on
 * SOCKET.ID. Each exec (the first, and each after a dropped WebSocket) only relays its
 * stdio to the keeper's socket; so a transport that drops loses no byte, and the command
 * under way goes on. A new attach replaces the old one; the keeper ends when the host says
 * CLOSE, when the agent drops it (another holder took over), or after KEEPER_IDLE_S with no
 * attach at all.
 */
#include "sync/agent.h"
#include "sync/resume.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/run.h"
#include "common/strbuf.h"
#include "common/strvec.h"
#include "common/util.h"

#define AGENT_START_WAIT_MS 10000
#define KEEPER_IDLE_S 300

static int sock_connect(const char *path)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    int fd;
    if (strlen(path) >= sizeof(sun.sun_path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

static int sock_listen(const char *path)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    mode_t old;
    if (fd < 0)
        return -1;
    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
    unlink(path);
    old = umask(077);
    if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 || listen(fd, 8) < 0) {
        int e = errno;
        umask(old);
        close(fd);
        errno = e;
        return -1;
    }
    umask(old);
    return fd;
}

/* Starts run detached from the exec (run.h): a new session, a double fork (nobody's
 * zombie, it outlives the exec), stdin /dev/null, stdout and stderr to the log beside the
 * socket (/dev/null when it cannot be opened). 0, or -1 with a message on stderr. */
static int start_detached(sbx_run *run, const char *log)
{
    int lg = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600), r;
    sbx_err err;
    pid_t pid;

    run->cwd_fd = -1;
    run->setsid = true;
    run->daemon = true;
    run->stdout_null = true;
    if (lg >= 0) {
        run->fds[run->nfds++] = (sbx_run_fd){ lg, 1 };
        run->fds[run->nfds++] = (sbx_run_fd){ lg, 2 };
    }
    r = sbx_run_start(run, &pid, NULL, &err);
    if (lg >= 0)
        close(lg);
    if (r < 0)
        fprintf(stderr, "sbx-agent: %s\n", err.msg);
    return r;
}

/* Connects to the agent on sock, starting `self --listen sock daemon_args...` first when
 * none answers (start). Returns the fd or -1 with a message on stderr. */
static int agent_fd(const char *self, const char *sock, bool start, char *const *daemon_args)
{
    int fd = sock_connect(sock);
    if (fd >= 0 || !start || (errno != ENOENT && errno != ECONNREFUSED)) {
        if (fd < 0)
            fprintf(stderr, "sbx-agent: cannot connect to %s: %s\n", sock, strerror(errno));
        return fd;
    }
    /* the agent's daemon: default signals but SIGHUP (the exec's end is not its) and
     * SIGPIPE (a peer gone is an error it handles), none of our fds */
    char *log = xasprintf("%s.log", sock);
    strvec argv = { 0 };
    sigset_t ign;
    sigemptyset(&ign);
    sigaddset(&ign, SIGHUP);
    sigaddset(&ign, SIGPIPE);
    strvec_push(&argv, self);
    strvec_push(&argv, "--listen");
    strvec_push(&argv, sock);
    strvec_pushv(&argv, daemon_args);
    sbx_run run = { .argv = argv.v, .keep_ignored = &ign };
    int r = start_detached(&run, log);
    strvec_clear(&argv);
    free(log);
    if (r < 0)
        return -1;
    for (int waited = 0; waited < AGENT_START_WAIT_MS; waited += 5) {
        if ((fd = sock_connect(sock)) >= 0)
            return fd;
        usleep(5000);
    }
    fprintf(stderr, "sbx-agent: the agent started on %s did not answer within %d s; see %s.log\n",
            sock, AGENT_START_WAIT_MS / 1000, sock);
    return -1;
}

/* ---- the keeper ------------------------------------------------------------------------ */

typedef struct keeper {
    int lfd, afd, gfd;          /* listening socket, the current attach, the agent */
    rs_stream rs;
    strbuf to_agent, to_attach;
    bool agent_eof;
    time_t alone_since;         /* no attach since */
} keeper;

static void keeper_drop_attach(keeper *k)
{
    if (k->afd >= 0)
        close(k->afd);
    k->afd = -1;
    strbuf_reset(&k->to_attach);
    k->alone_since = time(NULL);
}

/* Writes what it can of buf to fd (non-blocking); -1 when fd is gone. */
static int flush_some(int fd, strbuf *buf)
{
    while (buf->len) {
        ssize_t n = write(fd, buf->buf, buf->len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno == EAGAIN ? 0 : -1;
        }
        strbuf_remove(buf, 0, (size_t)n);
    }
    return 0;
}

static int keeper_loop(keeper *k)
{
    char buf[65536];
    for (;;) {
        struct pollfd p[3] = {
            { .fd = k->lfd, .events = POLLIN },
            { .fd = k->afd, .events = (short)((k->to_agent.len < RS_MAX_UNACKED ? POLLIN : 0) |
                                              (k->to_attach.len ? POLLOUT : 0)) },
            { .fd = k->agent_eof ? -1 : k->gfd,
              .events = (short)((rs_can_queue(&k->rs) ? POLLIN : 0) |
                                (k->to_agent.len ? POLLOUT : 0)) },
        };
        if (k->afd < 0 && time(NULL) - k->alone_since > KEEPER_IDLE_S)
            return 0;
        int np = poll(p, 3, 200);
        if (np < 0) {
            if (errno == EINTR)
                continue;
            return 1;
        }
        bool idle = np == 0;
        if (p[0].revents & POLLIN) {
            int fd = accept4(k->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
            if (fd >= 0) {
                /* a new exec: the old transport is dead or about to be */
                keeper_drop_attach(k);
                k->afd = fd;
                rs_new_transport(&k->rs, &k->to_attach);
                continue;
            }
        }
        if (k->afd >= 0 && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
            ssize_t n = read(k->afd, buf, sizeof(buf));
            const char *why = NULL;
            if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
                /* nothing */
            } else if (n <= 0) {
                keeper_drop_attach(k);
            } else if (rs_input(&k->rs, buf, (size_t)n, &k->to_agent, &why) < 0) {
                fprintf(stderr, "sbx-agent: keeper: %s\n", why);
                rs_close(&k->to_attach);
                flush_some(k->afd, &k->to_attach);
                return 1;
            }
        }
        if (k->to_agent.len && !k->agent_eof && flush_some(k->gfd, &k->to_agent) < 0)
            k->agent_eof = true;
        if (!k->agent_eof && (p[2].revents & (POLLIN | POLLHUP | POLLERR))) {
            ssize_t n = read(k->gfd, buf, sizeof(buf));
            if (n > 0)
                rs_queue(&k->rs, buf, (size_t)n);
            else if (n == 0 || (errno != EAGAIN && errno != EINTR))
                k->agent_eof = true;
        }
        if (k->rs.peer_closed && !k->to_agent.len)
            return 0;   /* the host is done: the agent sees its connection end */
        if (k->afd >= 0) {
            if (k->to_attach.len < RS_MAX_DATA * 4)
                rs_frame_out(&k->rs, &k->to_attach, RS_MAX_DATA * 4, idle);
            bool drained = k->rs.sent == k->rs.base + k->rs.unacked.len;
            if (k->agent_eof && drained && k->rs.peer_hello) {
                /* the agent dropped us (another holder took over, or it died): tell the
                 * host after the last bytes */
                rs_close(&k->to_attach);
                set_nonblock(k->afd, false);
                flush_some(k->afd, &k->to_attach);
                return 0;
            }
            if (flush_some(k->afd, &k->to_attach) < 0)
                keeper_drop_attach(k);
        } else if (k->agent_eof) {
            return 0;
        }
    }
}

static void run_keeper(int lfd, int gfd, uint64_t id, const char *path);

/* The keeper's process (run.h's child function, detached): our fds but the exec lock,
 * our signals but SIGHUP and SIGPIPE ignored. */
typedef struct keeper_start {
    int lfd, gfd, lk;
    uint64_t id;
    const char *path;
} keeper_start;

static int keeper_child(void *ctx)
{
    keeper_start *ks = ctx;

    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    if (ks->lk >= 0)
        close(ks->lk);
    run_keeper(ks->lfd, ks->gfd, ks->id, ks->path);
    return 0;
}

static void run_keeper(int lfd, int gfd, uint64_t id, const char *path)
{
    keeper k = { .lfd = lfd, .afd = -1, .gfd = gfd, .alone_since = time(NULL) };
    rs_init(&k.rs, id);
    strbuf_init(&k.to_agent, 0);
    strbuf_init(&k.to_attach, 0);
    set_nonblock(lfd, true);
    set_nonblock(gfd, true);
    int r = keeper_loop(&k);
    unlink(path);
    _exit(r);
}

int agent_pod_connect(const char *self, const char *sock, bool start, const char *resume_id,
                      char *const *daemon_args)
{
    signal(SIGPIPE, SIG_IGN);
    if (!resume_id) {
        int fd = agent_fd(self, sock, start, daemon_args);
        return fd < 0 ? 1 : agent_bridge_fd(fd);
    }
    char *end;
    errno = 0;
    uint64_t id = strtoull(resume_id, &end, 16);
    if (errno || *end || !*resume_id || strlen(resume_id) > 16) {
        fprintf(stderr, "sbx-agent: --resume wants the stream's id in hex\n");
        return 2;
    }
    char *kpath = xasprintf("%s.%s", sock, resume_id);
    int fd = sock_connect(kpath);
    if (fd < 0) {
        /* one exec at a time makes the keeper (and the agent) */
        char *lpath = xasprintf("%s.lock", sock);
        int lk = open(lpath, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        free(lpath);
        if (lk >= 0)
            flock(lk, LOCK_EX);
        fd = sock_connect(kpath);
        if (fd < 0) {
            int gfd = agent_fd(self, sock, start, daemon_args);
            int lfd = gfd < 0 ? -1 : sock_listen(kpath);
            if (gfd >= 0 && lfd < 0)
                fprintf(stderr, "sbx-agent: cannot listen on %s: %s\n", kpath, strerror(errno));
            if (lfd >= 0) {
                char *log = xasprintf("%s.log", sock);
                keeper_start ks = { lfd, gfd, lk, id, kpath };
                sbx_run run = { .fn = keeper_child, .ctx = &ks, .file = "the keeper",
                                .keep_fds = true, .sig_inherit = true };
                start_detached(&run, log);
                free(log);
                close(lfd);
                fd = sock_connect(kpath);
            }
            if (gfd >= 0)
                close(gfd);
        }
        if (lk >= 0)
            close(lk);
    }
    if (fd < 0) {
        fprintf(stderr, "sbx-agent: cannot reach the stream's keeper at %s: %s\n", kpath,
                strerror(errno));
        free(kpath);
        return 1;
    }
    free(kpath);
    return agent_bridge_fd(fd);
}
