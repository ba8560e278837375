/*
 * ast_check(): invariants every parse tree must satisfy, for the unit tests
 * and the fuzz driver. Header-only.
 *
 *   - every span lies inside the input and inside its parent's span;
 *   - a word's parts are in order and do not overlap;
 *   - each part's source text is what its kind says: '...' around an
 *     WP_SQUOTE's text, $name or ${...} for WP_PARAM, "\x" for WP_ESCAPED,
 *     $( ) for WP_CMDSUB, and a literal's text is its source minus
 *     backslash-newlines and NUL bytes.
 */
#ifndef SBX_TESTS_SHELL_AST_CHECK_H
#define SBX_TESTS_SHELL_AST_CHECK_H

#include "common/strbuf.h"
#include "shell/parse.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef struct ast_checker {
    const sh_parse *p;
    strbuf *why;
    int bad;
    int in_backquote;   /* backquote bodies are parsed after backslash removal */
} ast_checker;

static void ac_fail(ast_checker *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ac_fail(ast_checker *c, const char *fmt, ...)
{
    va_list ap;
    if (c->bad++)
        return;
    va_start(ap, fmt);
    strbuf_vaddf(c->why, fmt, ap);
    va_end(ap);
}

static int ac_in(ast_checker *c, sh_span s, sh_span outer, const char *what)
{
    if (s.start > s.end || s.end > c->p->len) {
        ac_fail(c, "%s span [%u,%u) outside the input (%zu bytes)", what, s.start, s.end,
                c->p->len);
        return 0;
    }
    if (s.start < outer.start || s.end > outer.end) {
        ac_fail(c, "%s span [%u,%u) outside its parent [%u,%u)", what, s.start, s.end,
                outer.start, outer.end);
        return 0;
    }
    return 1;
}

/* The source text as bash reads it: NULs dropped, backslash-newline removed. */
static void ac_clean(const char *s, size_t n, strbuf *out)
{
    strbuf nonul = STRBUF_INIT;
    for (size_t i = 0; i < n; i++)
        if (s[i])
            strbuf_addch(&nonul, s[i]);
    s = nonul.buf;
    n = nonul.len;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\' && i + 1 < n && s[i + 1] == '\n') {
            i++;
            continue;
        }
        if (s[i] == '\\' && i + 1 < n) {
            strbuf_addch(out, s[i]);
            strbuf_addch(out, s[++i]);
            continue;
        }
        strbuf_addch(out, s[i]);
    }
    strbuf_release(&nonul);
}

static int ac_starts(const char *s, size_t n, const char *pre)
{
    size_t k = strlen(pre);
    return n >= k && memcmp(s, pre, k) == 0;
}

static int ac_ends(const char *s, size_t n, const char *suf)
{
    size_t k = strlen(suf);
    return n >= k && memcmp(s + n - k, suf, k) == 0;
}

static void ac_list(ast_checker *c, const sh_list *l, sh_span outer);
static void ac_word(ast_checker *c, const sh_word *w, sh_span outer, const char *what);

static void ac_parts(ast_checker *c, const sh_wpart *w, sh_span outer, int heredoc)
{
    uint32_t last = outer.start;
    for (; w; w = w->next) {
        strbuf t = STRBUF_INIT;
        const char *src;
        size_t n;
        if (!ac_in(c, w->span, outer, "part"))
            return;
        if (w->span.start < last)
            ac_fail(c, "parts overlap or are out of order at %u", w->span.start);
        last = w->span.end;
        src = c->p->src + w->span.start;
        n = w->span.end - w->span.start;
        ac_clean(src, n, &t);
        if (c->in_backquote || w->body_unparsed) {
            /* text differs from the source by bash's backslash removal */
            ac_parts(c, w->parts, w->span, heredoc);
            if (w->body)
                ac_list(c, w->body, w->span);
            strbuf_release(&t);
            continue;
        }
        switch (w->kind) {
        case WP_LIT:
            if (t.len != w->len || memcmp(t.buf, w->text, w->len))
                ac_fail(c, "literal [%u,%u) is \"%s\" in the source, \"%.*s\" in the tree",
                        w->span.start, w->span.end, t.buf, (int)w->len, w->text);
            break;
        case WP_ESCAPED:
            if (n < 2 || src[0] != '\\' || w->len != 1 || src[n - 1] != w->text[0])
                ac_fail(c, "escape [%u,%u) is not a backslash pair", w->span.start,
                        w->span.end);
            break;
        case WP_SQUOTE:
            if (n < 2 || src[0] != '\'' || src[n - 1] != '\'')
                ac_fail(c, "single-quoted part [%u,%u) lacks its quotes", w->span.start,
                        w->span.end);
            break;
        case WP_DQUOTE:
            if (n < 2 || src[0] != '"' || src[n - 1] != '"')
                ac_fail(c, "double-quoted part [%u,%u) lacks its quotes", w->span.start,
                        w->span.end);
            ac_parts(c, w->parts, w->span, 0);
            break;
        case WP_ANSI:
        case WP_LOCALE:
            if (!ac_starts(t.buf, t.len, w->kind == WP_ANSI ? "$'" : "$\""))
                ac_fail(c, "$'/$\" part [%u,%u) does not start so", w->span.start, w->span.end);
            ac_parts(c, w->parts, w->span, 0);
            break;
        case WP_PARAM:
            if (!ac_starts(t.buf, t.len, "$") ||
                (w->param->braced && (!ac_starts(t.buf, t.len, "${") ||
                                      !ac_ends(t.buf, t.len, "}"))))
                ac_fail(c, "parameter [%u,%u) is \"%s\"", w->span.start, w->span.end, t.buf);
            if (w->param->arg)
                ac_word(c, w->param->arg, w->span, "${} operand");
            if (w->param->arg2)
                ac_word(c, w->param->arg2, w->span, "${} operand");
            break;
        case WP_CMDSUB:
        case WP_PROCSUB_IN:
        case WP_PROCSUB_OUT:
            if (!ac_starts(t.buf, t.len, w->kind == WP_CMDSUB ? "$(" :
                                         w->kind == WP_PROCSUB_IN ? "<(" : ">("))
                ac_fail(c, "substitution [%u,%u) is \"%s\"", w->span.start, w->span.end,
                        t.buf);
            if (!w->body_unparsed && !ac_ends(t.buf, t.len, ")"))
                ac_fail(c, "substitution [%u,%u) does not end in )", w->span.start,
                        w->span.end);
            if (w->body)
                ac_list(c, w->body, w->span);
            break;
        case WP_BACKQUOTE:
            if (n < 2 || src[0] != '`' || src[n - 1] != '`')
                ac_fail(c, "backquote part [%u,%u) lacks its backquotes", w->span.start,
                        w->span.end);
            if (w->body) {
                c->in_backquote++;
                ac_list(c, w->body, w->span);
                c->in_backquote--;
            }
            break;
        case WP_ARITH:
            if (!(ac_starts(t.buf, t.len, "$((") && ac_ends(t.buf, t.len, "))")) &&
                !(ac_starts(t.buf, t.len, "$[") && ac_ends(t.buf, t.len, "]")))
                ac_fail(c, "arithmetic [%u,%u) is \"%s\"", w->span.start, w->span.end, t.buf);
            break;
        case WP_TILDE:
            if (!ac_starts(t.buf, t.len, "~") || t.len != w->len + 1)
                ac_fail(c, "tilde [%u,%u) is \"%s\"", w->span.start, w->span.end, t.buf);
            break;
        case WP_GLOB:
        case WP_EXTGLOB:
        case WP_BRACE:
            if (t.len != w->len || memcmp(t.buf, w->text, w->len))
                ac_fail(c, "glob/brace [%u,%u) is \"%s\", tree says \"%.*s\"", w->span.start,
                        w->span.end, t.buf, (int)w->len, w->text);
            if (w->kind == WP_BRACE && w->parts)
                ac_parts(c, w->parts, w->span, 0);
            break;
        }
        strbuf_release(&t);
    }
}

static void ac_word(ast_checker *c, const sh_word *w, sh_span outer, const char *what)
{
    if (!w) {
        ac_fail(c, "missing %s", what);
        return;
    }
    if (!ac_in(c, w->span, outer, what))
        return;
    ac_parts(c, w->parts, w->span, 0);
    if (w->assign) {
        const sh_assign *a = w->assign;
        if (a->value)
            ac_in(c, a->value->span, w->span, "assignment value");
        for (const sh_word *e = a->elements; e; e = e->next)
            ac_word(c, e, w->span, "array element");
    }
}

static void ac_cond(ast_checker *c, const sh_cond *k, sh_span outer)
{
    if (!k || !ac_in(c, k->span, outer, "[[ ]] term"))
        return;
    if (k->left)
        ac_word(c, k->left, k->span, "[[ ]] operand");
    if (k->right)
        ac_word(c, k->right, k->span, "[[ ]] operand");
    ac_cond(c, k->a, k->span);
    ac_cond(c, k->b, k->span);
}

static void ac_cmd(ast_checker *c, const sh_cmd *k, sh_span outer)
{
    sh_span all = { 0, (uint32_t)c->p->len };
    if (!ac_in(c, k->span, outer, "command"))
        return;
    for (const sh_redir *r = k->redirs; r; r = r->next) {
        ac_in(c, r->span, k->span, "redirection");
        ac_word(c, r->target, r->span, "redirection target");
        if (r->op == R_HEREDOC || r->op == R_HEREDOC_TAB) {
            ac_in(c, r->body, all, "here-document body");
            ac_in(c, r->body_end, all, "here-document end");
            if (r->body.start != r->body_end.start || r->body.end > r->body_end.end)
                ac_fail(c, "here-document body [%u,%u) not within [%u,%u)", r->body.start,
                        r->body.end, r->body_end.start, r->body_end.end);
            ac_parts(c, r->body_parts, r->body, 1);
        }
    }
    for (const sh_assign *a = k->assigns; a; a = a->next) {
        ac_in(c, a->span, k->span, "assignment");
        if (a->value)
            ac_word(c, a->value, a->span, "assignment value");
        for (const sh_word *e = a->elements; e; e = e->next)
            ac_word(c, e, a->span, "array element");
    }
    for (const sh_word *w = k->words; w; w = w->next)
        ac_word(c, w, k->span, "word");
    for (const sh_word *w = k->for_words; w; w = w->next)
        ac_word(c, w, k->span, "for word");
    if (k->subject)
        ac_word(c, k->subject, k->span, "case subject");
    if (k->body)
        ac_list(c, k->body, k->span);
    if (k->cond)
        ac_list(c, k->cond, k->span);
    for (const sh_if_clause *cl = k->clauses; cl; cl = cl->next) {
        ac_list(c, cl->cond, k->span);
        ac_list(c, cl->then_body, k->span);
    }
    if (k->else_body)
        ac_list(c, k->else_body, k->span);
    for (const sh_case_item *it = k->items; it; it = it->next) {
        ac_in(c, it->span, k->span, "case item");
        for (const sh_word *w = it->patterns; w; w = w->next)
            ac_word(c, w, it->span, "case pattern");
        if (it->body)
            ac_list(c, it->body, it->span);
    }
    ac_cond(c, k->cond_expr, k->span);
    if (k->func_body)
        ac_cmd(c, k->func_body, k->span);
}

static void ac_list(ast_checker *c, const sh_list *l, sh_span outer)
{
    if (!ac_in(c, l->span, outer, "list"))
        return;
    for (const sh_andor *a = l->items; a; a = a->next) {
        if (!ac_in(c, a->span, l->span, "and-or list"))
            continue;
        for (const sh_pipeline *p = a->pipes; p; p = p->next) {
            if (!ac_in(c, p->span, a->span, "pipeline"))
                continue;
            for (const sh_cmd *k = p->cmds; k; k = k->next)
                ac_cmd(c, k, p->span);
        }
    }
}

/* 0 when p's tree keeps every invariant, else -1 with the first problem in why. */
static inline int ast_check(const sh_parse *p, strbuf *why)
{
    ast_checker c = { p, why, 0, 0 };
    sh_span all = { 0, (uint32_t)p->len };
    if (p->root)
        ac_list(&c, p->root, all);
    return c.bad ? -1 : 0;
}

#endif
