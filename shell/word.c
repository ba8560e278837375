/*
 * Words and their parts.
 *
 * The lexer appends literal characters to a word as "runs" (source ranges)
 * and nested constructs (quotes, $( ), ${ }, ...) as finished parts. Once
 * the word is complete, the runs are split here into what bash makes of
 * them when it expands the word: plain literal text, $name parameters,
 * glob characters and bracket expressions, tilde prefixes, and brace
 * expansions. ${...} is parsed into sh_param as bash's
 * parameter_brace_expand() reads it; an assignment-shaped word is split into
 * an sh_assign.
 *
 * bash checks ${...} operators, arithmetic, and the text of backquotes and
 * here-documents only when it expands them, so a mistake there is not a
 * syntax error: the part is kept (a bad ${...} gets param->bad, an
 * unparsable backquote or here-document substitution gets body == NULL).
 */
#include "shell/parse_int.h"

#include "common/util.h"

#include <string.h>

static inline bool is_name_start(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static inline bool is_name_char(int c) { return is_name_start(c) || (c >= '0' && c <= '9'); }
static inline bool is_digit(int c) { return c >= '0' && c <= '9'; }

bool sh_legal_identifier(const char *s, size_t n)
{
    if (n == 0 || !is_name_start((unsigned char)s[0]))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!is_name_char((unsigned char)s[i]))
            return false;
    return true;
}

/* bash's skipsubscript(): the index of the ']' matching s[i] == '[', or n. */
static size_t skip_subscript(const char *s, size_t n, size_t i)
{
    int depth = 0;
    for (; i < n; i++) {
        char c = s[i];
        if (c == '\\' && i + 1 < n) {
            i++;
        } else if (c == '\'') {
            const char *q = memchr(s + i + 1, '\'', n - i - 1);
            if (!q)
                return n;
            i = (size_t)(q - s);
        } else if (c == '"') {
            for (i++; i < n && s[i] != '"'; i++)
                if (s[i] == '\\' && i + 1 < n)
                    i++;
            if (i >= n)
                return n;
        } else if (c == '[') {
            depth++;
        } else if (c == ']') {
            if (--depth == 0)
                return i;
        }
    }
    return n;
}

long sh_assignment_index(const char *s, size_t n, bool compassign)
{
    size_t i = 0;

    if (n == 0)
        return -1;
    if (compassign && s[0] != '[')
        return -1;
    if (!compassign && !is_name_start((unsigned char)s[0]))
        return -1;
    for (; i < n; i++) {
        char c = s[i];
        if (c == '=')
            return i ? (long)i : -1;
        if (c == '[') {
            size_t k = skip_subscript(s, n, i);
            if (k >= n || s[k] != ']')
                return -1;
            k++;
            if (k + 1 < n && s[k] == '+' && s[k + 1] == '=')
                return (long)k + 1;
            return (k < n && s[k] == '=') ? (long)k : -1;
        }
        if (c == '+' && i + 1 < n && s[i + 1] == '=')
            return (long)i + 1;
        if (!is_name_char((unsigned char)c))
            return -1;
    }
    return -1;
}

bool wd_valid_array_reference(const char *s, size_t n)
{
    const char *b = memchr(s, '[', n);
    size_t k;
    if (!b || !sh_legal_identifier(s, (size_t)(b - s)))
        return false;
    k = skip_subscript(s, n, (size_t)(b - s));
    return k == n - 1 && k > (size_t)(b - s) + 1;
}

/* ---- source text ------------------------------------------------------------ */

/* Text of src[s, e) as bash read it: NULs dropped and, with cont, backslash-
 * newline pairs removed (a backslash escapes the next byte). With map,
 * *map[i] is the source position of text[i]; *map stays NULL when that is
 * simply s + i (nothing was removed), the common case. */
static char *range_text(parser *P, size_t s, size_t e, bool cont, size_t *len, uint32_t **map)
{
    char *out;
    size_t n = 0;
    bool plain = true;

    if (e > P->len)
        e = P->len;
    if (s > e)
        s = e;
    for (size_t i = s; i < e && plain; i++)
        if (P->src[i] == 0 || (cont && P->src[i] == '\\' && i + 1 < e))
            plain = false;
    if (plain) {
        if (map)
            *map = NULL;
        *len = e - s;
        return arena_strndup(P->a, P->src + s, e - s);
    }
    out = arena_alloc(P->a, e - s + 1);
    if (map)
        *map = arena_alloc(P->a, (e - s + 1) * sizeof(uint32_t));
    for (size_t i = s; i < e; i++) {
        char c = P->src[i];
        if (c == 0)
            continue;
        if (cont && c == '\\') {
            size_t j = i + 1;
            while (j < e && P->src[j] == 0)
                j++;
            if (j < e && P->src[j] == '\n') {
                i = j;
                continue;
            }
            if (map)
                (*map)[n] = (uint32_t)i;
            out[n++] = c;
            if (j < e) {
                if (map)
                    (*map)[n] = (uint32_t)j;
                out[n++] = P->src[j];
                i = j;
            }
            continue;
        }
        if (map)
            (*map)[n] = (uint32_t)i;
        out[n++] = c;
    }
    if (map)
        (*map)[n] = (uint32_t)e;
    out[n] = 0;
    *len = n;
    return out;
}

/* Source position of character i of a range_text() result. */
static inline uint32_t mpos(const uint32_t *map, size_t s, size_t i)
{
    return map ? map[i] : (uint32_t)(s + i);
}

char *wb_range_text(parser *P, size_t s, size_t e, size_t *len)
{
    return range_text(P, s, e, true, len, NULL);
}

char *wb_raw_text(parser *P, size_t s, size_t e, size_t *len)
{
    return range_text(P, s, e, false, len, NULL);
}

/* ---- the word builder ------------------------------------------------------- */

void wb_init(wbuild *wb)
{
    memset(wb, 0, sizeof(*wb));
    wb->tail = &wb->head;
}

/* A zeroed part: a recycled literal-run node when there is one. */
static sh_wpart *alloc_part(parser *P)
{
    sh_wpart *w = P->free_parts;
    if (!w)
        return arena_alloc(P->a, sizeof(*w));
    P->free_parts = w->next;
    memset(w, 0, sizeof(*w));
    return w;
}

sh_wpart *wb_new_part(parser *P, sh_wpart_kind kind, size_t start, size_t end)
{
    sh_wpart *w = alloc_part(P);
    w->kind = kind;
    w->span = lx_span(P, start, end);
    w->text = "";
    return w;
}

static void wb_close_run(parser *P, wbuild *wb)
{
    if (!wb->run_open)
        return;
    wb->run_open = false;
    if (wb->run_end <= wb->run_start)
        return;
    sh_wpart *r = alloc_part(P);
    r->kind = WP_RUN;
    /* runs keep raw positions in this parser's buffer until resolved */
    r->span.start = wb->run_start;
    r->span.end = wb->run_end;
    *wb->tail = r;
    wb->tail = &r->next;
}

void wb_lit(parser *P, wbuild *wb, size_t pos)
{
    (void)P;
    if (wb->run_open) {
        wb->run_end = (uint32_t)(pos + 1);
        return;
    }
    wb->run_open = true;
    wb->run_start = (uint32_t)pos;
    wb->run_end = (uint32_t)(pos + 1);
}

void wb_lit_range(parser *P, wbuild *wb, size_t start, size_t end)
{
    (void)P;
    if (!wb->run_open) {
        wb->run_open = true;
        wb->run_start = (uint32_t)start;
    }
    wb->run_end = (uint32_t)end;
}

void wb_unlit_at(wbuild *wb, size_t pos)
{
    if (!wb->run_open || wb->run_end <= pos)
        return;
    wb->run_end = (uint32_t)pos;
    if (wb->run_end <= wb->run_start)
        wb->run_open = false;
}

void wb_part(parser *P, wbuild *wb, sh_wpart *part)
{
    wb_close_run(P, wb);
    *wb->tail = part;
    wb->tail = &part->next;
}

/* ---- resolving literal runs -------------------------------------------------- */

typedef struct plist {
    sh_wpart *head, **tail;
} plist;

static void pl_add(plist *l, sh_wpart *w)
{
    w->next = NULL;
    *l->tail = w;
    l->tail = &w->next;
}

static sh_wpart *mk_text_part(parser *P, sh_wpart_kind kind, const char *text, size_t n,
                              const uint32_t *map, size_t s, size_t i, size_t j)
{
    sh_wpart *w = alloc_part(P);
    w->kind = kind;
    w->span = lx_span(P, mpos(map, s, i), j > i ? mpos(map, s, j - 1) + 1 : mpos(map, s, i));
    w->text = arena_strndup(P->a, text, n);
    w->len = n;
    return w;
}

static const char special_params[] = "@*#?-$!0";

/* Glob bracket expression at t[i] == '[': index one past its ']', or 0. */
static size_t glob_bracket_end(const char *t, size_t n, size_t i)
{
    size_t j = i + 1;
    if (j < n && (t[j] == '!' || t[j] == '^'))
        j++;
    if (j < n && t[j] == ']')
        j++;
    for (; j < n; j++) {
        if (t[j] == ']')
            return j + 1;
        if (t[j] == '[' && j + 1 < n && (t[j + 1] == ':' || t[j + 1] == '.' || t[j + 1] == '=')) {
            char k = t[j + 1];
            for (size_t m = j + 2; m + 1 < n; m++)
                if (t[m] == k && t[m + 1] == ']') {
                    j = m + 1;
                    break;
                }
        }
    }
    return 0;
}

/* Splits one run into parts. first: the run starts the word (or the
 * assignment value); last: nothing follows it in the word. */
static void resolve_run(parser *P, size_t s, size_t e, word_ctx ctx, bool first, bool last,
                        plist *out, unsigned *flags)
{
    size_t n, i = 0, lit = 0;
    uint32_t *map;
    char *t = range_text(P, s, e, true, &n, &map);
    bool globs = ctx == WCTX_WORD || ctx == WCTX_ASSIGN || ctx == WCTX_PATTERN ||
                 ctx == WCTX_PARAM_ARG;
    bool tildes = ctx == WCTX_WORD || ctx == WCTX_ASSIGN || ctx == WCTX_PATTERN ||
                  ctx == WCTX_PARAM_ARG;

#define FLUSH_LIT()                                                                        \
    do {                                                                                   \
        if (i > lit)                                                                       \
            pl_add(out, mk_text_part(P, WP_LIT, t + lit, i - lit, map, s, lit, i));           \
    } while (0)

    while (i < n) {
        char c = t[i];
        size_t j = 0;
        sh_wpart_kind kind = WP_LIT;

        if (c == '$' && i + 1 < n) {
            char d = t[i + 1];
            if (is_name_start((unsigned char)d)) {
                for (j = i + 2; j < n && is_name_char((unsigned char)t[j]); j++)
                    ;
            } else if (is_digit((unsigned char)d) || strchr(special_params, d)) {
                j = i + 2;
            }
            if (j) {
                FLUSH_LIT();
                sh_wpart *w = mk_text_part(P, WP_PARAM, t + i, j - i, map, s, i, j);
                w->param = arena_alloc(P->a, sizeof(sh_param));
                w->param->name = arena_strndup(P->a, t + i + 1, j - i - 1);
                w->param->name_len = j - i - 1;
                w->text = "";
                w->len = 0;
                pl_add(out, w);
                *flags |= SH_WF_EXPANSION;
                i = lit = j;
                continue;
            }
        }
        if (globs && (c == '*' || c == '?')) {
            for (j = i + 1; j < n && (t[j] == '*' || t[j] == '?'); j++)
                ;
            kind = WP_GLOB;
        } else if (globs && c == '[') {
            j = glob_bracket_end(t, n, i);
            if (j)
                kind = WP_GLOB;
        } else if (tildes && c == '~' &&
                   ((first && i == 0) || (ctx == WCTX_ASSIGN && i > 0 && t[i - 1] == ':'))) {
            for (j = i + 1; j < n && t[j] != '/' && !(ctx == WCTX_ASSIGN && t[j] == ':'); j++)
                ;
            if (j < n || last)
                kind = WP_TILDE;
        }
        if (kind == WP_LIT) {
            i++;
            continue;
        }
        FLUSH_LIT();
        if (kind == WP_TILDE) {
            sh_wpart *w = mk_text_part(P, WP_TILDE, t + i + 1, j - i - 1, map, s, i, j);
            pl_add(out, w);
            *flags |= SH_WF_TILDE;
        } else {
            pl_add(out, mk_text_part(P, kind, t + i, j - i, map, s, i, j));
            *flags |= SH_WF_GLOB;
        }
        i = lit = j;
    }
    FLUSH_LIT();
#undef FLUSH_LIT
}

sh_wpart *wb_finish(parser *P, wbuild *wb, word_ctx ctx, unsigned *flags)
{
    plist out = { NULL, &out.head };
    bool first = true;

    wb_close_run(P, wb);
    for (sh_wpart *w = wb->head, *next; w; w = next) {
        next = w->next;
        if (w->kind == WP_RUN) {
            uint32_t s = w->span.start, e = w->span.end;
            w->next = P->free_parts;          /* resolved: the node can be reused */
            P->free_parts = w;
            resolve_run(P, s, e, ctx, first, next == NULL, &out, flags);
        } else {
            pl_add(&out, w);
        }
        first = false;
    }
    *flags |= wd_flags_of_parts(out.head) | wb->flags;
    return out.head;
}

unsigned wd_flags_of_parts(const sh_wpart *parts)
{
    unsigned f = 0;
    for (const sh_wpart *w = parts; w; w = w->next) {
        switch (w->kind) {
        case WP_LIT:
            break;
        case WP_ESCAPED:
        case WP_SQUOTE:
            f |= SH_WF_QUOTED;
            break;
        case WP_DQUOTE:
            f |= SH_WF_QUOTED | wd_flags_of_parts(w->parts);
            break;
        case WP_ANSI:
            f |= SH_WF_QUOTED | SH_WF_ANSI;
            break;
        case WP_LOCALE:
            f |= SH_WF_QUOTED | SH_WF_ANSI | wd_flags_of_parts(w->parts);
            break;
        case WP_PARAM:
        case WP_CMDSUB:
        case WP_BACKQUOTE:
        case WP_ARITH:
        case WP_PROCSUB_IN:
        case WP_PROCSUB_OUT:
            f |= SH_WF_EXPANSION;
            break;
        case WP_TILDE:
            f |= SH_WF_TILDE;
            break;
        case WP_GLOB:
        case WP_EXTGLOB:
            f |= SH_WF_GLOB;
            break;
        case WP_BRACE:
            f |= SH_WF_BRACE | wd_flags_of_parts(w->parts);
            break;
        }
    }
    return f;
}

/* ---- brace expansion ----------------------------------------------------------- */

/* A unit of the word for brace matching: one character of a literal part,
 * or a whole other part (opaque). */
typedef struct bunit {
    sh_wpart *part;
    size_t off;          /* offset in part->text for literal characters */
    uint32_t pos;        /* its source position */
    char c;              /* the character, or 0 for an opaque part */
} bunit;

static bool seq_end_ok(const char *s, size_t n, bool *alpha)
{
    size_t i = 0;
    if (n == 1 && ((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z'))) {
        *alpha = true;
        return true;
    }
    if (i < n && (s[i] == '-' || s[i] == '+'))
        i++;
    if (i == n)
        return false;
    for (; i < n; i++)
        if (!is_digit((unsigned char)s[i]))
            return false;
    *alpha = false;
    return true;
}

/* {x..y} or {x..y..incr} */
static bool brace_sequence(const char *s, size_t n)
{
    const char *d1 = NULL, *d2 = NULL;
    bool a1, a2, a3;
    for (size_t i = 0; i + 1 < n; i++)
        if (s[i] == '.' && s[i + 1] == '.') {
            if (!d1)
                d1 = s + i;
            else if (!d2 && s + i >= d1 + 2)
                d2 = s + i;
        }
    if (!d1)
        return false;
    if (!seq_end_ok(s, (size_t)(d1 - s), &a1))
        return false;
    if (!d2)
        return seq_end_ok(d1 + 2, (size_t)(s + n - d1 - 2), &a2) && a1 == a2;
    return seq_end_ok(d1 + 2, (size_t)(d2 - d1 - 2), &a2) && a1 == a2 &&
           seq_end_ok(d2 + 2, (size_t)(s + n - d2 - 2), &a3) && !a3;
}

/* A literal part made of units u[a..b] (characters of one literal part). */
static sh_wpart *unit_lit(parser *P, const bunit *u, size_t a, size_t b)
{
    sh_wpart *l = arena_alloc(P->a, sizeof(*l));
    const sh_wpart *w = u[a].part;
    *l = *w;
    l->next = NULL;
    if (u[a].off == 0 && u[b].off + 1 == w->len)
        return l;
    l->text = arena_strndup(P->a, w->text + u[a].off, u[b].off - u[a].off + 1);
    l->len = u[b].off - u[a].off + 1;
    l->span.start = u[a].pos;
    l->span.end = u[b].pos + 1;
    return l;
}

static sh_wpart *copy_part(parser *P, const sh_wpart *w)
{
    sh_wpart *l = arena_alloc(P->a, sizeof(*l));
    *l = *w;
    l->next = NULL;
    return l;
}

/* Finds bash's brace expansions among the word's literal characters
 * ({a,b} or {1..3}; quoted parts and expansions inside are kept as parts)
 * and replaces each outermost one with a WP_BRACE part. */
static sh_wpart *brace_pass(parser *P, sh_wpart *parts)
{
    size_t nu = 0, alloc = 0;
    bunit *u = NULL;
    bool any = false;

    for (sh_wpart *w = parts; w; w = w->next)
        if (w->kind == WP_LIT && memchr(w->text, '{', w->len))
            any = true;
    if (!any)
        return parts;

    for (sh_wpart *w = parts; w; w = w->next) {
        size_t need = w->kind == WP_LIT ? w->len : 1;
        if (nu + need > alloc) {
            size_t na = (nu + need) * 2;
            u = arena_grow(P->a, u, alloc, na, sizeof(*u));
            alloc = na;
        }
        if (w->kind == WP_LIT) {
            uint32_t *map;
            size_t n;
            (void)range_text(P, w->span.start, w->span.end, true, &n, &map);
            for (size_t k = 0; k < w->len; k++)
                u[nu++] = (bunit){ w, k, k < n ? mpos(map, w->span.start, k) : w->span.end,
                                   w->text[k] ? w->text[k] : 1 };
        } else {
            u[nu++] = (bunit){ w, 0, w->span.start, 0 };
        }
    }

    /* Match braces with a stack, noting a comma at each brace's own level. */
    size_t *stack = arena_alloc(P->a, (nu + 1) * sizeof(size_t));
    bool *comma = arena_alloc(P->a, (nu + 1) * sizeof(bool));
    size_t *match = arena_alloc(P->a, (nu + 1) * sizeof(size_t));
    bool *valid = arena_alloc(P->a, (nu + 1) * sizeof(bool));
    size_t sp = 0;
    for (size_t k = 0; k < nu; k++) {
        match[k] = (size_t)-1;
        if (u[k].c == '{') {
            stack[sp] = k;
            comma[sp] = false;
            sp++;
        } else if (u[k].c == ',' && sp) {
            comma[sp - 1] = true;
        } else if (u[k].c == '}' && sp) {
            size_t o = stack[--sp];
            bool ok = comma[sp];
            match[o] = k;
            if (!ok && k - o - 1 <= 64) {
                /* a sequence: only literal characters inside */
                char buf[65];
                bool plain = true;
                for (size_t m = o + 1; m < k && plain; m++) {
                    plain = u[m].c != 0 && u[m].c != '{';
                    buf[m - o - 1] = u[m].c;
                }
                ok = plain && brace_sequence(buf, k - o - 1);
            }
            valid[o] = ok;
        }
    }

    /* Rebuild the part list, replacing each outermost valid brace range. */
    plist out = { NULL, &out.head };
    size_t k = 0;
    while (k < nu) {
        if (u[k].c == '{' && match[k] != (size_t)-1 && valid[k]) {
            size_t e = match[k];
            sh_wpart *b = arena_alloc(P->a, sizeof(*b));
            bool opaque = false;
            b->kind = WP_BRACE;
            b->span.start = u[k].pos;
            b->span.end = u[e].pos + 1;
            for (size_t m = k; m <= e && !opaque; m++)
                opaque = u[m].c == 0;
            b->text = range_text(P, b->span.start, b->span.end, true, &b->len, NULL);
            if (opaque) {
                /* keep the inner parts (quotes, expansions) visible */
                plist in = { NULL, &in.head };
                for (size_t m = k + 1; m < e; m++) {
                    if (u[m].c) {
                        size_t m2 = m;
                        while (m2 + 1 < e && u[m2 + 1].c && u[m2 + 1].part == u[m].part)
                            m2++;
                        pl_add(&in, unit_lit(P, u, m, m2));
                        m = m2;
                    } else {
                        pl_add(&in, copy_part(P, u[m].part));
                    }
                }
                b->parts = in.head;
            }
            pl_add(&out, b);
            k = e + 1;
        } else if (u[k].c) {
            size_t m2 = k;
            while (m2 + 1 < nu && u[m2 + 1].c && u[m2 + 1].part == u[k].part &&
                   !(u[m2 + 1].c == '{' && match[m2 + 1] != (size_t)-1 && valid[m2 + 1]))
                m2++;
            pl_add(&out, unit_lit(P, u, k, m2));
            k = m2 + 1;
        } else {
            pl_add(&out, copy_part(P, u[k].part));
            k++;
        }
    }
    return out.head;
}

sh_word *wd_finish(parser *P, wbuild *wb, size_t start, size_t end, word_ctx ctx)
{
    sh_word *w = arena_alloc(P->a, sizeof(*w));
    unsigned f = 0;
    w->parts = wb_finish(P, wb, ctx, &f);
    if (ctx == WCTX_WORD)
        w->parts = brace_pass(P, w->parts);
    w->flags = f | wd_flags_of_parts(w->parts);
    w->span = lx_span(P, start, end);
    return w;
}

/* ---- ${...} ------------------------------------------------------------------ */

/* Splits a raw part list (runs and parts) at the first occurrence of c in a
 * run; *after gets what follows c. Returns false when there is none. */
static bool raw_split(parser *P, sh_wpart *list, char c, sh_wpart **before, sh_wpart **after)
{
    sh_wpart **link = before;
    *before = list;
    for (sh_wpart *w = list; w; link = &w->next, w = w->next) {
        if (w->kind != WP_RUN)
            continue;
        size_t n;
        uint32_t *map;
        char *t = range_text(P, w->span.start, w->span.end, true, &n, &map);
        char *hit = memchr(t, c, n);
        if (!hit)
            continue;
        size_t k = (size_t)(hit - t);
        sh_wpart *rest = w->next;
        if (k + 1 < n) {
            sh_wpart *r = arena_alloc(P->a, sizeof(*r));
            r->kind = WP_RUN;
            r->span.start = mpos(map, w->span.start, k + 1);
            r->span.end = w->span.end;
            r->next = rest;
            rest = r;
        }
        if (k > 0) {
            w->span.end = mpos(map, w->span.start, k);
            w->next = NULL;
        } else {
            *link = NULL;
        }
        *after = rest;
        return true;
    }
    *after = NULL;
    return false;
}

/* A word from a raw part list, its runs resolved in ctx. */
static sh_word *raw_word(parser *P, sh_wpart *list, size_t start, size_t end, word_ctx ctx)
{
    wbuild wb;
    wb_init(&wb);
    wb.head = list;
    sh_wpart **t = &wb.head;
    while (*t)
        t = &(*t)->next;
    wb.tail = t;
    sh_word *w = arena_alloc(P->a, sizeof(*w));
    unsigned f = 0;
    (void)end;
    w->parts = wb_finish(P, &wb, ctx, &f);
    w->flags = f;
    if (w->parts) {
        sh_wpart *last = w->parts;
        while (last->next)
            last = last->next;
        w->span.start = w->parts->span.start;
        w->span.end = last->span.end;
    } else {
        w->span = lx_span(P, start, start);
    }
    return w;
}

static const char *const param_ops[] = {
    ":-", ":=", ":?", ":+", "-", "=", "?", "+", "##", "#", "%%", "%", "//", "/#", "/%", "/",
    "^^", "^", ",,", ",",
};

sh_param *wd_param(parser *P, wbuild *inner, size_t start, size_t end)
{
    sh_param *pm = arena_alloc(P->a, sizeof(*pm));
    sh_wpart *first;
    size_t n = 0, i = 0;
    uint32_t *map = NULL;
    char *t = "";
    bool more;

    pm->braced = true;
    wb_close_run(P, inner);
    first = inner->head;
    if (first && first->kind == WP_RUN)
        t = range_text(P, first->span.start, first->span.end, true, &n, &map);
    more = first && (first->kind != WP_RUN || first->next);

    if (n >= 2 && t[0] == '#' &&
        (is_name_start((unsigned char)t[1]) || is_digit((unsigned char)t[1]) ||
         strchr(special_params, t[1]))) {
        pm->length = true;
        i = 1;
    } else if (n >= 2 && t[0] == '!' &&
               (is_name_start((unsigned char)t[1]) || is_digit((unsigned char)t[1]) ||
                strchr("@*#?", t[1]))) {
        pm->indirect = true;
        i = 1;
    }
    size_t ns = i;
    if (i < n && is_name_start((unsigned char)t[i])) {
        while (i < n && is_name_char((unsigned char)t[i]))
            i++;
    } else if (i < n && is_digit((unsigned char)t[i])) {
        while (i < n && is_digit((unsigned char)t[i]))
            i++;
    } else if (i < n && strchr(special_params, t[i])) {
        i++;
    }
    if (i == ns) {
        pm->bad = true;
        pm->name = arena_strndup(P->a, t, n);
        pm->name_len = n;
        return pm;
    }
    pm->name = arena_strndup(P->a, t + ns, i - ns);
    pm->name_len = i - ns;
    if (i < n && t[i] == '[') {
        size_t k = skip_subscript(t, n, i);
        if (k >= n) {
            pm->bad = true;
            return pm;
        }
        pm->has_subscript = true;
        pm->subscript = lx_span(P, mpos(map, first->span.start, i + 1),
                                mpos(map, first->span.start, k));
        i = k + 1;
    }
    if (i == n) {
        if (more)
            pm->bad = true;
        return pm;
    }
    if (pm->length) {
        /* ${#x...}: nothing may follow */
        pm->bad = true;
        return pm;
    }

    const char *op = NULL;
    size_t oplen = 0;
    if (pm->indirect && i + 1 == n && !more && (t[i] == '*' || t[i] == '@')) {
        pm->op = t[i] == '*' ? "*" : "@";        /* ${!prefix*}: no operand */
        return pm;
    } else if (t[i] == '@') {
        op = "@";
        oplen = 1;
    } else {
        for (size_t k = 0; k < ARRAY_SIZE(param_ops); k++) {
            size_t l = strlen(param_ops[k]);
            if (i + l <= n && memcmp(t + i, param_ops[k], l) == 0) {
                op = param_ops[k];
                oplen = l;
                break;
            }
        }
        if (!op && t[i] == ':') {
            op = ":";
            oplen = 1;
        }
    }
    if (!op) {
        pm->bad = true;
        return pm;
    }
    pm->op = op;

    /* The operand: the rest of the first run, then the other parts. */
    sh_wpart *rest = first->next;
    size_t arg_start = mpos(map, first->span.start, i + oplen);
    if (i + oplen < n) {
        sh_wpart *r = arena_alloc(P->a, sizeof(*r));
        r->kind = WP_RUN;
        r->span.start = (uint32_t)arg_start;
        r->span.end = first->span.end;
        r->next = rest;
        rest = r;
    }
    if (op[0] == '/' || (op[0] == ':' && op[1] == 0)) {
        sh_wpart *a, *b;
        char sep = op[0] == '/' ? '/' : ':';
        if (raw_split(P, rest, sep, &a, &b)) {
            pm->arg = raw_word(P, a, arg_start, end, WCTX_PARAM_ARG);
            pm->arg2 = raw_word(P, b, end, end, WCTX_PARAM_ARG);
            return pm;
        }
    }
    pm->arg = raw_word(P, rest, arg_start, end, WCTX_PARAM_ARG);
    return pm;
}

/* ---- assignments ---------------------------------------------------------------- */

sh_word *wd_assignment_word(parser *P, wbuild *wb, size_t start, size_t end, size_t eq_pos,
                            bool attach, sh_word *elements)
{
    sh_wpart *first;
    size_t n, i = 0;
    uint32_t *map;
    char *t;
    sh_assign *as;
    sh_word *w;

    wb_close_run(P, wb);
    first = wb->head;
    if (!first || first->kind != WP_RUN || eq_pos < first->span.start ||
        eq_pos >= first->span.end)
        return wd_finish(P, wb, start, end, WCTX_WORD);

    as = arena_alloc(P->a, sizeof(*as));
    t = range_text(P, first->span.start, eq_pos + 1, true, &n, &map);
    while (i < n && is_name_char((unsigned char)t[i]))
        i++;
    as->name = arena_strndup(P->a, t, i);
    as->name_len = i;
    if (i < n && t[i] == '[') {
        size_t k = skip_subscript(t, n, i);
        if (k < n) {
            as->has_subscript = true;
            as->subscript = lx_span(P, mpos(map, first->span.start, i + 1),
                                    mpos(map, first->span.start, k));
            i = k + 1;
        }
    }
    if (i < n && t[i] == '+')
        as->append = true;

    /* The word's parts: "name=" as a literal, then the value's parts. */
    sh_wpart *namepart = mk_text_part(P, WP_LIT, t, n, map, first->span.start, 0, n);
    sh_wpart *rest = first->next;
    if (eq_pos + 1 < first->span.end) {
        sh_wpart *r = arena_alloc(P->a, sizeof(*r));
        r->kind = WP_RUN;
        r->span.start = (uint32_t)(eq_pos + 1);
        r->span.end = first->span.end;
        r->next = rest;
        rest = r;
    }
    sh_word *value = raw_word(P, rest, eq_pos + 1, end, WCTX_ASSIGN);
    if (!value->parts)
        value->span = lx_span(P, eq_pos + 1, eq_pos + 1);

    w = arena_alloc(P->a, sizeof(*w));
    w->span = lx_span(P, start, end);
    namepart->next = value->parts;
    w->parts = namepart;
    w->flags = value->flags;
    as->span = w->span;
    if (elements) {
        as->is_array = true;
        as->elements = elements;
        for (sh_word *e = elements; e; e = e->next)
            w->flags |= e->flags & ~SH_WF_ASSIGN;
    } else {
        as->value = value;
    }
    if (attach) {
        w->assign = as;
        w->flags |= SH_WF_ASSIGN;
    }
    return w;
}

/* ---- $'...' ---------------------------------------------------------------------- */

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static size_t utf8_encode(unsigned long cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | ((cp >> 18) & 0x07));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* bash's ansicstr(): the value of $'...' (it may contain NUL bytes). */
char *wd_ansi_decode(parser *P, const char *s, size_t n, size_t *outlen)
{
    char *out = arena_alloc(P->a, n * 4 + 1);
    size_t o = 0;

    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)s[i];
        if (c != '\\' || i + 1 >= n) {
            out[o++] = (char)c;
            continue;
        }
        c = (unsigned char)s[++i];
        switch (c) {
        case 'a': out[o++] = '\a'; break;
        case 'b': out[o++] = '\b'; break;
        case 'e': case 'E': out[o++] = 033; break;
        case 'f': out[o++] = '\f'; break;
        case 'n': out[o++] = '\n'; break;
        case 'r': out[o++] = '\r'; break;
        case 't': out[o++] = '\t'; break;
        case 'v': out[o++] = '\v'; break;
        case '\\': case '\'': case '"': case '?': out[o++] = (char)c; break;
        case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': {
            int v = c - '0';
            for (int k = 0; k < 2 && i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '7'; k++)
                v = v * 8 + (s[++i] - '0');
            out[o++] = (char)(v & 0xff);
            break;
        }
        case 'x': {
            int v = 0, k = 0;
            while (k < 2 && i + 1 < n && hexval((unsigned char)s[i + 1]) >= 0) {
                v = v * 16 + hexval((unsigned char)s[++i]);
                k++;
            }
            if (k == 0) {
                out[o++] = '\\';
                out[o++] = 'x';
            } else {
                out[o++] = (char)v;
            }
            break;
        }
        case 'u': case 'U': {
            unsigned long v = 0;
            int k = 0, max = c == 'u' ? 4 : 8;
            while (k < max && i + 1 < n && hexval((unsigned char)s[i + 1]) >= 0) {
                v = v * 16 + (unsigned long)hexval((unsigned char)s[++i]);
                k++;
            }
            if (k == 0) {
                out[o++] = '\\';
                out[o++] = (char)c;
            } else {
                o += utf8_encode(v > 0x10ffff ? 0xfffd : v, out + o);
            }
            break;
        }
        case 'c':
            if (i + 1 < n) {
                int d = (unsigned char)s[++i];
                if (d == '\\' && i + 1 < n && s[i + 1] == '\\')
                    i++;
                out[o++] = (char)((d == '?') ? 0x7f : (d & 0x1f));
            } else {
                out[o++] = '\\';
                out[o++] = 'c';
            }
            break;
        default:
            out[o++] = '\\';
            out[o++] = (char)c;
            break;
        }
    }
    out[o] = 0;
    *outlen = o;
    return out;
}

/* ---- quote removal (here-document delimiters) ------------------------------------ */

static void add_part_source(parser *P, const sh_wpart *w, strbuf *out)
{
    size_t n;
    char *t = wb_range_text(P, w->span.start, w->span.end, &n);
    strbuf_add(out, t, n);
}

void wd_quote_removed(parser *P, const sh_word *w, strbuf *out)
{
    for (const sh_wpart *p = w->parts; p; p = p->next) {
        switch (p->kind) {
        case WP_LIT:
        case WP_ESCAPED:
        case WP_SQUOTE:
        case WP_ANSI:
            strbuf_add(out, p->text, p->len);
            break;
        case WP_DQUOTE:
        case WP_LOCALE:
            for (const sh_wpart *q = p->parts; q; q = q->next) {
                if (q->kind == WP_LIT || q->kind == WP_ESCAPED)
                    strbuf_add(out, q->text, q->len);
                else
                    add_part_source(P, q, out);
            }
            break;
        default:
            add_part_source(P, p, out);
            break;
        }
    }
}

/* ---- span remapping for backquote bodies ---------------------------------------------- */

typedef struct remap {
    const uint32_t *map;   /* body offset -> source offset */
    size_t n;
    uint32_t end;          /* source offset for the body's end */
} remap;

static void rm_span(const remap *m, sh_span *s)
{
    uint32_t a = s->start, b = s->end;
    if (a == b) {
        /* empty: just after the character before it, as span ends map */
        s->start = s->end = a > 0 && a - 1 < m->n ? m->map[a - 1] + 1
                                                   : a < m->n ? m->map[a] : m->end;
        return;
    }
    s->start = a < m->n ? m->map[a] : m->end;
    s->end = b - 1 < m->n ? m->map[b - 1] + 1 : m->end;
    if (s->end < s->start)
        s->end = s->start;
}

static void rm_list(const remap *m, sh_list *l);
static void rm_word(const remap *m, sh_word *w);

static void rm_parts(const remap *m, sh_wpart *w)
{
    for (; w; w = w->next) {
        rm_span(m, &w->span);
        rm_parts(m, w->parts);
        if (w->body)
            rm_list(m, w->body);
        if (w->param) {
            if (w->param->has_subscript)
                rm_span(m, &w->param->subscript);
            if (w->param->arg)
                rm_word(m, w->param->arg);
            if (w->param->arg2)
                rm_word(m, w->param->arg2);
        }
    }
}

static void rm_assign(const remap *m, sh_assign *a, bool value_parts)
{
    rm_span(m, &a->span);
    if (a->has_subscript)
        rm_span(m, &a->subscript);
    if (a->value) {
        rm_span(m, &a->value->span);
        if (value_parts)
            rm_parts(m, a->value->parts);
    }
    for (sh_word *e = a->elements; e; e = e->next)
        rm_word(m, e);
}

static void rm_word(const remap *m, sh_word *w)
{
    rm_span(m, &w->span);
    rm_parts(m, w->parts);          /* an assignment's value parts are among these */
    if (w->assign)
        rm_assign(m, w->assign, false);
}

static void rm_cond(const remap *m, sh_cond *c)
{
    if (!c)
        return;
    rm_span(m, &c->span);
    if (c->left)
        rm_word(m, c->left);
    if (c->right)
        rm_word(m, c->right);
    rm_cond(m, c->a);
    rm_cond(m, c->b);
}

static void rm_cmd(const remap *m, sh_cmd *c)
{
    rm_span(m, &c->span);
    for (sh_redir *r = c->redirs; r; r = r->next) {
        rm_span(m, &r->span);
        if (r->target)
            rm_word(m, r->target);
        if (r->op == R_HEREDOC || r->op == R_HEREDOC_TAB) {
            rm_span(m, &r->body);
            rm_span(m, &r->body_end);
            rm_parts(m, r->body_parts);
        }
    }
    for (sh_assign *a = c->assigns; a; a = a->next)
        rm_assign(m, a, true);
    for (sh_word *w = c->words; w; w = w->next)
        rm_word(m, w);
    if (c->body)
        rm_list(m, c->body);
    if (c->cond)
        rm_list(m, c->cond);
    for (sh_if_clause *cl = c->clauses; cl; cl = cl->next) {
        rm_span(m, &cl->span);
        rm_list(m, cl->cond);
        rm_list(m, cl->then_body);
    }
    if (c->else_body)
        rm_list(m, c->else_body);
    for (sh_word *w = c->for_words; w; w = w->next)
        rm_word(m, w);
    if (c->kind == SH_ARITH_FOR || c->kind == SH_ARITH) {
        rm_span(m, &c->arith_init);
        rm_span(m, &c->arith_cond);
        rm_span(m, &c->arith_step);
    }
    if (c->subject)
        rm_word(m, c->subject);
    for (sh_case_item *it = c->items; it; it = it->next) {
        rm_span(m, &it->span);
        for (sh_word *w = it->patterns; w; w = w->next)
            rm_word(m, w);
        if (it->body)
            rm_list(m, it->body);
    }
    rm_cond(m, c->cond_expr);
    if (c->func_body)
        rm_cmd(m, c->func_body);
}

static void rm_list(const remap *m, sh_list *l)
{
    rm_span(m, &l->span);
    for (sh_andor *a = l->items; a; a = a->next) {
        rm_span(m, &a->span);
        for (sh_pipeline *p = a->pipes; p; p = p->next) {
            rm_span(m, &p->span);
            for (sh_cmd *c = p->cmds; c; c = c->next)
                rm_cmd(m, c);
        }
    }
}

/* ---- backquotes and $(( )) that is not arithmetic -------------------------------------- */

sh_list *wd_backquote_body(parser *P, size_t start, size_t end, bool in_dquote, bool *unparsed)
{
    size_t n, o = 0;
    uint32_t *map, *omap;
    char *t = range_text(P, start, end, true, &n, &map);
    char *body = arena_alloc(P->a, n + 1);
    sh_list *l;
    bool ok;

    *unparsed = false;
    omap = arena_alloc(P->a, (n + 1) * sizeof(uint32_t));
    /* bash's de_backslash(): \` \\ \$ (and \" inside double quotes) */
    for (size_t i = 0; i < n; i++) {
        if (t[i] == '\\' && i + 1 < n &&
            (t[i + 1] == '`' || t[i + 1] == '\\' || t[i + 1] == '$' ||
             (in_dquote && t[i + 1] == '"')))
            i++;
        omap[o] = mpos(map, start, i);
        body[o++] = t[i];
    }
    body[o] = 0;
    if (o == 0)
        return NULL;
    px_enter(P);
    l = px_child_parse(P, body, o, 0, &ok);
    px_leave(P);
    if (!ok) {
        *unparsed = true;
        return NULL;
    }
    if (l) {
        remap m = { omap, o, (uint32_t)end };
        rm_list(&m, l);
    }
    return l;
}

/* bash's chk_arithsub(): parentheses balance outside quotes. */
static bool chk_arithsub(const char *s, size_t n)
{
    int count = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '(') {
            count++;
        } else if (c == ')') {
            if (--count < 0)
                return false;
        } else if (c == '\\') {
            i++;
        } else if (c == '\'') {
            const char *q = memchr(s + i + 1, '\'', n - i - 1);
            i = q ? (size_t)(q - s) : n;
        } else if (c == '"') {
            for (i++; i < n && s[i] != '"'; i++)
                if (s[i] == '\\')
                    i++;
        }
    }
    return count == 0;
}

sh_wpart *wd_arith_or_comsub(parser *P, int kind, size_t start, size_t content_start,
                             size_t close_pos)
{
    size_t n;
    char *t = range_text(P, content_start, close_pos, true, &n, NULL);
    sh_wpart *w;
    bool ok;

    if (kind == '$' && n >= 2 && t[0] == '(' && t[n - 1] == ')' && chk_arithsub(t + 1, n - 2)) {
        w = wb_new_part(P, WP_ARITH, start, close_pos + 1);
        w->text = arena_strndup(P->a, t + 1, n - 2);
        w->len = n - 2;
        return w;
    }
    /* bash expands it as a command substitution whose text starts with "(" */
    w = wb_new_part(P, kind == '$' ? WP_CMDSUB : kind == '<' ? WP_PROCSUB_IN : WP_PROCSUB_OUT,
                    start, close_pos + 1);
    px_enter(P);
    w->body = px_child_parse(P, P->src, close_pos, content_start, &ok);
    px_leave(P);
    w->body_unparsed = !ok;
    return w;
}
