/*
 * sbx-agent: the sandbox's end of the protocol (see PROTOCOL.md). It applies the host's
 * deltas, runs commands (each in a session and process group of its own, with the fds, pty
 * and environment the host asked for), relays their fds with flow control, and sends the
 * sandbox's changes back when a command exits or the host asks for a sync.
 *
 * The agent trusts the host. It keeps its state (manifest, sequence numbers, running
 * commands and their background processes) across connections in --listen mode, so that a
 * restarted holder can reattach, and optionally in a state file across restarts.
 */
#ifndef SBX_SYNC_AGENT_H
#define SBX_SYNC_AGENT_H

#include <stdbool.h>

#define SBX_AGENT_VERSION "0.1"

typedef struct agent_opts {
    const char *root_prefix;  /* prepended to every root and cwd (tests) */
    const char *state_file;   /* manifest persisted here between runs */
    const char *listen_path;  /* --listen SOCKET */
    int idle_timeout;         /* --listen: exit after this many seconds without a host */
    bool no_watch;            /* never use inotify */
    int notice_fd;            /* > 0: the network helper's notices (sync/dnsstub.h) */
    int listen_fd;            /* --listen: the socket, bound and listening (agent_listen_socket) */
    const char *fsmonitor_path; /* --fsmonitor SOCKET: answer git's fsmonitor hook there */
    int fsmonitor_fd;         /* its socket, bound and listening, or -1 */
    const char *fsmonitor_link; /* --fsmonitor-link PATH: made a symlink to this program */
} agent_opts;

/* Serves one host on fds 0 (from the host) and 1 (to it) until it goes away. */
int agent_serve_stdio(const agent_opts *o);
/* Binds and listens on the Unix socket at path (mode 0600, a stale one replaced): the fd,
 * or -1 after saying why on stderr. */
int agent_listen_socket(const char *path);
/* Serves hosts connecting to o->listen_fd (from agent_listen_socket(o->listen_path)), one at
 * a time; a new connection takes over from the current one. */
int agent_serve_listen(const agent_opts *o);
/* Relays stdin/stdout to an agent listening on socket path (for `runsc exec`). */
int agent_bridge(const char *path);
/* The relay itself, on a connected fd: stdin to fd (its end as a half-close), fd to stdout,
 * until fd ends; 0, or 1 when a read or write failed. */
int agent_bridge_fd(int fd);
/* --connect SOCKET [--start] [--resume ID] (agent_pod.c): the bridge for a backend whose
 * every connection is a new process in the sandbox; daemon_args are the options a started
 * `--listen SOCKET` daemon gets. */
int agent_pod_connect(const char *self, const char *sock, bool start, const char *resume_id,
                      char *const *daemon_args);

#endif
