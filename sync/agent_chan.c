/* sbx-agent's channels: one per command, its fds, its exit and the drain of its outputs,
 * SYNC's output barrier, and relaying bytes between the host and the command's fds. */
#include "sync/agent_int.h"

/* ---- channels --------------------------------------------------------------------------- */

/* The live channel with this id (not an orphan, not done: its id may be reused), or NULL. */
achan *agent_find_chan(agent *a, uint32_t id)
{
    for (size_t i = 0; i < a->nchans; i++)
        if (a->chans[i]->id == id && !a->chans[i]->orphan && a->chans[i]->state != CH_DONE)
            return a->chans[i];
    return NULL;
}

/* ch's entry for the child's fd in that direction (a pty's 0 and 1 are two entries), or
 * NULL; ch may be NULL. */
achan_fd *agent_find_fd(achan *ch, unsigned fd, bool out)
{
    for (size_t i = 0; ch && i < ch->nfds; i++)
        if (ch->fds[i].child_fd == fd && ch->fds[i].out == out)
            return &ch->fds[i];
    return NULL;
}

/* Closes our end and drops input not yet written to the child. */
void agent_close_fd(achan_fd *f)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    strbuf_release(&f->in);
    f->in_off = 0;
}

/* After EXIT (or when its host is gone): output is read and dropped, input closed. */
void agent_chan_discard(achan *ch)
{
    ch->state = CH_DONE;
    for (size_t i = 0; i < ch->nfds; i++)
        if (!ch->fds[i].out)
            agent_close_fd(&ch->fds[i]);
}

/* Frees a->chans[i] (closing what is still open); the last channel takes its place. */
void agent_free_chan_at(agent *a, size_t i)
{
    achan *ch = a->chans[i];
    for (size_t k = 0; k < ch->nfds; k++)
        agent_close_fd(&ch->fds[k]);
    free(ch);
    a->chans[i] = a->chans[--a->nchans];
}

/* Queues an EXIT or SYNC_DONE for the next sync round (see agent_pump()). */
static void queue_final(agent *a, const final *f)
{
    XGROW(a->finals, a->afinals, a->nfinals + 1);
    a->finals[a->nfinals++] = *f;
}

/* Encodes ch's EXIT (kind 0 exited, 1 killed by a signal, 2 could not start) and retires
 * the channel (CH_DONE). Called when its round's delta has been sent. */
void agent_send_exit(agent *a, achan *ch)
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
    x.full = agent_full(a);
    wire_put_exit(&a->out.q, ch->id, &x);
    agent_chan_discard(ch);
}

/*
 * A SYNC is also an output barrier: whatever the commands' output pipes hold
 * when it arrives goes to the host before its SYNC_DONE. The persistent
 * shell writes a command's output, then its status report; once the host has
 * the report and asks for a SYNC, the output before the report is in the
 * pipes, and this puts it ahead of SYNC_DONE, so the front end can print what
 * comes next in order.
 */
void agent_sync_barrier(agent *a, const final *f)
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
void agent_release_barred(agent *a)
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

/* A pty whose command left no process in its group: no writer is left, but gVisor's pty
 * never says EIO, so a shorter wait covers what the kernel still moves to the master (a
 * worker does it on Linux, where the EIO after it ends the drain at once; without this,
 * every tty command under runsc waited OUT_QUIET_NS). */
#define OUT_QUIET_PTY_NS (25 * 1000000LL)

/* The main process exited: keep its status and start the drain of every open output. */
static void chan_exited(agent *a, achan *ch, pid_t pgid, int status)
{
    int64_t now = mf_now_ns();
    bool group_gone = kill(-pgid, 0) < 0 && errno == ESRCH;
    (void)a;
    ch->status = status;
    ch->state = CH_DRAINING;
    for (size_t i = 0; i < ch->nfds; i++) {
        achan_fd *f = &ch->fds[i];
        if (!f->out || f->fd < 0)
            continue;
        f->drain_left = UINT64_MAX;
        f->drain_until = now + (f->pty && group_gone ? OUT_QUIET_PTY_NS : OUT_QUIET_NS);
        f->drain_cap = now + OUT_DRAIN_MAX_NS;
    }
}

/* Reaps every exited child: a channel's main process starts its drain; anything else (a
 * background process, an orphan adopted as subreaper) is just reaped. */
void agent_reap(agent *a)
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
                agent_chan_discard(ch);
            else
                chan_exited(a, ch, pid, status);
            break;
        }
        /* Anything else: a background process or an orphan we adopted. */
    }
}

/* Channels whose drain is complete get their EXIT queued (after a scan when asked). */
void agent_progress_channels(agent *a)
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
                agent_free_chan_at(a, i);
                continue;
            }
        }
        i++;
    }
}

/* ---- channel fds ------------------------------------------------------------------------ */

/* One read of a command's output fd, as a DATA frame within the host's credit (and, while
 * draining, within what the drain still wants); EOF becomes an EOF frame. Output nobody
 * will receive is read and dropped. Bytes read count against a pending SYNC barrier. */
void agent_read_output(agent *a, achan *ch, achan_fd *f)
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
            wire_frame_raw(&a->out.q, WIRE_EOF, f->child_fd, ch->id, NULL, 0);
        agent_close_fd(f);
        f->drain_left = 0;
        f->barrier_left = 0;
        return;
    }
    f->barrier_left -= (uint64_t)n < f->barrier_left ? (uint64_t)n : f->barrier_left;
    if (discard)
        return;
    if (f->nraw_echo) {
        /* the raw echoes of the signal keys already shown as ^C (echo_signal_keys) */
        ssize_t k = 0;
        for (ssize_t i = 0; i < n; i++) {
            if (f->nraw_echo && (unsigned char)buf[i] == f->raw_echo[0]) {
                memmove(f->raw_echo, f->raw_echo + 1, --f->nraw_echo);
                continue;
            }
            buf[k++] = buf[i];
        }
        n = k;
        if (!n)
            return;
    }
    wire_frame_raw(&a->out.q, WIRE_DATA, f->child_fd, ch->id, buf, (size_t)n);
    f->credit -= (uint32_t)n;
    if (ch->state == CH_DRAINING) {
        /* bytes after the exit: the writer is alive; wait for its next ones, up to the cap */
        int64_t until = mf_now_ns() + OUT_QUIET_NS;
        f->drain_until = until < f->drain_cap ? until : f->drain_cap;
    }
}

/*
 * On a pty that does not echo the signal keys it takes (gVisor: agent->pty_sig_echo), what
 * Linux's line discipline would have echoed for them: each VINTR, VQUIT and VSUSP byte
 * just written, while the pty has ISIG and ECHO (its termios as the command left it, read
 * from the master), comes back on the pty's output as ^C, ^\ or ^Z (ECHOCTL; without it,
 * the byte itself), as a person sees it under bash. Within the host's credit, like any output.
 */
static void echo_signal_keys(agent *a, achan *ch, int fd, const char *buf, size_t n)
{
    struct termios t;
    achan_fd *out = agent_find_fd(ch, 1, true);

    if (a->pty_sig_echo >= 0 || !out || !out->pty || out->fd < 0 || ch->orphan ||
        a->out_fd < 0 || tcgetattr(fd, &t) < 0 || (t.c_lflag & (ISIG | ECHO)) != (ISIG | ECHO))
        return;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)buf[i];
        char e[2];
        size_t elen = 0;
        if (c == _POSIX_VDISABLE ||
            (c != t.c_cc[VINTR] && c != t.c_cc[VQUIT] && c != t.c_cc[VSUSP]))
            continue;
        if ((t.c_lflag & ECHOCTL) && (c < 0x20 || c == 0x7f) && c != '\t') {
            e[elen++] = '^';
            e[elen++] = (char)(c ^ 0x40);
        } else {
            e[elen++] = (char)c;
        }
        if (out->credit < elen)
            return;
        wire_frame_raw(&a->out.q, WIRE_DATA, out->child_fd, ch->id, e, elen);
        out->credit -= (uint32_t)elen;
        if (a->pty_raw_echo && out->nraw_echo < sizeof(out->raw_echo))
            out->raw_echo[out->nraw_echo++] = c;
    }
}

/* Writes queued input to the child until its pipe is full, returning CREDIT to the host in
 * batches (or once the queue is empty); closes the fd once the host's EOF is reached. A
 * child that closed its end (EPIPE) has the rest dropped and credited, so the host's
 * window never stays used up. */
void agent_write_input(agent *a, achan *ch, achan_fd *f)
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
        if (ch->tty)
            echo_signal_keys(a, ch, f->fd, f->in.buf + f->in_off, (size_t)n);
        f->in_off += (size_t)n;
        f->in_done += (uint32_t)n;
    }
    if (f->in_off == f->in.len) {
        strbuf_reset(&f->in);
        f->in_off = 0;
    }
    if (f->in_done && a->out_fd >= 0 && !ch->orphan &&
        (f->in_done >= CREDIT_BATCH || !f->in.len)) {
        size_t at = wire_begin(&a->out.q, WIRE_CREDIT, f->child_fd, ch->id);
        wire_u32(&a->out.q, f->in_done);
        wire_end(&a->out.q, at);
        f->in_done = 0;
    }
    if (f->in_eof && !f->in.len)
        agent_close_fd(f);
}

/* The sandbox has no network (sync/dnsstub.h): the helper sends a line per lookup; the
 * first one that a running command can show goes to its stderr, as if it had written it,
 * and then none again for the sandbox's life. A line starting with '!' (the egress proxy
 * refused a tunnel) is shown each time. */
void agent_net_notice(agent *a)
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
            achan_fd *f = ch->stderr_at && ch->stderr_at <= ch->nfds
                          ? &ch->fds[ch->stderr_at - 1] : NULL;
            /* a raw terminal's line ends with CR LF */
            size_t tl = len + (f && f->pty ? 2 : 1);
            /* (an exited command whose stderr is still open gets it too: the lookup and
             * its exit may reach us in one turn) */
            if ((ch->state != CH_RUNNING && ch->state != CH_DRAINING) || ch->orphan || !f ||
                f->fd < 0 || f->credit < tl)
                continue;
            memcpy(text + len, f->pty ? "\r\n" : "\n", tl - len);
            wire_frame_raw(&a->out.q, WIRE_DATA, f->child_fd, ch->id, text, tl);
            f->credit -= (uint32_t)tl;
            if (!always)
                a->net_noticed = true;
        }
    }
}
