/*
 * The session holder: one long-lived process per session that keeps the
 * sandbox claimed, one sync_conn to its sbx-agent, and the host manifest
 * warm, and serves sbxsh/sbx clients on the session's Unix socket.
 *
 * The client (session.c) creates, binds and listens on the socket under a
 * lock, then forks the holder (double fork + setsid, as ssh's
 * ControlMaster), so the socket exists before anyone connects and nobody
 * polls for it. The holder claims the sandbox lazily, on the first command,
 * and again after a sandbox died. It exits after a release, after
 * cfg->idle_timeout seconds without clients (releasing the sandbox), or on
 * SIGTERM (leaving the sandbox for the next holder to reattach).
 */
#ifndef SBX_SESSION_HOLDER_H
#define SBX_SESSION_HOLDER_H

#include "session/config.h"

/* Serves the session on listen_fd until it ends; returns the process's exit
 * status. Runs in the forked holder process (it owns the process: signal
 * dispositions, stdio). */
int session_holder_main(const sbx_config *cfg, int listen_fd);

#endif
