/*
 * --route: where each part of a line would run, for people (one line per
 * part, tab-separated) and for tools (JSON). Executes nothing.
 */
#include "router/rules.h"

#include <stdint.h>
#include <string.h>

/* One line per part: the text's newlines, tabs, CRs, backslashes and other
 * control bytes are escaped so that a part never spans lines. */
static void add_escaped(strbuf *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '\\': strbuf_addstr(out, "\\\\"); break;
        case '\n': strbuf_addstr(out, "\\n"); break;
        case '\t': strbuf_addstr(out, "\\t"); break;
        case '\r': strbuf_addstr(out, "\\r"); break;
        default:
            if (c < 0x20 || c == 0x7f)
                strbuf_addf(out, "\\x%02x", c);
            else
                strbuf_addch(out, (char)c);
        }
    }
}

/* The length of the valid UTF-8 sequence at s (at most n bytes), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    size_t len;
    uint32_t cp;

    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        len = 2, cp = s[0] & 0x1f;
    else if (s[0] >= 0xe0 && s[0] <= 0xef)
        len = 3, cp = s[0] & 0x0f;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        len = 4, cp = s[0] & 0x07;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    return len;
}

/* A JSON string. JSON must be UTF-8: a byte that is not part of a valid
 * sequence is written as the code point of the same number (\u00XX), so
 * the output stays valid and every byte can still be told apart; tools
 * needing the exact bytes have the part's offsets. */
static void add_json_string(strbuf *out, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;

    strbuf_addch(out, '"');
    for (size_t i = 0; i < n;) {
        size_t len = utf8_len(u + i, n - i);
        if (len == 0) {
            strbuf_addf(out, "\\u%04x", u[i]);
            i++;
        } else {
            strbuf_add_json_escaped(out, s + i, len);
            i += len;
        }
    }
    strbuf_addch(out, '"');
}

void route_print(const route_plan *plan, const sh_parse *p, const route_ctx *ctx, bool json,
                 strbuf *out)
{
    strbuf text = STRBUF_INIT;

    if (json) {
        strbuf_addstr(out, "{\"cwd\":");
        add_json_string(out, ctx->cwd ? ctx->cwd : "", ctx->cwd ? strlen(ctx->cwd) : 0);
        strbuf_addstr(out, ",\"code_dirs\":[");
        for (size_t i = 0; i < ctx->n_code_dirs; i++) {
            if (i)
                strbuf_addch(out, ',');
            add_json_string(out, ctx->code_dirs[i], strlen(ctx->code_dirs[i]));
        }
        strbuf_addstr(out, "],\"parts\":[");
    }
    for (size_t i = 0; i < plan->n; i++) {
        const route_part *part = &plan->parts[i];
        const char *where = part->where == ROUTE_HOST ? "host" : "sandbox";

        strbuf_reset(&text);
        sh_span_text_with_heredocs(p, part->span, &text);
        if (json) {
            const char *j = route_join_text(part->join);
            if (i)
                strbuf_addch(out, ',');
            strbuf_addf(out, "{\"route\":\"%s\",\"reason\":", where);
            add_json_string(out, part->reason, strlen(part->reason));
            strbuf_addstr(out, ",\"join\":");
            add_json_string(out, j, strlen(j));
            strbuf_addf(out, ",\"background\":%s,\"start\":%u,\"end\":%u,\"text\":",
                        part->background ? "true" : "false", part->span.start, part->span.end);
            add_json_string(out, text.buf, text.len);
            strbuf_addch(out, '}');
        } else {
            strbuf_addf(out, "%s\t%s\t", where, part->reason);
            add_escaped(out, text.buf, text.len);
            strbuf_addch(out, '\n');
        }
    }
    if (json)
        strbuf_addstr(out, "]}\n");
    strbuf_release(&text);
}
