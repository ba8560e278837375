/*
 * Helpers on a finished parse: freeing it, the text of a span with its
 * here-documents, the static value of a word, and bash's error output.
 */
#include "shell/parse.h"

#include "common/util.h"

#include <stdlib.h>
#include <string.h>

void sh_parse_free(sh_parse *p)
{
    arena_free(&p->arena);
    strbuf_release(&p->warnings);
    strbuf_release(&p->errors);
    p->root = NULL;
}

/* ---- here-documents of a span ---------------------------------------------- */

typedef struct hd_walk {
    sh_span span;
    const sh_redir **found;
    size_t n, alloc;
} hd_walk;

static void hd_list(hd_walk *h, const sh_list *l);

static void hd_parts(hd_walk *h, const sh_wpart *w)
{
    for (; w; w = w->next) {
        if (w->body && w->kind != WP_BACKQUOTE)
            hd_list(h, w->body);
        hd_parts(h, w->parts);
        if (w->param) {
            if (w->param->arg)
                hd_parts(h, w->param->arg->parts);
            if (w->param->arg2)
                hd_parts(h, w->param->arg2->parts);
        }
    }
}

static void hd_words(hd_walk *h, const sh_word *w)
{
    for (; w; w = w->next) {
        hd_parts(h, w->parts);
        if (w->assign && w->assign->is_array)
            hd_words(h, w->assign->elements);
    }
}

static void hd_cond(hd_walk *h, const sh_cond *c)
{
    if (!c)
        return;
    if (c->left)
        hd_parts(h, c->left->parts);
    if (c->right)
        hd_parts(h, c->right->parts);
    hd_cond(h, c->a);
    hd_cond(h, c->b);
}

static void hd_cmd(hd_walk *h, const sh_cmd *c)
{
    for (const sh_redir *r = c->redirs; r; r = r->next) {
        if ((r->op == R_HEREDOC || r->op == R_HEREDOC_TAB) &&
            r->span.start >= h->span.start && r->span.end <= h->span.end &&
            r->body_end.start >= h->span.end) {
            if (h->n == h->alloc) {
                h->alloc = h->alloc ? 2 * h->alloc : 8;
                h->found = xrealloc(h->found, h->alloc * sizeof(*h->found));
            }
            h->found[h->n++] = r;
        }
        if (r->target)
            hd_parts(h, r->target->parts);
        hd_parts(h, r->body_parts);
    }
    for (const sh_assign *a = c->assigns; a; a = a->next) {
        if (a->value)
            hd_parts(h, a->value->parts);
        hd_words(h, a->elements);
    }
    hd_words(h, c->words);
    hd_words(h, c->for_words);
    if (c->subject)
        hd_words(h, c->subject);
    if (c->body)
        hd_list(h, c->body);
    if (c->cond)
        hd_list(h, c->cond);
    for (const sh_if_clause *cl = c->clauses; cl; cl = cl->next) {
        hd_list(h, cl->cond);
        hd_list(h, cl->then_body);
    }
    if (c->else_body)
        hd_list(h, c->else_body);
    for (const sh_case_item *it = c->items; it; it = it->next) {
        hd_words(h, it->patterns);
        if (it->body)
            hd_list(h, it->body);
    }
    hd_cond(h, c->cond_expr);
    if (c->func_body)
        hd_cmd(h, c->func_body);
}

static void hd_list(hd_walk *h, const sh_list *l)
{
    for (const sh_andor *a = l->items; a; a = a->next) {
        if (a->span.end <= h->span.start || a->span.start >= h->span.end)
            continue;
        for (const sh_pipeline *p = a->pipes; p; p = p->next)
            for (const sh_cmd *c = p->cmds; c; c = c->next)
                hd_cmd(h, c);
    }
}

static int cmp_redir(const void *a, const void *b)
{
    const sh_redir *x = *(const sh_redir *const *)a, *y = *(const sh_redir *const *)b;
    return x->span.start < y->span.start ? -1 : x->span.start > y->span.start;
}

void sh_span_text_with_heredocs(const sh_parse *p, sh_span span, strbuf *out)
{
    hd_walk h = { span, NULL, 0, 0 };

    strbuf_add(out, p->src + span.start, span.end - span.start);
    if (p->root)
        hd_list(&h, p->root);
    if (!h.n)
        return;
    qsort(h.found, h.n, sizeof(*h.found), cmp_redir);
    if (!out->len || out->buf[out->len - 1] != '\n')
        strbuf_addch(out, '\n');
    for (size_t i = 0; i < h.n; i++) {
        const sh_redir *r = h.found[i];
        strbuf_add(out, p->src + r->body_end.start, r->body_end.end - r->body_end.start);
        if (r->body_end.end == r->body.end) {
            /* ended by end of input: supply the delimiter line */
            if (out->len && out->buf[out->len - 1] != '\n' && r->body.end > r->body.start)
                strbuf_addch(out, '\n');
            strbuf_add(out, r->delim, r->delim_len);
            strbuf_addch(out, '\n');
        } else if (out->buf[out->len - 1] != '\n') {
            strbuf_addch(out, '\n');
        }
    }
    free(h.found);
}

/* ---- static words -------------------------------------------------------- */

bool sh_word_static_value(const sh_word *w, strbuf *out)
{
    size_t keep = out->len;

    for (const sh_wpart *p = w->parts; p; p = p->next) {
        switch (p->kind) {
        case WP_LIT:
        case WP_ESCAPED:
        case WP_SQUOTE:
            strbuf_add(out, p->text, p->len);
            break;
        case WP_DQUOTE:
            for (const sh_wpart *q = p->parts; q; q = q->next) {
                if (q->kind != WP_LIT && q->kind != WP_ESCAPED) {
                    strbuf_setlen(out, keep);
                    return false;
                }
                strbuf_add(out, q->text, q->len);
            }
            break;
        default:
            strbuf_setlen(out, keep);
            return false;
        }
    }
    return true;
}

/* ---- errors ----------------------------------------------------------------- */

static void prefix_lines(const strbuf *lines, const char *prefix, strbuf *out)
{
    const char *s = lines->buf, *end = s + lines->len;

    while (s < end) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        size_t n = nl ? (size_t)(nl - s) + 1 : (size_t)(end - s);
        strbuf_addstr(out, prefix);
        strbuf_add(out, s, n);
        if (!nl)
            strbuf_addch(out, '\n');
        s += n;
    }
}

void sh_parse_format_error(const sh_parse *p, const char *prefix, strbuf *out)
{
    prefix_lines(&p->errors, prefix, out);
}

void sh_parse_format_warnings(const sh_parse *p, const char *prefix, strbuf *out)
{
    prefix_lines(&p->warnings, prefix, out);
}
