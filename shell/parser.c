/*
 * The grammar: recursive descent over the token stream of lexer.c, shaped
 * after bash 5.2's yacc grammar (parse.y) so that a syntax error is found at
 * the same token bash finds it at, and reported with the same words, line
 * number and offending line.
 *
 *   inputunit      simple_list ('\n' | EOF)
 *   simple_list    pipeline_cmd { ('&&' | '||') newlines pipeline_cmd
 *                                | (';' | '&') pipeline_cmd }
 *   compound_list  newlines and_or { (';' | '&' | '\n') newlines and_or }
 *   pipeline_cmd   { '!' | time [-p] [--] } command { ('|' | '|&') newlines command }
 *   command        simple_command | shell_command redirections | function | coproc
 *
 * A top-level input unit ends at an unquoted newline, as in bash: that is
 * one "complete command" for sh_parse_next().
 */
#include "shell/parse_int.h"

#include "common/util.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

enum { JMP_ERROR = 1, JMP_RECOVER = 2, JMP_INCOMPLETE = 3 };

static void add_error_line(parser *P, unsigned line, const char *msg);

/* ---- errors ------------------------------------------------------------------- */

void px_fail(parser *P)
{
    if (P->in_compound && P->eof_reached) {
        /* end of input inside a=( ... ): bash reports it as a compound-
         * assignment error, adds this line, and the status is 1 */
        add_error_line(P, P->lineno, "syntax error: unexpected end of file");
        longjmp(*P->jb, JMP_RECOVER);
    }
    longjmp(*P->jb, JMP_ERROR);
}

void px_enter(parser *P)
{
    if (++P->depth > P->max_depth) {
        P->noerror = false;
        P->depth = 0;
        px_error_at(P, P->lineno, "nesting too deep: more than %u levels", P->max_depth);
    }
}

static void add_error_line(parser *P, unsigned line, const char *msg)
{
    sh_parse *p = P->p;
    strbuf_addf(&p->errors, "line %u: %s\n", line, msg);
    if (!p->err_msg[0]) {
        p->err_line = line;
        p->err_offset = P->pos;
        snprintf(p->err_msg, sizeof(p->err_msg), "%s", msg);
    }
}

static void vadd_error(parser *P, unsigned line, const char *fmt, va_list ap)
{
    char buf[1024];
    vsnprintf(buf, sizeof(buf), fmt, ap);
    add_error_line(P, line, buf);
}

void px_error_at(parser *P, unsigned line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vadd_error(P, line, fmt, ap);
    va_end(ap);
    px_fail(P);
}

void px_warning(parser *P, unsigned line, const char *fmt, ...)
{
    va_list ap;
    char buf[1024];
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    strbuf_addf(&P->p->warnings, "line %u: %s\n", line, buf);
}

void px_need_more(parser *P)
{
    longjmp(*P->jb, JMP_INCOMPLETE);
}

/* The current line as bash prints it after an error (shell_input_line). */
static void current_line(parser *P, strbuf *out)
{
    size_t s = P->line_start, e = P->line_end;
    if (P->in_eof_line)
        return;
    if (e > P->len)
        e = P->len;
    for (size_t i = s; i < e; i++)
        if (P->src[i])
            strbuf_addch(out, P->src[i]);
    while (out->len && out->buf[out->len - 1] == '\n')
        strbuf_setlen(out, out->len - 1);
}

static void offending_line(parser *P)
{
    strbuf line = STRBUF_INIT, msg = STRBUF_INIT;
    current_line(P, &line);
    strbuf_addf(&msg, "`%s'", line.buf);
    add_error_line(P, P->lineno, msg.buf);
    snprintf(P->p->err_text, sizeof(P->p->err_text), "%s", line.buf);
    strbuf_release(&line);
    strbuf_release(&msg);
}

/* Length of a valid UTF-8 character at s (n bytes left), or 0. */
static size_t utf8_char(const unsigned char *s, size_t n)
{
    size_t len = s[0] < 0xc2 ? 0 : s[0] < 0xe0 ? 2 : s[0] < 0xf0 ? 3 : s[0] < 0xf5 ? 4 : 0;
    if (!len || len > n)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f) ||
        (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))
        return 0;
    return len;
}

/* bash's ansic_shouldquote() + ansic_quote() for a token in a message:
 * $'...' when it has a control or non-ASCII byte; valid UTF-8 characters
 * stay as they are, other bytes become octal escapes. */
static void quote_token(const char *s, size_t n, strbuf *out)
{
    bool need = false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c >= 0x7f)
            need = true;
    }
    if (!need) {
        strbuf_add(out, s, n);
        return;
    }
    strbuf_addstr(out, "$'");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *e = NULL;
        size_t l;
        switch (c) {
        case '\a': e = "\\a"; break;
        case '\b': e = "\\b"; break;
        case 033: e = "\\E"; break;
        case '\f': e = "\\f"; break;
        case '\n': e = "\\n"; break;
        case '\r': e = "\\r"; break;
        case '\t': e = "\\t"; break;
        case '\v': e = "\\v"; break;
        case '\\': e = "\\\\"; break;
        case '\'': e = "\\'"; break;
        }
        if (e) {
            strbuf_addstr(out, e);
        } else if (c >= 0x80 && (l = utf8_char((const unsigned char *)s + i, n - i)) > 0) {
            strbuf_add(out, s + i, l);
            i += l - 1;
        } else if (c < 0x20 || c >= 0x7f) {
            strbuf_addf(out, "\\%03o", c);
        } else {
            strbuf_addch(out, c);
        }
    }
    strbuf_addch(out, '\'');
}

/* bash's error_token_from_text(): the word before the read position. */
static void token_from_text(parser *P, strbuf *out)
{
    size_t s = P->line_start, e = P->line_end > P->len ? P->len : P->line_end;
    size_t len = e > s ? e - s : 0;
    const char *t = P->src + s;
    size_t i = P->pos > s ? P->pos - s : 0, token_end = 0;
    #define T(k) ((k) < len ? t[k] : 0)
    if (i > len)
        i = len;
    if (i && T(i) == 0)
        i--;
    while (i && (T(i) == ' ' || T(i) == '\t' || T(i) == '\n'))
        i--;
    if (i)
        token_end = i + 1;
    while (i && !strchr(" \n\t;|&", T(i)))
        i--;
    while (i != token_end && (T(i) == ' ' || T(i) == '\t' || T(i) == '\n'))
        i++;
    if (token_end)
        strbuf_add(out, t + i, token_end - i);
    else if (len)
        strbuf_addch(out, T(i));
    #undef T
}

static void report_syntax_error_noexit(parser *P, const token *t)
{
    strbuf tt = STRBUF_INIT, msg = STRBUF_INIT;

    if (t && t->type != T_EOF && t->type != T_ERROR && !P->eof_reached) {
        lx_token_text(P, t, &tt);
        if (tt.len) {
            strbuf_addstr(&msg, "syntax error near unexpected token `");
            quote_token(tt.buf, tt.len, &msg);
            strbuf_addch(&msg, '\'');
            add_error_line(P, P->lineno, msg.buf);
            offending_line(P);
            goto out;
        }
    }
    strbuf_reset(&tt);
    current_line(P, &tt);
    if (tt.len) {
        strbuf_reset(&tt);
        token_from_text(P, &tt);
        strbuf_addstr(&msg, "syntax error near `");
        strbuf_add(&msg, tt.buf, tt.len);
        strbuf_addch(&msg, '\'');
        add_error_line(P, P->lineno, msg.buf);
        offending_line(P);
    } else if (P->eof_reached && P->eof_token && (!t || t->type != P->eof_token)) {
        strbuf_addf(&msg, "unexpected EOF while looking for matching `%c'", P->eof_token);
        add_error_line(P, P->lineno, msg.buf);
    } else {
        add_error_line(P, P->lineno, P->eof_reached ? "syntax error: unexpected end of file"
                                                     : "syntax error");
    }
out:
    strbuf_release(&tt);
    strbuf_release(&msg);
}

/* ---- tokens --------------------------------------------------------------------- */

static int peek(parser *P)
{
    if (!P->have_tok) {
        token t;
        /* yylex()'s bookkeeping: the history moves before the read */
        P->two_ago = P->tok_before;
        P->tok_before = P->last_tok;
        P->last_tok = P->cur_tok;
        lx_read_token(P, &t);
        P->cur_tok = t.type;
        P->tok = t;
        P->have_tok = true;
    }
    return P->tok.type;
}

static token *cur(parser *P)
{
    peek(P);
    return &P->tok;
}

static void consume(parser *P)
{
    P->have_tok = false;
}

void px_syntax_error(parser *P)
{
    if (!P->noerror)
        report_syntax_error_noexit(P, P->have_tok ? &P->tok : NULL);
    px_fail(P);
}

static void expect(parser *P, int type)
{
    if (peek(P) != type)
        px_syntax_error(P);
    consume(P);
}

/* A compound-assignment error: bash reports it, drops the rest of the line
 * and goes on with the next one; the exit status becomes 1. */
void px_compound_error(parser *P, unsigned line, const token *t)
{
    if (!P->noerror) {
        if (!t)
            add_error_line(P, line, "unexpected EOF while looking for matching `)'");
        else
            report_syntax_error_noexit(P, t);
    }
    longjmp(*P->jb, JMP_RECOVER);
}

static void skip_newlines(parser *P)
{
    while (peek(P) == '\n')
        consume(P);
}

static sh_span tok_span(parser *P)
{
    return cur(P)->span;
}

/* ---- node helpers ------------------------------------------------------------------ */

static void *node(parser *P, size_t n)
{
    return arena_alloc(P->a, n);
}

static bool is_redir_start(int t)
{
    switch (t) {
    case '<': case '>': case T_GREATER_GREATER: case T_GREATER_BAR: case T_LESS_GREATER:
    case T_LESS_LESS: case T_LESS_LESS_MINUS: case T_LESS_LESS_LESS: case T_LESS_AND:
    case T_GREATER_AND: case T_AND_GREATER: case T_AND_GREATER_GREATER: case T_NUMBER:
    case T_REDIR_WORD:
        return true;
    default:
        return false;
    }
}

static bool is_shell_command_start(int t)
{
    switch (t) {
    case T_FOR: case T_CASE: case T_WHILE: case T_UNTIL: case T_SELECT: case T_IF:
    case '(': case '{': case T_ARITH_CMD: case T_COND_START:
        return true;
    default:
        return false;
    }
}

static bool is_command_start(int t)
{
    return t == T_WORD || t == T_ASSIGNMENT_WORD || is_redir_start(t) ||
           is_shell_command_start(t) || t == T_FUNCTION || t == T_COPROC || t == T_BANG ||
           t == T_TIME;
}

/* ---- redirections -------------------------------------------------------------------- */

static sh_redir *redirection(parser *P)
{
    sh_redir *r = node(P, sizeof(*r));
    token *t = cur(P);
    size_t start = t->span.start;
    int type;

    r->fd = -1;
    if (t->type == T_NUMBER) {
        r->fd = (int)t->number;
        consume(P);
    } else if (t->type == T_REDIR_WORD) {
        size_t n;
        char *txt = wb_range_text(P, t->span.start, t->span.end, &n);
        r->fd_var = arena_strndup(P->a, txt + 1, n >= 2 ? n - 2 : 0);
        r->fd_var_len = n >= 2 ? n - 2 : 0;
        consume(P);
    }
    type = peek(P);
    switch (type) {
    case '>': r->op = R_OUT; break;
    case '<': r->op = R_IN; break;
    case T_GREATER_GREATER: r->op = R_APPEND; break;
    case T_GREATER_BAR: r->op = R_CLOBBER; break;
    case T_LESS_GREATER: r->op = R_RDWR; break;
    case T_LESS_LESS: r->op = R_HEREDOC; break;
    case T_LESS_LESS_MINUS: r->op = R_HEREDOC_TAB; break;
    case T_LESS_LESS_LESS: r->op = R_HERESTRING; break;
    case T_LESS_AND: r->op = R_DUP_IN; break;
    case T_GREATER_AND: r->op = R_DUP_OUT; break;
    case T_AND_GREATER:
    case T_AND_GREATER_GREATER:
        if (r->fd >= 0 || r->fd_var)
            px_syntax_error(P);
        r->op = type == T_AND_GREATER ? R_OUT_ERR : R_APPEND_ERR;
        break;
    default:
        px_syntax_error(P);
    }
    consume(P);
    t = cur(P);
    if ((r->op == R_DUP_IN || r->op == R_DUP_OUT) && (t->type == T_NUMBER || t->type == '-')) {
        /* an fd number or `-': a one-part word */
        sh_word *w = node(P, sizeof(*w));
        sh_wpart *lit = node(P, sizeof(*lit));
        size_t n;
        w->span = t->span;
        lit->kind = WP_LIT;
        lit->span = t->span;
        lit->text = wb_range_text(P, t->span.start, t->span.end, &n);
        lit->len = n;
        w->parts = lit;
        r->target = w;
    } else if (t->type == T_WORD) {
        r->target = t->word;
    } else {
        px_syntax_error(P);
    }
    r->span = lx_span(P, start, t->span.end);
    consume(P);
    if (r->op == R_HEREDOC || r->op == R_HEREDOC_TAB) {
        r->heredoc_quoted = (r->target->flags & SH_WF_QUOTED) != 0;
        lx_push_heredoc(P, r);
    }
    return r;
}

static void redirection_list(parser *P, sh_cmd *c)
{
    sh_redir **tail = &c->redirs;
    while (*tail)
        tail = &(*tail)->next;
    while (is_redir_start(peek(P))) {
        *tail = redirection(P);
        c->span.end = (*tail)->span.end;
        tail = &(*tail)->next;
    }
}

/* ---- simple commands ------------------------------------------------------------------ */

static sh_cmd *simple_command(parser *P, token *first)
{
    sh_cmd *c = node(P, sizeof(*c));
    sh_word **wtail = &c->words;
    sh_assign **atail = &c->assigns;
    sh_redir **rtail = &c->redirs;
    bool any = false;

    c->kind = SH_SIMPLE;
    c->span = first ? first->span : tok_span(P);
    for (;;) {
        token *t = first ? first : cur(P);
        int type = t->type;
        if (type == T_WORD || type == T_ASSIGNMENT_WORD) {
            if (type == T_ASSIGNMENT_WORD && !c->words && t->word->assign) {
                *atail = t->word->assign;
                atail = &(*atail)->next;
            } else {
                *wtail = t->word;
                wtail = &t->word->next;
            }
            c->span.end = t->span.end;
            if (first)
                first = NULL;
            else
                consume(P);
            P->pstate &= ~PST_REDIRLIST;
        } else if (is_redir_start(type)) {
            *rtail = redirection(P);
            c->span.end = (*rtail)->span.end;
            rtail = &(*rtail)->next;
            if (!any)
                P->pstate |= PST_REDIRLIST;
        } else {
            break;
        }
        any = true;
    }
    P->pstate &= ~PST_REDIRLIST;
    return c;
}

/* ---- compound commands ------------------------------------------------------------------ */

static sh_list *compound_list(parser *P);
static sh_cmd *command(parser *P);
static sh_cond *cond_command(parser *P, sh_cmd *c);

/* DO compound_list DONE, or '{' compound_list '}' */
static sh_list *loop_body(parser *P, sh_cmd *c)
{
    int t = peek(P);
    sh_list *body;
    if (t != T_DO && t != '{')
        px_syntax_error(P);
    consume(P);
    body = compound_list(P);
    if (peek(P) != (t == T_DO ? T_DONE : '}'))
        px_syntax_error(P);
    c->span.end = tok_span(P).end;
    consume(P);
    return body;
}

static bool is_list_terminator(int t)
{
    return t == '\n' || t == ';' || t == T_EOF;
}

/* for ((init; cond; step)): bash splits the text at top-level semicolons
 * once the whole command has been read, and complains then. */
static void arith_for_check(parser *P, sh_cmd *c, sh_span text, unsigned line)
{
    sh_span *spans[3] = { &c->arith_init, &c->arith_cond, &c->arith_step };
    const char *t = P->src + text.start;
    size_t n = text.end - text.start, s = 0;
    int nsemi = 0, depth = 0;

    for (size_t i = 0;; i++) {
        if (i >= n || (t[i] == ';' && depth == 0)) {
            size_t a = s, b = i;
            while (a < b && (t[a] == ' ' || t[a] == '\t' || t[a] == '\n'))
                a++;
            while (b > a && (t[b - 1] == ' ' || t[b - 1] == '\t' || t[b - 1] == '\n'))
                b--;
            if (nsemi < 3)
                *spans[nsemi] = lx_span(P, text.start + a, text.start + b);
            nsemi++;
            if (i >= n)
                break;
            s = i + 1;
            continue;
        }
        char ch = t[i];
        if (ch == '\\' && i + 1 < n) {
            i++;
        } else if (ch == '\'') {
            while (i + 1 < n && t[i + 1] != '\'')
                i++;
            i++;
        } else if (ch == '"') {
            for (i++; i < n && t[i] != '"'; i++)
                if (t[i] == '\\')
                    i++;
        } else if (ch == '(') {
            depth++;
        } else if (ch == ')' && depth) {
            depth--;
        }
    }
    if (nsemi != 3) {
        size_t len;
        char *txt = wb_range_text(P, text.start, text.end, &len);
        strbuf msg = STRBUF_INIT;
        add_error_line(P, line, nsemi < 3 ? "syntax error: arithmetic expression required"
                                          : "syntax error: `;' unexpected");
        strbuf_addf(&msg, "syntax error: `((%s))'", txt);
        add_error_line(P, line, msg.buf);
        strbuf_release(&msg);
        px_fail(P);
    }
}

static void for_command(parser *P, sh_cmd *c)
{
    token *t;

    consume(P);                                   /* for / select */
    t = cur(P);
    if (c->kind == SH_FOR && t->type == T_ARITH_FOR_EXPRS) {
        unsigned line = t->line;
        sh_span text = t->text;
        c->kind = SH_ARITH_FOR;
        consume(P);
        if (is_list_terminator(peek(P))) {
            consume(P);
            skip_newlines(P);
        }
        c->body = loop_body(P, c);
        arith_for_check(P, c, text, line);
        return;
    }
    if (t->type != T_WORD)
        px_syntax_error(P);
    {
        size_t n;
        c->var = wb_range_text(P, t->span.start, t->span.end, &n);
        c->var_len = n;
    }
    consume(P);
    if (peek(P) == ';') {
        consume(P);
        skip_newlines(P);
        c->body = loop_body(P, c);
        return;
    }
    skip_newlines(P);
    if (peek(P) == T_IN) {
        sh_word **tail = &c->for_words;
        c->has_in = true;
        consume(P);
        while (peek(P) == T_WORD) {
            *tail = cur(P)->word;
            tail = &(*tail)->next;
            consume(P);
        }
        if (!is_list_terminator(peek(P)))
            px_syntax_error(P);
        consume(P);
        skip_newlines(P);
    }
    c->body = loop_body(P, c);
}

static void case_command(parser *P, sh_cmd *c)
{
    sh_case_item **tail = &c->items;

    consume(P);                                   /* case */
    if (peek(P) != T_WORD)
        px_syntax_error(P);
    c->subject = cur(P)->word;
    consume(P);
    skip_newlines(P);
    expect(P, T_IN);
    skip_newlines(P);
    for (;;) {
        sh_case_item *it;
        sh_word **ptail;
        int t;

        if (peek(P) == T_ESAC) {
            c->span.end = tok_span(P).end;
            consume(P);
            return;
        }
        it = node(P, sizeof(*it));
        it->span = tok_span(P);
        if (peek(P) == '(')
            consume(P);
        ptail = &it->patterns;
        for (;;) {
            if (peek(P) != T_WORD)
                px_syntax_error(P);
            *ptail = cur(P)->word;
            ptail = &(*ptail)->next;
            consume(P);
            if (peek(P) != '|')
                break;
            consume(P);
        }
        it->span.end = tok_span(P).end;
        expect(P, ')');
        skip_newlines(P);
        t = peek(P);
        if (t != T_SEMI_SEMI && t != T_SEMI_AND && t != T_SEMI_SEMI_AND && t != T_ESAC) {
            it->body = compound_list(P);
            it->span.end = it->body->span.end;
            t = peek(P);
        }
        *tail = it;
        tail = &it->next;
        if (t == T_SEMI_SEMI || t == T_SEMI_AND || t == T_SEMI_SEMI_AND) {
            it->term = t == T_SEMI_SEMI ? CASE_BREAK : t == T_SEMI_AND ? CASE_FALL
                                                                       : CASE_CONTINUE;
            it->span.end = tok_span(P).end;
            consume(P);
            skip_newlines(P);
            continue;
        }
        if (t == T_ESAC) {
            c->span.end = tok_span(P).end;
            consume(P);
            return;
        }
        px_syntax_error(P);
    }
}

static void if_command(parser *P, sh_cmd *c)
{
    sh_if_clause **tail = &c->clauses;

    for (;;) {
        sh_if_clause *cl = node(P, sizeof(*cl));
        cl->span = tok_span(P);
        consume(P);                               /* if / elif */
        cl->cond = compound_list(P);
        expect(P, T_THEN);
        cl->then_body = compound_list(P);
        cl->span.end = cl->then_body->span.end;
        *tail = cl;
        tail = &cl->next;
        if (peek(P) != T_ELIF)
            break;
    }
    if (peek(P) == T_ELSE) {
        consume(P);
        c->else_body = compound_list(P);
    }
    if (peek(P) != T_FI)
        px_syntax_error(P);
    c->span.end = tok_span(P).end;
    consume(P);
}

static sh_cmd *shell_command(parser *P)
{
    sh_cmd *c = node(P, sizeof(*c));
    token *t = cur(P);
    int type = t->type;

    c->span = t->span;
    switch (type) {
    case T_FOR:
    case T_SELECT:
        c->kind = type == T_FOR ? SH_FOR : SH_SELECT;
        for_command(P, c);
        break;
    case T_CASE:
        c->kind = SH_CASE;
        case_command(P, c);
        break;
    case T_WHILE:
    case T_UNTIL:
        c->kind = type == T_WHILE ? SH_WHILE : SH_UNTIL;
        consume(P);
        c->cond = compound_list(P);
        expect(P, T_DO);
        c->body = compound_list(P);
        if (peek(P) != T_DONE)
            px_syntax_error(P);
        c->span.end = tok_span(P).end;
        consume(P);
        break;
    case T_IF:
        c->kind = SH_IF;
        if_command(P, c);
        break;
    case '(':
    case '{':
        c->kind = type == '(' ? SH_SUBSHELL : SH_GROUP;
        consume(P);
        c->body = compound_list(P);
        if (peek(P) != (type == '(' ? ')' : '}'))
            px_syntax_error(P);
        c->span.end = tok_span(P).end;
        consume(P);
        break;
    case T_ARITH_CMD:
        c->kind = SH_ARITH;
        c->arith_cond = t->text;
        consume(P);
        break;
    case T_COND_START:
        c->kind = SH_DBRACKET;
        consume(P);
        c->cond_expr = cond_command(P, c);
        break;
    default:
        px_syntax_error(P);
    }
    return c;
}

static sh_cmd *function_body(parser *P)
{
    sh_cmd *body;
    if (!is_shell_command_start(peek(P)))
        px_syntax_error(P);
    body = shell_command(P);
    redirection_list(P, body);
    return body;
}

static sh_cmd *function_def(parser *P, const token *name, bool keyword, size_t start)
{
    sh_cmd *c = node(P, sizeof(*c));
    size_t n;

    c->kind = SH_FUNCDEF;
    c->function_keyword = keyword;
    c->name = wb_range_text(P, name->span.start, name->span.end, &n);
    c->name_len = n;
    if (peek(P) == '(') {
        if (keyword) {
            /* `function f (': empty parens, or a subshell as the body */
            token open = P->tok;
            consume(P);
            if (peek(P) != ')') {
                sh_cmd *sub = node(P, sizeof(*sub));
                sub->kind = SH_SUBSHELL;
                sub->span = open.span;
                sub->body = compound_list(P);
                if (peek(P) != ')')
                    px_syntax_error(P);
                sub->span.end = tok_span(P).end;
                consume(P);
                redirection_list(P, sub);
                c->func_body = sub;
                c->span = lx_span(P, start, sub->span.end);
                return c;
            }
            consume(P);
        } else {
            consume(P);
            expect(P, ')');
        }
        skip_newlines(P);
    } else if (keyword && peek(P) == '\n') {
        skip_newlines(P);
    }
    c->func_body = function_body(P);
    c->span = lx_span(P, start, c->func_body->span.end);
    return c;
}

static sh_cmd *coproc_command(parser *P)
{
    sh_cmd *c = node(P, sizeof(*c));
    token *t = cur(P);

    c->kind = SH_COPROC;
    c->span = t->span;
    consume(P);                                   /* coproc */
    t = cur(P);
    if (is_shell_command_start(t->type)) {
        c->func_body = shell_command(P);
        redirection_list(P, c->func_body);
    } else if (t->type == T_WORD) {
        token name = *t;
        consume(P);
        if (is_shell_command_start(peek(P))) {
            size_t n;
            c->name = wb_range_text(P, name.span.start, name.span.end, &n);
            c->name_len = n;
            c->func_body = shell_command(P);
            redirection_list(P, c->func_body);
        } else {
            c->func_body = simple_command(P, &name);
        }
    } else if (t->type == T_ASSIGNMENT_WORD || is_redir_start(t->type)) {
        c->func_body = simple_command(P, NULL);
    } else {
        px_syntax_error(P);
    }
    c->span.end = c->func_body->span.end;
    return c;
}

static sh_cmd *command(parser *P)
{
    sh_cmd *c = NULL;
    token *t;

    px_enter(P);
    t = cur(P);
    switch (t->type) {
    case T_FUNCTION: {
        size_t start = t->span.start;
        token name;
        consume(P);
        if (peek(P) != T_WORD)
            px_syntax_error(P);
        name = P->tok;
        consume(P);
        c = function_def(P, &name, true, start);
        break;
    }
    case T_COPROC:
        c = coproc_command(P);
        break;
    case T_WORD: {
        token w = *t;
        consume(P);
        if (peek(P) == '(')
            c = function_def(P, &w, false, w.span.start);
        else
            c = simple_command(P, &w);
        break;
    }
    case T_ASSIGNMENT_WORD:
        c = simple_command(P, NULL);
        break;
    default:
        if (is_redir_start(t->type)) {
            c = simple_command(P, NULL);
        } else if (is_shell_command_start(t->type)) {
            c = shell_command(P);
            redirection_list(P, c);
        } else {
            px_syntax_error(P);
        }
        break;
    }
    px_leave(P);
    return c;
}

/* ---- pipelines and lists ---------------------------------------------------------------- */

static sh_pipeline *pipeline_command(parser *P)
{
    sh_pipeline *pl = node(P, sizeof(*pl));
    sh_cmd **tail;

    pl->span = tok_span(P);
    for (;;) {
        int t = peek(P);
        if (t == T_BANG) {
            pl->bang = !pl->bang;
            pl->span.end = tok_span(P).end;
            consume(P);
        } else if (t == T_TIME) {
            pl->timed = true;
            pl->span.end = tok_span(P).end;
            consume(P);
            if (peek(P) == T_TIMEOPT) {
                pl->time_posix = true;
                pl->span.end = tok_span(P).end;
                consume(P);
            }
            if (peek(P) == T_TIMEIGN) {
                pl->span.end = tok_span(P).end;
                consume(P);
            }
        } else {
            break;
        }
        t = peek(P);
        if (is_list_terminator(t)) {
            /* `!' or `time' alone: an empty command; bash reads the
             * terminator again (token_to_read). */
            sh_cmd *c = node(P, sizeof(*c));
            c->kind = SH_SIMPLE;
            c->span = lx_span(P, pl->span.end, pl->span.end);
            pl->cmds = c;
            if (t != T_EOF) {
                P->token_to_read = t;
                P->pushed_tok = P->tok;
            }
            consume(P);
            return pl;
        }
    }
    tail = &pl->cmds;
    for (;;) {
        sh_cmd *c = command(P);
        int t;
        *tail = c;
        tail = &c->next;
        pl->span.end = c->span.end;
        t = peek(P);
        if (t != '|' && t != T_BAR_AND)
            break;
        c->pipe_stderr = t == T_BAR_AND;
        consume(P);
        skip_newlines(P);
    }
    return pl;
}

/* pipeline_cmd { ('&&' | '||') newlines pipeline_cmd } */
static sh_andor *and_or(parser *P)
{
    sh_andor *ao = node(P, sizeof(*ao));
    sh_pipeline **tail = &ao->pipes;
    int op = 0;

    for (;;) {
        sh_pipeline *pl = pipeline_command(P);
        int t;
        pl->op = op;
        *tail = pl;
        tail = &pl->next;
        t = peek(P);
        if (t != T_AND_AND && t != T_OR_OR)
            break;
        op = t == T_AND_AND ? SH_OP_AND : SH_OP_OR;
        consume(P);
        skip_newlines(P);
    }
    ao->span.start = ao->pipes->span.start;
    for (sh_pipeline *p = ao->pipes; p; p = p->next)
        ao->span.end = p->span.end;
    return ao;
}

static sh_sep sep_of(int t)
{
    return t == ';' ? SH_SEP_SEMI : t == '&' ? SH_SEP_AMP : SH_SEP_NEWLINE;
}

static sh_list *compound_list(parser *P)
{
    sh_list *l = node(P, sizeof(*l));
    sh_andor **tail = &l->items;

    px_enter(P);
    skip_newlines(P);
    for (;;) {
        sh_andor *ao = and_or(P);
        int t;
        *tail = ao;
        tail = &ao->next;
        t = peek(P);
        if (t != ';' && t != '&' && t != '\n')
            break;
        ao->sep = sep_of(t);
        consume(P);
        skip_newlines(P);
        if (!is_command_start(peek(P)))
            break;
    }
    l->span.start = l->items->span.start;
    for (sh_andor *a = l->items; a; a = a->next)
        l->span.end = a->span.end;
    px_leave(P);
    return l;
}

/* simple_list: one input unit's commands, appended at *tailp. */
static void simple_list(parser *P, sh_andor ***tailp)
{
    sh_andor **tail = *tailp;
    for (;;) {
        sh_andor *ao = and_or(P);
        int t;
        *tail = ao;
        tail = &ao->next;
        t = peek(P);
        if (t != ';' && t != '&')
            break;
        ao->sep = sep_of(t);
        consume(P);
        t = peek(P);
        if (t == '\n' || t == T_EOF)
            break;
    }
    *tailp = tail;
}

/* ---- [[ ]] -------------------------------------------------------------------------------- */

static bool test_unop(const char *s, size_t n)
{
    return n == 2 && s[0] == '-' && s[1] && strchr("abcdefghknoprstuvwxzGLOSNR", s[1]);
}

static bool test_binop(const char *s, size_t n)
{
    static const char *const ops[] = {
        "=", "==", "!=", "<", ">", "-nt", "-ot", "-ef", "-eq", "-ne", "-lt", "-le", "-gt", "-ge",
    };
    for (size_t i = 0; i < ARRAY_SIZE(ops); i++)
        if (strlen(ops[i]) == n && memcmp(ops[i], s, n) == 0)
            return true;
    return false;
}

/* An open ( in [[ ]]: when an error unwinds through it, bash adds
 * "expected `)'" for it. */
typedef struct cond_group {
    unsigned line;
    struct cond_group *outer;
} cond_group;

typedef struct cond_state {
    int tok;                 /* bash's cond_token */
    token t;
    unsigned start_line;
    cond_group *groups;
} cond_state;

/* The message without the token, for a word bash does not name. */
static const char *cond_plain(const char *fmt)
{
    static const struct { const char *with, *without; } m[] = {
        { "unexpected token `%s', expected `)'", "expected `)'" },
        { "unexpected argument `%s' to conditional unary operator",
          "unexpected argument to conditional unary operator" },
        { "unexpected token `%s', conditional binary operator expected",
          "conditional binary operator expected" },
        { "unexpected argument `%s' to conditional binary operator",
          "unexpected argument to conditional binary operator" },
        { "syntax error in conditional expression: unexpected token `%s'",
          "syntax error in conditional expression" },
    };
    for (size_t i = 0; i < ARRAY_SIZE(m); i++)
        if (!strcmp(fmt, m[i].with))
            return m[i].without;
    return fmt;
}

/* A [[ ]] error: bash prints its message, then (5.2.37) the parser reports
 * the error token it got in place of the expression. */
static void cond_fail(parser *P, cond_state *cs, unsigned line, const char *fmt,
                      const token *t) __attribute__((noreturn));
static void cond_fail(parser *P, cond_state *cs, unsigned line, const char *fmt,
                      const token *t)
{
    if (fmt) {
        strbuf tt = STRBUF_INIT, msg = STRBUF_INIT;
        /* bash names only fixed tokens here: for a word it looks at the
         * parser's current token, which is still `[[' */
        if (t && t->type != T_WORD && t->type != T_ASSIGNMENT_WORD && t->type != T_NUMBER &&
            t->type != T_REDIR_WORD)
            lx_token_text(P, t, &tt);
        if (tt.len)
            strbuf_addf(&msg, fmt, tt.buf);
        else
            strbuf_addstr(&msg, cond_plain(fmt));
        add_error_line(P, line, msg.buf);
        strbuf_release(&tt);
        strbuf_release(&msg);
    }
    for (cond_group *g = cs ? cs->groups : NULL; g; g = g->outer)
        add_error_line(P, g->line, "expected `)'");
    report_syntax_error_noexit(P, NULL);
    px_fail(P);
}

static int cond_read(parser *P, cond_state *cs)
{
    return cs->tok = lx_read_token(P, &cs->t);
}

static int cond_skip_newlines(parser *P, cond_state *cs)
{
    while (cond_read(P, cs) == '\n')
        ;
    return cs->tok;
}

static sh_cond *cond_or(parser *P, cond_state *cs);

static sh_cond *mk_cond(parser *P, sh_cond_kind k, size_t s, size_t e)
{
    sh_cond *c = node(P, sizeof(*c));
    c->kind = k;
    c->span = lx_span(P, s, e);
    return c;
}

static char *tok_text(parser *P, const token *t, size_t *n)
{
    return wb_range_text(P, t->span.start, t->span.end, n);
}

static sh_cond *cond_term(parser *P, cond_state *cs)
{
    sh_cond *term = NULL;
    unsigned line;
    size_t n;
    char *txt;
    int tok;

    px_enter(P);
    tok = cond_skip_newlines(P, cs);
    line = P->lineno;
    txt = tok == T_WORD ? tok_text(P, &cs->t, &n) : NULL;
    if (tok == T_COND_END) {
        cond_fail(P, cs, line, NULL, NULL);
    } else if (tok == '(') {
        size_t s = cs->t.span.start;
        cond_group g = { line, cs->groups };
        cs->groups = &g;
        sh_cond *inner = cond_or(P, cs);
        cs->groups = g.outer;
        if (cs->tok != ')')
            cond_fail(P, cs, line, "unexpected token `%s', expected `)'", &cs->t);
        term = mk_cond(P, COND_GROUP, s, cs->t.span.end);
        term->a = inner;
        (void)cond_skip_newlines(P, cs);
    } else if (tok == T_BANG || (txt && n == 1 && txt[0] == '!')) {
        size_t s = cs->t.span.start;
        sh_cond *inner = cond_term(P, cs);
        term = mk_cond(P, COND_NOT, s, inner->span.end);
        term->a = inner;
    } else if (txt && test_unop(txt, n)) {
        token op = cs->t;
        tok = cond_read(P, cs);
        if (tok != T_WORD)
            cond_fail(P, cs, P->lineno,
                      "unexpected argument `%s' to conditional unary operator", &cs->t);
        term = mk_cond(P, COND_UNARY, op.span.start, cs->t.span.end);
        term->op = txt;
        term->left = cs->t.word;
        (void)cond_skip_newlines(P, cs);
    } else if (tok == T_WORD) {
        token lhs = cs->t;
        const char *op = NULL;
        bool saved_extglob = P->extglob;

        tok = cond_read(P, cs);
        if (tok == T_WORD) {
            char *o = tok_text(P, &cs->t, &n);
            if (test_binop(o, n)) {
                op = o;
                if ((n == 1 && o[0] == '=') || (n == 2 && o[1] == '=' &&
                                                (o[0] == '=' || o[0] == '!')))
                    P->pstate |= PST_EXTPAT;
            } else if (n == 2 && o[0] == '=' && o[1] == '~') {
                op = o;
                P->pstate |= PST_REGEXP;
            }
        } else if (tok == '<' || tok == '>') {
            op = tok == '<' ? "<" : ">";
        } else if (tok == T_COND_END || tok == T_AND_AND || tok == T_OR_OR || tok == ')') {
            /* [[ word ]] tests that the word is not empty */
            term = mk_cond(P, COND_WORD, lhs.span.start, lhs.span.end);
            term->left = lhs.word;
            px_leave(P);
            return term;
        }
        if (!op)
            cond_fail(P, cs, P->lineno,
                      "unexpected token `%s', conditional binary operator expected", &cs->t);
        if (P->pstate & PST_EXTPAT)
            P->extglob = true;
        tok = cond_read(P, cs);
        P->extglob = saved_extglob;
        P->pstate &= ~(PST_REGEXP | PST_EXTPAT);
        if (tok != T_WORD)
            cond_fail(P, cs, P->lineno,
                      "unexpected argument `%s' to conditional binary operator", &cs->t);
        term = mk_cond(P, COND_BINARY, lhs.span.start, cs->t.span.end);
        term->op = op;
        term->left = lhs.word;
        term->right = cs->t.word;
        (void)cond_skip_newlines(P, cs);
    } else {
        strbuf msg = STRBUF_INIT, tt = STRBUF_INIT;
        lx_token_text(P, &cs->t, &tt);
        if (tok < 256)
            strbuf_addf(&msg, "unexpected token `%c' in conditional command", tok);
        else if (tt.len)
            strbuf_addf(&msg, "unexpected token `%s' in conditional command", tt.buf);
        else
            strbuf_addf(&msg, "unexpected token %d in conditional command", tok);
        add_error_line(P, P->lineno, msg.buf);
        strbuf_release(&msg);
        strbuf_release(&tt);
        cond_fail(P, cs, 0, NULL, NULL);
    }
    px_leave(P);
    return term;
}

static sh_cond *cond_and(parser *P, cond_state *cs)
{
    sh_cond *l = cond_term(P, cs);
    while (cs->tok == T_AND_AND) {
        sh_cond *r = cond_term(P, cs);
        sh_cond *n = mk_cond(P, COND_AND, l->span.start, r->span.end);
        n->a = l;
        n->b = r;
        l = n;
    }
    return l;
}

static sh_cond *cond_or(parser *P, cond_state *cs)
{
    sh_cond *l = cond_and(P, cs);
    while (cs->tok == T_OR_OR) {
        sh_cond *r = cond_and(P, cs);
        sh_cond *n = mk_cond(P, COND_OR, l->span.start, r->span.end);
        n->a = l;
        n->b = r;
        l = n;
    }
    return l;
}

/* yylex()'s bookkeeping for a token the parser does not see itself. */
static void shift_history(parser *P, int tok)
{
    P->two_ago = P->tok_before;
    P->tok_before = P->last_tok;
    P->last_tok = P->cur_tok;
    P->cur_tok = tok;
}

/* After [[: bash reads the expression as one COND_CMD token, then COND_END. */
static sh_cond *cond_command(parser *P, sh_cmd *c)
{
    cond_state cs;
    sh_cond *e;

    memset(&cs, 0, sizeof(cs));
    cs.start_line = P->lineno;
    shift_history(P, T_COND_CMD);
    P->pstate |= PST_CONDEXPR;
    e = cond_or(P, &cs);
    if (cs.tok != T_COND_END) {
        if (P->eof_reached && cs.tok == T_EOF)
            cond_fail(P, &cs, cs.start_line, "unexpected EOF while looking for `]]'", NULL);
        cond_fail(P, &cs, cs.start_line,
                  "syntax error in conditional expression: unexpected token `%s'", &cs.t);
    }
    P->pstate &= ~(PST_CONDEXPR | PST_CONDCMD);
    shift_history(P, T_COND_END);
    P->have_tok = false;
    c->span.end = cs.t.span.end;
    return e;
}

/* ---- $( ) ---------------------------------------------------------------------------------- */

sh_list *px_parse_comsub(parser *P)
{
    /* bash's save_parser_state() */
    int s_last = P->last_tok, s_before = P->tok_before, s_two = P->two_ago, s_cur = P->cur_tok;
    unsigned s_pstate = P->pstate;
    int s_ttr = P->token_to_read, s_eof = P->eof_token;
    int s_esacs = P->esacs_needed, s_in = P->expecting_in;
    int s_nh = P->nheredoc;
    sh_redir *s_hd[SH_HEREDOC_MAX];
    token s_tok = P->tok, s_pushed = P->pushed_tok;
    bool s_have = P->have_tok;
    strbuf s_tb = P->tokbuf;
    sh_list *body = NULL;

    memcpy(s_hd, P->heredocs, sizeof(s_hd));
    px_enter(P);
    P->tokbuf = (strbuf)STRBUF_INIT;
    P->tokbuf.alloc = 0;
    lx_tokbuf_reset(P);
    P->pstate &= ~(PST_REGEXP | PST_EXTPAT | PST_CONDCMD | PST_CONDEXPR | PST_COMPASSIGN |
                   PST_CASEPAT | PST_REDIRLIST);
    P->pstate |= PST_CMDSUBST | PST_EOFTOKEN | PST_NOEXPAND;
    P->eof_token = ')';
    P->nheredoc = 0;
    P->esacs_needed = P->expecting_in = 0;
    P->cur_tok = '\n';
    P->token_to_read = T_DOLPAREN;
    P->have_tok = false;

    expect(P, T_DOLPAREN);
    skip_newlines(P);
    if (peek(P) != ')')
        body = compound_list(P);
    if (peek(P) != ')')
        px_syntax_error(P);
    /* the ')' is consumed without reading further */
    P->have_tok = false;
    if (P->nheredoc > 0) {
        px_warning(P, P->lineno, "warning: command substitution: %d unterminated "
                   "here-document%s", P->nheredoc, P->nheredoc == 1 ? "" : "s");
        lx_gather_heredocs(P);
    }

    P->tokbuf = s_tb;
    P->last_tok = s_last;
    P->tok_before = s_before;
    P->two_ago = s_two;
    P->cur_tok = s_cur;
    P->pstate = s_pstate;
    P->token_to_read = s_ttr;
    P->eof_token = s_eof;
    P->esacs_needed = s_esacs;
    P->expecting_in = s_in;
    P->nheredoc = s_nh;
    memcpy(P->heredocs, s_hd, sizeof(s_hd));
    P->tok = s_tok;
    P->pushed_tok = s_pushed;
    P->have_tok = s_have;
    px_leave(P);
    return body;
}

/* ---- whole inputs ----------------------------------------------------------------------------- */

/* One input unit, its and-or lists appended at P->unit_tail (committed only
 * when the unit is complete). Returns false at EOF. */
static bool inputunit(parser *P)
{
    sh_andor **tail = P->unit_tail, *last;
    int t = peek(P);

    if (t == '\n') {
        consume(P);
        return true;
    }
    if (t == T_EOF) {
        consume(P);
        return false;
    }
    simple_list(P, &tail);
    last = (sh_andor *)((char *)tail - offsetof(sh_andor, next));
    t = peek(P);
    if (t == '\n') {
        /* bash's newline after an unterminated last line is not a separator */
        if (last->sep == SH_SEP_NONE && P->tok.span.end > P->tok.span.start)
            last->sep = SH_SEP_NEWLINE;
        consume(P);
    } else if (t == T_EOF) {
        consume(P);
    } else {
        px_syntax_error(P);
    }
    *tail = NULL;
    P->unit_first = *P->unit_tail;
    P->unit_tail = tail;
    return true;
}

static void reset_for_unit(parser *P)
{
    P->pstate = 0;
    P->open_brace_count = 0;
    P->nheredoc = 0;
    P->esacs_needed = P->expecting_in = 0;
    P->token_to_read = 0;
    P->have_tok = false;
    P->noerror = false;
}

/* `shopt -s extglob' (or -u) at the top level of a unit, for track_shopt. */
static void track_shopt(parser *P, sh_andor *items)
{
    for (sh_andor *a = items; a; a = a->next)
        for (sh_pipeline *pl = a->pipes; pl; pl = pl->next)
            for (sh_cmd *c = pl->cmds; c; c = c->next) {
                strbuf v = STRBUF_INIT;
                int on = -1;
                bool is_shopt = false, has_ext = false;
                if (c->kind != SH_SIMPLE || pl->cmds->next)
                    continue;
                for (sh_word *w = c->words; w; w = w->next) {
                    strbuf_reset(&v);
                    if (!sh_word_static_value(w, &v))
                        break;
                    if (w == c->words) {
                        is_shopt = strcmp(v.buf, "shopt") == 0;
                        if (!is_shopt)
                            break;
                    } else if (!strcmp(v.buf, "-s")) {
                        on = 1;
                    } else if (!strcmp(v.buf, "-u")) {
                        on = 0;
                    } else if (!strcmp(v.buf, "extglob")) {
                        has_ext = true;
                    }
                }
                strbuf_release(&v);
                if (is_shopt && has_ext && on >= 0)
                    P->extglob = on;
            }
}

static void parser_setup(parser *P, sh_parse *p, const char *src, size_t len,
                         const sh_parse_opts *opts, bool at_eof, jmp_buf *jb)
{
    memset(P, 0, sizeof(*P));
    P->p = p;
    P->a = &p->arena;
    P->extglob = opts && opts->extglob;
    P->max_depth = opts && opts->max_depth ? opts->max_depth : SH_MAX_DEPTH;
    P->jb = jb;
    lx_init(P, src, len, 0, at_eof);
    P->lineno = opts ? opts->first_line : 0;
    P->last_tok = P->tok_before = P->two_ago = P->cur_tok = '\n';
    lx_tokbuf_reset(P);
    P->memo = lx_memo_new(P);
}

static void parse_init(sh_parse *p, const char *src, size_t len)
{
    memset(p, 0, sizeof(*p));
    arena_init(&p->arena);
    p->src = src;
    p->len = len;
    strbuf_init(&p->warnings, 0);
    strbuf_init(&p->errors, 0);
    p->exit_status = 0;
}

/* Spans are 32-bit offsets. */
static bool too_large(sh_parse *p, size_t len)
{
    if (len < UINT32_MAX - 2)
        return false;
    strbuf_addf(&p->errors, "line 1: input too large for sbxsh's parser: %zu bytes\n", len);
    snprintf(p->err_msg, sizeof(p->err_msg), "input too large for sbxsh's parser");
    p->err_line = 1;
    p->status = SH_ERROR;
    p->exit_status = 2;
    return true;
}

static sh_list *new_root(parser *P)
{
    sh_list *l = node(P, sizeof(*l));
    return l;
}

static void finish_root(sh_list *root)
{
    sh_andor *a = root->items;
    if (!a)
        return;
    root->span.start = a->span.start;
    for (; a; a = a->next)
        root->span.end = a->span.end;
}

sh_status sh_parse_all(sh_parse *p, const char *src, size_t len, const sh_parse_opts *opts,
                       bool at_eof)
{
    parser P;
    jmp_buf jb;
    volatile int errors = 0;

    parse_init(p, src, len);
    if (too_large(p, len))
        return SH_ERROR;
    parser_setup(&P, p, src, len, opts, at_eof, &jb);
    p->root = new_root(&P);
    P.unit_tail = &p->root->items;
    for (;;) {
        int r = setjmp(jb);
        if (r == 0) {
            P.unit_first = NULL;
            if (!inputunit(&P))
                break;
            if (opts && opts->track_shopt)
                track_shopt(&P, P.unit_first);
            continue;
        }
        *P.unit_tail = NULL;
        if (r == JMP_INCOMPLETE) {
            p->status = SH_INCOMPLETE;
            finish_root(p->root);
            p->extglob_after = P.extglob;
            p->end_line = P.lineno;
            return p->status;
        }
        if (r == JMP_RECOVER) {
            /* bash drops the rest of the line and reads on */
            errors |= 1;
            P.pos = P.line_end;
            P.eof_pushback = false;
            reset_for_unit(&P);
            P.last_tok = P.cur_tok = '\n';
            continue;
        }
        errors |= 2;
        break;
    }
    *P.unit_tail = NULL;
    finish_root(p->root);
    p->extglob_after = P.extglob;
    if (errors) {
        p->status = SH_ERROR;
        if (!p->exit_status)
            p->exit_status = (errors & 2) ? 2 : 1;
    } else {
        p->status = SH_OK;
    }
    p->end_line = P.lineno;
    return p->status;
}

sh_status sh_parse_next(sh_parse *p, const char *src, size_t len, const sh_parse_opts *opts,
                        bool at_eof, size_t *consumed)
{
    parser P;
    jmp_buf jb;
    int r;

    parse_init(p, src, len);
    *consumed = 0;
    if (too_large(p, len))
        return SH_ERROR;
    parser_setup(&P, p, src, len, opts, at_eof, &jb);
    p->root = new_root(&P);
    P.unit_tail = &p->root->items;
    r = setjmp(jb);
    if (r == 0) {
        /* Blank lines and comments before the command belong to it. */
        while (peek(&P) == '\n') {
            consume(&P);
            if (P.pos >= P.len && !at_eof) {
                *consumed = P.pos;
                p->status = SH_OK;
                p->end_line = P.lineno;
                return SH_OK;
            }
        }
        (void)inputunit(&P);
        finish_root(p->root);
        if (opts && opts->track_shopt)
            track_shopt(&P, p->root->items);
        p->extglob_after = P.extglob;
        *consumed = P.next_fetch > P.pos ? P.next_fetch : P.pos;
        if (*consumed > len)
            *consumed = len;
        p->status = SH_OK;
        p->end_line = P.lineno;
        return SH_OK;
    }
    *P.unit_tail = NULL;
    p->extglob_after = P.extglob;
    p->end_line = P.lineno;
    if (r == JMP_INCOMPLETE) {
        p->status = SH_INCOMPLETE;
        return SH_INCOMPLETE;
    }
    p->status = SH_ERROR;
    if (!p->exit_status)
        p->exit_status = r == JMP_RECOVER ? 1 : 2;
    *consumed = P.line_end > len ? len : P.line_end;
    return SH_ERROR;
}

/* ---- child parses: backquote bodies, here-document substitutions ---------------------------- */

/* Parses src[start, end) as a whole script on a child parser sharing P's
 * arena. Returns NULL when bash would only find an error at run time
 * (*ok false), or the list (NULL for an empty one). */
sh_list *px_child_parse(parser *P, const char *src, size_t end, size_t start, bool *ok)
{
    jmp_buf jb;
    parser *C = lx_child_new(P, src, end, start, &jb);
    sh_list *l = node(P, sizeof(*l));

    /* the same bytes as P (a $(( read again) share its memo; a backquote
     * body is another text */
    C->memo = src == P->src ? P->memo : lx_memo_new(C);
    C->unit_tail = &l->items;
    *ok = true;
    if (setjmp(jb) == 0) {
        while (inputunit(C))
            ;
    } else {
        *ok = false;
    }
    lx_child_free(C);
    if (!*ok || !l->items)
        return NULL;
    finish_root(l);
    return l;
}
