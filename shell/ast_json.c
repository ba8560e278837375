/*
 * The syntax tree as JSON. Every node has "type" and "span" ([start, end)
 * byte offsets into the input); words and leaf parts also carry their text.
 * Strings are escaped here (not by cJSON) so that NUL bytes and invalid
 * UTF-8 still give valid JSON: an invalid byte b becomes \u00bb.
 */
#include "shell/ast_json.h"

#include "common/strbuf.h"

#include <cjson/cJSON.h>
#include <string.h>

typedef struct jctx {
    const sh_parse *p;
    bool oom;
} jctx;

/* Strings are raw JSON written by strbuf_add_json_escaped, which keeps them
 * valid for bytes that are not UTF-8 (\u00XX), as shell words may be. */
static cJSON *jstr(jctx *j, const char *s, size_t n)
{
    strbuf sb = STRBUF_INIT;
    cJSON *r;
    strbuf_addch(&sb, '"');
    strbuf_add_json_escaped(&sb, s, n);
    strbuf_addch(&sb, '"');
    r = cJSON_CreateRaw(sb.buf);
    strbuf_release(&sb);
    if (!r)
        j->oom = true;
    return r;
}

static void add(jctx *j, cJSON *obj, const char *key, cJSON *val)
{
    if (!val) {
        j->oom = true;
        return;
    }
    if (!cJSON_AddItemToObject(obj, key, val)) {
        cJSON_Delete(val);
        j->oom = true;
    }
}

static void push(jctx *j, cJSON *arr, cJSON *val)
{
    if (!val) {
        j->oom = true;
        return;
    }
    if (!cJSON_AddItemToArray(arr, val)) {
        cJSON_Delete(val);
        j->oom = true;
    }
}

static cJSON *jspan(sh_span s)
{
    cJSON *a = cJSON_CreateArray();
    if (a) {
        cJSON_AddItemToArray(a, cJSON_CreateNumber(s.start));
        cJSON_AddItemToArray(a, cJSON_CreateNumber(s.end));
    }
    return a;
}

static cJSON *jnode(jctx *j, const char *type, sh_span span)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) {
        j->oom = true;
        return NULL;
    }
    add(j, o, "type", cJSON_CreateString(type));
    add(j, o, "span", jspan(span));
    return o;
}

static cJSON *jsource(jctx *j, sh_span s)
{
    return jstr(j, j->p->src + s.start, s.end - s.start);
}

static cJSON *j_list(jctx *j, const sh_list *l);
static cJSON *j_word(jctx *j, const sh_word *w);
static cJSON *j_cmd(jctx *j, const sh_cmd *c);

static cJSON *j_words(jctx *j, const sh_word *w)
{
    cJSON *a = cJSON_CreateArray();
    for (; a && w; w = w->next)
        push(j, a, j_word(j, w));
    return a;
}

static const char *part_names[] = {
    [WP_LIT] = "lit", [WP_ESCAPED] = "escaped", [WP_SQUOTE] = "squote",
    [WP_DQUOTE] = "dquote", [WP_ANSI] = "ansi", [WP_LOCALE] = "locale",
    [WP_PARAM] = "param", [WP_CMDSUB] = "cmdsub", [WP_BACKQUOTE] = "backquote",
    [WP_ARITH] = "arith", [WP_PROCSUB_IN] = "procsub_in", [WP_PROCSUB_OUT] = "procsub_out",
    [WP_TILDE] = "tilde", [WP_GLOB] = "glob", [WP_EXTGLOB] = "extglob", [WP_BRACE] = "brace",
};

static cJSON *j_parts(jctx *j, const sh_wpart *w);

static cJSON *j_param(jctx *j, const sh_param *pm)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    add(j, o, "name", jstr(j, pm->name ? pm->name : "", pm->name ? pm->name_len : 0));
    add(j, o, "braced", cJSON_CreateBool(pm->braced));
    if (pm->length)
        add(j, o, "length", cJSON_CreateTrue());
    if (pm->indirect)
        add(j, o, "indirect", cJSON_CreateTrue());
    if (pm->has_subscript) {
        cJSON *s = cJSON_CreateObject();
        if (s) {
            add(j, s, "span", jspan(pm->subscript));
            add(j, s, "text", jsource(j, pm->subscript));
        }
        add(j, o, "subscript", s);
    }
    if (pm->op)
        add(j, o, "op", cJSON_CreateString(pm->op));
    if (pm->arg)
        add(j, o, "arg", j_word(j, pm->arg));
    if (pm->arg2)
        add(j, o, "arg2", j_word(j, pm->arg2));
    if (pm->bad)
        add(j, o, "bad", cJSON_CreateTrue());
    return o;
}

static cJSON *j_part(jctx *j, const sh_wpart *w)
{
    cJSON *o = jnode(j, part_names[w->kind], w->span);
    if (!o)
        return NULL;
    switch (w->kind) {
    case WP_DQUOTE:
    case WP_LOCALE:
        add(j, o, "parts", j_parts(j, w->parts));
        break;
    case WP_PARAM:
        add(j, o, "param", j_param(j, w->param));
        break;
    case WP_CMDSUB:
    case WP_BACKQUOTE:
    case WP_PROCSUB_IN:
    case WP_PROCSUB_OUT:
        if (w->kind == WP_BACKQUOTE)
            add(j, o, "text", jstr(j, w->text, w->len));
        add(j, o, "body", w->body ? j_list(j, w->body) : cJSON_CreateNull());
        if (w->body_unparsed)
            add(j, o, "unparsed", cJSON_CreateTrue());
        break;
    case WP_BRACE:
        add(j, o, "text", jstr(j, w->text, w->len));
        if (w->parts)
            add(j, o, "parts", j_parts(j, w->parts));
        break;
    default:
        add(j, o, "text", jstr(j, w->text, w->len));
        break;
    }
    return o;
}

static cJSON *j_parts(jctx *j, const sh_wpart *w)
{
    cJSON *a = cJSON_CreateArray();
    for (; a && w; w = w->next)
        push(j, a, j_part(j, w));
    return a;
}

static cJSON *j_assign(jctx *j, const sh_assign *as)
{
    cJSON *o = jnode(j, "assign", as->span);
    if (!o)
        return NULL;
    add(j, o, "name", jstr(j, as->name, as->name_len));
    if (as->has_subscript) {
        cJSON *s = cJSON_CreateObject();
        if (s) {
            add(j, s, "span", jspan(as->subscript));
            add(j, s, "text", jsource(j, as->subscript));
        }
        add(j, o, "subscript", s);
    }
    if (as->append)
        add(j, o, "append", cJSON_CreateTrue());
    if (as->is_array)
        add(j, o, "elements", j_words(j, as->elements));
    else
        add(j, o, "value", j_word(j, as->value));
    return o;
}

static cJSON *j_word(jctx *j, const sh_word *w)
{
    static const char *const flag_names[] = {
        "quoted", "expansion", "glob", "tilde", "brace", "ansi", "assign",
    };
    cJSON *o = jnode(j, "word", w->span);
    cJSON *f;
    if (!o)
        return NULL;
    add(j, o, "text", jsource(j, w->span));
    f = cJSON_CreateArray();
    for (size_t i = 0; f && i < sizeof(flag_names) / sizeof(flag_names[0]); i++)
        if (w->flags & (1u << i))
            push(j, f, cJSON_CreateString(flag_names[i]));
    add(j, o, "flags", f);
    add(j, o, "parts", j_parts(j, w->parts));
    if (w->assign)
        add(j, o, "assign", j_assign(j, w->assign));
    return o;
}

static const char *redir_ops[] = {
    [R_IN] = "<", [R_OUT] = ">", [R_APPEND] = ">>", [R_CLOBBER] = ">|", [R_RDWR] = "<>",
    [R_DUP_IN] = "<&", [R_DUP_OUT] = ">&", [R_OUT_ERR] = "&>", [R_APPEND_ERR] = "&>>",
    [R_HERESTRING] = "<<<", [R_HEREDOC] = "<<", [R_HEREDOC_TAB] = "<<-",
};

static cJSON *j_redir(jctx *j, const sh_redir *r)
{
    cJSON *o = jnode(j, "redir", r->span);
    if (!o)
        return NULL;
    if (r->fd >= 0)
        add(j, o, "fd", cJSON_CreateNumber(r->fd));
    if (r->fd_var)
        add(j, o, "fd_var", jstr(j, r->fd_var, r->fd_var_len));
    add(j, o, "op", cJSON_CreateString(redir_ops[r->op]));
    if (r->target)
        add(j, o, "target", j_word(j, r->target));
    if (r->op == R_HEREDOC || r->op == R_HEREDOC_TAB) {
        cJSON *b = cJSON_CreateObject();
        add(j, o, "delim", jstr(j, r->delim, r->delim_len));
        add(j, o, "quoted", cJSON_CreateBool(r->heredoc_quoted));
        if (b) {
            add(j, b, "span", jspan(r->body));
            add(j, b, "text", jsource(j, r->body));
            add(j, b, "end", jspan(r->body_end));
            if (!r->heredoc_quoted)
                add(j, b, "parts", j_parts(j, r->body_parts));
        }
        add(j, o, "body", b);
    }
    return o;
}

static cJSON *j_textspan(jctx *j, sh_span s)
{
    cJSON *o = cJSON_CreateObject();
    if (o) {
        add(j, o, "span", jspan(s));
        add(j, o, "text", jsource(j, s));
    }
    return o;
}

static const char *cond_names[] = {
    [COND_AND] = "and", [COND_OR] = "or", [COND_NOT] = "not", [COND_GROUP] = "group",
    [COND_UNARY] = "unary", [COND_BINARY] = "binary", [COND_WORD] = "word",
};

static cJSON *j_cond(jctx *j, const sh_cond *c)
{
    cJSON *o = jnode(j, cond_names[c->kind], c->span);
    if (!o)
        return NULL;
    if (c->op)
        add(j, o, "op", jstr(j, c->op, strlen(c->op)));
    if (c->left)
        add(j, o, "left", j_word(j, c->left));
    if (c->right)
        add(j, o, "right", j_word(j, c->right));
    if (c->a)
        add(j, o, c->b ? "a" : "expr", j_cond(j, c->a));
    if (c->b)
        add(j, o, "b", j_cond(j, c->b));
    return o;
}

static const char *cmd_names[] = {
    [SH_SIMPLE] = "simple", [SH_SUBSHELL] = "subshell", [SH_GROUP] = "group", [SH_IF] = "if",
    [SH_WHILE] = "while", [SH_UNTIL] = "until", [SH_FOR] = "for", [SH_ARITH_FOR] = "arith_for",
    [SH_SELECT] = "select", [SH_CASE] = "case", [SH_DBRACKET] = "dbracket",
    [SH_ARITH] = "arith", [SH_FUNCDEF] = "function", [SH_COPROC] = "coproc",
};

static cJSON *j_cmd(jctx *j, const sh_cmd *c)
{
    cJSON *o = jnode(j, cmd_names[c->kind], c->span);
    if (!o)
        return NULL;
    if (c->pipe_stderr)
        add(j, o, "pipe_stderr", cJSON_CreateTrue());
    switch (c->kind) {
    case SH_SIMPLE: {
        cJSON *a = cJSON_CreateArray();
        for (const sh_assign *as = c->assigns; a && as; as = as->next)
            push(j, a, j_assign(j, as));
        add(j, o, "assigns", a);
        add(j, o, "words", j_words(j, c->words));
        break;
    }
    case SH_SUBSHELL:
    case SH_GROUP:
        add(j, o, "body", j_list(j, c->body));
        break;
    case SH_IF: {
        cJSON *a = cJSON_CreateArray();
        for (const sh_if_clause *cl = c->clauses; a && cl; cl = cl->next) {
            cJSON *x = cJSON_CreateObject();
            if (x) {
                add(j, x, "span", jspan(cl->span));
                add(j, x, "cond", j_list(j, cl->cond));
                add(j, x, "then", j_list(j, cl->then_body));
            }
            push(j, a, x);
        }
        add(j, o, "clauses", a);
        if (c->else_body)
            add(j, o, "else", j_list(j, c->else_body));
        break;
    }
    case SH_WHILE:
    case SH_UNTIL:
        add(j, o, "cond", j_list(j, c->cond));
        add(j, o, "body", j_list(j, c->body));
        break;
    case SH_FOR:
    case SH_SELECT:
        add(j, o, "var", jstr(j, c->var, c->var_len));
        if (c->has_in)
            add(j, o, "in", j_words(j, c->for_words));
        add(j, o, "body", j_list(j, c->body));
        break;
    case SH_ARITH_FOR:
        add(j, o, "init", j_textspan(j, c->arith_init));
        add(j, o, "cond", j_textspan(j, c->arith_cond));
        add(j, o, "step", j_textspan(j, c->arith_step));
        add(j, o, "body", j_list(j, c->body));
        break;
    case SH_CASE: {
        static const char *terms[] = { ";;", ";&", ";;&" };
        cJSON *a = cJSON_CreateArray();
        add(j, o, "subject", j_word(j, c->subject));
        for (const sh_case_item *it = c->items; a && it; it = it->next) {
            cJSON *x = jnode(j, "case_item", it->span);
            if (x) {
                add(j, x, "patterns", j_words(j, it->patterns));
                add(j, x, "body", it->body ? j_list(j, it->body) : cJSON_CreateNull());
                add(j, x, "term", cJSON_CreateString(terms[it->term]));
            }
            push(j, a, x);
        }
        add(j, o, "items", a);
        break;
    }
    case SH_DBRACKET:
        add(j, o, "expr", j_cond(j, c->cond_expr));
        break;
    case SH_ARITH:
        add(j, o, "expr", j_textspan(j, c->arith_cond));
        break;
    case SH_FUNCDEF:
    case SH_COPROC:
        if (c->name)
            add(j, o, "name", jstr(j, c->name, c->name_len));
        if (c->kind == SH_FUNCDEF)
            add(j, o, "keyword", cJSON_CreateBool(c->function_keyword));
        add(j, o, "body", j_cmd(j, c->func_body));
        break;
    }
    if (c->redirs) {
        cJSON *a = cJSON_CreateArray();
        for (const sh_redir *r = c->redirs; a && r; r = r->next)
            push(j, a, j_redir(j, r));
        add(j, o, "redirs", a);
    }
    return o;
}

static cJSON *j_list(jctx *j, const sh_list *l)
{
    static const char *seps[] = { "", ";", "&", "\n" };
    cJSON *o = jnode(j, "list", l->span), *items = cJSON_CreateArray();
    for (const sh_andor *a = l->items; items && a; a = a->next) {
        cJSON *x = jnode(j, "andor", a->span), *pipes = cJSON_CreateArray();
        for (const sh_pipeline *p = a->pipes; pipes && p; p = p->next) {
            cJSON *y = jnode(j, "pipeline", p->span), *cmds = cJSON_CreateArray();
            if (y) {
                if (p->op)
                    add(j, y, "op", cJSON_CreateString(p->op == SH_OP_AND ? "&&" : "||"));
                if (p->bang)
                    add(j, y, "bang", cJSON_CreateTrue());
                if (p->timed)
                    add(j, y, "time", cJSON_CreateString(p->time_posix ? "-p" : ""));
            }
            for (const sh_cmd *c = p->cmds; cmds && c; c = c->next)
                push(j, cmds, j_cmd(j, c));
            if (y)
                add(j, y, "commands", cmds);
            else
                cJSON_Delete(cmds);
            push(j, pipes, y);
        }
        if (x) {
            add(j, x, "pipelines", pipes);
            add(j, x, "sep", cJSON_CreateString(seps[a->sep]));
        } else {
            cJSON_Delete(pipes);
        }
        push(j, items, x);
    }
    if (o)
        add(j, o, "items", items);
    else
        cJSON_Delete(items);
    return o;
}

char *sh_ast_json_string(const sh_parse *p, bool pretty)
{
    jctx j = { p, false };
    cJSON *root;
    char *s;

    if (!p->root)
        return NULL;
    root = j_list(&j, p->root);
    if (!root || j.oom) {
        cJSON_Delete(root);
        return NULL;
    }
    s = pretty ? cJSON_Print(root) : cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return s;
}

int sh_ast_json_print(const sh_parse *p, FILE *out, sbx_err *err)
{
    char *s = sh_ast_json_string(p, true);
    if (!s)
        return sbx_errf(err, "cannot build the JSON syntax tree: out of memory");
    fputs(s, out);
    fputc('\n', out);
    cJSON_free(s);
    if (ferror(out))
        return sbx_errno(err, "writing the syntax tree");
    return 0;
}
