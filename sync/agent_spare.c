/* sbx-agent's warm spare: a child forked and set up before the command that will use it (see
 * aspare in agent_int.h for what it is and what it guarantees). */
#include "sync/agent_int.h"

#include <dirent.h>
#include <sys/syscall.h>

/*
 * Its life:
 *   none     -> made    agent_spare_idle(), when the agent is idle (no command in flight,
 *                       nothing queued for the host) and a non-tty command ran since the last
 *                       spare: one fork for the next command with that command's fd map. Not
 *                       while a command starts or runs: under gVisor the fork's work in the
 *                       Sentry competes with the command's exec and start-up, and made then
 *                       the spare cost the back-to-back command more than it saved.
 *   made     -> taken   agent_spare_take(), by a RUN with the same fd map and no tty: the
 *                       request goes down its pipe, the channel takes its pipes and pid, and
 *                       waits for the exec as after a fork (agent_exec_failed()).
 *   made     -> none    agent_spare_discard(): another fd map is wanted, the host went away,
 *                       or the agent ends (SIGKILL; the zombie is reaped like any child);
 *                       agent_spare_reaped(): something killed it (a command's `kill -9 -1`).
 * The agent never waits for a spare: a spare that is not ready yet has its request waiting in
 * the pipe, and the fork path is what any other command takes. If the agent dies, the spare's
 * read sees EOF and it exits: it never outlives the agent.
 *
 * What a user sees: one more process, `sbx-spare` by its name (comm; its command line is the
 * agent's), in its own session, asleep in read(2), counted in the sandbox's pids limit. When
 * a command takes it, that process becomes the command (same pid), whose start time is the
 * spare's.
 */

/* The request: u32 length of the rest, then NUL-terminated exe, cwd (as the agent opens it),
 * cwd (as the host named it, for the error message), u32 argc, argv, u32 envc, env. */
static void put_u32(strbuf *sb, uint32_t v)
{
    strbuf_add(sb, &v, sizeof(v));
}

static void put_strs(strbuf *sb, size_t n, char **v)
{
    put_u32(sb, (uint32_t)n);
    for (size_t i = 0; i < n; i++)
        strbuf_add(sb, v[i], strlen(v[i]) + 1);
}

/* In the spare: the next string of the request, or NULL when it is malformed. */
static char *take_str(char **p, char *end)
{
    char *s = *p, *z = memchr(s, '\0', (size_t)(end - s));
    if (!z)
        return NULL;
    *p = z + 1;
    return s;
}

static char **take_strs(char **p, char *end)
{
    uint32_t n;
    char **v;
    if (end - *p < 4)
        return NULL;
    memcpy(&n, *p, 4);
    *p += 4;
    if (n > SYNC_MAX_ARGS)
        return NULL;
    v = malloc(((size_t)n + 1) * sizeof(*v));
    if (!v)
        return NULL;
    for (uint32_t i = 0; i < n; i++)
        if (!(v[i] = take_str(p, end)))
            return NULL;
    v[n] = NULL;
    return v;
}

/* In the spare: every fd but its own closed, so that it holds nothing of the agent's while it
 * waits (another command's input pipe would not see EOF while a copy of its write end lived
 * here). Its own: 0-2, the map's fds (all <= maxfd), and the two pipes at maxfd+1, +2. */
static void close_others(const achan *ch, const spawn_plan *sp)
{
    int maxfd = sp->maxfd;
    for (int fd = 3; fd <= maxfd; fd++) {
        bool mine = false;
        for (size_t i = 0; i < ch->nfds; i++)
            mine |= ch->fds[i].child_fd == fd;
        for (size_t i = 0; i < sp->nshared; i++)
            mine |= sp->shared_fd[i] == fd;
        if (!mine)
            close(fd);
    }
    if (syscall(SYS_close_range, (unsigned)maxfd + 3, ~0U, 0U) == 0)
        return;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        _exit(127); /* the agent sees its request pipe closed and forgets this spare */
    struct dirent *de;
    int dfd = dirfd(d);
    while ((de = readdir(d))) {
        int fd = atoi(de->d_name);
        if (fd > maxfd + 2 && fd != dfd)
            close(fd);
    }
    closedir(d);
}

/* In the spare, never returns: the child's setup (as after a fork), then wait for the request
 * and exec it as a fresh child would. */
SBX_NORETURN static void spare_child(achan *ch, spawn_plan *sp, int ctl)
{
    int errfd, maxfd = sp->maxfd;
    uint32_t len;
    char *buf, *p, *end, *exe, *cwd, *shown, **argv, **env;

    /* The request pipe out of the way of the map's fds first (the setup moves the error
     * pipe itself), then both just above the map, close-on-exec (the error pipe's EOF at the
     * exec is how the agent knows it happened). */
    if (ctl <= maxfd + 2 && (ctl = fcntl(ctl, F_DUPFD_CLOEXEC, maxfd + 3)) < 0)
        _exit(127);
    agent_child_setup(ch, sp);
    if ((errfd = dup3(sp->errpipe[1], maxfd + 1, O_CLOEXEC)) < 0 ||
        (ctl = dup3(ctl, maxfd + 2, O_CLOEXEC)) < 0)
        _exit(127);
    close_others(ch, sp);
    /* It waits here, not for the few instructions of a fork's child: the agent's handlers
     * go back to their defaults now (exec would reset them anyway). */
    signal(SIGCHLD, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    prctl(PR_SET_NAME, "sbx-spare", 0, 0, 0);

    /* EOF (the agent discarded us, or it is gone) or anything malformed: just leave. */
    if (read_full(ctl, &len, sizeof(len)) != sizeof(len) || len > (64u << 20) ||
        !(buf = malloc((size_t)len + 1)) || read_full(ctl, buf, len) != (ssize_t)len)
        _exit(0);
    close(ctl);
    p = buf;
    end = buf + len;
    if (!(exe = take_str(&p, end)) || !(cwd = take_str(&p, end)) ||
        !(shown = take_str(&p, end)) || !(argv = take_strs(&p, end)) ||
        !(env = take_strs(&p, end)))
        _exit(0);
    agent_child_exec(cwd, shown, exe, argv, env, errfd);
}

static bool same_map(const aspare *s, const wire_run *run)
{
    if (s->map_n != run->nfds)
        return false;
    for (size_t i = 0; i < run->nfds; i++)
        if (s->map_fd[i] != run->fd[i] || s->map_out[i] != run->fd_out[i])
            return false;
    return true;
}

/* Forks a spare for run's fd map (nothing happens when it cannot: the fork path remains). */
static void make_spare(agent *a, const wire_run *run)
{
    aspare *s = &a->spare;
    achan tmp = { 0 };
    spawn_plan sp = { .master = -1, .slave = -1, .maxfd = 2, .errpipe = { -1, -1 } };
    wire_run shape = { .nfds = run->nfds };
    int ctl[2] = { -1, -1 };
    int room;
    pid_t pid;

    memcpy(shape.fd, run->fd, sizeof(shape.fd));
    memcpy(shape.fd_out, run->fd_out, sizeof(shape.fd_out));
    if (agent_make_pipes(&tmp, &shape, &sp) < 0 || pipe2(sp.errpipe, O_CLOEXEC) < 0 ||
        pipe2(ctl, O_CLOEXEC) < 0)
        goto fail;
    /* Room for a large environment in one write; the default (64 KiB) where refused. */
    room = fcntl(ctl[1], F_SETPIPE_SZ, 1 << 20);
    if (room < 0)
        room = fcntl(ctl[1], F_GETPIPE_SZ);
    set_nonblock(ctl[1], true);

    pid = fork();
    if (pid == 0) {
        close(ctl[1]);
        spare_child(&tmp, &sp, ctl[0]);
    }
    if (pid < 0)
        goto fail;
    close(ctl[0]);
    close(sp.errpipe[1]);
    for (size_t i = 0; i < tmp.nfds; i++)
        close(sp.child_end[i]);
    *s = (aspare){ .pid = pid, .ctl = ctl[1], .errfd = sp.errpipe[0],
                   .room = room > 0 ? (size_t)room : 4096, .nfds = tmp.nfds,
                   .stderr_at = tmp.stderr_at, .map_n = run->nfds };
    memcpy(s->fds, tmp.fds, tmp.nfds * sizeof(tmp.fds[0]));
    memcpy(s->map_fd, run->fd, run->nfds * sizeof(run->fd[0]));
    memcpy(s->map_out, run->fd_out, run->nfds * sizeof(run->fd_out[0]));
    return;
fail:
    for (int i = 0; i < 2; i++) {
        if (ctl[i] >= 0)
            close(ctl[i]);
        if (sp.errpipe[i] >= 0)
            close(sp.errpipe[i]);
    }
    agent_unwind_plan(&tmp, &sp);
}

/* Wants the fd map of run (a non-tty command that just started) for the next spare; a spare
 * of another map is discarded (the latest map is the likeliest next). */
void agent_spare_want(agent *a, const wire_run *run)
{
    if (a->spare.pid && !same_map(&a->spare, run))
        agent_spare_discard(a);
    a->want_spare = true;
    a->want_n = run->nfds;
    memcpy(a->want_fd, run->fd, sizeof(a->want_fd));
    memcpy(a->want_out, run->fd_out, sizeof(a->want_out));
}

/* Each turn of the loop, before it sleeps: makes the wanted spare once the agent is idle (see
 * the life above). A fork that fails (the pids limit) is not retried until the next command. */
void agent_spare_idle(agent *a)
{
    wire_run shape = { .nfds = a->want_n };
    if (!a->want_spare || a->spare.pid || a->in_fd < 0 || framebuf_pending(&a->out))
        return;
    for (size_t i = 0; i < a->nchans; i++)
        if (!a->chans[i]->orphan && a->chans[i]->state != CH_DONE)
            return;
    a->want_spare = false;
    memcpy(shape.fd, a->want_fd, sizeof(shape.fd));
    memcpy(shape.fd_out, a->want_out, sizeof(shape.fd_out));
    make_spare(a, &shape);
}

/* Kills the spare and closes our ends of its pipes (its zombie is reaped by agent_reap()). */
void agent_spare_discard(agent *a)
{
    aspare *s = &a->spare;
    if (!s->pid)
        return;
    kill(s->pid, SIGKILL);
    close(s->ctl);
    close(s->errfd);
    for (size_t i = 0; i < s->nfds; i++)
        agent_close_fd(&s->fds[i]);
    memset(s, 0, sizeof(*s));
}

/* agent_reap() reaped pid: if it was the spare, forget it (it is not there to kill). */
bool agent_spare_reaped(agent *a, pid_t pid)
{
    aspare *s = &a->spare;
    if (!s->pid || s->pid != pid)
        return false;
    s->pid = 0;
    close(s->ctl);
    close(s->errfd);
    for (size_t i = 0; i < s->nfds; i++)
        agent_close_fd(&s->fds[i]);
    memset(s, 0, sizeof(*s));
    return true;
}

/*
 * Starts run on ch with the spare, when its fd map is the spare's (the caller checked there is
 * no tty). Returns false when the spare does not fit (ch untouched: the fork path follows);
 * true when it was used, with ch as agent_spawn() leaves it after a fork: running, or
 * draining with the reason its exec failed.
 */
bool agent_spare_take(agent *a, achan *ch, const wire_run *run)
{
    aspare *s = &a->spare;
    strbuf req = STRBUF_INIT;
    char cwd[SYNC_MAX_PATH * 2 + 2];
    uint32_t len;
    ssize_t n;
    pid_t pid;
    int errfd;

    if (!s->pid || !same_map(s, run))
        return false;
    agent_prefixed(a, run->cwd, cwd, sizeof(cwd));
    put_u32(&req, 0);
    strbuf_add(&req, run->exe, strlen(run->exe) + 1);
    strbuf_add(&req, cwd, strlen(cwd) + 1);
    strbuf_add(&req, run->cwd, strlen(run->cwd) + 1);
    put_strs(&req, run->argc, run->argv);
    put_strs(&req, run->envc, run->env);
    if (req.len > s->room) {
        /* too big for one write: this one forks, the spare waits for the next */
        strbuf_release(&req);
        return false;
    }
    len = (uint32_t)(req.len - sizeof(len));
    memcpy(req.buf, &len, sizeof(len));
    /* A spare someone stopped (SIGSTOP to every process) would never exec: wake it. */
    kill(s->pid, SIGCONT);
    n = write(s->ctl, req.buf, req.len);
    strbuf_release(&req);
    if (n != (ssize_t)(len + sizeof(len))) {
        /* it died (EPIPE; not reaped yet) or took part of it: never use it */
        agent_spare_discard(a);
        return false;
    }
    close(s->ctl);
    ch->nfds = s->nfds;
    memcpy(ch->fds, s->fds, s->nfds * sizeof(s->fds[0]));
    ch->stderr_at = s->stderr_at;
    pid = s->pid;
    errfd = s->errfd;
    memset(s, 0, sizeof(*s));
    if (agent_exec_failed(ch, errfd, pid))
        ch->state = CH_DRAINING;
    else
        ch->pid = pid;
    return true;
}
