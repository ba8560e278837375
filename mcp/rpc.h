/*
 * JSON-RPC 2.0 messages as MCP's stdio transport carries them: one message per line,
 * UTF-8 JSON with no embedded newline (https://modelcontextprotocol.io, "Transports").
 *
 * mcp_rpc_parse() takes one line the client wrote (untrusted: any bytes) and says what it
 * is: a request (method and id), a notification (method, no id), a response (to a request
 * of ours: the server sends none, so it is ignored), or something that gets an error
 * response (parse error, invalid request). It never fails without saying which, and keeps
 * the request's id for the error when one could be read. tests/fuzz/fuzz-mcp.c drives it.
 */
#ifndef SBX_MCP_RPC_H
#define SBX_MCP_RPC_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* JSON-RPC's error codes (and MCP's use of them). */
#define MCP_ERR_PARSE       (-32700)
#define MCP_ERR_INVALID_REQ (-32600)
#define MCP_ERR_NO_METHOD   (-32601)
#define MCP_ERR_PARAMS      (-32602)
#define MCP_ERR_INTERNAL    (-32603)

/* The longest line read; a longer one is answered with a parse error and skipped. */
#define MCP_LINE_MAX (8u << 20)

typedef enum {
    MCP_MSG_REQUEST,        /* method, id: answer it */
    MCP_MSG_NOTIFICATION,   /* method, no id: never answered */
    MCP_MSG_RESPONSE,       /* result or error with an id: not ours to answer */
    MCP_MSG_ERROR,          /* answer with error_code/error_msg (and id, when read) */
} mcp_msg_kind;

typedef struct mcp_msg {
    mcp_msg_kind kind;
    cJSON *root;            /* the parsed message (owned), or NULL */
    const cJSON *id;        /* in root: a string or an integer number; NULL: none (null) */
    const char *method;     /* in root */
    const cJSON *params;    /* in root: an object or array, or NULL */
    int error_code;
    char error_msg[160];
} mcp_msg;

/* Parses line[0..len) (no newline) into *m; mcp_msg_free() it whatever the kind. */
void mcp_rpc_parse(const char *line, size_t len, mcp_msg *m);
void mcp_msg_free(mcp_msg *m);

/* Whether s[0..len) is all valid UTF-8 (RFC 3629) with no NUL. */
bool mcp_rpc_utf8_ok(const char *s, size_t len);

/* A response, as one line (malloc'd, '\n'-terminated, no other newline): result (taken,
 * NULL for {}) or an error. id may be NULL (JSON null: the request's id could not be read). */
char *mcp_rpc_result(const cJSON *id, cJSON *result);
char *mcp_rpc_error(const cJSON *id, int code, const char *msg);

#endif
