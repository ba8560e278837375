/*
 * sbx-agent's insides, shared by its files (private to sync/agent*.c):
 *   agent.c        the host connection (frames in and out, dispatch), the event loop, the
 *                  entry points (stdio, --listen, --connect);
 *   agent_chan.c   channels: a command's fds, its exit, the drain of its outputs, SYNC's output
 *                  barrier, relaying output and input;
 *   agent_spawn.c  starting a command: pipes or a pty, the fd map, fork and exec;
 *   agent_sync.c   sync rounds: the tree from CONFIG, scans, the finals a round carries, the
 *                  state file.
 * agent.h is the API (what agent_main.c calls).
 */
#ifndef SBX_SYNC_AGENT_INT_H
#define SBX_SYNC_AGENT_INT_H

#include "sync/agent.h"
#include "common/framebuf.h"
#include "sync/delta.h"
#include "sync/fsmonitor.h"
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

/* The agent's buffer to the host: agent_pump() refills it below OUT_LOW, up to OUT_HIGH; a
 * command's output is not read while it holds OUT_HIGH (the host is behind). */
#define OUT_LOW (256u * 1024)
#define OUT_HIGH (1024u * 1024)
#define READ_CHUNK (64u * 1024)           /* one read of a command's output: one DATA frame */
#define CREDIT_BATCH (SYNC_INPUT_WINDOW / 4) /* input credit goes back in batches this big */
#define SAVE_INTERVAL_NS (5LL * 1000000000)  /* the state file, at most this often while dirty */

/*
 * A channel is one command, named by the host's channel id. Its life:
 *
 *   CH_RUNNING   the main process runs; its outputs are relayed as DATA within the host's
 *                credit (SYNC_OUTPUT_WINDOW per fd), its inputs fed from DATA within ours
 *                (SYNC_INPUT_WINDOW, returned as CREDIT once written to the child).
 *   CH_DRAINING  the main process exited (reaped, its status kept) or never started
 *                (spawn_errno). Its outputs are still read until each has no writer left
 *                (EOF, or EIO on a pty) or a deadline passes: the drain rules at
 *                chan_exited() in agent_chan.c. Nothing is lost while the host is behind:
 *                without credit the deadline moves.
 *   CH_FINAL     drained: its EXIT is a "final" queued for the next sync round, so that
 *                the sandbox's changes reach the host before the EXIT (a round scans only
 *                if the RUN asked for a pull). agent_pump() sends round, delta, then EXIT.
 *   CH_DONE      EXIT sent. The channel id is free for a new RUN; its output fds, if a
 *                background process still holds them, are read and dropped.
 *
 * An orphan is a channel whose host went away (drop_connection()): everything it
 * writes is dropped, no EXIT is sent. A channel is freed once it is CH_DONE or an orphan,
 * no fd of it is open and its main process is reaped (agent_progress_channels()).
 *
 * SYNC frames take the same path as EXITs (a final with an id), after an output barrier:
 * see agent_sync_barrier().
 */
enum chan_state { CH_RUNNING, CH_DRAINING, CH_FINAL, CH_DONE };

typedef struct achan_fd {
    uint16_t child_fd;
    bool out;
    int fd;               /* our end, or -1 */
    uint32_t credit;      /* out: bytes we may still send */
    uint64_t drain_left;  /* out, after the exit: bytes to read before EXIT */
    bool pty;             /* the terminal's master (a tty command's output) */
    /* out, on a pty that echoes a signal key as its raw byte (pty_raw_echo): the keys
     * echo_signal_keys echoed as ^C, ^\ or ^Z, whose raw echo is still to come and is
     * taken out of the output (agent_read_output), oldest first */
    unsigned char raw_echo[8];
    uint8_t nraw_echo;
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
    framebuf_in in;       /* frames from the host */
    framebuf_out out;     /* frames to the host */
    delta_tx tx;
    bool tx_active;
    final *barred;        /* SYNCs waiting for their output barrier (see agent_sync_barrier) */
    size_t nbarred, abarred;
    final *finals;        /* waiting for the next scan */
    size_t nfinals, afinals;
    final *sending;       /* finals of the delta being sent */
    size_t nsending, asending;

    achan **chans;
    size_t nchans, achans;
    int listen_fd;
    int fsm_fd;           /* --fsmonitor SOCKET: git's fsmonitor hook asks here, or -1 */
    fsm_state fsm;        /* what changed, for that hook (fed by the tree's watch) */
    int64_t idle_since;
    bool quit;
    bool net_noticed;     /* the no-network notice reached a command (agent_net_notice) */
    bool pty_raw_echo;    /* with pty_sig_echo -1: the pty echoes such a key as its raw byte */
    int pty_sig_echo;     /* 0: not known yet; 1: a pty echoes the signal keys it takes
                             (Ctrl-C as ^C: Linux); -1: it does not (gVisor), so the agent
                             does (agent_write_input). Probed at the first pty (agent_spawn.c) */
} agent;

/* The functions the files share, by the file that defines them; each one's lead comment is at
 * its definition. */

/* ---- agent.c ------------------------------------------------------------------------------- */
/* Sends a WARN to the host (an mf_warn_fn; nothing while no host is attached). */
void agent_warn(void *ctx, const char *msg);
void agent_warnf(agent *a, const char *fmt, ...) SBX_PRINTF(2, 3);

/* ---- agent_fsmon.c ------------------------------------------------------------------------- */
/* A random id for this agent process (its fsmonitor tokens carry it). */
uint64_t agent_fsm_instance(void);
/* Answers one client of the fsmonitor socket (accepted here). */
void agent_fsmonitor_serve(agent *a);

/* ---- agent_chan.c -------------------------------------------------------------------------- */
void agent_chan_discard(achan *ch);
void agent_close_fd(achan_fd *f);
achan *agent_find_chan(agent *a, uint32_t id);
achan_fd *agent_find_fd(achan *ch, unsigned fd, bool out);
void agent_free_chan_at(agent *a, size_t i);
void agent_progress_channels(agent *a);
void agent_read_output(agent *a, achan *ch, achan_fd *f);
void agent_reap(agent *a);
void agent_release_barred(agent *a);
void agent_send_exit(agent *a, achan *ch);
void agent_sync_barrier(agent *a, const final *f);
void agent_write_input(agent *a, achan *ch, achan_fd *f);
void agent_net_notice(agent *a);

/* ---- agent_spawn.c ------------------------------------------------------------------------- */
void agent_spawn(agent *a, uint32_t id, wire_run *run);
void agent_spawn_init(void);
extern pid_t agent_pid;

/* ---- agent_sync.c -------------------------------------------------------------------------- */
uint8_t agent_full(agent *a);
bool agent_host_wants_write(const agent *a);
void agent_journal_prune(agent *a, uint64_t upto);
void agent_pump(agent *a);
void agent_save_state(agent *a, bool force);
void agent_setup_tree(agent *a, const wire_config *cfg);

#endif
