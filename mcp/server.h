/*
 * `sbx mcp`: a Model Context Protocol server on stdio, built on libsbxsh.
 *
 * One server is one MCP client's connection: it reads JSON-RPC lines from in_fd, answers on
 * out_fd (nothing else is ever written there), and runs each tools/call of execute_command
 * as `sbxsh -c` would in the session its options name, concurrently, each call on a thread
 * and a libsbxsh handle of its own so that a notifications/cancelled stops exactly the
 * call it names. It returns when the client closes in_fd (or stop_fd becomes readable),
 * after cancelling what still runs.
 */
#ifndef SBX_MCP_SERVER_H
#define SBX_MCP_SERVER_H

#include <stddef.h>

#include "common/util.h"

/* The protocol versions spoken, newest first (the official TypeScript SDK's list as of
 * its 1.32: an initialize asking for one of these gets it, any other gets the first). */
extern const char *const mcp_protocol_versions[];

#define MCP_OUTPUT_CAP_DEFAULT 30000    /* characters per stream */
#define MCP_CALLS_MAX 16                /* tools/call running at once */

typedef struct mcp_server_opts {
    const char *session;    /* --session, or NULL: sbxsh's own choice */
    const char *cwd;        /* --cwd, or NULL: the server's cwd */
    const char *program;    /* the sbxsh lines run with, or NULL: libsbxsh's default */
    size_t output_cap;      /* characters kept per stream; 0: MCP_OUTPUT_CAP_DEFAULT */
} mcp_server_opts;

/* Serves until end of input (0) or a failure to read or write the protocol's fds, or to
 * open the session's configuration (-1, *err says which). */
int mcp_server_run(int in_fd, int out_fd, int stop_fd, const mcp_server_opts *o, sbx_err *err);

#endif
