/* sbx-agent's event loop: the protocol, commands and their fds, sync rounds. See agent.h. */
#include "sync/agent.h"
#include "sync/delta.h"
#include "sync/gitpolicy.h"
#include "sync/manifest.h"
#include "sync/safefs.h"
#include "sync/wire.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define OUT_LOW (256u * 1024)
#define OUT_HIGH (1024u * 1024)
#define READ_CHUNK (64u * 1024)
#define CREDIT_BATCH (SYNC_INPUT_WINDOW / 4)
#define SAVE_INTERVAL_NS (5LL * 1000000000)

enum chan_state { CH_RUNNING, CH_DRAINING, CH_FINAL, CH_DONE };

typedef struct achan_fd {
    uint16_t child_fd;
    bool out;
    int fd;               /* our end, or -1 */
    uint32_t credit;      /* out: bytes we may still send */
    uint64_t drain_left;  /* out, after the exit: bytes to read before EXIT */
    bool pty;             /* the terminal's master (a tty command's output) */
    int64_t drain_until;  /* after the exit: read until EOF/EIO or this time (ns) */
    int64_t drain_cap;    /* after the exit: drain_until never moves past this (ns) */
    uint64_t barrier_left;/* out: bytes the pipe held when a SYNC came, to send before
                             its SYNC_DONE */
    strbuf in;            /* in: bytes for the child */
    size_t in_off;
    bool in_eof;
    uint32_t in_done;     /* in: written to the child, not yet credited back */
} achan_fd;

typedef struct achan {
    uint32_t id;
    pid_t pid;
    enum chan_state state;
    bool orphan;          /* its host went away: everything is discarded */
    bool pull;
    bool tty;
    int status;
    int spawn_errno;
    char spawn_msg[256];
    size_t stderr_at;     /* 1 + the index in fds of the pipe carrying its fd 2, or 0 */
    size_t nfds;
    achan_fd fds[WIRE_MAX_FDS + 2];
} achan;

typedef struct final {
    bool is_exit;
    uint32_t chan;        /* EXIT */
    uint64_t id;          /* SYNC_DONE */
    bool scan;
} final;

typedef struct journal_ent {
    uint64_t seq;
    uint16_t root;
    uint8_t type;
    char *path;
    size_t len;
} journal_ent;

typedef struct agent {
    const agent_opts *o;
    mf_tree *tree;
    apply_rx *rx;
    uint64_t pair_id, applied_push_seq, pull_seq;
    uint64_t config_id;
    bool dirty;
    int64_t last_save;
    journal_ent *journal;
    size_t njournal, ajournal;

    int in_fd, out_fd;    /* the host, or -1 */
    bool hello_seen;
    strbuf in;
    size_t in_off;
    strbuf out;
    size_t out_off;
    delta_tx tx;
    bool tx_active;
    final *barred;        /* SYNCs waiting for their output barrier (see sync_barrier) */
    size_t nbarred, abarred;
    final *finals;        /* waiting for the next scan */
    size_t nfinals, afinals;
    final *sending;       /* finals of the delta being sent */
    size_t nsending, asending;

    achan **chans;
    size_t nchans, achans;
    int listen_fd;
    int64_t idle_since;
    bool quit;
    bool net_noticed;     /* the no-network notice reached a command (net_notice) */
} agent;

static int sig_pipe[2] = { -1, -1 };

static void on_sigchld(int sig)
{
    int saved = errno;
    ssize_t r = write(sig_pipe[1], "c", 1);
    (void)r;
    (void)sig;
    errno = saved;
}

static void on_term(int sig)
{
    int saved = errno;
    ssize_t r = write(sig_pipe[1], "t", 1);
    (void)r;
    (void)sig;
    errno = saved;
}

static void agent_warn(void *ctx, const char *msg)
{
    agent *a = ctx;
    if (a->out_fd < 0)
        return;
    wire_frame_raw(&a->out, WIRE_WARN, 0, 0, msg, strnlen(msg, SYNC_MAX_TEXT));
}

static void warnf(agent *a, const char *fmt, ...) SBX_PRINTF(2, 3);
static void warnf(agent *a, const char *fmt, ...)
{
    strbuf sb = STRBUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    strbuf_vaddf(&sb, fmt, ap);
    va_end(ap);
    agent_warn(a, sb.buf);
    strbuf_release(&sb);
}

/* ---- state ------------------------------------------------------------------------------ */

static void save_state(agent *a, bool force)
{
    sbx_err err;
    int64_t now = mf_now_ns();
    if (!a->o->state_file || !a->tree || !a->dirty)
        return;
    if (!force && now - a->last_save < SAVE_INTERVAL_NS)
        return;
    if (mf_save(a->tree, a->o->state_file, a->pair_id, a->applied_push_seq, a->pull_seq,
                &err) < 0)
        fprintf(stderr, "sbx-agent: %s\n", err.msg);
    a->dirty = false;
    a->last_save = now;
}

static void journal_prune(agent *a, uint64_t upto)
{
    size_t k = 0;
    for (size_t i = 0; i < a->njournal; i++) {
        if (a->journal[i].seq <= upto)
            free(a->journal[i].path);
        else
            a->journal[k++] = a->journal[i];
    }
    a->njournal = k;
}

/* ---- channels --------------------------------------------------------------------------- */

static achan *find_chan(agent *a, uint32_t id)
{
    for (size_t i = 0; i < a->nchans; i++)
        if (a->chans[i]->id == id && !a->chans[i]->orphan && a->chans[i]->state != CH_DONE)
            return a->chans[i];
    return NULL;
}

static achan_fd *find_fd(achan *ch, unsigned fd, bool out)
{
    for (size_t i = 0; ch && i < ch->nfds; i++)
        if (ch->fds[i].child_fd == fd && ch->fds[i].out == out)
            return &ch->fds[i];
    return NULL;
}

static void close_fd(achan_fd *f)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    strbuf_release(&f->in);
    f->in_off = 0;
}

/* After EXIT (or when its host is gone): output is read and dropped, input closed. */
static void chan_discard(achan *ch)
{
    ch->state = CH_DONE;
    for (size_t i = 0; i < ch->nfds; i++)
        if (!ch->fds[i].out)
            close_fd(&ch->fds[i]);
}

static void free_chan_at(agent *a, size_t i)
{
    achan *ch = a->chans[i];
    for (size_t k = 0; k < ch->nfds; k++)
        close_fd(&ch->fds[k]);
    free(ch);
    a->chans[i] = a->chans[--a->nchans];
}

static void queue_final(agent *a, const final *f)
{
    XGROW(a->finals, a->afinals, a->nfinals + 1);
    a->finals[a->nfinals++] = *f;
}

static void send_exit(agent *a, achan *ch)
{
    wire_exit x = { 0 };
    if (ch->spawn_errno) {
        x.kind = 2;
        x.code = ch->spawn_errno;
        x.message = ch->spawn_msg;
        x.message_len = strlen(ch->spawn_msg);
    } else if (WIFSIGNALED(ch->status)) {
        x.kind = 1;
        x.code = WTERMSIG(ch->status);
        x.core = WCOREDUMP(ch->status) ? 1 : 0;
    } else {
        x.kind = 0;
        x.code = WEXITSTATUS(ch->status);
    }
    wire_put_exit(&a->out, ch->id, &x);
    chan_discard(ch);
}

/*
 * A SYNC is also an output barrier: whatever the commands' output pipes hold
 * when it arrives goes to the host before its SYNC_DONE. The persistent
 * shell writes a command's output, then its status report; once the host has
 * the report and asks for a SYNC, the output before the report is in the
 * pipes, and this puts it ahead of SYNC_DONE, so the front end can print what
 * comes next in order.
 */
static void sync_barrier(agent *a, const final *f)
{
    for (size_t i = 0; i < a->nchans; i++) {
        achan *ch = a->chans[i];
        if (ch->orphan || (ch->state != CH_RUNNING && ch->state != CH_DRAINING))
            continue;
        for (size_t k = 0; k < ch->nfds; k++) {
            achan_fd *fd = &ch->fds[k];
            int avail = 0;
            if (!fd->out || fd->fd < 0)
                continue;
            if (ioctl(fd->fd, FIONREAD, &avail) < 0 || avail < 0)
                avail = 0;
            if ((uint64_t)avail > fd->barrier_left)
                fd->barrier_left = (uint64_t)avail;
        }
    }
    XGROW(a->barred, a->abarred, a->nbarred + 1);
    a->barred[a->nbarred++] = *f;
}

/* SYNCs whose barrier is passed go on to the scan, in the order they came. */
static void release_barred(agent *a)
{
    if (!a->nbarred)
        return;
    for (size_t i = 0; i < a->nchans; i++) {
        achan *ch = a->chans[i];
        for (size_t k = 0; k < ch->nfds; k++)
            if (ch->fds[k].out && ch->fds[k].fd >= 0 && ch->fds[k].barrier_left &&
                !ch->orphan)
                return;
    }
    for (size_t i = 0; i < a->nbarred; i++)
        queue_final(a, &a->barred[i]);
    a->nbarred = 0;
}

/* After the main process exits, its output is read until every writer is gone (EOF, or
 * EIO on a pty): a process substitution (`> >(tac)`) or a background job (`echo x &`)
 * may write after the shell has exited, and bash's caller sees those bytes. A background
 * process that keeps the output open (a server started with `&`) must not hold the
 * command's return, though: the drain ends after OUT_QUIET_NS without a byte, and in any
 * case OUT_DRAIN_MAX_NS after the exit while bytes keep coming. While the host is behind
 * (no credit), our wait is not the writer's silence: the deadline moves with it, and the
 * cap does not apply (what the pipe holds must all arrive). The usual command has no
 * writer left at its exit and ends at EOF at once. A pty is different too: what the child
 * wrote last may still be on its way to the master (the kernel moves it in a worker), so
 * FIONREAD could say 0 too early; reading until EIO covers that. */
#define OUT_QUIET_NS (100 * 1000000LL)
#define OUT_DRAIN_MAX_NS (2000 * 1000000LL)

static void chan_exited(agent *a, achan *ch, int status)
{
    int64_t now = mf_now_ns();
    (void)a;
    ch->status = status;
    ch->state = CH_DRAINING;
    for (size_t i = 0; i < ch->nfds; i++) {
        achan_fd *f = &ch->fds[i];
        if (!f->out || f->fd < 0)
            continue;
        f->drain_left = UINT64_MAX;
        f->drain_until = now + OUT_QUIET_NS;
        f->drain_cap = now + OUT_DRAIN_MAX_NS;
    }
}

static void reap(agent *a)
{
    for (;;) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid <= 0) {
            if (pid < 0 && errno == EINTR)
                continue;
            break;
        }
        for (size_t i = 0; i < a->nchans; i++) {
            achan *ch = a->chans[i];
            if (ch->pid != pid)
                continue;
            ch->pid = 0;
            if (ch->orphan || ch->state != CH_RUNNING)
                chan_discard(ch);
            else
                chan_exited(a, ch, status);
            break;
        }
        /* Anything else: a background process or an orphan we adopted. */
    }
}

/* Channels whose drain is complete get their EXIT queued (after a scan when asked). */
static void progress_channels(agent *a)
{
    for (size_t i = 0; i < a->nchans;) {
        achan *ch = a->chans[i];
        if (ch->state == CH_DRAINING) {
            bool drained = true;
            for (size_t k = 0; k < ch->nfds; k++) {
                achan_fd *f = &ch->fds[k];
                if (f->out && f->fd >= 0 && f->drain_left) {
                    if (!f->credit) /* the host is behind: its wait is not our silence */
                        f->drain_until = mf_now_ns() + OUT_QUIET_NS;
                    else if (mf_now_ns() >= f->drain_until)
                        f->drain_left = 0;
                }
                if (f->out && f->fd >= 0 && f->drain_left)
                    drained = false;
            }
            if (drained) {
                final f = { .is_exit = true, .chan = ch->id, .scan = ch->pull && a->tree };
                ch->state = CH_FINAL;
                queue_final(a, &f);
            }
        }
        if (ch->state == CH_DONE || ch->orphan) {
            bool open = false;
            for (size_t k = 0; k < ch->nfds; k++)
                open |= ch->fds[k].fd >= 0;
            if (!open && !ch->pid) {
                free_chan_at(a, i);
                continue;
            }
        }
        i++;
    }
}

/* ---- spawning ------------------------------------------------------------------------------ */

static void child_fail(int errpipe, int err, const char *what, const char *arg)
{
    char buf[300];
    int n = snprintf(buf, sizeof(buf), "%d %s%s%s: %s", err, what, arg ? " " : "",
                     arg ? arg : "", strerror(err));
    ssize_t r = write(errpipe, buf, (size_t)(n > 0 ? n : 0));
    (void)r;
    _exit(127);
}

static const char *env_path(char **env)
{
    for (size_t i = 0; env && env[i]; i++)
        if (!strncmp(env[i], "PATH=", 5))
            return env[i] + 5;
    return "/usr/local/bin:/usr/bin:/bin";
}

/* In the child: execve with a PATH search in the child's own environment. */
static void exec_in_path(const char *exe, char **argv, char **env, int errpipe)
{
    const char *p;
    int first_err = ENOENT;
    if (strchr(exe, '/')) {
        execve(exe, argv, env);
        child_fail(errpipe, errno, "cannot run", exe);
    }
    p = env_path(env);
    for (;;) {
        const char *e = strchr(p, ':');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        char full[SYNC_MAX_PATH * 2 + 2];
        if (n + strlen(exe) + 2 < sizeof(full)) {
            snprintf(full, sizeof(full), "%.*s%s%s", (int)n, n ? p : ".", "/", exe);
            execve(full, argv, env);
            /* Keep looking past missing and unexecutable entries, as execvp does. */
            if (errno != ENOENT && errno != ENOTDIR)
                first_err = errno;
            if (errno != EACCES && errno != ENOENT && errno != ENOTDIR)
                break;
        }
        if (!e)
            break;
        p = e + 1;
    }
    child_fail(errpipe, first_err, "cannot run", exe);
}

static void prefixed(agent *a, const char *path, char *out, size_t outsz)
{
    snprintf(out, outsz, "%s%s", a->o->root_prefix ? a->o->root_prefix : "", path);
}

static void spawn(agent *a, uint32_t id, wire_run *run)
{
    achan *ch = xcalloc(1, sizeof(*ch));
    int child_end[WIRE_MAX_FDS + 2];
    /* fds written on another fd's pipe (2 on 1's): child fd, index in ch->fds */
    int shared_fd[WIRE_MAX_FDS], shared_of[WIRE_MAX_FDS];
    size_t nshared = 0;
    bool tty_fds_added = false; /* the pty's two entries are at the end of ch->fds */
    int errpipe[2];
    int master = -1, slave = -1;
    int maxfd = 2;
    char cwd[SYNC_MAX_PATH * 2 + 2];
    pid_t pid;

    ch->id = id;
    ch->pull = (run->flags & WIRE_RUN_PULL) != 0;
    ch->tty = (run->flags & WIRE_RUN_TTY) != 0;
    ch->state = CH_RUNNING;
    XGROW(a->chans, a->achans, a->nchans + 1);
    a->chans[a->nchans++] = ch;

    if (ch->tty) {
        char name[128];
        master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0 ||
            ptsname_r(master, name, sizeof(name)) != 0 ||
            (slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0) {
            ch->spawn_errno = errno ? errno : EIO;
            snprintf(ch->spawn_msg, sizeof(ch->spawn_msg), "cannot allocate a pty: %s",
                     strerror(ch->spawn_errno));
            if (master >= 0)
                close(master);
            ch->state = CH_DRAINING;
            return;
        }
        {
            struct winsize ws = { .ws_row = run->rows, .ws_col = run->cols };
            ioctl(master, TIOCSWINSZ, &ws);
        }
    }
    for (size_t i = 0; i < run->nfds; i++) {
        achan_fd *f;
        int p[2];
        if (ch->tty && run->fd[i] <= 2)
            continue;
        if (run->fd_out[i] == WIRE_FD_OUT_SHARED) {
            /* its partner: the nearest output fd before it in the map (the
             * decoder checked there is one), whose pipe is made by now */
            size_t j = i, k = 0;
            while (run->fd_out[--j] != WIRE_FD_OUT)
                ;
            if (ch->tty && run->fd[j] <= 2) {
                ch->spawn_errno = EINVAL;
                snprintf(ch->spawn_msg, sizeof(ch->spawn_msg),
                         "fd %u shares the pipe of a terminal fd", run->fd[i]);
                goto fail;
            }
            while (ch->fds[k].child_fd != run->fd[j])
                k++;
            shared_fd[nshared] = run->fd[i];
            shared_of[nshared++] = (int)k;
            if (run->fd[i] == 2)
                ch->stderr_at = k + 1;
            if (run->fd[i] > maxfd)
                maxfd = run->fd[i];
            continue;
        }
        if (pipe2(p, O_CLOEXEC) < 0) {
            ch->spawn_errno = errno;
            snprintf(ch->spawn_msg, sizeof(ch->spawn_msg), "pipe: %s", strerror(errno));
            goto fail;
        }
        f = &ch->fds[ch->nfds];
        f->child_fd = run->fd[i];
        f->out = run->fd_out[i];
        f->fd = f->out ? p[0] : p[1];
        child_end[ch->nfds] = f->out ? p[1] : p[0];
        f->credit = SYNC_OUTPUT_WINDOW;
        strbuf_init(&f->in, 0);
        set_nonblock(f->fd, true);
        if (run->fd[i] > maxfd)
            maxfd = run->fd[i];
        ch->nfds++;
        if (run->fd[i] == 2 && f->out)
            ch->stderr_at = ch->nfds;
    }
    if (ch->tty) {
        achan_fd *in = &ch->fds[ch->nfds++], *out = &ch->fds[ch->nfds++];
        *in = (achan_fd){ .child_fd = 0, .out = false, .fd = fcntl(master, F_DUPFD_CLOEXEC, 3) };
        *out = (achan_fd){ .child_fd = 1, .out = true, .fd = master, .pty = true,
                           .credit = SYNC_OUTPUT_WINDOW };
        strbuf_init(&in->in, 0);
        strbuf_init(&out->in, 0);
        set_nonblock(in->fd, true);
        set_nonblock(out->fd, true);
        tty_fds_added = true;
        ch->stderr_at = ch->nfds;
    }
    if (pipe2(errpipe, O_CLOEXEC) < 0) {
        ch->spawn_errno = errno;
        snprintf(ch->spawn_msg, sizeof(ch->spawn_msg), "pipe: %s", strerror(errno));
        goto fail;
    }
    prefixed(a, run->cwd, cwd, sizeof(cwd));

    pid = fork();
    if (pid == 0) {
        sigset_t all;
        int high[WIRE_MAX_FDS + 2];
        size_t npipes = ch->nfds - (ch->tty ? 2 : 0);
        close(errpipe[0]);
        setsid();
        if (ch->tty && ioctl(slave, TIOCSCTTY, 0) < 0)
            child_fail(errpipe[1], errno, "cannot set the controlling terminal", NULL);
        for (int s = 1; s < 65; s++)
            signal(s, SIG_DFL);
        sigemptyset(&all);
        sigprocmask(SIG_SETMASK, &all, NULL);
        /* Move our ends out of the way first, then into place. */
        for (size_t i = 0; i < npipes; i++) {
            high[i] = fcntl(child_end[i], F_DUPFD_CLOEXEC, maxfd + 1);
            if (high[i] < 0)
                child_fail(errpipe[1], errno, "fcntl", NULL);
        }
        if (ch->tty)
            for (int fd = 0; fd <= 2; fd++)
                if (dup2(slave, fd) < 0)
                    child_fail(errpipe[1], errno, "dup2", NULL);
        for (size_t i = 0; i < npipes; i++)
            if (dup2(high[i], ch->fds[i].child_fd) < 0)
                child_fail(errpipe[1], errno, "dup2", NULL);
        for (size_t i = 0; i < nshared; i++)
            if (dup2(high[shared_of[i]], shared_fd[i]) < 0)
                child_fail(errpipe[1], errno, "dup2", NULL);
        for (int fd = 0; fd <= 2 && !ch->tty; fd++) {
            bool mapped = false;
            for (size_t i = 0; i < npipes; i++)
                mapped |= ch->fds[i].child_fd == fd;
            for (size_t i = 0; i < nshared; i++)
                mapped |= shared_fd[i] == fd;
            if (!mapped) {
                int nul = open("/dev/null", O_RDWR);
                if (nul < 0 || (nul != fd && dup2(nul, fd) < 0))
                    child_fail(errpipe[1], errno, "open /dev/null", NULL);
                if (nul != fd)
                    close(nul);
            }
        }
        if (chdir(cwd) < 0)
            child_fail(errpipe[1], errno, "cd", run->cwd);
        exec_in_path(run->exe, run->argv, run->env, errpipe[1]);
    }
    close(errpipe[1]);
    for (size_t i = 0; i < ch->nfds - (ch->tty ? 2 : 0); i++)
        close(child_end[i]);
    if (slave >= 0)
        close(slave);
    if (pid < 0) {
        ch->spawn_errno = errno;
        snprintf(ch->spawn_msg, sizeof(ch->spawn_msg), "fork: %s", strerror(errno));
        close(errpipe[0]);
        for (size_t i = 0; i < ch->nfds; i++)
            close_fd(&ch->fds[i]);
        ch->state = CH_DRAINING;
        return;
    }
    {
        char buf[300];
        ssize_t n = read_full(errpipe[0], buf, sizeof(buf) - 1);
        close(errpipe[0]);
        if (n > 0) {
            char *sp;
            int status;
            buf[n] = '\0';
            ch->spawn_errno = (int)strtol(buf, &sp, 10);
            if (ch->spawn_errno <= 0 || ch->spawn_errno > 4095)
                ch->spawn_errno = EIO;
            snprintf(ch->spawn_msg, sizeof(ch->spawn_msg), "%s", *sp ? sp + 1 : "");
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
            for (size_t i = 0; i < ch->nfds; i++)
                close_fd(&ch->fds[i]);
            ch->state = CH_DRAINING;
            return;
        }
    }
    ch->pid = pid;
    return;
fail:
    for (size_t i = 0; i < ch->nfds; i++) {
        close_fd(&ch->fds[i]);
        if (!(tty_fds_added && i >= ch->nfds - 2))
            close(child_end[i]);
    }
    if (master >= 0 && !tty_fds_added)
        close(master);
    if (slave >= 0)
        close(slave);
    ch->nfds = 0;
    ch->state = CH_DRAINING;
}

/* ---- sync -------------------------------------------------------------------------------- */

static void setup_tree(agent *a, const wire_config *cfg)
{
    const char *prefix = a->o->root_prefix;
    mf_tree *t = mf_new(cfg->roots, cfg->nroots, cfg->excludes, cfg->exclude_lens,
                        cfg->nexcludes, prefix);
    bool resume = !cfg->reset && cfg->pair_id == a->pair_id;
    bool loaded = false;

    for (size_t i = 0; i < mf_nroots(t); i++) {
        mf_root *r = mf_root_at(t, i);
        r->scanned = r->kind != WIRE_ROOT_TASK;
        if (r->kind == WIRE_ROOT_CODE)
            mf_root_fd(t, i, true);
    }
    if (resume && a->tree && mf_config_id(a->tree) == mf_config_id(t)) {
        /* Same session, same roots: keep the manifest we have. */
        mf_free(t);
        t = a->tree;
        a->tree = NULL;
        loaded = true;
    } else if (resume && a->o->state_file) {
        uint64_t p, x, y;
        sbx_err err;
        mf_load(t, a->o->state_file, &p, &x, &y, &loaded, &err);
        loaded = loaded && p == cfg->pair_id;
        if (!loaded)
            mf_clear(t);
    }
    if (a->tree) {
        apply_free(a->rx);
        a->rx = NULL;
        mf_free(a->tree);
    }
    a->tree = t;
    if (!a->o->no_watch)
        mf_watch(t, true);
    if (!resume || !loaded) {
        mf_clear(t);
        journal_prune(a, UINT64_MAX);
        a->applied_push_seq = cfg->push_seq;
        a->pull_seq = cfg->pull_seq;
    } else {
        /* Deltas we sent that the host never applied: their paths are sent again. */
        for (size_t i = 0; i < a->njournal; i++)
            if (a->journal[i].seq > cfg->pull_seq)
                mf_invalidate_path(t, a->journal[i].root, a->journal[i].path,
                                   a->journal[i].len, a->journal[i].type);
        journal_prune(a, UINT64_MAX);
        if (cfg->pull_seq > a->pull_seq)
            a->pull_seq = cfg->pull_seq;
    }
    a->pair_id = cfg->pair_id;
    a->dirty = true;
    if (!a->rx)
        a->rx = apply_new(a->tree, APPLY_AGENT, NULL, agent_warn, a);
}

/* Keeps only the operations the host accepts (the pull allowlists): the others stay in the
 * sandbox. */
static void filter_pull(agent *a, mf_delta *d)
{
    size_t k = 0;
    d->bytes = 0;
    for (size_t i = 0; i < d->n; i++) {
        mf_op *op = &d->ops[i];
        const mf_root *r = mf_root_at(a->tree, op->root);
        const char *why = r->kind == WIRE_ROOT_CODE
                              ? git_pull_refusal(op->path, op->path_len, op->type)
                              : git_pull_refusal_syncpath(op->path, op->path_len);
        if (why) {
            free(op->path);
            continue;
        }
        if (op->op == WIRE_OP_PUT && op->type == MF_REG)
            d->bytes += op->size;
        d->ops[k++] = *op;
    }
    d->n = k;
}

/* Starts the next sync round when finals wait and nothing is being sent. */
static void start_round(agent *a)
{
    bool need_scan = false;
    mf_delta d = { 0 };
    if (a->tx_active || !a->nfinals || a->out_fd < 0)
        return;
    if (a->rx && apply_active(a->rx))
        return;   /* the host's delta first: its changes are not the sandbox's */
    for (size_t i = 0; i < a->nfinals; i++)
        need_scan |= a->finals[i].scan;
    /* The finals of this round go after its delta. */
    XGROW(a->sending, a->asending, a->nfinals);
    memcpy(a->sending, a->finals, a->nfinals * sizeof(*a->finals));
    a->nsending = a->nfinals;
    a->nfinals = 0;
    if (!need_scan || !a->tree)
        return;
    {
        bool full;
        sbx_err err;
        if (mf_scan(a->tree, &d, &full, agent_warn, a, &err) < 0) {
            warnf(a, "cannot scan the sandbox: %s", err.msg);
            mf_delta_release(&d);
        }
    }
    filter_pull(a, &d);
    a->pull_seq++;
    for (size_t i = 0; i < d.n; i++) {
        journal_ent *j;
        XGROW(a->journal, a->ajournal, a->njournal + 1);
        j = &a->journal[a->njournal++];
        j->seq = a->pull_seq;
        j->root = d.ops[i].root;
        j->type = d.ops[i].type;
        j->path = xstrndup(d.ops[i].path, d.ops[i].path_len);
        j->len = d.ops[i].path_len;
    }
    if (d.n)
        a->dirty = true;
    delta_tx_init(&a->tx, a->tree, &d, a->pull_seq, a->applied_push_seq, false, agent_warn, a);
    a->tx_active = true;
}

static void send_finals(agent *a)
{
    for (size_t i = 0; i < a->nsending; i++) {
        final *f = &a->sending[i];
        if (f->is_exit) {
            achan *ch = find_chan(a, f->chan);
            if (ch)
                send_exit(a, ch);
        } else {
            size_t at = wire_begin(&a->out, WIRE_SYNC_DONE, 0, 0);
            wire_u64(&a->out, f->id);
            wire_end(&a->out, at);
        }
    }
    a->nsending = 0;
}

/*
 * The writer to the host, as a state machine. pump() turns work (a delta being sent,
 * finals due after it, finals waiting for a round) into bytes in a->out, up to OUT_HIGH;
 * write_host() moves bytes from a->out into the stream until it would block. Before poll()
 * the writer is in one of two states, and each has its wake-up:
 *   - work left (bytes buffered, or host_wants_write(): a delta or finals still to encode):
 *     poll() waits for POLLOUT on the stream, and the top of the loop pumps and writes;
 *   - idle: nothing to encode until an event we poll for anyway (a command's output, its
 *     exit, a frame from the host, inotify).
 * POLLOUT used to be armed only while bytes were buffered. When write_host() emptied the
 * buffer in one go (the host reading on the other core as we wrote, or a socket buffer
 * that takes 1 MiB) with a delta still in progress, nothing was buffered, nothing was polled
 * for, and the agent slept: until the 5 s state-save timeout when dirty (a 1-2 MB file took
 * 5.1 s), or for good once the state was saved (an 8 MB pull stopped at a few MiB until an
 * unrelated command's frame woke the loop). "Work left" now includes the encoder's.
 */
static bool host_wants_write(const agent *a)
{
    if (a->out_fd < 0)
        return false;
    /* Finals waiting for a round need no POLLOUT: start_round() is blocked on an event
     * (the host's delta to finish, the current delta to be sent) that wakes us itself. */
    return a->out_off < a->out.len || a->tx_active || a->nsending;
}

static void pump(agent *a)
{
    while (a->out_fd >= 0 && a->out.len - a->out_off < OUT_LOW) {
        if (a->tx_active) {
            if (!delta_tx_fill(&a->tx, &a->out, a->out_off + OUT_HIGH))
                continue;
            delta_tx_release(&a->tx);
            a->tx_active = false;
        }
        if (a->nsending) {
            send_finals(a);
            continue;
        }
        if (!a->nfinals)
            break;
        start_round(a);
        if (!a->tx_active && !a->nsending)
            break;
    }
}

/* ---- the host connection ---------------------------------------------------------------- */

static void drop_connection(agent *a)
{
    if (a->in_fd < 0)
        return;
    if (a->in_fd != a->out_fd && a->out_fd >= 0)
        close(a->out_fd);
    close(a->in_fd);
    a->in_fd = a->out_fd = -1;
    if (a->rx && apply_active(a->rx))
        apply_abort(a->rx);
    if (a->tx_active) {
        delta_tx_release(&a->tx);
        a->tx_active = false;
    }
    a->nfinals = a->nsending = a->nbarred = 0;
    strbuf_reset(&a->in);
    strbuf_reset(&a->out);
    a->in_off = a->out_off = 0;
    a->hello_seen = false;
    for (size_t i = 0; i < a->nchans; i++) {
        a->chans[i]->orphan = true;
        chan_discard(a->chans[i]);
    }
    a->idle_since = mf_now_ns();
    save_state(a, true);
}

static void send_hello(agent *a)
{
    struct utsname u;
    char about[256];
    wire_hello h = { .version = SYNC_PROTOCOL_VERSION, .pair_id = a->pair_id,
                     .applied_push_seq = a->applied_push_seq, .pid = (uint32_t)getpid() };
    if (uname(&u) < 0)
        snprintf(u.release, sizeof(u.release), "?");
    snprintf(about, sizeof(about), "sbx-agent %s; %s %s; uid %ld", SBX_AGENT_VERSION, u.sysname,
             u.release, (long)getuid());
    h.about = about;
    h.about_len = strlen(about);
    wire_put_hello(&a->out, &h);
}

static void attach(agent *a, int in_fd, int out_fd)
{
    drop_connection(a);
    a->in_fd = in_fd;
    a->out_fd = out_fd;
    set_nonblock(in_fd, true);
    set_nonblock(out_fd, true);
    fcntl(in_fd, F_SETPIPE_SZ, 1 << 20);
    fcntl(out_fd, F_SETPIPE_SZ, 1 << 20);
    send_hello(a);
}

static void put_file(agent *a, const wire_frame *f)
{
    wire_put_file p;
    sbx_err err;
    char path[SYNC_MAX_PATH * 2 + 2], tmp[96];
    char *slash;
    int dfd, fd;

    if (wire_get_put_file(f, &p, &err) < 0 || p.path[0] != '/' ||
        sf_check_relpath(p.path + 1, p.path_len - 1, &err) < 0) {
        warnf(a, "bad PUT_FILE: %s", err.msg);
        return;
    }
    snprintf(path, sizeof(path), "%s%.*s", a->o->root_prefix ? a->o->root_prefix : "",
             (int)p.path_len, p.path);
    slash = strrchr(path, '/');
    *slash = '\0';
    {
        char *q = path;
        /* mkdir -p of the parent */
        while ((q = strchr(q + 1, '/'))) {
            *q = '\0';
            mkdir(path, 0755);
            *q = '/';
        }
        mkdir(path, 0755);
    }
    dfd = open(path[0] ? path : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        warnf(a, "cannot write %.*s: %s", (int)p.path_len, p.path, strerror(errno));
        return;
    }
    fd = sf_mktemp(dfd, tmp, sizeof(tmp), 0600);
    if (fd < 0 || write_full(fd, p.data, p.len) < 0 || fchmod(fd, p.mode & 0777) < 0 ||
        renameat(dfd, tmp, dfd, slash + 1) < 0) {
        warnf(a, "cannot write %.*s: %s", (int)p.path_len, p.path, strerror(errno));
        if (fd >= 0)
            unlinkat(dfd, tmp, 0);
    }
    if (fd >= 0)
        close(fd);
    close(dfd);
}

static int dispatch(agent *a, const wire_frame *f, sbx_err *err)
{
    achan *ch;
    achan_fd *cf;

    if (!a->hello_seen) {
        wire_hello h;
        if (f->type != WIRE_HELLO)
            return sbx_errf(err, "expected HELLO, got %s", wire_type_name(f->type));
        if (wire_get_hello(f, &h, err) < 0)
            return -1;
        if (h.version != SYNC_PROTOCOL_VERSION)
            return sbx_errf(err, "the host speaks protocol %u, this agent %u", h.version,
                            SYNC_PROTOCOL_VERSION);
        a->hello_seen = true;
        return 0;
    }
    switch (f->type) {
    case WIRE_CONFIG: {
        wire_config c;
        if (wire_get_config(f, &c, err) < 0)
            return -1;
        setup_tree(a, &c);
        wire_config_release(&c);
        return 0;
    }
    case WIRE_DELTA_BEGIN: {
        uint64_t seq, acked;
        if (!a->rx)
            return sbx_errf(err, "delta before CONFIG");
        if (wire_get_u64_pair(f, &seq, &acked, err) < 0)
            return -1;
        journal_prune(a, acked);
        return apply_begin(a->rx, seq, acked, err);
    }
    case WIRE_ENTRY:
    case WIRE_CHUNK:
    case WIRE_HOLE:
    case WIRE_ENTRY_CANCEL:
    case WIRE_DELTA_END: {
        int r;
        if (!a->rx)
            return sbx_errf(err, "delta before CONFIG");
        r = apply_frame(a->rx, f, err);
        if (r < 0) {
            apply_abort(a->rx);
            return -1;
        }
        if (r == 1) {
            uint64_t seq, n;
            wire_get_u64_pair(f, &seq, &n, err);
            a->applied_push_seq = seq;
            a->dirty = true;
        }
        return 0;
    }
    case WIRE_RUN: {
        wire_run run;
        if (find_chan(a, f->chan) || !f->chan)
            return sbx_errf(err, "RUN on channel %u, which is in use", f->chan);
        if (wire_get_run(f, &run, err) < 0)
            return -1;
        spawn(a, f->chan, &run);
        wire_run_release(&run);
        return 0;
    }
    case WIRE_DATA:
        ch = find_chan(a, f->chan);
        cf = find_fd(ch, f->fd, false);
        if (!cf)
            return 0;   /* the command is gone: its input goes nowhere */
        if (cf->fd < 0)
            return 0;
        if (cf->in.len - cf->in_off + f->len > SYNC_INPUT_WINDOW)
            return sbx_errf(err, "input beyond the window on channel %u", f->chan);
        strbuf_add(&cf->in, f->payload, f->len);
        return 0;
    case WIRE_EOF:
        ch = find_chan(a, f->chan);
        cf = find_fd(ch, f->fd, false);
        if (cf && !ch->tty)
            cf->in_eof = true;
        return 0;
    case WIRE_CREDIT: {
        uint32_t n;
        if (wire_get_u32_one(f, &n, err) < 0)
            return -1;
        ch = find_chan(a, f->chan);
        cf = find_fd(ch, f->fd, true);
        if (cf) {
            uint64_t c = (uint64_t)cf->credit + n;
            cf->credit = c > SYNC_OUTPUT_WINDOW ? SYNC_OUTPUT_WINDOW : (uint32_t)c;
        }
        return 0;
    }
    case WIRE_SIGNAL: {
        uint32_t sig;
        if (wire_get_u32_one(f, &sig, err) < 0)
            return -1;
        ch = find_chan(a, f->chan);
        if (ch && ch->pid > 0 && sig > 0 && sig < 65)
            kill(-ch->pid, (int)sig);
        return 0;
    }
    case WIRE_WINSIZE: {
        uint16_t rows, cols;
        if (wire_get_winsize(f, &rows, &cols, err) < 0)
            return -1;
        ch = find_chan(a, f->chan);
        cf = find_fd(ch, 1, true);
        if (ch && ch->tty && cf && cf->fd >= 0) {
            struct winsize ws = { .ws_row = rows, .ws_col = cols };
            ioctl(cf->fd, TIOCSWINSZ, &ws);
        }
        return 0;
    }
    case WIRE_CLOSE_OUTPUT:
        ch = find_chan(a, f->chan);
        cf = find_fd(ch, f->fd, true);
        if (cf && cf->fd >= 0) {
            close_fd(cf);
            cf->drain_left = 0;
            cf->barrier_left = 0;
        }
        return 0;
    case WIRE_SYNC: {
        final fin = { .is_exit = false, .scan = a->tree != NULL };
        if (wire_get_u64_one(f, &fin.id, err) < 0)
            return -1;
        sync_barrier(a, &fin);
        release_barred(a);
        return 0;
    }
    case WIRE_PUT_FILE:
        put_file(a, f);
        return 0;
    }
    return sbx_errf(err, "unexpected %s frame from the host", wire_type_name(f->type));
}

static void read_host(agent *a)
{
    for (int rounds = 0; rounds < 16 && a->in_fd >= 0; rounds++) {
        ssize_t n;
        strbuf_grow(&a->in, 256 * 1024);
        n = read(a->in_fd, a->in.buf + a->in.len, a->in.alloc - a->in.len - 1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                drop_connection(a);
            return;
        }
        if (n == 0) {
            drop_connection(a);
            return;
        }
        strbuf_setlen(&a->in, a->in.len + (size_t)n);
        while (a->in_fd >= 0) {
            wire_frame f;
            sbx_err err;
            int r = wire_parse((const uint8_t *)a->in.buf + a->in_off, a->in.len - a->in_off, &f,
                               &err);
            if (r == 0)
                break;
            if (r < 0 || dispatch(a, &f, &err) < 0) {
                fprintf(stderr, "sbx-agent: protocol error from the host: %s\n", err.msg);
                drop_connection(a);
                return;
            }
            a->in_off += WIRE_HEADER + f.len;
        }
        if (a->in_off == a->in.len) {
            strbuf_reset(&a->in);
            a->in_off = 0;
        } else if (a->in_off > (1u << 20)) {
            strbuf_remove(&a->in, 0, a->in_off);
            a->in_off = 0;
        }
    }
}

static void write_host(agent *a)
{
    while (a->out_fd >= 0 && a->out_off < a->out.len) {
        ssize_t n = write(a->out_fd, a->out.buf + a->out_off, a->out.len - a->out_off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                drop_connection(a);
            break;
        }
        a->out_off += (size_t)n;
    }
    if (a->out_off == a->out.len) {
        strbuf_reset(&a->out);
        a->out_off = 0;
    } else if (a->out_off > OUT_HIGH) {
        strbuf_remove(&a->out, 0, a->out_off);
        a->out_off = 0;
    }
}

/* ---- channel fds ------------------------------------------------------------------------ */

static void read_output(agent *a, achan *ch, achan_fd *f)
{
    char buf[READ_CHUNK];
    bool discard = ch->state == CH_DONE || ch->orphan || a->out_fd < 0;
    size_t want = sizeof(buf);
    ssize_t n;

    if (!discard) {
        if (f->credit < want)
            want = f->credit;
        if (ch->state == CH_DRAINING && f->drain_left < want)
            want = (size_t)f->drain_left;
        if (!want)
            return;
    }
    n = read(f->fd, buf, want);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) {
        /* EOF (or EIO on a pty whose last writer is gone). */
        if (!discard)
            wire_frame_raw(&a->out, WIRE_EOF, f->child_fd, ch->id, NULL, 0);
        close_fd(f);
        f->drain_left = 0;
        f->barrier_left = 0;
        return;
    }
    f->barrier_left -= (uint64_t)n < f->barrier_left ? (uint64_t)n : f->barrier_left;
    if (discard)
        return;
    wire_frame_raw(&a->out, WIRE_DATA, f->child_fd, ch->id, buf, (size_t)n);
    f->credit -= (uint32_t)n;
    if (ch->state == CH_DRAINING) {
        /* bytes after the exit: the writer is alive; wait for its next ones, up to the cap */
        int64_t until = mf_now_ns() + OUT_QUIET_NS;
        f->drain_until = until < f->drain_cap ? until : f->drain_cap;
    }
}

static void write_input(agent *a, achan *ch, achan_fd *f)
{
    while (f->in_off < f->in.len) {
        ssize_t n = write(f->fd, f->in.buf + f->in_off, f->in.len - f->in_off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN)
                break;
            /* The child closed its end (EPIPE): what it did not read is dropped. */
            f->in_done += (uint32_t)(f->in.len - f->in_off);
            f->in_off = f->in.len;
            f->in_eof = true;
            break;
        }
        f->in_off += (size_t)n;
        f->in_done += (uint32_t)n;
    }
    if (f->in_off == f->in.len) {
        strbuf_reset(&f->in);
        f->in_off = 0;
    }
    if (f->in_done && a->out_fd >= 0 && !ch->orphan &&
        (f->in_done >= CREDIT_BATCH || !f->in.len)) {
        size_t at = wire_begin(&a->out, WIRE_CREDIT, f->child_fd, ch->id);
        wire_u32(&a->out, f->in_done);
        wire_end(&a->out, at);
        f->in_done = 0;
    }
    if (f->in_eof && !f->in.len)
        close_fd(f);
}

/* The sandbox has no network (sync/dnsstub.h): the helper sends a line per lookup; the
 * first one that a running command can show goes to its stderr, as if it had written it,
 * and then none again for the sandbox's life. A line starting with '!' (the egress proxy
 * refused a tunnel) is shown each time. */
static void net_notice(agent *a)
{
    char buf[4096];
    ssize_t n = read(a->o->notice_fd, buf, sizeof(buf) - 1);
    for (char *line = buf, *nl; n > 0 && (nl = memchr(line, '\n', (size_t)(buf + n - line)));
         line = nl + 1) {
        bool always = line[0] == '!';
        char text[1100];
        size_t len = (size_t)(nl - line) - always;
        if ((a->net_noticed && !always) || a->out_fd < 0 || len + 3 > sizeof(text))
            continue;
        memcpy(text, line + always, len);
        for (size_t i = 0; i < a->nchans; i++) {
            achan *ch = a->chans[i];
            achan_fd *f = ch->stderr_at ? &ch->fds[ch->stderr_at - 1] : NULL;
            /* a raw terminal's line ends with CR LF */
            size_t tl = len + (f && f->pty ? 2 : 1);
            /* (an exited command whose stderr is still open gets it too: the lookup and
             * its exit may reach us in one turn) */
            if ((ch->state != CH_RUNNING && ch->state != CH_DRAINING) || ch->orphan || !f ||
                f->fd < 0 || f->credit < tl)
                continue;
            memcpy(text + len, f->pty ? "\r\n" : "\n", tl - len);
            wire_frame_raw(&a->out, WIRE_DATA, f->child_fd, ch->id, text, tl);
            f->credit -= (uint32_t)tl;
            if (!always)
                a->net_noticed = true;
        }
    }
}

/* ---- the loop ------------------------------------------------------------------------------ */

typedef struct pollref {
    achan *ch;
    achan_fd *f;
} pollref;

static int accept_host(agent *a)
{
    int fd = accept4(a->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
        return -1;
    {
        struct ucred cred;
        socklen_t len = sizeof(cred);
        /* Only the agent's own user (or root) may drive it. */
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.uid != 0 &&
            cred.uid != getuid()) {
            close(fd);
            return -1;
        }
    }
    attach(a, fd, fd);
    return 0;
}

static int loop(agent *a)
{
    struct pollfd *pfd = NULL;
    pollref *refs = NULL;
    size_t apfd = 0, arefs = 0;

    while (!a->quit) {
        size_t n = 0, base;
        int timeout = -1;
        char sigs[64];
        ssize_t ns;

        progress_channels(a);
        pump(a);
        write_host(a);
        if (a->in_fd < 0 && !a->o->listen_path)
            break;

        XGROW(pfd, apfd, 6 + a->nchans * (WIRE_MAX_FDS + 2));
        XGROW(refs, arefs, 6 + a->nchans * (WIRE_MAX_FDS + 2));
        pfd[n++] = (struct pollfd){ .fd = sig_pipe[0], .events = POLLIN };
        if (a->listen_fd >= 0)
            pfd[n++] = (struct pollfd){ .fd = a->listen_fd, .events = POLLIN };
        if (a->in_fd >= 0)
            pfd[n++] = (struct pollfd){ .fd = a->in_fd, .events = POLLIN };
        if (host_wants_write(a))
            pfd[n++] = (struct pollfd){ .fd = a->out_fd, .events = POLLOUT };
        if (a->tree && mf_watch_fd(a->tree) >= 0)
            pfd[n++] = (struct pollfd){ .fd = mf_watch_fd(a->tree), .events = POLLIN };
        if (a->o->notice_fd > 0)
            pfd[n++] = (struct pollfd){ .fd = a->o->notice_fd, .events = POLLIN };
        base = n;
        for (size_t i = 0; i < a->nchans; i++) {
            achan *ch = a->chans[i];
            bool discard = ch->state == CH_DONE || ch->orphan || a->out_fd < 0;
            for (size_t k = 0; k < ch->nfds; k++) {
                achan_fd *f = &ch->fds[k];
                short ev = 0;
                if (f->fd < 0)
                    continue;
                if (f->out) {
                    if (discard || (f->credit && a->out.len - a->out_off < OUT_HIGH &&
                                    (ch->state != CH_DRAINING || f->drain_left)))
                        ev = POLLIN;
                } else if (f->in.len) {
                    ev = POLLOUT;
                } else if (f->in_eof) {
                    close_fd(f);
                    continue;
                }
                if (!ev)
                    continue;
                refs[n - base] = (pollref){ ch, f };
                pfd[n++] = (struct pollfd){ .fd = f->fd, .events = ev };
            }
        }
        if (a->o->listen_path && a->in_fd < 0 && a->o->idle_timeout > 0) {
            int64_t left = a->idle_since + (int64_t)a->o->idle_timeout * 1000000000 -
                           mf_now_ns();
            if (left <= 0)
                break;
            timeout = (int)(left / 1000000) + 1;
        }
        if (a->dirty && a->o->state_file && (timeout < 0 || timeout > 5000))
            timeout = 5000;
        for (size_t i = 0; i < a->nchans; i++) {
            /* an exited command's outputs, read until a deadline (see chan_exited) */
            achan *ch = a->chans[i];
            for (size_t k = 0; ch->state == CH_DRAINING && k < ch->nfds; k++) {
                achan_fd *f = &ch->fds[k];
                if (f->out && f->drain_left && f->fd >= 0) {
                    int64_t ms = (f->drain_until - mf_now_ns()) / 1000000 + 1;
                    if (ms < 1)
                        ms = 1;
                    if (timeout < 0 || timeout > ms)
                        timeout = (int)ms;
                }
            }
        }
        if (poll(pfd, (nfds_t)n, timeout) < 0) {
            if (errno == EINTR)
                continue;
            perror("sbx-agent: poll");
            break;
        }
        save_state(a, false);
        while ((ns = read(sig_pipe[0], sigs, sizeof(sigs))) > 0)
            for (ssize_t i = 0; i < ns; i++)
                if (sigs[i] == 't')
                    a->quit = true;
        reap(a);
        for (size_t i = 1; i < base; i++) {
            if (!pfd[i].revents)
                continue;
            if (pfd[i].fd == a->listen_fd)
                accept_host(a);
            /* A socket is both in_fd and out_fd, in two entries: tell them apart by what
             * each waited for (the loop's top writes anyway, but say what is meant). */
            else if (pfd[i].fd == a->in_fd && a->in_fd >= 0 && (pfd[i].events & POLLIN))
                read_host(a);
            else if (pfd[i].fd == a->out_fd && a->out_fd >= 0 && (pfd[i].events & POLLOUT))
                write_host(a);
            else if (a->tree && pfd[i].fd == mf_watch_fd(a->tree))
                mf_drain_events(a->tree);
            else if (pfd[i].fd == a->o->notice_fd)
                net_notice(a);
        }
        for (size_t i = base; i < n; i++) {
            pollref *r = &refs[i - base];
            if (!pfd[i].revents || r->f->fd != pfd[i].fd)
                continue;
            if (r->f->out)
                read_output(a, r->ch, r->f);
            else
                write_input(a, r->ch, r->f);
        }
        /* An exited command's drain may be complete without any more events. */
        reap(a);
        release_barred(a);
    }
    free(pfd);
    free(refs);
    save_state(a, true);
    return 0;
}

static void agent_init(agent *a, const agent_opts *o)
{
    struct sigaction sa;
    memset(a, 0, sizeof(*a));
    a->o = o;
    a->in_fd = a->out_fd = a->listen_fd = -1;
    strbuf_init(&a->in, 0);
    strbuf_init(&a->out, 0);
    a->idle_since = mf_now_ns();
    if (o->state_file) {
        bool ok;
        mf_peek(o->state_file, &a->pair_id, &a->applied_push_seq, &a->pull_seq, &ok);
        if (!ok)
            a->pair_id = a->applied_push_seq = a->pull_seq = 0;
    }
    if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
        perror("sbx-agent: pipe");
        exit(1);
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigchld;
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigaction(SIGCHLD, &sa, NULL);
    sa.sa_handler = on_term;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    /* Orphans of our commands come to us, and we reap them (we may be pid 1 anyway). */
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
}

static void agent_release(agent *a)
{
    drop_connection(a);
    while (a->nchans)
        free_chan_at(a, 0);
    free(a->chans);
    if (a->tx_active)
        delta_tx_release(&a->tx);
    apply_free(a->rx);
    mf_free(a->tree);
    journal_prune(a, UINT64_MAX);
    free(a->journal);
    free(a->finals);
    free(a->barred);
    free(a->sending);
    strbuf_release(&a->in);
    strbuf_release(&a->out);
}

int agent_serve_stdio(const agent_opts *o)
{
    agent a;
    int in, out;
    agent_init(&a, o);
    /* The protocol owns 0 and 1; commands never inherit them (they get their own fds). */
    in = fcntl(0, F_DUPFD_CLOEXEC, 3);
    out = fcntl(1, F_DUPFD_CLOEXEC, 3);
    if (in < 0 || out < 0) {
        perror("sbx-agent: stdio");
        return 1;
    }
    {
        int nul = open("/dev/null", O_RDWR);
        if (nul >= 0) {
            dup2(nul, 0);
            dup2(nul, 1);
            if (nul > 2)
                close(nul);
        }
    }
    attach(&a, in, out);
    loop(&a);
    agent_release(&a);
    return 0;
}

int agent_serve_listen(const agent_opts *o)
{
    agent a;
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    int fd;

    if (strlen(o->listen_path) >= sizeof(sun.sun_path)) {
        fprintf(stderr, "sbx-agent: socket path too long: %s\n", o->listen_path);
        return 1;
    }
    agent_init(&a, o);
    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", o->listen_path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    unlink(o->listen_path);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 || listen(fd, 4) < 0) {
        fprintf(stderr, "sbx-agent: cannot listen on %s: %s\n", o->listen_path,
                strerror(errno));
        return 1;
    }
    chmod(o->listen_path, 0600);
    set_nonblock(fd, true);
    a.listen_fd = fd;
    loop(&a);
    close(fd);
    unlink(o->listen_path);
    agent_release(&a);
    return 0;
}

int agent_bridge(const char *path)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool in_open = true;
    char buf[65536];

    signal(SIGPIPE, SIG_IGN);
    if (strlen(path) >= sizeof(sun.sun_path)) {
        fprintf(stderr, "sbx-agent: socket path too long: %s\n", path);
        return 1;
    }
    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
        fprintf(stderr, "sbx-agent: cannot connect to %s: %s\n", path, strerror(errno));
        return 1;
    }
    for (;;) {
        struct pollfd p[2] = { { .fd = in_open ? 0 : -1, .events = POLLIN },
                               { .fd = fd, .events = POLLIN } };
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            return 1;
        }
        if (p[0].revents) {
            ssize_t n = read(0, buf, sizeof(buf));
            if (n <= 0) {
                in_open = false;
                shutdown(fd, SHUT_WR);
            } else if (write_full(fd, buf, (size_t)n) < 0) {
                return 1;
            }
        }
        if (p[1].revents) {
            ssize_t n = read(fd, buf, sizeof(buf));
            if (n <= 0)
                return 0;
            if (write_full(1, buf, (size_t)n) < 0)
                return 1;
        }
    }
}
