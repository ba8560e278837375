/*
 * The MCP server's pure parts: the JSON-RPC line parser (mcp/rpc.h) and the output
 * escaping and capping (mcp/text.h), on the inputs a hostile client or command makes.
 */
#include <stdio.h>
#include <string.h>

#include "common/strbuf.h"
#include "mcp/rpc.h"
#include "mcp/text.h"
#include "tests/lib/tap.h"

static int kind_of(const char *line, int *code)
{
    mcp_msg m;
    mcp_rpc_parse(line, strlen(line), &m);
    int k = m.kind;
    *code = m.error_code;
    mcp_msg_free(&m);
    return k;
}

static void parse_cases(void)
{
    int code;
    is_int(kind_of("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", &code), MCP_MSG_REQUEST,
           "a request");
    is_int(kind_of("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &code),
           MCP_MSG_NOTIFICATION, "a notification");
    is_int(kind_of("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"result\":{}}", &code), MCP_MSG_RESPONSE,
           "a response");
    is_int(kind_of("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"}  \r", &code), MCP_MSG_REQUEST,
           "blanks after the value");

    static const struct { const char *line; int code; const char *what; } bad[] = {
        { "{", MCP_ERR_PARSE, "cut-off JSON" },
        { "{} {}", MCP_ERR_PARSE, "two values on a line" },
        { "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}", MCP_ERR_PARSE, "not UTF-8" },
        { "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xc0\x80\"}", MCP_ERR_PARSE, "an overlong NUL" },
        { "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", MCP_ERR_INVALID_REQ, "a batch" },
        { "42", MCP_ERR_INVALID_REQ, "not an object" },
        { "{\"id\":1,\"method\":\"ping\"}", MCP_ERR_INVALID_REQ, "no jsonrpc" },
        { "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", MCP_ERR_INVALID_REQ, "jsonrpc 1.0" },
        { "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", MCP_ERR_INVALID_REQ, "a fractional id" },
        { "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", MCP_ERR_INVALID_REQ, "a null id" },
        { "{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}", MCP_ERR_INVALID_REQ, "an object id" },
        { "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}", MCP_ERR_INVALID_REQ, "a number method" },
        { "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":3}", MCP_ERR_INVALID_REQ, "scalar params" },
        { "{\"jsonrpc\":\"2.0\",\"id\":1}", MCP_ERR_INVALID_REQ, "no method, result or error" },
        { "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"c\":\"rm x\\u0000y\"}}",
          MCP_ERR_INVALID_REQ, "a \\u0000 escape" },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int k = kind_of(bad[i].line, &code);
        ok(k == MCP_MSG_ERROR && code == bad[i].code, "error %d for %s (got kind %d, %d)",
           bad[i].code, bad[i].what, k, code);
    }
    is_int(kind_of("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"c\":\"a\\\\u0000\"}}",
                   &code), MCP_MSG_REQUEST, "an escaped backslash before u0000 is no NUL");

    /* the error keeps the id it could read */
    mcp_msg m;
    const char *l = "{\"jsonrpc\":\"1.0\",\"id\":\"r7\",\"method\":\"ping\"}";
    mcp_rpc_parse(l, strlen(l), &m);
    char *line = mcp_rpc_error(m.id, m.error_code, m.error_msg);
    ok(strstr(line, "\"id\":\"r7\"") && strstr(line, "-32600"), "the error answers id r7: %s", line);
    ok(strchr(line, '\n') == line + strlen(line) - 1, "one line, ending in its newline");
    free(line);
    mcp_msg_free(&m);
    line = mcp_rpc_error(NULL, MCP_ERR_PARSE, "bad \x1b]0;x\x07 \xff");
    ok(strstr(line, "\"id\":null") && mcp_rpc_utf8_ok(line, strlen(line)) && !strchr(line, 0x1b),
       "an error with no id says null, its message sanitized: %s", line);
    free(line);
}

static void escape_cases(void)
{
    strbuf sb = STRBUF_INIT;
    size_t n = mcp_text_escape(&sb, "a\xff\x00" "b\xc3\xa9\xe2\x82", 8);
    strbuf_reset(&sb);
    mcp_text_escape(&sb, "a\xff\x00" "b\xc3\xa9\xe2\x82", 8);
    is_str(sb.buf, "a\\xff\\x00b\xc3\xa9\\xe2\\x82", "escaped: a\\xff\\x00bé\\xe2\\x82");
    is_int((int)n, 1 + 4 + 4 + 1 + 1 + 4 + 4, "characters counted");
    ok(mcp_rpc_utf8_ok(sb.buf, sb.len), "the result is UTF-8 with no NUL");
    strbuf_release(&sb);
}

/* characters in valid UTF-8 */
static size_t chars(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xc0) != 0x80;
    return c;
}

static void cap_cases(void)
{
    strbuf sb = STRBUF_INIT, in = STRBUF_INIT;
    bool t;
    mcp_text_cap(&sb, "short", 5, NULL, 0, 5, 1000, &t);
    ok(!t && !strcmp(sb.buf, "short"), "under the cap: as it is");

    /* 1 MB of numbered lines, kept whole by the collector: head and tail, marked */
    int last = 0;
    for (; in.len < 1000000; last++)
        strbuf_addf(&in, "line %06d\n", last);
    char want[32];
    snprintf(want, sizeof(want), "line %06d\n", last - 1);
    strbuf_reset(&sb);
    mcp_text_cap(&sb, in.buf, in.len, NULL, 0, in.len, 30000, &t);
    ok(t, "1 MB: truncated");
    ok(chars(sb.buf, sb.len) <= 30000, "1 MB: at most 30000 characters (%zu)", chars(sb.buf, sb.len));
    ok(!strncmp(sb.buf, "line 000000\n", 12), "the head is the start");
    ok(sb.len > 12 && !strcmp(sb.buf + sb.len - 12, want), "the tail is the end");
    ok(strstr(sb.buf, "bytes omitted ...]\n") != NULL, "the marker says bytes were omitted");

    /* the collector's head and tail, cut inside characters: no broken character kept */
    strbuf_reset(&in);
    for (int i = 0; i < 40000; i++)
        strbuf_addstr(&in, "\xe2\x82\xac");     /* the euro sign, 3 bytes */
    strbuf_reset(&sb);
    mcp_text_cap(&sb, in.buf, 1000, in.buf + 2, 1000, 999999, 400, &t);
    ok(t && mcp_rpc_utf8_ok(sb.buf, sb.len) && !strstr(sb.buf, "\\x"),
       "head and tail cut inside characters: no \\x escapes");
    ok(chars(sb.buf, sb.len) <= 400, "and within the cap (%zu)", chars(sb.buf, sb.len));

    /* all bytes invalid: 4 characters each, still within the cap */
    strbuf_reset(&in);
    for (int i = 0; i < 5000; i++)
        strbuf_addch(&in, 0xff);
    strbuf_reset(&sb);
    mcp_text_cap(&sb, in.buf, in.len, NULL, 0, in.len, 1000, &t);
    ok(t && chars(sb.buf, sb.len) <= 1000 && mcp_rpc_utf8_ok(sb.buf, sb.len),
       "5000 bad bytes: escaped, capped");
    strbuf_release(&sb);
    strbuf_release(&in);
}

int main(void)
{
    parse_cases();
    escape_cases();
    cap_cases();
    return done_testing();
}
