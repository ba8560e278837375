/*
 * The lexer: bash 5.2's reader and tokenizer, rewritten around a source
 * buffer so that every token and word part keeps its byte span.
 *
 * Reader. bash reads a line at a time into shell_input_line and counts a
 * line each time it fetches one (also at EOF, every time it is asked);
 * backslash-newline is removed while reading unless quoting says otherwise;
 * NUL bytes are dropped; an unterminated last line gets a newline. The
 * reader below reproduces exactly that, because line numbers in error
 * messages and the "offending line" bash prints come from it. Here-document
 * bodies are read past the current line (next_fetch), as bash's
 * read_secondary_line does.
 *
 * Tokenizer. lx_read_token() is bash's read_token(): which words are
 * reserved, when `in`, `do`, `esac`, `{`, `}` and `time` are tokens, when a
 * word is an assignment, a NUMBER or a {var} redirection, all depend on the
 * last tokens read and on parser_state flags, kept in struct parser.
 */
#include "shell/parse_int.h"

#include "common/util.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- character classes (bash's syntax.h) -------------------------------- */

static inline bool is_blank(int c) { return c == ' ' || c == '\t'; }
static inline bool is_meta(int c) { return c >= 0 && c < 128 && strchr("()<>;&|", c) && c; }
static inline bool is_break(int c) { return is_meta(c) || is_blank(c) || c == '\n'; }
static inline bool is_quote(int c) { return c == '"' || c == '\'' || c == '`'; }
static inline bool is_digit(int c) { return c >= '0' && c <= '9'; }
static inline bool is_pattern_char(int c)
{
    return c == '@' || c == '*' || c == '+' || c == '?' || c == '!';
}

/* ---- reader --------------------------------------------------------------- */

void lx_init(parser *P, const char *src, size_t len, size_t start, bool at_eof)
{
    P->src = src;
    P->len = len;
    P->at_eof = at_eof;
    /* bash appends a newline to a last line that lacks one. */
    P->vlen = len + (at_eof && len > start && src[len - 1] != '\n' ? 1 : 0);
    P->pos = P->line_start = P->line_end = P->next_fetch = start;
    P->lastpos = start;
    P->lineno = 0;
    P->eof_pushback = false;
    P->in_eof_line = false;
}

static inline int charat(const parser *P, size_t i)
{
    return i < P->len ? (unsigned char)P->src[i] : '\n';
}

/* bash fetches the next line. At EOF it counts a line each time. */
static bool fetch_line(parser *P)
{
    size_t s = P->next_fetch;
    const char *nl;

    if (s >= P->vlen) {
        if (!P->at_eof)
            px_need_more(P);
        P->lineno++;
        P->line_start = P->line_end = P->pos = P->vlen;
        P->in_eof_line = true;
        return false;
    }
    nl = memchr(P->src + s, '\n', P->len - s);
    if (!nl && !P->at_eof)
        px_need_more(P);
    P->lineno++;
    P->line_start = P->pos = s;
    P->line_end = P->next_fetch = nl ? (size_t)(nl - P->src) + 1 : P->vlen;
    P->in_eof_line = false;
    return true;
}

int lx_getc(parser *P, bool remove_nl)
{
    if (P->eof_pushback) {
        P->eof_pushback = false;
        return EOF;
    }
    for (;;) {
        size_t q;
        int c;

        if (P->pos >= P->line_end && !fetch_line(P))
            return EOF;
        q = P->pos++;
        c = charat(P, q);
        if (c == 0 && q < P->len)
            continue;
        if (c == '\\' && remove_nl) {
            size_t r = q + 1;
            while (r < P->len && r < P->line_end && P->src[r] == 0)
                r++;
            if (r < P->line_end && charat(P, r) == '\n') {
                P->pos = r + 1;
                continue;
            }
        }
        P->lastpos = q;
        P->hist[P->nhist++ & 7] = q;
        return c;
    }
}

/* bash's shell_ungetc(): the next lx_getc() returns c again. */
void lx_ungetc_c(parser *P, int c)
{
    if (c == EOF) {
        P->eof_pushback = true;
        return;
    }
    if (P->nhist) {
        P->pos = P->hist[--P->nhist & 7];
        P->lastpos = P->nhist ? P->hist[(P->nhist - 1) & 7] : P->pos;
    } else {
        P->pos = P->lastpos;
    }
}

sh_span lx_span(const parser *P, size_t start, size_t end)
{
    sh_span s;
    if (end > P->len)
        end = P->len;
    if (start > end)
        start = end;
    s.start = (uint32_t)start;
    s.end = (uint32_t)end;
    return s;
}

/* ---- arena-backed growable buffers ---------------------------------------- */

static void tb_grow(parser *P, size_t extra)
{
    strbuf *sb = &P->tokbuf;
    if (sb->len + extra + 1 <= sb->alloc)
        return;
    size_t na = sb->alloc ? sb->alloc * 2 : 64;
    while (na < sb->len + extra + 1)
        na *= 2;
    char *nb = arena_alloc(P->a, na);
    memcpy(nb, sb->buf, sb->len + 1);
    sb->buf = nb;
    sb->alloc = na;
}

static inline void tb_addch(parser *P, int c)
{
    tb_grow(P, 1);
    P->tokbuf.buf[P->tokbuf.len++] = (char)c;
    P->tokbuf.buf[P->tokbuf.len] = 0;
}

/* Appends a source range as bash's token text holds it (NULs and
 * backslash-newlines dropped). */
static void tb_add_range(parser *P, size_t s, size_t e)
{
    if (e > P->len)
        e = P->len;
    tb_grow(P, e > s ? e - s : 0);
    for (size_t i = s; i < e; i++) {
        char c = P->src[i];
        if (c == 0)
            continue;
        if (c == '\\' && i + 1 < e && P->src[i + 1] == '\n') {
            i++;
            continue;
        }
        P->tokbuf.buf[P->tokbuf.len++] = c;
        if (c == '\\' && i + 1 < e)
            P->tokbuf.buf[P->tokbuf.len++] = P->src[++i];
    }
    P->tokbuf.buf[P->tokbuf.len] = 0;
}

/* A quoted or nested construct in the token text. bash keeps its full text,
 * but the tests made on the token (reserved words, assignments, NUMBER,
 * {var}) look only at literal text around it, so its first and last
 * characters stand in for it. */
static void tb_add_construct(parser *P, size_t s, size_t e)
{
    if (e > P->len)
        e = P->len;
    if (e - s <= 4) {
        tb_add_range(P, s, e);
        return;
    }
    tb_addch(P, P->src[s]);
    tb_addch(P, P->src[e - 1]);
}

void lx_tokbuf_reset(parser *P)
{
    if (!P->tokbuf.alloc) {
        P->tokbuf.buf = arena_alloc(P->a, 64);
        P->tokbuf.alloc = 64;
    }
    P->tokbuf.len = 0;
    P->tokbuf.buf[0] = 0;
}

/* ---- token names ---------------------------------------------------------- */

static const struct { const char *word; int tok; } reserved[] = {
    { "if", T_IF }, { "then", T_THEN }, { "else", T_ELSE }, { "elif", T_ELIF },
    { "fi", T_FI }, { "case", T_CASE }, { "esac", T_ESAC }, { "for", T_FOR },
    { "select", T_SELECT }, { "while", T_WHILE }, { "until", T_UNTIL },
    { "do", T_DO }, { "done", T_DONE }, { "in", T_IN }, { "function", T_FUNCTION },
    { "time", T_TIME }, { "{", '{' }, { "}", '}' }, { "!", T_BANG },
    { "[[", T_COND_START }, { "]]", T_COND_END }, { "coproc", T_COPROC },
};

static const struct { const char *text; int tok; } other_tokens[] = {
    { "--", T_TIMEIGN }, { "-p", T_TIMEOPT }, { "&&", T_AND_AND }, { "||", T_OR_OR },
    { ">>", T_GREATER_GREATER }, { "<<", T_LESS_LESS }, { "<&", T_LESS_AND },
    { ">&", T_GREATER_AND }, { ";;", T_SEMI_SEMI }, { ";&", T_SEMI_AND },
    { ";;&", T_SEMI_SEMI_AND }, { "<<-", T_LESS_LESS_MINUS }, { "<<<", T_LESS_LESS_LESS },
    { "&>", T_AND_GREATER }, { "&>>", T_AND_GREATER_GREATER }, { "<>", T_LESS_GREATER },
    { ">|", T_GREATER_BAR }, { "|&", T_BAR_AND }, { "EOF", T_EOF },
    { ">", '>' }, { "<", '<' }, { "-", '-' }, { "{", '{' }, { "}", '}' }, { ";", ';' },
    { "(", '(' }, { ")", ')' }, { "|", '|' }, { "&", '&' }, { "newline", '\n' },
};

static const char *fixed_token_text(int tok)
{
    for (size_t i = 0; i < ARRAY_SIZE(reserved); i++)
        if (reserved[i].tok == tok)
            return reserved[i].word;
    for (size_t i = 0; i < ARRAY_SIZE(other_tokens); i++)
        if (other_tokens[i].tok == tok)
            return other_tokens[i].text;
    return NULL;
}

void lx_token_text(parser *P, const token *t, strbuf *out)
{
    const char *s = fixed_token_text(t->type);
    if (s) {
        strbuf_addstr(out, s);
        return;
    }
    switch (t->type) {
    case T_WORD:
    case T_ASSIGNMENT_WORD:
    case T_REDIR_WORD: {
        size_t n;
        char *txt = wb_range_text(P, t->span.start, t->span.end, &n);
        strbuf_add(out, txt, n);
        break;
    }
    case T_NUMBER:
        strbuf_addf(out, "%ld", t->number);
        break;
    case T_ARITH_CMD:
    case T_ARITH_FOR_EXPRS: {
        size_t n;
        char *txt = wb_range_text(P, t->text.start, t->text.end, &n);
        strbuf_add(out, txt, n);
        break;
    }
    default:
        break;
    }
}

/* ---- bash's token-state predicates ---------------------------------------- */

bool lx_reserved_word_acceptable(const parser *P, int tok)
{
    switch (tok) {
    case '\n': case ';': case '(': case ')': case '|': case '&': case '{': case '}':
    case T_AND_AND: case T_ARITH_CMD: case T_BANG: case T_BAR_AND: case T_COND_END:
    case T_DO: case T_DONE: case T_ELIF: case T_ELSE: case T_ESAC: case T_FI: case T_IF:
    case T_OR_OR: case T_SEMI_SEMI: case T_SEMI_AND: case T_SEMI_SEMI_AND: case T_THEN:
    case T_TIME: case T_TIMEOPT: case T_TIMEIGN: case T_COPROC: case T_UNTIL: case T_WHILE:
    case 0: case T_DOLPAREN:
        return true;
    default:
        if (P->last_tok == T_WORD && P->tok_before == T_COPROC)
            return true;
        if (P->last_tok == T_WORD && P->tok_before == T_FUNCTION)
            return true;
        return false;
    }
}

static bool parsing_redirection(int tok)
{
    switch (tok) {
    case '<': case '>': case T_GREATER_GREATER: case T_GREATER_BAR: case T_LESS_GREATER:
    case T_LESS_LESS_MINUS: case T_LESS_LESS: case T_LESS_LESS_LESS: case T_LESS_AND:
    case T_GREATER_AND: case T_AND_GREATER:
        return true;
    default:
        return false;
    }
}

static bool command_token_position(const parser *P, int tok)
{
    return tok == T_ASSIGNMENT_WORD ||
           ((P->pstate & PST_REDIRLIST) && !parsing_redirection(tok)) ||
           (tok != T_SEMI_SEMI && tok != T_SEMI_AND && tok != T_SEMI_SEMI_AND &&
            lx_reserved_word_acceptable(P, tok));
}

static bool assignment_acceptable(const parser *P, int tok)
{
    return command_token_position(P, tok) && !(P->pstate & PST_CASEPAT);
}

static bool time_command_acceptable(const parser *P)
{
    switch (P->last_tok) {
    case 0: case ';': case '\n':
        if (P->tok_before == '|')
            return false;
        /* fall through */
    case T_AND_AND: case T_OR_OR: case '&': case T_WHILE: case T_DO: case T_UNTIL:
    case T_IF: case T_THEN: case T_ELIF: case T_ELSE: case '{': case '(': case ')':
    case T_BANG: case T_TIME: case T_TIMEOPT: case T_TIMEIGN: case T_DOLPAREN:
        return true;
    default:
        return false;
    }
}

static bool tok_is(const parser *P, const char *s)
{
    return strcmp(P->tokbuf.buf, s) == 0 && strlen(s) == P->tokbuf.len;
}

/* bash's special_case_tokens(): -1 when the word is not one. */
static int special_case_tokens(parser *P)
{
    int last = P->last_tok, before = P->tok_before;

    if (last == T_WORD && (before == T_FOR || before == T_CASE || before == T_SELECT) &&
        tok_is(P, "in")) {
        if (before == T_CASE) {
            P->pstate |= PST_CASEPAT;
            P->esacs_needed++;
        }
        if (P->expecting_in)
            P->expecting_in--;
        return T_IN;
    }
    if (P->expecting_in && (last == T_WORD || last == '\n') && tok_is(P, "in")) {
        if (P->pstate & PST_CASESTMT) {
            P->pstate |= PST_CASEPAT;
            P->esacs_needed++;
        }
        P->expecting_in--;
        return T_IN;
    } else if (P->expecting_in && (last == '\n' || last == ';') && tok_is(P, "do")) {
        P->expecting_in--;
        return T_DO;
    }
    if (last == T_WORD && (before == T_FOR || before == T_SELECT) && tok_is(P, "do")) {
        if (P->expecting_in)
            P->expecting_in--;
        return T_DO;
    }
    if (P->esacs_needed && last == T_IN && tok_is(P, "esac")) {
        P->esacs_needed--;
        P->pstate &= ~PST_CASEPAT;
        return T_ESAC;
    }
    if (P->pstate & PST_ALLOWOPNBRC) {
        P->pstate &= ~PST_ALLOWOPNBRC;
        if (tok_is(P, "{")) {
            P->open_brace_count++;
            return '{';
        }
    }
    if (last == T_ARITH_FOR_EXPRS && tok_is(P, "do"))
        return T_DO;
    if (last == T_ARITH_FOR_EXPRS && tok_is(P, "{")) {
        P->open_brace_count++;
        return '{';
    }
    if (P->open_brace_count && lx_reserved_word_acceptable(P, last) && tok_is(P, "}")) {
        P->open_brace_count--;
        return '}';
    }
    if (last == T_TIME && tok_is(P, "-p"))
        return T_TIMEOPT;
    if (last == T_TIME && tok_is(P, "--"))
        return T_TIMEIGN;
    if (last == T_TIMEOPT && tok_is(P, "--"))
        return T_TIMEIGN;
    if ((P->pstate & PST_CONDEXPR) && tok_is(P, "]]"))
        return T_COND_END;
    return -1;
}

/* bash's CHECK_FOR_RESERVED_WORD: -1 when the word is not reserved here. */
static int check_reserved_word(parser *P)
{
    if (!lx_reserved_word_acceptable(P, P->last_tok))
        return -1;
    for (size_t i = 0; i < ARRAY_SIZE(reserved); i++) {
        int t = reserved[i].tok;
        if (!tok_is(P, reserved[i].word))
            continue;
        if ((P->pstate & PST_CASEPAT) && t != T_ESAC)
            return -1;
        if (t == T_TIME && !time_command_acceptable(P))
            return -1;
        if ((P->pstate & PST_CASEPAT) && (P->last_tok == '|' || P->last_tok == '(') &&
            t == T_ESAC)
            return -1;
        if (t == T_ESAC) {
            P->pstate &= ~(PST_CASEPAT | PST_CASESTMT);
            P->esacs_needed--;
        } else if (t == T_CASE) {
            P->pstate |= PST_CASESTMT;
        } else if (t == T_COND_END) {
            P->pstate &= ~(PST_CONDCMD | PST_CONDEXPR);
        } else if (t == T_COND_START) {
            P->pstate |= PST_CONDCMD;
        } else if (t == '{') {
            P->open_brace_count++;
        } else if (t == '}' && P->open_brace_count) {
            P->open_brace_count--;
        }
        return t;
    }
    return -1;
}

/* ---- constructs parsed once -------------------------------------------------- */

/*
 * bash reads some text twice: $(( that turns out not to be arithmetic is
 * scanned as a matched pair and then parsed as commands, and (( that does
 * not end in )) is scanned and then read again as a subshell. Each time the
 * substitutions and quotes inside are parsed again, so nesting them would
 * cost 2^depth. Instead each construct is remembered by its position the
 * first time, and a second read of the same bytes takes the result and
 * skips to its end, keeping the parse linear.
 */
typedef struct memo_entry {
    uint32_t start;            /* position after the construct's opening */
    uint32_t kind;             /* which construct, with its quoting context; 0 = empty */
    sh_wpart *part;
    uint32_t pos, lastpos, line_start, line_end, next_fetch;
    unsigned lines;            /* lines counted while reading it */
} memo_entry;

struct lx_memo {
    memo_entry *tab;
    size_t cap, n;
};

lx_memo *lx_memo_new(parser *P)
{
    return arena_alloc(P->a, sizeof(lx_memo));
}

static size_t memo_slot(const lx_memo *m, size_t start, unsigned kind)
{
    size_t h = (start * 2654435761u + kind * 40503u) & (m->cap - 1);
    while (m->tab[h].kind && (m->tab[h].start != start || m->tab[h].kind != kind))
        h = (h + 1) & (m->cap - 1);
    return h;
}

/* The construct of this kind starting at start, if already parsed: the
 * reader continues after it. */
static sh_wpart *memo_get(parser *P, unsigned kind, size_t start)
{
    lx_memo *m = P->memo;
    memo_entry *e;
    sh_wpart *copy;

    if (!m || !m->n)
        return NULL;
    e = &m->tab[memo_slot(m, start, kind)];
    if (!e->kind || e->pos > P->vlen)
        return NULL;
    if (e->pos > P->line_end) {
        /* lines this reader has not fetched yet: take them as counted */
        P->line_start = e->line_start;
        P->line_end = e->line_end < P->vlen ? e->line_end : P->vlen;
        P->next_fetch = e->next_fetch < P->vlen ? e->next_fetch : P->vlen;
        P->in_eof_line = false;
        P->lineno += e->lines;
    }
    P->pos = e->pos;
    P->lastpos = e->lastpos;
    P->nhist = 0;
    P->eof_pushback = false;
    copy = arena_alloc(P->a, sizeof(*copy));
    *copy = *e->part;
    copy->next = NULL;
    return copy;
}

static void memo_put(parser *P, unsigned kind, size_t start, unsigned line0, sh_wpart *part)
{
    lx_memo *m = P->memo;
    memo_entry *e;

    if (!m)
        return;
    if (2 * (m->n + 1) > m->cap) {
        size_t old = m->cap;
        memo_entry *t = m->tab;
        m->cap = old ? 2 * old : 64;
        m->tab = arena_alloc(P->a, m->cap * sizeof(*m->tab));
        m->n = 0;
        for (size_t i = 0; i < old; i++)
            if (t[i].kind) {
                m->tab[memo_slot(m, t[i].start, t[i].kind)] = t[i];
                m->n++;
            }
    }
    e = &m->tab[memo_slot(m, start, kind)];
    if (!e->kind)
        m->n++;
    *e = (memo_entry){ (uint32_t)start, kind, part, (uint32_t)P->pos, (uint32_t)P->lastpos,
                       (uint32_t)P->line_start, (uint32_t)P->line_end,
                       (uint32_t)P->next_fetch, P->lineno - line0 };
}

#define MEMO_KIND(what, rflags) ((unsigned)(what) << 8 | ((rflags) & P_DQUOTE ? 1u : 0u) | 2u)

/* ---- matched pairs: bash's parse_matched_pair ----------------------------- */

enum { LEX_WASDOL = 1, LEX_PASSNEXT = 2, LEX_GTLT = 4 };

static sh_wpart *lex_quoted(parser *P, int q, size_t start, bool dollar, unsigned rflags);
static sh_wpart *lex_dollar_paren(parser *P, size_t start, int kind);
static sh_wpart *lex_dollar_brace(parser *P, size_t start, unsigned rflags);
static sh_wpart *lex_dollar_bracket(parser *P, size_t start, unsigned rflags);

static const char dq_escapable[] = "\\`$\"\n";

/* A backslash pair inside a matched construct. */
static void emit_escape(parser *P, wbuild *wb, bool dq, size_t bs_pos, int ch, size_t cpos)
{
    if (dq && !strchr(dq_escapable, ch)) {
        wb_lit_range(P, wb, bs_pos, cpos + 1);
        return;
    }
    sh_wpart *e = wb_new_part(P, WP_ESCAPED, bs_pos, cpos + 1);
    char *t = arena_alloc(P->a, 2);
    t[0] = (char)ch;
    e->text = t;
    e->len = 1;
    wb_part(P, wb, e);
}

/*
 * Reads to the `close` that matches an `open` already read, as bash's
 * parse_matched_pair(qc, open, close, flags) does, appending what it reads
 * to wb as parts. Returns the position of `close`.
 */
static size_t scan_matched(parser *P, int qc, int open, int close, unsigned flags, wbuild *wb)
{
    int count = 1, ch;
    unsigned tflags = 0;
    unsigned rflags = qc == '"' ? P_DQUOTE : (flags & P_DQUOTE);
    unsigned start_line = P->lineno;
    size_t bs_pos = 0, prev_pos = 0;
    bool dq = open == '"' || (flags & P_DQUOTE);

    px_enter(P);
    for (;;) {
        ch = lx_getc(P, qc != '\'' && !(tflags & LEX_PASSNEXT));
        size_t cpos = P->lastpos;
        if (ch == EOF) {
            P->eof_reached = true;
            px_error_at(P, start_line, "unexpected EOF while looking for matching `%c'", close);
        }
        if (tflags & LEX_PASSNEXT) {
            tflags &= ~LEX_PASSNEXT;
            if (qc != '\'' && ch == '\n')
                continue;                   /* \<newline> disappears */
            if (open == '\'')
                continue;                   /* $'...': decoded later from the source */
            emit_escape(P, wb, dq, bs_pos, ch, cpos);
            tflags &= ~(LEX_WASDOL | LEX_GTLT);
            continue;
        }
        if (ch == close)
            count--;
        else if (open != close && (tflags & LEX_WASDOL) && open == '{' && ch == open)
            count++;
        else if (!(flags & P_FIRSTCLOSE) && ch == open)
            count++;
        if (count == 0)
            break;

        if (open == '\'') {
            if ((flags & P_ALLOWESC) && ch == '\\')
                tflags |= LEX_PASSNEXT;
            continue;
        }

        bool special = false;
        if (ch == '\\') {
            tflags |= LEX_PASSNEXT;
            bs_pos = cpos;
            special = true;
        } else if (open != close) {
            if (is_quote(ch)) {
                bool dol = (tflags & LEX_WASDOL) && (ch == '\'' || ch == '"');
                size_t qstart = cpos;
                if (dol) {
                    wb_unlit_at(wb, prev_pos);
                    qstart = prev_pos;
                }
                wb_part(P, wb, lex_quoted(P, ch, qstart, dol,
                                          (dol && ch == '\'') ? (P_ALLOWESC | rflags) : rflags));
                special = true;
            } else if ((((flags & (P_ARRAYSUB | P_DOLBRACE)) && (tflags & LEX_WASDOL) &&
                         (ch == '(' || ch == '{' || ch == '[')) ||
                        ((flags & P_ARITH) && (tflags & LEX_WASDOL) && ch == '('))) {
                goto dollar_word;
            } else if ((flags & (P_ARRAYSUB | P_DOLBRACE)) && (tflags & LEX_GTLT) && ch == '(') {
                /* <( ) inside ${...} or a subscript */
                int kind = charat(P, prev_pos);
                wb_unlit_at(wb, prev_pos);
                if (open == ch)
                    count--;
                wb_part(P, wb, lex_dollar_paren(P, prev_pos, kind));
                special = true;
            }
        } else if (open == '"' && ch == '`') {
            wb_part(P, wb, lex_quoted(P, '`', cpos, false, rflags));
            special = true;
        } else if (open != '`' && (tflags & LEX_WASDOL) && (ch == '(' || ch == '{' || ch == '[')) {
        dollar_word:
            if (open == ch)
                count--;
            wb_unlit_at(wb, prev_pos);
            if (ch == '(')
                wb_part(P, wb, lex_dollar_paren(P, prev_pos, '$'));
            else if (ch == '{')
                wb_part(P, wb, lex_dollar_brace(P, prev_pos, rflags));
            else
                wb_part(P, wb, lex_dollar_bracket(P, prev_pos, rflags));
            special = true;
        }
        if (!special)
            wb_lit(P, wb, cpos);

        if ((ch == '<' || ch == '>') && !(tflags & LEX_GTLT))
            tflags |= LEX_GTLT;
        else
            tflags &= ~LEX_GTLT;
        if (ch == '$' && !(tflags & LEX_WASDOL) && !special)
            tflags |= LEX_WASDOL;
        else
            tflags &= ~LEX_WASDOL;
        prev_pos = cpos;
    }
    px_leave(P);
    return P->lastpos;
}

/* '...', "...", `...`, $'...', $"..." whose opening quote was just read;
 * start is where the part begins (the $ for $'...'). */
static sh_wpart *lex_quoted(parser *P, int q, size_t start, bool dollar, unsigned rflags)
{
    wbuild inner;
    size_t open_pos = P->lastpos, close_pos;
    unsigned kind = MEMO_KIND(q + (dollar ? 256 : 0), rflags), line0 = P->lineno;
    sh_wpart *w = memo_get(P, kind, open_pos);

    if (w) {
        w->span = lx_span(P, start, P->lastpos + 1);
        return w;
    }
    wb_init(&inner);
    close_pos = scan_matched(P, q, q, q, (dollar && q == '\'') ? (P_ALLOWESC | rflags) :
                             (q == '`' ? P_COMMAND | rflags : rflags), &inner);
    if (q == '\'') {
        w = wb_new_part(P, dollar ? WP_ANSI : WP_SQUOTE, start, close_pos + 1);
        if (dollar) {
            size_t n;
            char *raw = wb_raw_text(P, open_pos + 1, close_pos, &n);
            w->text = wd_ansi_decode(P, raw, n, &w->len);
        } else {
            w->text = wb_raw_text(P, open_pos + 1, close_pos, &w->len);
        }
    } else if (q == '"') {
        unsigned f = 0;
        w = wb_new_part(P, dollar ? WP_LOCALE : WP_DQUOTE, start, close_pos + 1);
        w->parts = wb_finish(P, &inner, WCTX_DQUOTE, &f);
    } else {
        w = wb_new_part(P, WP_BACKQUOTE, start, close_pos + 1);
        w->text = wb_raw_text(P, open_pos + 1, close_pos, &w->len);
        w->body = wd_backquote_body(P, open_pos + 1, close_pos, (rflags & P_DQUOTE) != 0,
                                    &w->body_unparsed);
    }
    memo_put(P, kind, open_pos, line0, w);
    return w;
}

/* $( ), <( ), >( ) whose "(" was just read; start is the $, < or >. bash's
 * parse_comsub: $(( is arithmetic, scanned as a matched pair. */
static sh_wpart *lex_dollar_paren(parser *P, size_t start, int kind)
{
    size_t open_pos = P->lastpos;
    unsigned mk = MEMO_KIND('(' + kind * 256, 0), line0 = P->lineno;
    sh_wpart *w = memo_get(P, mk, open_pos);
    int peek;

    if (w) {
        w->span = lx_span(P, start, P->lastpos + 1);
        return w;
    }
    peek = lx_getc(P, true);
    lx_ungetc_c(P, peek);
    if (peek == '(') {
        wbuild inner;
        size_t close_pos;
        wb_init(&inner);
        close_pos = scan_matched(P, 0, '(', ')', P_ARITH, &inner);
        w = wd_arith_or_comsub(P, kind, start, open_pos + 1, close_pos);
    } else {
        w = wb_new_part(P, kind == '$' ? WP_CMDSUB : kind == '<' ? WP_PROCSUB_IN
                                                                : WP_PROCSUB_OUT, start, 0);
        w->body = px_parse_comsub(P);
        w->span = lx_span(P, start, P->lastpos + 1);
    }
    memo_put(P, mk, open_pos, line0, w);
    return w;
}

static sh_wpart *lex_dollar_brace(parser *P, size_t start, unsigned rflags)
{
    wbuild inner;
    size_t open_pos = P->lastpos, close_pos;
    unsigned kind = MEMO_KIND('{', rflags), line0 = P->lineno;
    sh_wpart *w = memo_get(P, kind, open_pos);

    if (w) {
        w->span = lx_span(P, start, P->lastpos + 1);
        return w;
    }
    wb_init(&inner);
    close_pos = scan_matched(P, 0, '{', '}', P_FIRSTCLOSE | P_DOLBRACE | rflags, &inner);
    w = wb_new_part(P, WP_PARAM, start, close_pos + 1);
    w->param = wd_param(P, &inner, open_pos + 1, close_pos);
    memo_put(P, kind, open_pos, line0, w);
    return w;
}

static sh_wpart *lex_dollar_bracket(parser *P, size_t start, unsigned rflags)
{
    wbuild inner;
    size_t open_pos = P->lastpos, close_pos;
    sh_wpart *w;

    wb_init(&inner);
    close_pos = scan_matched(P, 0, '[', ']', rflags | P_ARITH, &inner);
    w = wb_new_part(P, WP_ARITH, start, close_pos + 1);
    w->text = wb_range_text(P, open_pos + 1, close_pos, &w->len);
    return w;
}

/* A matched pair read only for its extent (extglob, regex groups,
 * subscripts): added to the word as literal source text. Returns whether
 * it held expansions. */
static unsigned scan_matched_literal(parser *P, int open, int close, unsigned flags)
{
    wbuild inner;
    unsigned f = 0;

    wb_init(&inner);
    scan_matched(P, 0, open, close, flags, &inner);
    (void)wb_finish(P, &inner, WCTX_LITERAL, &f);
    return f;
}

/* ---- here-documents ------------------------------------------------------- */

/* The delimiter of a here-document: the word after quote removal. */
static void heredoc_delim(parser *P, sh_redir *r)
{
    strbuf sb = STRBUF_INIT;
    wd_quote_removed(P, r->target, &sb);
    r->delim = arena_strndup(P->a, sb.buf, sb.len);
    r->delim_len = sb.len;
    strbuf_release(&sb);
}

void lx_push_heredoc(parser *P, sh_redir *r)
{
    if (P->nheredoc >= SH_HEREDOC_MAX) {
        P->p->exit_status = 2;
        px_error_at(P, P->lineno, "maximum here-document count exceeded");
    }
    heredoc_delim(P, r);
    P->heredocs[P->nheredoc++] = r;
}

/* The logical characters of a here-document line, as bash's read_a_line()
 * makes them: NULs dropped; with an unquoted delimiter, backslash-newline
 * joins lines and a backslash protects the next character. */
typedef struct hl_iter {
    size_t i, e;
    bool unquoted, pass;
} hl_iter;

static int hl_next(parser *P, hl_iter *it, size_t *pos)
{
    while (it->i < it->e) {
        size_t q = it->i++;
        int c = charat(P, q);
        if (c == 0 && q < P->len)
            continue;
        if (it->pass) {
            it->pass = false;
        } else if (c == '\\' && it->unquoted) {
            if (q + 1 < it->e && charat(P, q + 1) == '\n' && q + 2 < it->e) {
                it->i = q + 2;
                continue;
            }
            it->pass = true;
        }
        *pos = q;
        return c;
    }
    return EOF;
}

/* Does the logical line [s, e) start with d? *after: where the rest begins. */
static bool line_starts_with(parser *P, size_t s, size_t e, const char *d, size_t dl,
                             bool unquoted, size_t *after)
{
    hl_iter it = { s, e, unquoted, false };
    size_t pos = s;
    for (size_t k = 0; k < dl; k++)
        if (hl_next(P, &it, &pos) != (unsigned char)d[k])
            return false;
    *after = it.i;
    return true;
}

/* Is the logical line [s, e) exactly d and its newline? */
static bool line_equals(parser *P, size_t s, size_t e, const char *d, size_t dl, bool unquoted)
{
    size_t after, pos;
    hl_iter it = { 0, e, unquoted, false };
    if (!line_starts_with(P, s, e, d, dl, unquoted, &after))
        return false;
    it.i = after;
    return hl_next(P, &it, &pos) == '\n' && hl_next(P, &it, &pos) == EOF;
}

/* One here-document body, read from next_fetch as bash's make_here_document
 * reads lines with read_secondary_line(). */
static void make_heredoc(parser *P, sh_redir *r, unsigned gather_line)
{
    bool strip = r->op == R_HEREDOC_TAB;
    bool unquoted = !r->heredoc_quoted;
    const char *d = r->delim;
    size_t dl = r->delim_len;
    size_t body_start = P->next_fetch, s = body_start;

    for (;;) {
        size_t e, content, after, pos;
        bool matched = false;
        int c;

        if (s >= P->vlen) {
            if (!P->at_eof)
                px_need_more(P);
            r->body = r->body_end = lx_span(P, body_start, P->len);
            px_warning(P, P->lineno, "warning: here-document at line %u delimited by "
                       "end-of-file (wanted `%s')", gather_line, d);
            P->next_fetch = P->vlen;
            break;
        }
        hl_iter it = { s, P->vlen, unquoted, false };
        while ((c = hl_next(P, &it, &pos)) != EOF && c != '\n')
            ;
        if (c == EOF && !P->at_eof)
            px_need_more(P);
        e = it.i;
        for (size_t q = s; q < e; q++)
            if (charat(P, q) == '\n')
                P->lineno++;
        content = s;
        if (strip) {
            if (line_equals(P, s, e, d, dl, unquoted))
                matched = true;
            else
                while (content < e && charat(P, content) == '\t')
                    content++;
        }
        if (matched || line_equals(P, content, e, d, dl, unquoted)) {
            r->body = lx_span(P, body_start, s);
            r->body_end = lx_span(P, body_start, e);
            P->next_fetch = e;
            break;
        }
        /* Inside $( ), a line that starts with the delimiter and holds a `)'
         * ends the body, and the rest of it is read again (bash's
         * "backwards compatibility" rule, with a warning). */
        if ((P->pstate & PST_EOFTOKEN) && P->eof_token &&
            line_starts_with(P, content, e, d, dl, unquoted, &after) && after < P->len &&
            memchr(P->src + after, P->eof_token, (e < P->len ? e : P->len) - after)) {
            r->body = lx_span(P, body_start, s);
            r->body_end = lx_span(P, body_start, after);
            px_warning(P, P->lineno, "warning: here-document at line %u delimited by "
                       "end-of-file (wanted `%s')", gather_line, d);
            P->line_start = s;
            P->pos = after;
            P->line_end = P->next_fetch = e;
            P->in_eof_line = false;
            break;
        }
        s = e;
    }
    if (unquoted)
        r->body_parts = lx_heredoc_parts(P, r->body);
}

void lx_gather_heredocs(parser *P)
{
    unsigned line = P->lineno;
    int n = P->nheredoc;
    P->nheredoc = 0;
    for (int k = 0; k < n; k++)
        make_heredoc(P, P->heredocs[k], line);
}

/* ---- words: bash's read_token_word ----------------------------------------- */

static bool token_is_ident(parser *P)
{
    return sh_legal_identifier(P->tokbuf.buf, P->tokbuf.len);
}

static bool token_is_assignment(parser *P)
{
    /* bash appends '=' and asks assignment() whether it ends there. */
    size_t n = P->tokbuf.len;
    tb_addch(P, '=');
    long r = sh_assignment_index(P->tokbuf.buf, n + 1, (P->pstate & PST_COMPASSIGN) != 0);
    P->tokbuf.len = n;
    P->tokbuf.buf[n] = 0;
    return r > 0 && (size_t)r == n;
}

static bool is_assignment_builtin(const char *s, size_t n)
{
    static const char *const names[] = {
        "alias", "declare", "export", "local", "readonly", "typeset", "eval", "let",
    };
    for (size_t i = 0; i < ARRAY_SIZE(names); i++)
        if (strlen(names[i]) == n && memcmp(names[i], s, n) == 0)
            return true;
    return false;
}

/* a=( ... ): bash's parse_compound_assignment. Reads words up to ')'. */
static sh_word *parse_compound_assignment(parser *P, unsigned *flags)
{
    int save_last = P->last_tok, save_before = P->tok_before, save_two = P->two_ago;
    unsigned save_pstate = P->pstate;
    int save_esacs = P->esacs_needed, save_in = P->expecting_in;
    unsigned start_line = P->lineno;
    strbuf save_tb = P->tokbuf;
    sh_word *head = NULL, **tail = &head;

    P->tokbuf = (strbuf)STRBUF_INIT;
    P->tokbuf.alloc = 0;
    lx_tokbuf_reset(P);
    P->last_tok = T_WORD;
    P->pstate &= ~(PST_NOEXPAND | PST_CONDCMD | PST_CONDEXPR | PST_REGEXP | PST_EXTPAT);
    P->pstate |= PST_COMPASSIGN;
    P->esacs_needed = P->expecting_in = 0;
    px_enter(P);
    P->in_compound++;
    for (;;) {
        token t;
        int tok = lx_read_token(P, &t);
        if (tok == ')')
            break;
        if (tok == '\n')
            continue;
        if (tok != T_WORD && tok != T_ASSIGNMENT_WORD) {
            if (tok == T_EOF)
                px_compound_error(P, start_line, NULL);
            px_compound_error(P, 0, &t);
        }
        *flags |= t.word->flags;
        *tail = t.word;
        tail = &t.word->next;
    }
    P->in_compound--;
    px_leave(P);
    P->tokbuf = save_tb;
    P->last_tok = save_last;
    P->tok_before = save_before;
    P->two_ago = save_two;
    P->pstate = save_pstate;
    P->esacs_needed = save_esacs;
    P->expecting_in = save_in;
    return head;
}

static int read_token_word(parser *P, int ch, token *t)
{
    wbuild wb;
    size_t start = P->lastpos;
    bool all_digit = is_digit(ch), dollar_present = false, quoted = false;
    bool compound = false;
    sh_word *elements = NULL;
    unsigned elem_flags = 0;
    long eq_idx = -1;            /* token index of the first top-level '=' */
    size_t eq_pos = 0;           /* and its source position */
    int result;

    wb_init(&wb);
    lx_tokbuf_reset(P);
    for (;;) {
        size_t cpos;
        if (ch == EOF)
            goto got_token;
        cpos = P->lastpos;

        if (ch == '\\') {
            int peek = lx_getc(P, false);
            if (peek == '\n' && !(P->pstate & PST_NOEXPAND)) {
                ch = '\n';
                goto next_character;        /* bash: a removed \<newline> */
            }
            if (peek == EOF) {
                lx_ungetc_c(P, peek);
                wb_lit(P, &wb, cpos);
                tb_addch(P, '\\');
                quoted = true;
                all_digit = false;
                ch = lx_getc(P, true);
                continue;
            }
            emit_escape(P, &wb, false, cpos, peek, P->lastpos);
            tb_addch(P, '\\');
            tb_addch(P, peek);
            quoted = true;
            all_digit = false;
            goto next_character;
        }

        if (is_quote(ch)) {
            wb_part(P, &wb, lex_quoted(P, ch, cpos, false, 0));
            tb_add_construct(P, cpos, P->lastpos + 1);
            all_digit = false;
            if (ch != '`')
                quoted = true;
            if (ch == '"' && memchr(P->src + cpos, '$', P->lastpos - cpos))
                dollar_present = true;
            goto next_character;
        }

        if ((P->pstate & PST_REGEXP) && (ch == '(' || ch == '|')) {
            if (ch == '|')
                goto got_character;
            wb.flags |= scan_matched_literal(P, '(', ')', 0);
            wb_lit_range(P, &wb, cpos, P->lastpos + 1);
            tb_add_construct(P, cpos, P->lastpos + 1);
            dollar_present = all_digit = false;
            goto next_character;
        }

        if (P->extglob && is_pattern_char(ch)) {
            int peek = lx_getc(P, true);
            if (peek == '(') {
                unsigned f = scan_matched_literal(P, '(', ')', 0);
                sh_wpart *x = wb_new_part(P, WP_EXTGLOB, cpos, P->lastpos + 1);
                x->text = wb_range_text(P, cpos, P->lastpos + 1, &x->len);
                wb.flags |= f;
                wb_part(P, &wb, x);
                tb_add_construct(P, cpos, P->lastpos + 1);
                dollar_present = all_digit = false;
                goto next_character;
            }
            lx_ungetc_c(P, peek);
        }

        if (ch == '$' || ch == '<' || ch == '>') {
            int peek = lx_getc(P, true);
            if (peek == '(' || ((peek == '{' || peek == '[') && ch == '$')) {
                sh_wpart *x;
                if (peek == '{')
                    x = lex_dollar_brace(P, cpos, 0);
                else if (peek == '(')
                    x = lex_dollar_paren(P, cpos, ch);
                else
                    x = lex_dollar_bracket(P, cpos, 0);
                wb_part(P, &wb, x);
                tb_add_construct(P, cpos, P->lastpos + 1);
                dollar_present = true;
                all_digit = false;
                goto next_character;
            } else if (ch == '$' && (peek == '\'' || peek == '"')) {
                wb_part(P, &wb, lex_quoted(P, peek, cpos, true, 0));
                tb_add_construct(P, cpos, P->lastpos + 1);
                quoted = true;
                all_digit = false;
                goto next_character;
            } else if (ch == '$' && peek == '$') {
                wb_lit(P, &wb, cpos);
                wb_lit(P, &wb, P->lastpos);
                tb_addch(P, '$');
                tb_addch(P, '$');
                dollar_present = true;
                all_digit = false;
                goto next_character;
            }
            lx_ungetc_c(P, peek);
        } else if (ch == '[' &&
                   ((P->tokbuf.len > 0 && assignment_acceptable(P, P->last_tok) &&
                     token_is_ident(P)) ||
                    (P->tokbuf.len == 0 && (P->pstate & PST_COMPASSIGN)))) {
            wb.flags |= scan_matched_literal(P, '[', ']', P_ARRAYSUB);
            wb_lit_range(P, &wb, cpos, P->lastpos + 1);
            tb_add_range(P, cpos, P->lastpos + 1);
            all_digit = false;
            goto next_character;
        } else if (ch == '=' && P->tokbuf.len > 0 &&
                   (assignment_acceptable(P, P->last_tok) || (P->pstate & PST_ASSIGNOK)) &&
                   token_is_assignment(P)) {
            int peek = lx_getc(P, true);
            if (peek == '(') {
                if (eq_idx < 0) {
                    eq_idx = (long)P->tokbuf.len;
                    eq_pos = cpos;
                }
                wb_lit(P, &wb, cpos);
                tb_addch(P, '=');
                elements = parse_compound_assignment(P, &elem_flags);
                tb_addch(P, '(');
                tb_addch(P, ')');
                all_digit = false;
                compound = true;
                goto next_character;
            }
            lx_ungetc_c(P, peek);
        }

        if (is_break(ch)) {
            lx_ungetc_c(P, ch);
            goto got_token;
        }

    got_character:
        if (ch == '=' && eq_idx < 0) {
            eq_idx = (long)P->tokbuf.len;
            eq_pos = cpos;
        }
        wb_lit(P, &wb, cpos);
        tb_addch(P, ch);
        all_digit = all_digit && is_digit(ch);
        if (ch == '$')
            dollar_present = true;

    next_character:
        ch = lx_getc(P, true);
    }

got_token:
    t->span = lx_span(P, start, P->lastpos + 1);
    t->word = NULL;

    if (all_digit && P->tokbuf.len > 0 && P->tokbuf.len < 11 &&
        (ch == '<' || ch == '>' || P->last_tok == T_LESS_AND || P->last_tok == T_GREATER_AND)) {
        long v = strtol(P->tokbuf.buf, NULL, 10);
        if (v <= INT_MAX) {
            t->number = v;
            return T_NUMBER;
        }
    }

    result = special_case_tokens(P);
    if (result >= 0)
        return result;
    if (!dollar_present && !quoted) {
        result = check_reserved_word(P);
        if (result >= 0)
            return result;
    }

    long ai = sh_assignment_index(P->tokbuf.buf, P->tokbuf.len,
                                  (P->pstate & PST_COMPASSIGN) != 0);
    bool is_assign = ai > 0 && ai == eq_idx;
    result = T_WORD;
    if (ai > 0 && (assignment_acceptable(P, P->last_tok) || (P->pstate & PST_COMPASSIGN)))
        result = T_ASSIGNMENT_WORD;
    if (is_assign) {
        bool attach = result == T_ASSIGNMENT_WORD || (P->pstate & PST_ASSIGNOK);
        t->word = wd_assignment_word(P, &wb, start, t->span.end, eq_pos, attach,
                                     compound ? elements : NULL);
    } else {
        t->word = wd_finish(P, &wb, start, t->span.end, WCTX_WORD);
    }
    t->word->span = t->span;
    t->word->flags |= elem_flags & ~SH_WF_ASSIGN;

    if (command_token_position(P, P->last_tok) &&
        is_assignment_builtin(P->tokbuf.buf, P->tokbuf.len))
        P->pstate |= PST_ASSIGNOK;

    if (P->tokbuf.len >= 2 && P->tokbuf.buf[0] == '{' &&
        P->tokbuf.buf[P->tokbuf.len - 1] == '}' && (ch == '<' || ch == '>')) {
        const char *in = P->tokbuf.buf + 1;
        size_t n = P->tokbuf.len - 2;
        if (sh_legal_identifier(in, n) || wd_valid_array_reference(in, n))
            result = T_REDIR_WORD;
    }

    switch (P->last_tok) {
    case T_FUNCTION:
        P->pstate |= PST_ALLOWOPNBRC;
        break;
    case T_CASE:
    case T_SELECT:
    case T_FOR:
        P->expecting_in++;
        break;
    }
    return result;
}

/* ---- (( )): bash's parse_dparen ------------------------------------------- */

/* After "((": 1 for an arithmetic command, 0 for a nested subshell. */
static int parse_arith_cmd(parser *P, size_t *text_start, size_t *text_end)
{
    size_t open = P->lastpos;
    wbuild inner;
    size_t close;
    int c;

    wb_init(&inner);
    close = scan_matched(P, 0, '(', ')', P_ARITH, &inner);
    c = lx_getc(P, false);
    *text_start = open + 1;
    *text_end = close;
    if (c != ')') {
        lx_ungetc_c(P, c);
        return 0;
    }
    return 1;
}

static int parse_dparen(parser *P, token *t, size_t first)
{
    size_t ts, te;

    if (P->last_tok == T_FOR) {
        if (parse_arith_cmd(P, &ts, &te) == 1) {
            t->text = lx_span(P, ts, te);
            t->span = lx_span(P, first, P->lastpos + 1);
            return T_ARITH_FOR_EXPRS;
        }
        t->span = lx_span(P, first, P->lastpos + 1);
        return T_ERROR;
    }
    if (lx_reserved_word_acceptable(P, P->last_tok)) {
        if (parse_arith_cmd(P, &ts, &te) == 1) {
            t->text = lx_span(P, ts, te);
            t->span = lx_span(P, first, P->lastpos + 1);
            return T_ARITH_CMD;
        }
        /* A nested subshell: bash pushes the text back and reads it again
         * as tokens; here the reader goes back to just after the first "(". */
        P->pos = first + 1;
        P->lastpos = first;
        P->nhist = 0;
        P->eof_pushback = false;
        t->span = lx_span(P, first, first + 1);
        return '(';
    }
    return -2;
}

/* ---- read_token ------------------------------------------------------------ */

static int read_token_inner(parser *P, token *t)
{
    int c, peek;
    size_t start;

    if (P->token_to_read) {
        int r = P->token_to_read;
        P->token_to_read = 0;
        *t = P->pushed_tok;
        t->type = r;
        return r;
    }

    while ((c = lx_getc(P, true)) != EOF && is_blank(c))
        ;
    start = P->lastpos;
    t->line = P->lineno;
    t->word = NULL;
    if (c == EOF) {
        P->eof_reached = true;
        t->span = lx_span(P, P->len, P->len);
        return T_EOF;
    }
    if (c == '#') {
        /* A comment: skip to the newline, which is the token. */
        while ((c = lx_getc(P, false)) != EOF && c != '\n')
            ;
        if (c == EOF) {
            lx_ungetc_c(P, c);
            c = lx_getc(P, false);
        }
        start = P->lastpos;
        c = '\n';
    }
    if (c == '\n') {
        t->span = lx_span(P, start, start + 1);
        if (P->nheredoc)
            lx_gather_heredocs(P);
        P->pstate &= ~PST_ASSIGNOK;
        return '\n';
    }
    if (P->pstate & PST_REGEXP)
        return read_token_word(P, c, t);

    if (is_meta(c)) {
        P->pstate &= ~PST_ASSIGNOK;
        if ((P->pstate & PST_CMDSUBST) && c == P->eof_token)
            peek = lx_getc(P, false);
        else
            peek = lx_getc(P, true);
        t->span = lx_span(P, start, P->lastpos + 1);
        if (c == peek) {
            switch (c) {
            case '<':
                peek = lx_getc(P, true);
                t->span = lx_span(P, start, P->lastpos + 1);
                if (peek == '-')
                    return T_LESS_LESS_MINUS;
                if (peek == '<')
                    return T_LESS_LESS_LESS;
                lx_ungetc_c(P, peek);
                t->span = lx_span(P, start, P->pos);
                return T_LESS_LESS;
            case '>':
                return T_GREATER_GREATER;
            case ';':
                P->pstate |= PST_CASEPAT;
                peek = lx_getc(P, true);
                if (peek == '&') {
                    t->span = lx_span(P, start, P->lastpos + 1);
                    return T_SEMI_SEMI_AND;
                }
                lx_ungetc_c(P, peek);
                return T_SEMI_SEMI;
            case '&':
                return T_AND_AND;
            case '|':
                return T_OR_OR;
            case '(': {
                int r = parse_dparen(P, t, start);
                if (r != -2)
                    return r;
                /* not in command position: "(" then "(" */
                lx_ungetc_c(P, peek);
                t->span = lx_span(P, start, start + 1);
                goto single;
            }
            }
        } else if (c == '<' && peek == '&') {
            return T_LESS_AND;
        } else if (c == '>' && peek == '&') {
            return T_GREATER_AND;
        } else if (c == '<' && peek == '>') {
            return T_LESS_GREATER;
        } else if (c == '>' && peek == '|') {
            return T_GREATER_BAR;
        } else if (c == '&' && peek == '>') {
            peek = lx_getc(P, true);
            if (peek == '>') {
                t->span = lx_span(P, start, P->lastpos + 1);
                return T_AND_GREATER_GREATER;
            }
            lx_ungetc_c(P, peek);
            return T_AND_GREATER;
        } else if (c == '|' && peek == '&') {
            return T_BAR_AND;
        } else if (c == ';' && peek == '&') {
            P->pstate |= PST_CASEPAT;
            return T_SEMI_AND;
        }
        lx_ungetc_c(P, peek);
        t->span = lx_span(P, start, start + 1);
    single:
        if (c == ')' && P->last_tok == '(' && P->tok_before == T_WORD)
            P->pstate |= PST_ALLOWOPNBRC;
        if (c == ')' && (P->pstate & PST_CASEPAT))
            P->pstate &= ~PST_CASEPAT;
        if ((c != '>' && c != '<') || peek != '(')
            return c;
        /* <( or >(: a process substitution word */
        P->lastpos = start;
        return read_token_word(P, c, t);
    }

    if (c == '-' && (P->last_tok == T_LESS_AND || P->last_tok == T_GREATER_AND)) {
        t->span = lx_span(P, start, start + 1);
        return '-';
    }
    return read_token_word(P, c, t);
}

/* Reads the next token into *t, updating bash's token history as yylex()
 * does, and returns its type. */
int lx_read_token(parser *P, token *t)
{
    int r;

    memset(t, 0, sizeof(*t));
    r = read_token_inner(P, t);
    t->type = r;
    return r;
}

/* ---- nested texts ------------------------------------------------------------ */

parser *lx_child_new(parser *P, const char *src, size_t end, size_t start, jmp_buf *jb)
{
    parser *C = xcalloc(1, sizeof(*C));
    sh_parse *scratch = xcalloc(1, sizeof(*scratch));

    strbuf_init(&scratch->warnings, 0);
    strbuf_init(&scratch->errors, 0);
    C->p = scratch;
    C->a = P->a;
    C->extglob = P->extglob;
    C->max_depth = P->max_depth;
    C->depth = P->depth;
    C->jb = jb;
    lx_init(C, src, end, start, true);
    C->last_tok = C->tok_before = C->two_ago = C->cur_tok = '\n';
    lx_tokbuf_reset(C);
    return C;
}

void lx_child_free(parser *C)
{
    strbuf_release(&C->p->warnings);
    strbuf_release(&C->p->errors);
    free(C->p);
    free(C);
}

/* ---- here-document bodies ---------------------------------------------------- */

/* The expansions of an unquoted here-document, read as bash expands it: like
 * a double-quoted string whose quotes are literal. bash parses the $( ) and
 * backquotes in it only when it runs the command, so a construct that does
 * not parse becomes a WP_CMDSUB with body_unparsed, covering the rest of the
 * body. */
sh_wpart *lx_heredoc_parts(parser *P, sh_span body)
{
    parser *C;
    wbuild *wb;
    sh_wpart *parts;
    jmp_buf jb;
    volatile size_t fail_start = body.start;
    volatile int fail_kind = '(';
    unsigned flags = 0;

    if (body.end <= body.start)
        return NULL;
    /* heap, not arena: one per here-document, freed below; not locals,
     * because longjmp() comes back into this frame */
    C = lx_child_new(P, P->src, body.end, body.start, &jb);
    C->memo = P->memo;
    wb = xcalloc(1, sizeof(*wb));
    wb_init(wb);
    if (setjmp(jb) == 0) {
        for (;;) {
            int c = lx_getc(C, true);
            size_t cpos = C->lastpos;
            if (c == EOF)
                break;
            if (c == '\\') {
                int n = lx_getc(C, false);
                if (n == EOF) {
                    wb_lit(C, wb, cpos);
                    break;
                }
                if (n == '$' || n == '`' || n == '\\')
                    emit_escape(C, wb, false, cpos, n, C->lastpos);
                else
                    wb_lit_range(C, wb, cpos, C->lastpos + 1);
            } else if (c == '$') {
                int n = lx_getc(C, true);
                fail_start = cpos;
                fail_kind = n;
                if (n == '(')
                    wb_part(C, wb, lex_dollar_paren(C, cpos, '$'));
                else if (n == '{')
                    wb_part(C, wb, lex_dollar_brace(C, cpos, P_DQUOTE));
                else if (n == '[')
                    wb_part(C, wb, lex_dollar_bracket(C, cpos, P_DQUOTE));
                else {
                    lx_ungetc_c(C, n);
                    wb_lit(C, wb, cpos);
                }
            } else if (c == '`') {
                fail_start = cpos;
                fail_kind = '`';
                wb_part(C, wb, lex_quoted(C, '`', cpos, false, P_DQUOTE));
            } else {
                wb_lit(C, wb, cpos);
            }
        }
    } else {
        /* the construct bash would fail on when it runs: the rest of the body */
        sh_wpart_kind k = fail_kind == '`' ? WP_BACKQUOTE : fail_kind == '{' ? WP_PARAM :
                          fail_kind == '[' ? WP_ARITH : WP_CMDSUB;
        sh_wpart *bad = wb_new_part(C, k, fail_start, body.end);
        bad->body_unparsed = true;
        if (k == WP_PARAM) {
            bad->param = arena_alloc(P->a, sizeof(sh_param));
            bad->param->braced = bad->param->bad = true;
            bad->param->name = "";
        } else if (k != WP_CMDSUB) {
            bad->text = wb_range_text(C, fail_start, body.end, &bad->len);
        }
        wb_part(C, wb, bad);
    }
    parts = wb_finish(C, wb, WCTX_HEREDOC, &flags);
    free(wb);
    lx_child_free(C);
    return parts;
}
