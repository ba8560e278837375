/*
 * libFuzzer driver for the parser: sh_parse_all() and sh_parse_next() on
 * exact-size heap copies of the input (so ASan sees any read past len),
 * then everything a caller does with the tree: JSON, spans, here-document
 * text, static values. The first byte picks options.
 *
 *   make fuzz                       (runs it for FUZZ_SECONDS, seeded)
 *   build-fuzz/fuzz-parse CORPUS    (by hand)
 */
#include "common/strbuf.h"
#include "shell/ast_json.h"
#include "shell/parse.h"
#include "tests/shell/ast_check.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static size_t g_len;

static void check_span(sh_span s)
{
    if (s.start > s.end || s.end > g_len)
        abort();
}

static void walk_list(const sh_parse *p, const sh_list *l);

static void walk_word(const sh_parse *p, const sh_word *w);

static void walk_parts(const sh_parse *p, const sh_wpart *w)
{
    for (; w; w = w->next) {
        check_span(w->span);
        walk_parts(p, w->parts);
        if (w->body)
            walk_list(p, w->body);
        if (w->param) {
            if (w->param->arg)
                walk_word(p, w->param->arg);
            if (w->param->arg2)
                walk_word(p, w->param->arg2);
        }
    }
}

static void walk_word(const sh_parse *p, const sh_word *w)
{
    strbuf sb = STRBUF_INIT;
    check_span(w->span);
    walk_parts(p, w->parts);
    (void)sh_word_static_value(w, &sb);
    strbuf_release(&sb);
    if (w->assign)
        for (const sh_word *e = w->assign->elements; e; e = e->next)
            walk_word(p, e);
}

static void walk_cond(const sh_parse *p, const sh_cond *c)
{
    if (!c)
        return;
    check_span(c->span);
    if (c->left)
        walk_word(p, c->left);
    if (c->right)
        walk_word(p, c->right);
    walk_cond(p, c->a);
    walk_cond(p, c->b);
}

static void walk_cmd(const sh_parse *p, const sh_cmd *c)
{
    check_span(c->span);
    for (const sh_redir *r = c->redirs; r; r = r->next) {
        check_span(r->span);
        walk_word(p, r->target);
        if (r->op == R_HEREDOC || r->op == R_HEREDOC_TAB) {
            check_span(r->body);
            check_span(r->body_end);
            walk_parts(p, r->body_parts);
        }
    }
    for (const sh_assign *a = c->assigns; a; a = a->next) {
        check_span(a->span);
        if (a->value)
            walk_word(p, a->value);
        for (const sh_word *e = a->elements; e; e = e->next)
            walk_word(p, e);
    }
    for (const sh_word *w = c->words; w; w = w->next)
        walk_word(p, w);
    for (const sh_word *w = c->for_words; w; w = w->next)
        walk_word(p, w);
    if (c->subject)
        walk_word(p, c->subject);
    if (c->body)
        walk_list(p, c->body);
    if (c->cond)
        walk_list(p, c->cond);
    for (const sh_if_clause *cl = c->clauses; cl; cl = cl->next) {
        walk_list(p, cl->cond);
        walk_list(p, cl->then_body);
    }
    if (c->else_body)
        walk_list(p, c->else_body);
    for (const sh_case_item *it = c->items; it; it = it->next) {
        for (const sh_word *w = it->patterns; w; w = w->next)
            walk_word(p, w);
        if (it->body)
            walk_list(p, it->body);
    }
    walk_cond(p, c->cond_expr);
    if (c->func_body)
        walk_cmd(p, c->func_body);
}

static void walk_list(const sh_parse *p, const sh_list *l)
{
    check_span(l->span);
    for (const sh_andor *a = l->items; a; a = a->next) {
        strbuf sb = STRBUF_INIT;
        check_span(a->span);
        sh_span_text_with_heredocs(p, a->span, &sb);
        strbuf_release(&sb);
        for (const sh_pipeline *pl = a->pipes; pl; pl = pl->next) {
            check_span(pl->span);
            for (const sh_cmd *c = pl->cmds; c; c = c->next)
                walk_cmd(p, c);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sh_parse_opts o = { 0 };
    sh_parse p;
    char *buf;
    size_t n, off;

    if (size == 0)
        return 0;
    o.extglob = data[0] & 1;
    o.track_shopt = data[0] & 2;
    o.max_depth = (data[0] & 4) ? 20 : 0;
    n = size - 1;
    buf = malloc(n ? n : 1);
    memcpy(buf, data + 1, n);
    g_len = n;

    sh_parse_all(&p, buf, n, &o, !(data[0] & 8));
    if (p.status == SH_OK) {
        char *json = sh_ast_json_string(&p, false);
        cJSON *back = json ? cJSON_Parse(json) : NULL;
        if (json && !back)
            abort();
        cJSON_Delete(back);
        free(json);
        walk_list(&p, p.root);
        {
            strbuf why = STRBUF_INIT;
            if (ast_check(&p, &why) < 0) {
                fprintf(stderr, "ast_check: %s\n", why.buf);
                abort();
            }
            strbuf_release(&why);
        }
        /* each top-level command's text, with its here-documents, parses
         * (here-documents cut short by the end of input are rebuilt with
         * their delimiter line, best effort: not checked) */
        if (!o.track_shopt && !(data[0] & 8) && !p.warnings.len)
            for (const sh_andor *a = p.root->items; a; a = a->next) {
                strbuf t = STRBUF_INIT;
                sh_parse q;
                sh_span_text_with_heredocs(&p, a->span, &t);
                sh_parse_all(&q, t.buf, t.len, &o, true);
                if (q.status != SH_OK && !(q.exit_status == 2 && strstr(q.errors.buf, "nesting")))
                    abort();
                sh_parse_free(&q);
                strbuf_release(&t);
            }
    } else {
        strbuf e = STRBUF_INIT;
        sh_parse_format_error(&p, "x: ", &e);
        strbuf_release(&e);
    }
    sh_parse_free(&p);

    /* the incremental reader over the same bytes */
    for (off = 0; off < n;) {
        size_t used = 0;
        sh_status st = sh_parse_next(&p, buf + off, n - off, &o, true, &used);
        if (st == SH_OK && p.root) {
            g_len = n - off;
            walk_list(&p, p.root);
            g_len = n;
        }
        sh_parse_free(&p);
        if (st == SH_INCOMPLETE || used == 0 || (st == SH_ERROR && p.exit_status == 2))
            break;
        off += used;
    }
    free(buf);
    return 0;
}
