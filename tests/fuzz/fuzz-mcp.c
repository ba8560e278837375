/*
 * libFuzzer driver for the MCP server's readers of untrusted bytes: the JSON-RPC line
 * parser (mcp/rpc.h: what a client writes) and the output escaping and capping
 * (mcp/text.h: what a command writes). For any input:
 *   - the parser says what the line is, and every answer built from it (an error with
 *     the id it read, or a result echoing that id) is one line of valid UTF-8 JSON that
 *     parses back, ending in its only newline;
 *   - escaped output is valid UTF-8 with no NUL, and capped output also stays within its
 *     cap, whether the collector kept the whole output or a head and a tail cut anywhere.
 *
 *   make fuzz-mcp FUZZ_SECONDS=300
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/strbuf.h"
#include "mcp/rpc.h"
#include "mcp/text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_line(char *line)
{
    size_t n = strlen(line);
    if (!n || line[n - 1] != '\n' || memchr(line, '\n', n - 1) || !mcp_rpc_utf8_ok(line, n))
        abort();
    cJSON *back = cJSON_ParseWithLength(line, n);
    if (!cJSON_IsObject(back))
        abort();
    cJSON_Delete(back);
    free(line);
}

static size_t chars(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xc0) != 0x80;
    return c;
}

static void check_text(const strbuf *sb, size_t cap)
{
    if (!mcp_rpc_utf8_ok(sb->buf, sb->len) || (cap && chars(sb->buf, sb->len) > cap))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mcp_msg m;
    mcp_rpc_parse((const char *)data, size, &m);
    switch (m.kind) {
    case MCP_MSG_ERROR:
        check_line(mcp_rpc_error(m.id, m.error_code, m.error_msg));
        break;
    case MCP_MSG_REQUEST:
    case MCP_MSG_NOTIFICATION:
        if (!m.method)
            abort();
        if (m.kind == MCP_MSG_REQUEST && !m.id)
            abort();
        check_line(mcp_rpc_result(m.id, cJSON_CreateString(m.method)));
        break;
    case MCP_MSG_RESPONSE:
        break;
    }
    mcp_msg_free(&m);

    strbuf sb = STRBUF_INIT;
    mcp_text_escape(&sb, data, size);
    check_text(&sb, 0);
    if (size >= 4) {
        size_t cap = MCP_TEXT_CAP_MIN + (data[0] | (size_t)data[1] << 8) % 4000;
        size_t cut = (data[2] | (size_t)data[3] << 8) % (size - 3);
        const uint8_t *body = data + 4;
        size_t blen = size - 4;
        strbuf_reset(&sb);
        bool t;
        mcp_text_cap(&sb, body, blen, NULL, 0, blen, cap, &t);
        check_text(&sb, cap);
        /* a collector's head body[0..cut) and tail body[cut..] of a longer output */
        if (cut <= blen) {
            strbuf_reset(&sb);
            mcp_text_cap(&sb, body, cut, body + cut, blen - cut, (unsigned long long)blen + 1000,
                         cap, &t);
            check_text(&sb, cap);
            if (!t)
                abort();
        }
    }
    strbuf_release(&sb);
    return 0;
}
