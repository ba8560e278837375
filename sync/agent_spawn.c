/* sbx-agent's spawning: a command's pipes (or pty) per the RUN's fd map, a child (a clone
 * that shares our memory until its exec), its fds put in place, and exec with a PATH search;
 * a failure becomes the channel's EXIT. */
#include "sync/agent_int.h"

#include <sched.h>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

/*
 * Spawning less: under gVisor every system call costs 28-54 us, so the child does only what a
 * command needs changed from the agent's state, and what can be done once is done at start:
 *   - signals: exec resets a handled signal to its default by itself; only an ignored one
 *     (SIG_IGN survives exec) and the blocked mask would reach the command. The agent
 *     ignores SIGPIPE and SIGHUP, and whatever it inherited ignored at start
 *     (agent_spawn_init() lists those); its mask is emptied once at start and never changes.
 *     The child resets just that list, not all 64 signals one by one.
 *   - the agent's handlers (SIGCHLD, SIGTERM, SIGINT) may still run in the child between the
 *     clone and the exec: they see they are not in the agent (agent_pid) and act as the default
 *     would.
 *   - no copy of the agent: the child is a clone sharing the agent's memory, the agent
 *     suspended until the child's exec (CLONE_VM | CLONE_VFORK, as posix_spawn does), so
 *     there is no address space to copy (under gVisor's ptrace platform a fork makes one) and
 *     the agent's pages are not left copy-on-write for its next writes. The agent waited for
 *     the exec anyway. The child therefore writes nothing of the agent's but its own stack
 *     (spawn_stack) and, when it cannot exec, its report (spawn_report): no error pipe to
 *     make, close and read either.
 *   - fds: every fd of the agent is close-on-exec (agent_main.c marks the inherited ones
 *     once), so nothing is closed one by one; a pipe end is moved out of the way only when it
 *     sits where a child fd must go.
 */
pid_t agent_pid;
static int reset_sigs[65];
static size_t nreset_sigs;

/* Once, before the agent sets its own dispositions: which signals its children must have
 * reset (the ones it ignores, and any it inherited ignored), and an empty mask. */
void agent_spawn_init(void)
{
    sigset_t none;
    agent_pid = getpid();
    reset_sigs[nreset_sigs++] = SIGPIPE;
    reset_sigs[nreset_sigs++] = SIGHUP;
    for (int s = 1; s < 65; s++) {
        struct sigaction sa;
        if (s == SIGPIPE || s == SIGHUP || s == SIGKILL || s == SIGSTOP)
            continue;
        if (sigaction(s, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
            reset_sigs[nreset_sigs++] = s;
    }
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

/* In the child: the dispositions the agent changed back to their defaults. */
static void child_signals(void)
{
    for (size_t i = 0; i < nreset_sigs; i++)
        signal(reset_sigs[i], SIG_DFL);
}

/* ---- spawning ------------------------------------------------------------------------------ */

/* What the child reports when it cannot exec: it writes it here, in the agent's memory (the
 * one thing of the agent's it writes; the agent is suspended until the child execs or
 * exits, as posix_spawn reports its errors), and the channel's EXIT (kind 2) carries it, so a
 * command that could not start says why, as bash does. */
typedef struct spawn_report {
    int err;              /* 0: it exec'd (or was killed before it could) */
    char msg[256];
} spawn_report;

/* In the child: reports err (and what failed), then exits 127. */
SBX_NORETURN static void child_fail(spawn_report *rep, int err, const char *what,
                                    const char *arg)
{
    snprintf(rep->msg, sizeof(rep->msg), "%s%s%s: %s", what, arg ? " " : "", arg ? arg : "",
             strerror(err));
    rep->err = err > 0 && err <= 4095 ? err : EIO;
    _exit(127);
}

/* The PATH the child's own environment gives (bash's default when it has none). */
static const char *env_path(char **env)
{
    for (size_t i = 0; env && env[i]; i++)
        if (!strncmp(env[i], "PATH=", 5))
            return env[i] + 5;
    return "/usr/local/bin:/usr/bin:/bin";
}

/* In the child: execve with a PATH search in the child's own environment. */
static void exec_in_path(const char *exe, char **argv, char **env, spawn_report *rep)
{
    const char *p;
    int first_err = ENOENT;
    if (strchr(exe, '/')) {
        execve(exe, argv, env);
        child_fail(rep, errno, "cannot run", exe);
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
    child_fail(rep, first_err, "cannot run", exe);
}

/* A path from the host as this agent sees it: --root-prefix (tests run the agent as a plain
 * process on a second tree) goes in front. */
static void prefixed(agent *a, const char *path, char *out, size_t outsz)
{
    snprintf(out, outsz, "%s%s", a->o->root_prefix ? a->o->root_prefix : "", path);
}

/*
 * What agent_spawn() prepares before the clone, for the child to put in place. ch->fds[i]
 * (i < npipes) is our end of a pipe whose other end is child_end[i], to become the child's
 * ch->fds[i].child_fd; a shared fd (2 written on 1's pipe: SBX_FD_RELAY_OUT) becomes a dup
 * of the pipe of ch->fds[shared_of[k]]. With a tty, the pty's two entries (our master for
 * fds 0 and 1) come last in ch->fds and the slave becomes the child's 0, 1 and 2.
 */
typedef struct spawn_plan {
    int child_end[WIRE_MAX_FDS + 2];
    int shared_fd[WIRE_MAX_FDS], shared_of[WIRE_MAX_FDS];
    size_t nshared;
    bool tty_fds_added;   /* the pty's two entries are at the end of ch->fds */
    int master, slave;    /* the pty, or -1 */
    int maxfd;            /* the highest child fd: the child moves its ends above it first */
    char cwd[SYNC_MAX_PATH * 2 + 2];
} spawn_plan;

/* Records why the command cannot start; its EXIT (kind 2) carries it. */
static void spawn_error(achan *ch, int err, const char *fmt, const char *what)
{
    ch->spawn_errno = err;
    snprintf(ch->spawn_msg, sizeof(ch->spawn_msg), fmt, what, strerror(err));
}

/* A tty command: a pty whose master is ours, sized as the host's terminal. */
static int open_pty(achan *ch, const wire_run *run, spawn_plan *sp)
{
    char name[128];
    sp->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (sp->master < 0 || grantpt(sp->master) < 0 || unlockpt(sp->master) < 0 ||
        ptsname_r(sp->master, name, sizeof(name)) != 0 ||
        (sp->slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0) {
        spawn_error(ch, errno ? errno : EIO, "cannot allocate a %s: %s", "pty");
        if (sp->master >= 0)
            close(sp->master);
        sp->master = -1;
        return -1;
    }
    {
        struct winsize ws = { .ws_row = run->rows, .ws_col = run->cols };
        ioctl(sp->master, TIOCSWINSZ, &ws);
    }
    return 0;
}

/*
 * Does this system's pty echo a signal key it takes? Linux's line discipline, given Ctrl-C
 * with ISIG and ECHO, sends SIGINT and echoes "^C" (n_tty_receive_signal_char, ECHOCTL's
 * form), which is what a person sees under bash; gVisor's sends the signal and either
 * consumes the key without a word (devpts/line_discipline.go, since 2026-03) or echoes the
 * raw byte, which shows nothing (before: it has no ECHOCTL). So the first pty is asked,
 * before any process has it as its terminal (a signal key then signals nobody): the master types
 * VINTR, "x" and a newline; what comes back up to the "x" is "^C" or nothing, and the slave
 * reads the "x" line, so nothing of the probe is left for the command. The wait is for
 * the "x" and its newline, whose echo comes on both (bounded: 5 s). 1 when it echoes, or
 * when it cannot tell (then the agent adds nothing: never a second "^C"), -1 when the agent
 * must echo, with
 * *raw set when the pty echoes the key as its raw byte (which the agent then takes out of
 * the output: a program reading the terminal raw, as OpenHands does, would see both).
 */
/* Whether the probe's echo has come whole: the "x" and the newline after it. */
static bool probe_echo_done(const char *out, size_t len)
{
    const char *x = memchr(out, 'x', len);
    return x && memchr(x, '\n', len - (size_t)(x - out)) != NULL;
}

static int probe_sig_echo(int master, int slave, bool *raw)
{
    struct termios t;
    char out[64], line[16];
    size_t len = 0;
    int64_t end = mf_now_ns() + 5000000000LL;

    if (tcgetattr(slave, &t) < 0 || (t.c_lflag & (ISIG | ECHO | ICANON)) != (ISIG | ECHO | ICANON) ||
        t.c_cc[VINTR] == _POSIX_VDISABLE)
        return 1;
    {
        char probe[3] = { (char)t.c_cc[VINTR], 'x', '\n' };
        if (write(master, probe, sizeof(probe)) != (ssize_t)sizeof(probe))
            return 1;
    }
    /* the echo, up to the newline after the "x" (all of it: what is left in the master
     * would be the command's first output, a stray empty line) */
    while (!probe_echo_done(out, len) && len < sizeof(out)) {
        struct pollfd pf = { .fd = master, .events = POLLIN };
        int64_t left = (end - mf_now_ns()) / 1000000;
        ssize_t n;
        if (left <= 0 || poll(&pf, 1, (int)left) <= 0)
            return 1;
        n = read(master, out + len, sizeof(out) - len);
        if (n <= 0)
            return 1;
        len += (size_t)n;
    }
    /* the line the slave got ("x\n"), read so the command does not (Linux has it by the
     * time the echo came: both come from one pass over the typed bytes) */
    {
        struct pollfd pf = { .fd = slave, .events = POLLIN };
        int64_t left = (end - mf_now_ns()) / 1000000;
        if (left <= 0 || poll(&pf, 1, (int)left) <= 0 || read(slave, line, sizeof(line)) < 0)
            return 1;
    }
    {
        const char *x = memchr(out, 'x', len);
        if (!x)
            return 1;
        /* before the "x": Linux's "^C"; nothing (gVisor now), or the raw byte, which a
         * terminal does not show (gVisor before 2026-03, which also passes it on as input) */
        if (x - out >= 2 && out[0] == '^')
            return 1;
        *raw = x - out >= 1 && (unsigned char)out[0] == t.c_cc[VINTR];
        return -1;
    }
}

/* One pipe per fd of the RUN's map (a tty's 0-2 are the pty's), or a note that the fd
 * shares the pipe of the nearest output fd before it. */
static int make_pipes(achan *ch, const wire_run *run, spawn_plan *sp)
{
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
                return -1;
            }
            while (ch->fds[k].child_fd != run->fd[j])
                k++;
            sp->shared_fd[sp->nshared] = run->fd[i];
            sp->shared_of[sp->nshared++] = (int)k;
            if (run->fd[i] == 2)
                ch->stderr_at = k + 1;
            if (run->fd[i] > sp->maxfd)
                sp->maxfd = run->fd[i];
            continue;
        }
        if (pipe2(p, O_CLOEXEC) < 0) {
            spawn_error(ch, errno, "%s: %s", "pipe");
            return -1;
        }
        f = &ch->fds[ch->nfds];
        f->child_fd = run->fd[i];
        f->out = run->fd_out[i];
        f->fd = f->out ? p[0] : p[1];
        sp->child_end[ch->nfds] = f->out ? p[1] : p[0];
        f->credit = SYNC_OUTPUT_WINDOW;
        strbuf_init(&f->in, 0);
        /* a fresh pipe end's status flags are its access mode only (F_SETFL ignores it) */
        fcntl(f->fd, F_SETFL, O_NONBLOCK);
        if (run->fd[i] > sp->maxfd)
            sp->maxfd = run->fd[i];
        ch->nfds++;
        if (run->fd[i] == 2 && f->out)
            ch->stderr_at = ch->nfds;
    }
    return 0;
}

/* The pty's master as the channel's fd 0 (input, a dup) and fd 1 (output). */
static void add_pty_fds(achan *ch, spawn_plan *sp)
{
    achan_fd *in = &ch->fds[ch->nfds++], *out = &ch->fds[ch->nfds++];
    *in = (achan_fd){ .child_fd = 0, .out = false, .fd = fcntl(sp->master, F_DUPFD_CLOEXEC, 3) };
    *out = (achan_fd){ .child_fd = 1, .out = true, .fd = sp->master, .pty = true,
                       .credit = SYNC_OUTPUT_WINDOW };
    strbuf_init(&in->in, 0);
    strbuf_init(&out->in, 0);
    set_nonblock(in->fd, true);
    set_nonblock(out->fd, true);
    sp->tty_fds_added = true;
    ch->stderr_at = ch->nfds;
}

/* In the child, never returns: a new session (the pty as its controlling terminal), default
 * signals, the fd map in place (every unmapped fd of 0-2 is /dev/null), the cwd, exec. Any
 * failure goes to the parent in rep. It runs in the agent's memory (see the top): it writes
 * nothing of it but its own stack and rep. */
SBX_NORETURN static void run_child(const achan *ch, const wire_run *run, const spawn_plan *sp,
                                   spawn_report *rep)
{
    int high[WIRE_MAX_FDS + 2];
    size_t npipes = ch->nfds - (ch->tty ? 2 : 0);
    setsid();
    if (ch->tty && ioctl(sp->slave, TIOCSCTTY, 0) < 0)
        child_fail(rep, errno, "cannot set the controlling terminal", NULL);
    child_signals();
    /* An end that sits where a child fd goes is moved out of the way first (usually none
     * is: the agent's own 0-2 are taken, and the map's fds are few and low). */
    for (size_t i = 0; i < npipes; i++) {
        high[i] = sp->child_end[i];
        if (high[i] <= sp->maxfd) {
            high[i] = fcntl(sp->child_end[i], F_DUPFD_CLOEXEC, sp->maxfd + 1);
            if (high[i] < 0)
                child_fail(rep, errno, "fcntl", NULL);
        }
    }
    if (ch->tty)
        for (int fd = 0; fd <= 2; fd++)
            if (dup2(sp->slave, fd) < 0)
                child_fail(rep, errno, "dup2", NULL);
    for (size_t i = 0; i < npipes; i++)
        if (dup2(high[i], ch->fds[i].child_fd) < 0)
            child_fail(rep, errno, "dup2", NULL);
    for (size_t i = 0; i < sp->nshared; i++)
        if (dup2(high[sp->shared_of[i]], sp->shared_fd[i]) < 0)
            child_fail(rep, errno, "dup2", NULL);
    for (int fd = 0; fd <= 2 && !ch->tty; fd++) {
        bool mapped = false;
        for (size_t i = 0; i < npipes; i++)
            mapped |= ch->fds[i].child_fd == fd;
        for (size_t i = 0; i < sp->nshared; i++)
            mapped |= sp->shared_fd[i] == fd;
        if (!mapped) {
            int nul = open("/dev/null", O_RDWR);
            if (nul < 0 || (nul != fd && dup2(nul, fd) < 0))
                child_fail(rep, errno, "open /dev/null", NULL);
            if (nul != fd)
                close(nul);
        }
    }
    if (chdir(sp->cwd) < 0)
        child_fail(rep, errno, "cd", run->cwd);
    exec_in_path(run->exe, run->argv, run->env, rep);
    _exit(127); /* not reached: exec_in_path() execs or fails through child_fail() */
}

/* After the clone (the child exec'd or exited): true when the command did not start (the
 * child is reaped, the channel's fds closed: its EXIT carries the reason). */
static bool exec_failed(achan *ch, const spawn_report *rep, pid_t pid)
{
    int status;
    if (!rep->err)
        return false;
    ch->spawn_errno = rep->err;
    snprintf(ch->spawn_msg, sizeof(ch->spawn_msg), "%s", rep->msg);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    for (size_t i = 0; i < ch->nfds; i++)
        agent_close_fd(&ch->fds[i]);
    return true;
}

/* The child's stack: one child at a time runs on it (the agent is suspended until its exec). */
#if !defined(__SANITIZE_ADDRESS__)
static char spawn_stack[64 * 1024] __attribute__((aligned(64)));
#endif

/* Under AddressSanitizer the child runs on a buffer inside this thread's own stack (a local
 * of agent_spawn, and bigger: ASan's frames are), not the static one: ASan knows the
 * thread's stack bounds, and a stack outside them makes it print a warning at the child's
 * first noreturn call, into the command's stderr. The buffer is unpoisoned around each
 * clone, since the child never returns to unpoison its frames' redzones, and what it left
 * would be taken for overflows of the agent's own frames there later. */
#if defined(__SANITIZE_ADDRESS__)
#define SPAWN_STACK_CLEAN(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define SPAWN_STACK_CLEAN(p, n) ((void)0)
#endif

typedef struct spawn_child {
    const achan *ch;
    const wire_run *run;
    const spawn_plan *sp;
    spawn_report rep;
} spawn_child;

/* The clone's start (never returns). */
static int spawn_child_main(void *arg)
{
    spawn_child *c = arg;
    run_child(c->ch, c->run, c->sp, &c->rep);
}

/* Undoes what was set up before a failure ahead of the clone. */
static void unwind_plan(achan *ch, spawn_plan *sp)
{
    for (size_t i = 0; i < ch->nfds; i++) {
        agent_close_fd(&ch->fds[i]);
        if (!(sp->tty_fds_added && i >= ch->nfds - 2))
            close(sp->child_end[i]);
    }
    if (sp->master >= 0 && !sp->tty_fds_added)
        close(sp->master);
    if (sp->slave >= 0)
        close(sp->slave);
    ch->nfds = 0;
}

/*
 * Starts the command of a RUN on channel id. It never fails as a call: a command that cannot
 * start (no pty, no pipe, fork or exec failed) gets a channel in CH_DRAINING with nothing to
 * drain and spawn_errno set, so its EXIT (kind 2, with the message) goes out like any other.
 */
void agent_spawn(agent *a, uint32_t id, wire_run *run)
{
    achan *ch = xcalloc(1, sizeof(*ch));
    spawn_plan sp = { .master = -1, .slave = -1, .maxfd = 2 };
    pid_t pid;

    ch->id = id;
    ch->pull = (run->flags & WIRE_RUN_PULL) != 0;
    ch->tty = (run->flags & WIRE_RUN_TTY) != 0;
    ch->state = CH_RUNNING;
    XGROW(a->chans, a->achans, a->nchans + 1);
    a->chans[a->nchans++] = ch;

    if (ch->tty && open_pty(ch, run, &sp) < 0) {
        ch->state = CH_DRAINING;
        return;
    }
    if (ch->tty && !a->pty_sig_echo)
        a->pty_sig_echo = probe_sig_echo(sp.master, sp.slave, &a->pty_raw_echo);
    if (make_pipes(ch, run, &sp) < 0)
        goto fail;
    if (ch->tty)
        add_pty_fds(ch, &sp);
    prefixed(a, run->cwd, sp.cwd, sizeof(sp.cwd));

    /* c lives in this frame until the child exec'd or exited (CLONE_VFORK). */
    spawn_child c = { ch, run, &sp, { 0 } };
#if defined(__SANITIZE_ADDRESS__)
    /* (ASan's frames and interceptors need more than the 64 KiB a plain child uses) */
    static const size_t child_stack_size = 1u << 20;
    char child_stack[1u << 20] __attribute__((aligned(64)));
#else
    static const size_t child_stack_size = sizeof(spawn_stack);
    char *child_stack = spawn_stack;
#endif
    SPAWN_STACK_CLEAN(child_stack, child_stack_size);
    pid = clone(spawn_child_main, child_stack + child_stack_size,
                CLONE_VM | CLONE_VFORK | SIGCHLD, &c);
    SPAWN_STACK_CLEAN(child_stack, child_stack_size);   /* the child's marks, now it exec'd */
    for (size_t i = 0; i < ch->nfds - (ch->tty ? 2 : 0); i++)
        close(sp.child_end[i]);
    if (sp.slave >= 0)
        close(sp.slave);
    if (pid < 0) {
        spawn_error(ch, errno, "%s: %s", "fork");
        for (size_t i = 0; i < ch->nfds; i++)
            agent_close_fd(&ch->fds[i]);
        ch->state = CH_DRAINING;
        return;
    }
    if (exec_failed(ch, &c.rep, pid)) {
        ch->state = CH_DRAINING;
        return;
    }
    ch->pid = pid;
    return;
fail:
    unwind_plan(ch, &sp);
    ch->state = CH_DRAINING;
}
