/*
 * --route: where each part of a line would run, for people (one line per
 * part, tab-separated) and for tools (JSON). Executes nothing.
 */
#include "router/rules.h"

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

/* A JSON string (strbuf_add_json_escaped keeps it valid for any bytes; tools
 * needing the exact bytes have the part's offsets). */
static void add_json_string(strbuf *out, const char *s, size_t n)
{
    strbuf_addch(out, '"');
    strbuf_add_json_escaped(out, s, n);
    strbuf_addch(out, '"');
}

/* The parts of plan, for route_print; an eval's text's parts follow its own, their text
 * indented two spaces a level (text), or as the part's "eval" object (JSON, offsets into
 * the eval's text). */
static void print_parts(const route_plan *plan, const sh_parse *p, bool json, unsigned level,
                        strbuf *out)
{
    strbuf text = STRBUF_INIT;

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
            strbuf_addf(out, ",\"background\":%s,\"cwd_known\":%s,\"names_known\":%s,"
                        "\"start\":%u,\"end\":%u,\"text\":", part->background ? "true" : "false",
                        part->cwd_unknown ? "false" : "true",
                        part->names_unknown ? "false" : "true", part->span.start, part->span.end);
            add_json_string(out, text.buf, text.len);
            if (part->eval) {
                strbuf_addstr(out, ",\"eval\":{\"text\":");
                add_json_string(out, part->eval->text.buf, part->eval->text.len);
                strbuf_addf(out, ",\"stdin_null\":%s,\"parts\":[",
                            part->eval->stdin_null ? "true" : "false");
                print_parts(&part->eval->plan, &part->eval->parse, json, level + 1, out);
                strbuf_addstr(out, "]}");
            }
            strbuf_addch(out, '}');
        } else {
            strbuf_addf(out, "%s\t%s\t", where, part->reason);
            for (unsigned k = 0; k < level; k++)
                strbuf_addstr(out, "  ");
            add_escaped(out, text.buf, text.len);
            strbuf_addch(out, '\n');
            if (part->eval)
                print_parts(&part->eval->plan, &part->eval->parse, json, level + 1, out);
        }
    }
    strbuf_release(&text);
}

void route_print(const route_plan *plan, const sh_parse *p, const route_ctx *ctx, bool json,
                 strbuf *out)
{
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
    print_parts(plan, p, json, 0, out);
    if (json)
        strbuf_addstr(out, "]}\n");
}
