/*
 * parsecheck: the parser on its own, for tests and measurements.
 *
 *   parsecheck [-O extglob] [--ast|--shape] [--next] [--track-shopt] [-c STRING | FILE]
 *
 * Without -c or FILE it reads stdin. Like `bash -n`: prints bash's messages
 * (prefixed "sbxsh: ", or "sbxsh: -c: " with -c, or "FILE: ") and exits 0,
 * 1 or 2. --ast prints the JSON tree; --next parses with sh_parse_next()
 * one complete command at a time, feeding the input a line at a time as a
 * reader of a pipe would, and prints each command's text. --shape prints the
 * tree as compact S-expressions (the golden format of ast-cases.txt).
 */
#include "common/strbuf.h"
#include "common/util.h"
#include "shell/ast_json.h"
#include "shell/parse.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>


/* ---- --shape: the tree as S-expressions ---- */

static const sh_parse *g_p;

static void q(const char *s, size_t n)
{
    putchar('"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c == '\n')
            printf("\\n");
        else if (c == '\t')
            printf("\\t");
        else if (c < 0x20 || c == 0x7f)
            printf("\\x%02x", c);
        else
            putchar(c);
    }
    putchar('"');
}

static void sp_list(const sh_list *l);
static void sp_word(const sh_word *w);
static void sp_cmd(const sh_cmd *c);

static void sp_parts(const sh_wpart *w)
{
    static const char *names[] = {
        "lit", "esc", "sq", "dq", "ansi", "locale", "param", "cmdsub", "bq", "arith",
        "procin", "procout", "tilde", "glob", "extglob", "brace",
    };
    for (; w; w = w->next) {
        printf(" (%s", names[w->kind]);
        switch (w->kind) {
        case WP_DQUOTE:
        case WP_LOCALE:
            sp_parts(w->parts);
            break;
        case WP_PARAM: {
            const sh_param *pm = w->param;
            printf(" ");
            if (pm->length)
                printf("#");
            if (pm->indirect)
                printf("!");
            q(pm->name, pm->name_len);
            if (pm->has_subscript) {
                printf(" [");
                q(g_p->src + pm->subscript.start, pm->subscript.end - pm->subscript.start);
                printf("]");
            }
            if (pm->op)
                printf(" %s", pm->op);
            if (pm->arg)
                sp_word(pm->arg);
            if (pm->arg2)
                sp_word(pm->arg2);
            if (pm->bad)
                printf(" BAD");
            break;
        }
        case WP_CMDSUB:
        case WP_BACKQUOTE:
        case WP_PROCSUB_IN:
        case WP_PROCSUB_OUT:
            if (w->body)
                sp_list(w->body);
            if (w->body_unparsed)
                printf(" UNPARSED");
            break;
        case WP_BRACE:
            printf(" ");
            q(w->text, w->len);
            if (w->parts)
                sp_parts(w->parts);
            break;
        default:
            printf(" ");
            q(w->text, w->len);
            break;
        }
        printf(")");
    }
}

static void sp_assign(const sh_assign *a)
{
    printf(" (assign ");
    q(a->name, a->name_len);
    if (a->has_subscript) {
        printf(" [");
        q(g_p->src + a->subscript.start, a->subscript.end - a->subscript.start);
        printf("]");
    }
    printf(a->append ? " +=" : " =");
    if (a->is_array) {
        printf(" (array");
        for (const sh_word *e = a->elements; e; e = e->next)
            sp_word(e);
        printf(")");
    } else {
        sp_word(a->value);
    }
    printf(")");
}

static void sp_word(const sh_word *w)
{
    printf(" (word");
    sp_parts(w->parts);
    if (w->assign)
        sp_assign(w->assign);
    printf(")");
}

static void sp_redirs(const sh_redir *r)
{
    static const char *ops[] = { "<", ">", ">>", ">|", "<>", "<&", ">&", "&>", "&>>", "<<<",
                                 "<<", "<<-" };
    for (; r; r = r->next) {
        printf(" (redir");
        if (r->fd >= 0)
            printf(" %d", r->fd);
        if (r->fd_var) {
            printf(" {");
            q(r->fd_var, r->fd_var_len);
            printf("}");
        }
        printf(" %s", ops[r->op]);
        sp_word(r->target);
        if (r->op == R_HEREDOC || r->op == R_HEREDOC_TAB) {
            printf(" (body%s ", r->heredoc_quoted ? " quoted" : "");
            q(g_p->src + r->body.start, r->body.end - r->body.start);
            if (!r->heredoc_quoted)
                sp_parts(r->body_parts);
            printf(")");
        }
        printf(")");
    }
}

static void sp_cond(const sh_cond *c)
{
    static const char *names[] = { "and", "or", "not", "group", "unary", "binary", "w" };
    printf(" (%s", names[c->kind]);
    if (c->op)
        printf(" %s", c->op);
    if (c->left)
        sp_word(c->left);
    if (c->right)
        sp_word(c->right);
    if (c->a)
        sp_cond(c->a);
    if (c->b)
        sp_cond(c->b);
    printf(")");
}

static void sp_span_text(const char *tag, sh_span s)
{
    printf(" (%s ", tag);
    q(g_p->src + s.start, s.end - s.start);
    printf(")");
}

static void sp_cmd(const sh_cmd *c)
{
    static const char *names[] = { "simple", "subshell", "group", "if", "while", "until", "for",
                                   "arith-for", "select", "case", "dbracket", "arith",
                                   "function", "coproc" };
    static const char *terms[] = { ";;", ";&", ";;&" };
    printf(" (%s", names[c->kind]);
    switch (c->kind) {
    case SH_SIMPLE:
        for (const sh_assign *a = c->assigns; a; a = a->next)
            sp_assign(a);
        for (const sh_word *w = c->words; w; w = w->next)
            sp_word(w);
        break;
    case SH_SUBSHELL:
    case SH_GROUP:
        sp_list(c->body);
        break;
    case SH_IF:
        for (const sh_if_clause *cl = c->clauses; cl; cl = cl->next) {
            sp_list(cl->cond);
            sp_list(cl->then_body);
        }
        if (c->else_body) {
            printf(" else");
            sp_list(c->else_body);
        }
        break;
    case SH_WHILE:
    case SH_UNTIL:
        sp_list(c->cond);
        sp_list(c->body);
        break;
    case SH_FOR:
    case SH_SELECT:
        printf(" ");
        q(c->var, c->var_len);
        if (c->has_in) {
            printf(" (in");
            for (const sh_word *w = c->for_words; w; w = w->next)
                sp_word(w);
            printf(")");
        }
        sp_list(c->body);
        break;
    case SH_ARITH_FOR:
        sp_span_text("init", c->arith_init);
        sp_span_text("cond", c->arith_cond);
        sp_span_text("step", c->arith_step);
        sp_list(c->body);
        break;
    case SH_CASE:
        sp_word(c->subject);
        for (const sh_case_item *it = c->items; it; it = it->next) {
            printf(" (item");
            for (const sh_word *w = it->patterns; w; w = w->next)
                sp_word(w);
            if (it->body)
                sp_list(it->body);
            printf(" %s)", terms[it->term]);
        }
        break;
    case SH_DBRACKET:
        sp_cond(c->cond_expr);
        break;
    case SH_ARITH:
        sp_span_text("expr", c->arith_cond);
        break;
    case SH_FUNCDEF:
    case SH_COPROC:
        if (c->name) {
            printf(" ");
            q(c->name, c->name_len);
        }
        if (c->function_keyword)
            printf(" keyword");
        sp_cmd(c->func_body);
        break;
    }
    sp_redirs(c->redirs);
    if (c->pipe_stderr)
        printf(" |&");
    printf(")");
}

static void sp_list(const sh_list *l)
{
    static const char *seps[] = { "", ";", "&", "nl" };
    printf(" (list");
    for (const sh_andor *a = l->items; a; a = a->next) {
        printf(" (andor");
        for (const sh_pipeline *p = a->pipes; p; p = p->next) {
            printf(" (pipe");
            if (p->op)
                printf(" %s", p->op == SH_OP_AND ? "&&" : "||");
            if (p->bang)
                printf(" !");
            if (p->timed)
                printf(p->time_posix ? " time-p" : " time");
            for (const sh_cmd *c = p->cmds; c; c = c->next)
                sp_cmd(c);
            printf(")");
        }
        if (a->sep)
            printf(" %s", seps[a->sep]);
        printf(")");
    }
    printf(")");
}

static const char *g_wprefix = "sbxsh: ";

static void print_warnings(const sh_parse *p)
{
    strbuf w = STRBUF_INIT;
    sh_parse_format_warnings(p, g_wprefix, &w);
    fwrite(w.buf, 1, w.len, stderr);
    strbuf_release(&w);
}

static int run_next(const char *buf, size_t len, const sh_parse_opts *base, const char *prefix)
{
    sh_parse_opts o = *base;
    size_t off = 0, avail = 0;
    int status = 0;

    while (off < len) {
        sh_parse p;
        size_t used = 0;
        /* offer one more line each time the parser asks for more */
        if (avail <= off) {
            const char *nl = memchr(buf + off, '\n', len - off);
            avail = nl ? (size_t)(nl - buf) + 1 : len;
        }
        sh_status st = sh_parse_next(&p, buf + off, avail - off, &o, avail == len, &used);
        if (st != SH_INCOMPLETE)
            print_warnings(&p);
        if (st == SH_INCOMPLETE) {
            const char *nl = memchr(buf + avail, '\n', len - avail);
            avail = nl ? (size_t)(nl - buf) + 1 : len;
            sh_parse_free(&p);
            continue;
        }
        if (st == SH_ERROR) {
            strbuf e = STRBUF_INIT;
            sh_parse_format_error(&p, prefix, &e);
            fwrite(e.buf, 1, e.len, stderr);
            strbuf_release(&e);
            status = p.exit_status;
            sh_parse_free(&p);
            if (status == 2)
                return 2;
        } else {
            printf("[%.*s]\n", (int)used, buf + off);
            o.extglob = p.extglob_after;
            sh_parse_free(&p);
        }
        for (size_t i = off; i < off + used; i++)
            if (buf[i] == '\n')
                o.first_line++;
        if (used == 0)
            break;
        off += used;
        if (avail < off)
            avail = off;
    }
    return status;
}

int main(int argc, char **argv)
{
    sh_parse_opts o = { 0 };
    const char *cmd = NULL, *file = NULL;
    bool ast = false, next = false, shape_out = false;
    char *buf = NULL;
    size_t len = 0;
    strbuf prefix = STRBUF_INIT;
    sbx_err err;
    int i, status;

    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-O") && i + 1 < argc && !strcmp(argv[i + 1], "extglob")) {
            o.extglob = true;
            i++;
        } else if (!strcmp(argv[i], "-n")) {
            continue;
        } else if (!strcmp(argv[i], "--ast")) {
            ast = true;
        } else if (!strcmp(argv[i], "--shape")) {
            shape_out = true;
        } else if (!strcmp(argv[i], "--next")) {
            next = true;
        } else if (!strcmp(argv[i], "--track-shopt")) {
            o.track_shopt = true;
        } else if (!strcmp(argv[i], "-c") && i + 1 < argc) {
            cmd = argv[++i];
        } else {
            file = argv[i];
        }
    }
    if (cmd) {
        buf = xstrdup(cmd);
        len = strlen(cmd);
        strbuf_addstr(&prefix, "sbxsh: -c: ");
    } else if (file) {
        if (read_file(file, (size_t)1 << 30, &buf, &len, &err) < 0) {
            fprintf(stderr, "sbxsh: %s\n", err.msg);
            return 127;
        }
        strbuf_addf(&prefix, "%s: ", file);
        g_wprefix = prefix.buf;
    } else {
        strbuf sb = STRBUF_INIT;
        /* A read error ends the input as end of file does: what was read is checked. */
        (void)strbuf_read_fd(&sb, 0, SIZE_MAX);
        buf = strbuf_detach(&sb, &len);
        strbuf_addstr(&prefix, "sbxsh: ");
    }

    if (next) {
        status = run_next(buf, len, &o, prefix.buf);
    } else {
        sh_parse p;
        sh_parse_all(&p, buf, len, &o, true);
        print_warnings(&p);
        if (p.status != SH_OK) {
            strbuf e = STRBUF_INIT;
            sh_parse_format_error(&p, prefix.buf, &e);
            fwrite(e.buf, 1, e.len, stderr);
            strbuf_release(&e);
            status = p.exit_status ? p.exit_status : 2;
        } else {
            status = 0;
            if (shape_out) {
                g_p = &p;
                sp_list(p.root);
                putchar('\n');
            }
            if (ast && sh_ast_json_print(&p, stdout, &err) < 0) {
                fprintf(stderr, "sbxsh: %s\n", err.msg);
                status = 125;
            }
        }
        sh_parse_free(&p);
    }
    free(buf);
    strbuf_release(&prefix);
    return status;
}
