/*
 * JSON-RPC 2.0 framing for the MCP server (rpc.h). Every line the client writes comes
 * here first; what it may be is decided in this order, each step's failure answered:
 *
 *   bytes    -> valid UTF-8 with no NUL, else a parse error (JSON is UTF-8; a NUL would
 *               end cJSON's strings early);
 *   JSON     -> one value with nothing but blanks after it, else a parse error;
 *   shape    -> an object (MCP dropped batches in 2025-06-18, so an array is an invalid
 *               request), "jsonrpc": "2.0", an id that is a string or an integer a double
 *               holds exactly, and no \u0000 escape in any string (cJSON would cut the
 *               string there: "rm x\u0000y" must not run as "rm x"), else an invalid
 *               request, with the id when it could be read;
 *   kind     -> "method" (a string) with an id: a request; without: a notification;
 *               "result" or "error" with an id: a response; anything else is invalid.
 */
#include "rpc.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/report.h"
#include "common/util.h"

bool mcp_rpc_utf8_ok(const char *s_, size_t len)
{
    const unsigned char *s = (const unsigned char *)s_;
    size_t i = 0;
    while (i < len) {
        if (s[i] == 0)
            return false;
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        size_t l = sbx_utf8_len(s + i, len - i);
        if (!l)
            return false;
        i += l;
    }
    return true;
}

/* Whether the JSON text holds the escape \u0000: a backslash run of odd length (the last
 * one starts an escape) followed by u0000. Outside strings a backslash is not JSON, so
 * any such run is inside a string (or a key). */
static bool has_nul_escape(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (s[i] != '\\')
            continue;
        size_t run = i;
        while (run < len && s[run] == '\\')
            run++;
        if ((run - i) % 2 == 1 && len - run >= 5 && !memcmp(s + run, "u0000", 5))
            return true;
        i = run - 1;
    }
    return false;
}

static bool id_ok(const cJSON *id)
{
    if (cJSON_IsString(id))
        return true;
    if (!cJSON_IsNumber(id))
        return false;
    double v = id->valuedouble;
    /* an integer a double holds exactly, so that the id echoed is the id sent */
    return isfinite(v) && fabs(v) <= 9007199254740992.0 && v == floor(v);
}

static void fail(mcp_msg *m, int code, const char *msg)
{
    m->kind = MCP_MSG_ERROR;
    m->error_code = code;
    snprintf(m->error_msg, sizeof(m->error_msg), "%s", msg);
}

void mcp_rpc_parse(const char *line, size_t len, mcp_msg *m)
{
    memset(m, 0, sizeof(*m));
    if (len > MCP_LINE_MAX)
        return fail(m, MCP_ERR_PARSE, "Parse error: the message is longer than 8 MiB");
    if (!mcp_rpc_utf8_ok(line, len))
        return fail(m, MCP_ERR_PARSE, "Parse error: the message is not UTF-8 text (or holds a NUL byte)");
    const char *end = NULL;
    m->root = cJSON_ParseWithLengthOpts(line, len, &end, false);
    if (!m->root)
        return fail(m, MCP_ERR_PARSE, "Parse error: not JSON");
    for (const char *p = end; p && p < line + len; p++)
        if (!strchr(" \t\r\n", *p))
            return fail(m, MCP_ERR_PARSE, "Parse error: more than one JSON value on the line");
    if (cJSON_IsArray(m->root))
        return fail(m, MCP_ERR_INVALID_REQ, "Invalid Request: batches are not supported");
    if (!cJSON_IsObject(m->root))
        return fail(m, MCP_ERR_INVALID_REQ, "Invalid Request: not a JSON object");

    const cJSON *id = cJSON_GetObjectItemCaseSensitive(m->root, "id");
    if (id && !id_ok(id))
        return fail(m, MCP_ERR_INVALID_REQ,
                    "Invalid Request: the id must be a string or an integer");
    m->id = id;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(m->root, "jsonrpc");
    if (!cJSON_IsString(v) || strcmp(v->valuestring, "2.0"))
        return fail(m, MCP_ERR_INVALID_REQ, "Invalid Request: \"jsonrpc\" must be \"2.0\"");
    if (has_nul_escape(line, len))
        return fail(m, MCP_ERR_INVALID_REQ,
                    "Invalid Request: a string holds \\u0000 (NUL), which no command can take");

    const cJSON *method = cJSON_GetObjectItemCaseSensitive(m->root, "method");
    if (method) {
        if (!cJSON_IsString(method))
            return fail(m, MCP_ERR_INVALID_REQ, "Invalid Request: \"method\" must be a string");
        m->method = method->valuestring;
        const cJSON *params = cJSON_GetObjectItemCaseSensitive(m->root, "params");
        if (params && !cJSON_IsObject(params) && !cJSON_IsArray(params))
            return fail(m, MCP_ERR_INVALID_REQ,
                        "Invalid Request: \"params\" must be an object or an array");
        m->params = params;
        m->kind = id ? MCP_MSG_REQUEST : MCP_MSG_NOTIFICATION;
        return;
    }
    if (id && (cJSON_GetObjectItemCaseSensitive(m->root, "result") ||
               cJSON_GetObjectItemCaseSensitive(m->root, "error"))) {
        m->kind = MCP_MSG_RESPONSE;
        return;
    }
    fail(m, MCP_ERR_INVALID_REQ, "Invalid Request: no \"method\"");
}

void mcp_msg_free(mcp_msg *m)
{
    cJSON_Delete(m->root);
    memset(m, 0, sizeof(*m));
}

/* The message as one line: cJSON prints no newline outside strings (and escapes those in
 * them), so the '\n' appended is the only one. */
static char *print_line(cJSON *msg)
{
    char *s = cJSON_PrintUnformatted(msg);
    cJSON_Delete(msg);
    if (!s)
        xdie_oom();
    size_t n = strlen(s);
    char *line = xmalloc(n + 2);
    memcpy(line, s, n);
    line[n] = '\n';
    line[n + 1] = '\0';
    cJSON_free(s);
    return line;
}

static cJSON *envelope(const cJSON *id)
{
    cJSON *msg = cJSON_CreateObject();
    if (!msg)
        xdie_oom();
    cJSON_AddStringToObject(msg, "jsonrpc", "2.0");
    if (id)
        cJSON_AddItemToObject(msg, "id", cJSON_Duplicate(id, true));
    else
        cJSON_AddNullToObject(msg, "id");
    return msg;
}

char *mcp_rpc_result(const cJSON *id, cJSON *result)
{
    cJSON *msg = envelope(id);
    cJSON_AddItemToObject(msg, "result", result ? result : cJSON_CreateObject());
    return print_line(msg);
}

char *mcp_rpc_error(const cJSON *id, int code, const char *text)
{
    cJSON *msg = envelope(id), *e = cJSON_CreateObject();
    cJSON_AddNumberToObject(e, "code", code);
    /* the message may quote what the client or the sandbox sent: made valid UTF-8 */
    strbuf sb = STRBUF_INIT;
    sbx_sanitize(&sb, text, strlen(text));
    cJSON_AddStringToObject(e, "message", sb.buf);
    strbuf_release(&sb);
    cJSON_AddItemToObject(msg, "error", e);
    return print_line(msg);
}
