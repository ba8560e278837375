/*
 * --route: where each part of a line would run, for people (one line per
 * part, tab-separated) and for tools (JSON). Executes nothing.
 */
#include "router/rules.h"
#include "common/json.h"

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

/* The parts of plan as JSON (common/json.h: strings escaped so that the JSON stays valid
 * for any bytes; tools needing the exact bytes have the part's offsets); an eval's text's
 * parts are the part's "eval" object, their offsets into the eval's text. */
static void parts_json(const route_plan *plan, const sh_parse *p, sbx_json *j)
{
    strbuf text = STRBUF_INIT;

    for (size_t i = 0; i < plan->n; i++) {
        const route_part *part = &plan->parts[i];

        strbuf_reset(&text);
        sh_span_text_with_heredocs(p, part->span, &text);
        sbx_json_begin_obj(j, NULL);
        sbx_json_str(j, "route", part->where == ROUTE_HOST ? "host" : "sandbox");
        sbx_json_str(j, "reason", part->reason);
        sbx_json_str(j, "join", route_join_text(part->join));
        sbx_json_bool(j, "background", part->background);
        sbx_json_bool(j, "cwd_known", !part->cwd_unknown);
        sbx_json_bool(j, "names_known", !part->names_unknown);
        sbx_json_uint(j, "start", part->span.start);
        sbx_json_uint(j, "end", part->span.end);
        sbx_json_strn(j, "text", text.buf, text.len);
        if (part->eval) {
            sbx_json_begin_obj(j, "eval");
            sbx_json_strn(j, "text", part->eval->text.buf, part->eval->text.len);
            sbx_json_bool(j, "stdin_null", part->eval->stdin_null);
            sbx_json_begin_arr(j, "parts");
            parts_json(&part->eval->plan, &part->eval->parse, j);
            sbx_json_end(j);
            sbx_json_end(j);
        }
        sbx_json_end(j);
    }
    strbuf_release(&text);
}

/* The parts of plan for people, for route_print; an eval's text's parts follow its own,
 * their text indented two spaces a level. */
static void parts_text(const route_plan *plan, const sh_parse *p, unsigned level, strbuf *out)
{
    strbuf text = STRBUF_INIT;

    for (size_t i = 0; i < plan->n; i++) {
        const route_part *part = &plan->parts[i];
        const char *where = part->where == ROUTE_HOST ? "host" : "sandbox";

        strbuf_reset(&text);
        sh_span_text_with_heredocs(p, part->span, &text);
        strbuf_addf(out, "%s\t%s\t", where, part->reason);
        for (unsigned k = 0; k < level; k++)
            strbuf_addstr(out, "  ");
        add_escaped(out, text.buf, text.len);
        strbuf_addch(out, '\n');
        if (part->eval)
            parts_text(&part->eval->plan, &part->eval->parse, level + 1, out);
    }
    strbuf_release(&text);
}

void route_print(const route_plan *plan, const sh_parse *p, const route_ctx *ctx, bool json,
                 strbuf *out)
{
    sbx_json j;

    if (!json) {
        parts_text(plan, p, 0, out);
        return;
    }
    sbx_json_init(&j, out);
    sbx_json_begin_obj(&j, NULL);
    sbx_json_str(&j, "cwd", ctx->cwd ? ctx->cwd : "");
    /* the session the line would run in (libsbxsh names a handle's session from it) */
    sbx_json_str(&j, "session", ctx->session ? ctx->session : "");
    sbx_json_begin_arr(&j, "code_dirs");
    for (size_t i = 0; i < ctx->n_code_dirs; i++)
        sbx_json_str(&j, NULL, ctx->code_dirs[i]);
    sbx_json_end(&j);
    sbx_json_begin_arr(&j, "parts");
    parts_json(plan, p, &j);
    sbx_json_end(&j);
    sbx_json_end(&j);
    strbuf_addch(out, '\n');
}
