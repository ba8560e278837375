/*
 * The parser's API: spans and re-parsing of every case in cases.txt,
 * incremental parsing, depth limits, 1 MB inputs, NUL bytes, static word
 * values, here-document text, track_shopt, error formatting.
 *
 * Every parse reads an exact-size heap copy of its input, so that ASan
 * (make check-asan) reports any read past len.
 */
#include "../lib/tap.h"

#include "common/strbuf.h"
#include "common/util.h"
#include "shell/ast_json.h"
#include "shell/parse.h"
#include "tests/shell/ast_check.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers --------------------------------------------------------------- */

typedef struct owned_parse {
    sh_parse p;
    char *buf;
} owned_parse;

static sh_status parse_n(owned_parse *o, const char *s, size_t n, const sh_parse_opts *opts)
{
    o->buf = xmalloc(n ? n : 1);
    memcpy(o->buf, s, n);
    return sh_parse_all(&o->p, o->buf, n, opts, true);
}

static sh_status parse(owned_parse *o, const char *s)
{
    return parse_n(o, s, strlen(s), NULL);
}

static void done(owned_parse *o)
{
    sh_parse_free(&o->p);
    free(o->buf);
}

static char *errors_of(const sh_parse *p)
{
    strbuf sb = STRBUF_INIT;
    sh_parse_format_error(p, "sbxsh: ", &sb);
    return strbuf_detach(&sb, NULL);
}

/* The first word of the first command. */
static const sh_word *first_word(const sh_parse *p)
{
    return p->root->items->pipes->cmds->words;
}

/* ---- every valid case of the table: invariants, JSON, re-parsing ------------- */

static void check_tree(const char *name, const char *code, size_t n, const sh_parse_opts *opts)
{
    owned_parse o;
    strbuf why = STRBUF_INIT;
    char *json;
    cJSON *back;
    int reparsed = 1;

    if (parse_n(&o, code, n, opts) != SH_OK) {
        ok(0, "%s: parses", name);
        done(&o);
        return;
    }
    if (ast_check(&o.p, &why) < 0)
        diag("%s: %s", name, why.buf);
    json = sh_ast_json_string(&o.p, false);
    back = json ? cJSON_Parse(json) : NULL;
    for (const sh_andor *a = o.p.root->items; a; a = a->next) {
        strbuf t = STRBUF_INIT;
        owned_parse q;
        sh_span_text_with_heredocs(&o.p, a->span, &t);
        if (parse_n(&q, t.buf, t.len, opts) != SH_OK) {
            diag("%s: the text of [%u,%u) does not parse alone:\n%s", name, a->span.start,
                 a->span.end, t.buf);
            reparsed = 0;
        }
        done(&q);
        strbuf_release(&t);
    }
    ok(why.len == 0 && back && reparsed, "%s: spans, JSON and re-parsed parts", name);
    cJSON_Delete(back);
    free(json);
    strbuf_release(&why);
    done(&o);
}

/* Reads cases.txt (see its header) and checks every case expected to parse. */
static void table_cases(void)
{
    char *buf;
    size_t len;
    sbx_err err;
    int n = 0;

    if (read_file("tests/shell/cases.txt", 1 << 24, &buf, &len, &err) < 0) {
        ok(0, "read tests/shell/cases.txt: %s", err.msg);
        return;
    }
    for (char *s = buf; (s = strstr(s, "\n#### ")) != NULL;) {
        char *name = s + 6, *eol = strchr(name, '\n'), *code, *end;
        sh_parse_opts opts = { 0 };
        bool nofinal = false;
        strbuf c = STRBUF_INIT;

        if (!eol)
            break;
        *eol = 0;
        code = eol + 1;
        for (;;) {
            if (!strncmp(code, "## options: -O extglob\n", 23)) {
                opts.extglob = true;
                code += 23;
            } else if (!strncmp(code, "## no-final-newline\n", 20)) {
                nofinal = true;
                code += 20;
            } else if (!strncmp(code, "## bash-5.2.15-accepts\n", 23)) {
                code += 23;
            } else {
                break;
            }
        }
        end = strstr(code, "## status: ");
        if (!end)
            break;
        strbuf_add(&c, code, (size_t)(end - code));
        if (nofinal && c.len)
            strbuf_setlen(&c, c.len - 1);
        if (!strncmp(end, "## status: 0\n", 13)) {
            check_tree(name, c.buf, c.len, &opts);
            n++;
        }
        strbuf_release(&c);
        s = end;
    }
    free(buf);
    ok(n > 150, "checked %d valid table cases", n);
}

/* ---- incremental parsing --------------------------------------------------------- */

/* Feeds text to sh_parse_next() in pieces of `step` bytes, as a reader of
 * stdin does, and returns the complete commands it cut, "|"-separated
 * (blank lines and comments handed back alone join the next command). */
static void next_commands(const char *text, size_t step, strbuf *out)
{
    size_t len = strlen(text), off = 0, avail = 0;
    sh_parse_opts opts = { 0 };
    char *buf = xmalloc(len + 1);

    memcpy(buf, text, len);
    while (off < len) {
        sh_parse p;
        size_t used = 0;
        char *piece;
        if (avail < off)
            avail = off;
        piece = xmalloc(avail - off + 1);
        memcpy(piece, buf + off, avail - off);
        sh_status st = sh_parse_next(&p, piece, avail - off, &opts, avail == len, &used);
        if (st == SH_INCOMPLETE) {
            avail = avail + step > len ? len : avail + step;
        } else if (st == SH_ERROR) {
            strbuf_addstr(out, "ERROR");
            sh_parse_free(&p);
            free(piece);
            break;
        } else {
            if (used == 0) {
                avail = avail + step > len ? len : avail + step;
            } else {
                strbuf_add(out, buf + off, used);
                if (p.root->items)
                    strbuf_addch(out, '|');
                for (size_t i = off; i < off + used; i++)
                    if (buf[i] == '\n')
                        opts.first_line++;
                off += used;
            }
        }
        sh_parse_free(&p);
        free(piece);
    }
    free(buf);
}

static void incremental(void)
{
    static const char script[] =
        "echo one\n"
        "\n# comment\n"
        "if true; then\n  echo two\nfi\n"
        "cat <<EOF; echo after\nbody\nEOF\n"
        "x=$(printf '%s\\n' \"a\n  b\")\n"
        "echo 'multi\nline' \\\n  cont\n";
    static const char want[] =
        "echo one\n|\n# comment\nif true; then\n  echo two\nfi\n|"
        "cat <<EOF; echo after\nbody\nEOF\n|x=$(printf '%s\\n' \"a\n  b\")\n|"
        "echo 'multi\nline' \\\n  cont\n|";
    size_t steps[] = { 1, 2, 7, 64, 4096 };

    for (size_t i = 0; i < ARRAY_SIZE(steps); i++) {
        strbuf got = STRBUF_INIT;
        next_commands(script, steps[i], &got);
        is_str(got.buf, want, "sh_parse_next in pieces of %zu bytes", steps[i]);
        strbuf_release(&got);
    }

    /* incomplete input asks for more; at EOF it is the error bash gives */
    {
        static const char *partial[] = { "if true; then", "echo \"abc", "cat <<EOF\nx\n",
                                         "echo $(", "a &&", "echo \\", "f() {", "case x in" };
        for (size_t i = 0; i < ARRAY_SIZE(partial); i++) {
            sh_parse p;
            size_t used;
            char *b = xstrdup(partial[i]);
            is_int(sh_parse_next(&p, b, strlen(b), NULL, false, &used), SH_INCOMPLETE,
                   "'%s' is incomplete", partial[i]);
            sh_parse_free(&p);
            is_int(sh_parse_all(&p, b, strlen(b), NULL, false), SH_INCOMPLETE,
                   "sh_parse_all(at_eof false): '%s' is incomplete", partial[i]);
            sh_parse_free(&p);
            free(b);
        }
    }
    /* an error is an error at once */
    {
        sh_parse p;
        size_t used;
        char *b = xstrdup("fi\necho more");
        is_int(sh_parse_next(&p, b, strlen(b), NULL, false, &used), SH_ERROR,
               "fi: error without waiting for more input");
        sh_parse_free(&p);
        free(b);
    }
    /* a buffer of blank lines and comments */
    {
        sh_parse p;
        size_t used;
        char *b = xstrdup("\n# c\n\n");
        is_int(sh_parse_next(&p, b, strlen(b), NULL, false, &used), SH_OK, "blank lines: OK");
        ok(p.root->items == NULL && used == strlen(b), "blank lines: no command, all consumed");
        sh_parse_free(&p);
        free(b);
    }
    /* line numbers continue with first_line */
    {
        sh_parse p;
        sh_parse_opts opts = { .first_line = 41 };
        size_t used;
        char *b = xstrdup("if fi\n");
        char *e;
        sh_parse_next(&p, b, strlen(b), &opts, true, &used);
        e = errors_of(&p);
        is_str(e, "sbxsh: line 42: syntax error near unexpected token `fi'\n"
                  "sbxsh: line 42: `if fi'\n", "first_line shifts line numbers");
        free(e);
        sh_parse_free(&p);
        free(b);
    }
}

/* ---- depth limits and big inputs ---------------------------------------------------- */

static char *repeat3(const char *open, const char *pre, size_t n, const char *mid,
                     const char *post, const char *close)
{
    strbuf sb = STRBUF_INIT;
    strbuf_addstr(&sb, open);
    for (size_t i = 0; i < n; i++)
        strbuf_addstr(&sb, pre);
    strbuf_addstr(&sb, mid);
    for (size_t i = 0; i < n; i++)
        strbuf_addstr(&sb, post);
    strbuf_addstr(&sb, close);
    strbuf_addch(&sb, '\n');
    return strbuf_detach(&sb, NULL);
}

static void depth_limits(void)
{
    static const struct { const char *name, *open, *pre, *mid, *post, *close; } nest[] = {
        { "subshells", "", "( ", "x", " )", "" },
        { "groups", "", "{ ", "x;", " }", "" },
        { "command substitutions", "", "echo $(", "x", ")", "" },
        { "quoted command substitutions", "", "echo \"$(", "x", ")\"", "" },
        { "parameter defaults", "echo ", "${x:-", "y", "}", "" },
        { "arithmetic", "echo ", "$((", "1", "))", "" },
        { "if", "", "if x; then ", "y", "; fi", "" },
        { "while", "", "while x; do ", "y", "; done", "" },
        { "case", "", "case x in x) ", "y", ";; esac", "" },
        { "[[ groups", "[[ ", "( ", "x", " )", " ]]" },
        { "[[ nots", "[[ ", "! ", "x", "", " ]]" },
        { "functions", "", "f() { ", "x", "; }", "" },
        { "process substitutions", "", "cat <(", "x", ")", "" },
        { "arrays in substitutions", "", "a=($(", "x", "))", "" },
        { "extglob", "echo ", "@(", "x", ")", "" },
        { "mixed", "", "( { echo \"${x:-$(", "x", ")}\"; } )", "" },
        /* read twice by bash (as arithmetic, then as commands): linear here */
        { "$(( that are not arithmetic", "echo ", "$((echo ", "x", ") )", "" },
        { "(( that are subshells", "", "((echo $(", "x", ") ) )", "" },
    };
    sh_parse_opts ext = { .extglob = true };

    for (size_t i = 0; i < ARRAY_SIZE(nest); i++) {
        owned_parse o;
        char *shallow = repeat3(nest[i].open, nest[i].pre, 50, nest[i].mid, nest[i].post,
                                nest[i].close);
        char *deep = repeat3(nest[i].open, nest[i].pre, 20000, nest[i].mid, nest[i].post,
                             nest[i].close);
        is_int(parse_n(&o, shallow, strlen(shallow), &ext), SH_OK, "50 nested %s parse",
               nest[i].name);
        done(&o);
        if (parse_n(&o, deep, strlen(deep), &ext) == SH_OK) {
            ok(1, "20000 nested %s: no crash (within the limit)", nest[i].name);
        } else {
            char *e = errors_of(&o.p);
            ok(strstr(e, "nesting too deep") != NULL, "20000 nested %s: nesting error, no crash",
               nest[i].name);
            free(e);
        }
        done(&o);
        free(shallow);
        free(deep);
    }
    {
        owned_parse o;
        sh_parse_opts small = { .max_depth = 10 };
        char *s = repeat3("", "( ", 12, "x", " )", "");
        char *e;
        is_int(parse_n(&o, s, strlen(s), &small), SH_ERROR, "max_depth 10: 12 subshells fail");
        e = errors_of(&o.p);
        ok(strstr(e, "nesting too deep: more than 10 levels") != NULL,
           "max_depth error message: %s", e);
        free(e);
        done(&o);
        free(s);
    }
}

static void big_inputs(void)
{
    static const struct { const char *name, *unit; sh_status want; } big[] = {
        { "short commands", "echo \"a $x\" | grep -q b && cd /tmp || exit 1\n", SH_OK },
        { "one long word", "a", SH_OK },
        { "a long pipeline", " | a", SH_OK },
        { "a long && chain", " && a", SH_OK },
        { "here-documents", "cat <<E\n$x\nE\n", SH_OK },
        { "assignments", "x=1 ", SH_OK },
        { "brace expansions", "{a,b}", SH_OK },
        { "unmatched braces", "{", SH_OK },
        { "globs", "*?[ab]", SH_OK },
        { "continuations", "echo \\\n", SH_OK },
        { "comments", "# comment\n", SH_OK },
        { "dollars", "$", SH_OK },
        { "case items", "a) echo;;\n", SH_OK },
        { "double parens", "((", SH_ERROR },
        { "open subshells", "( (", SH_ERROR },
    };
    const size_t target = 1 << 20;

    for (size_t i = 0; i < ARRAY_SIZE(big); i++) {
        strbuf sb = STRBUF_INIT;
        owned_parse o;
        const char *u = big[i].unit;
        if (!strcmp(big[i].name, "one long word") || !strcmp(big[i].name, "a long pipeline") ||
            !strcmp(big[i].name, "a long && chain") || !strcmp(big[i].name, "brace expansions") ||
            !strcmp(big[i].name, "unmatched braces") || !strcmp(big[i].name, "globs") ||
            !strcmp(big[i].name, "dollars"))
            strbuf_addstr(&sb, "echo ");
        if (!strcmp(big[i].name, "case items"))
            strbuf_addstr(&sb, "case x in\n");
        while (sb.len < target)
            strbuf_addstr(&sb, u);
        if (!strcmp(big[i].name, "case items"))
            strbuf_addstr(&sb, "esac\n");
        else if (!strcmp(big[i].name, "assignments"))
            strbuf_addstr(&sb, "cmd\n");
        else if (sb.buf[sb.len - 1] != '\n')
            strbuf_addch(&sb, '\n');
        is_int(parse_n(&o, sb.buf, sb.len, NULL), big[i].want, "1 MB of %s", big[i].name);
        done(&o);
        strbuf_release(&sb);
    }
}

/* ---- NUL bytes, static values, here-document text ------------------------------------ */

static void nul_bytes(void)
{
    static const char with[] = "ec\0ho a\0b 'c\0d' \"e\0$x\"\n";
    owned_parse o;
    strbuf v = STRBUF_INIT;
    const sh_word *w;

    is_int(parse_n(&o, with, sizeof(with) - 1, NULL), SH_OK, "NUL bytes: parses");
    w = first_word(&o.p);
    ok(sh_word_static_value(w, &v) && !strcmp(v.buf, "echo"), "NUL dropped in a command name");
    strbuf_reset(&v);
    ok(sh_word_static_value(w->next, &v) && !strcmp(v.buf, "ab"), "NUL dropped in a word");
    strbuf_reset(&v);
    ok(sh_word_static_value(w->next->next, &v) && !strcmp(v.buf, "cd"),
       "NUL dropped in single quotes");
    strbuf_release(&v);
    done(&o);
}

static void static_values(void)
{
    static const struct { const char *word, *value; } yes[] = {
        { "plain", "plain" }, { "'single q'", "single q" }, { "\"double q\"", "double q" },
        { "a\\ b", "a b" }, { "\"a\\$b\"", "a$b" }, { "\"a\\b\"", "a\\b" },
        { "x'y'\"z\"", "xyz" }, { "''", "" }, { "-c", "-c" }, { "origin", "origin" },
    };
    static const char *no[] = { "$x", "\"$x\"", "*.c", "~", "~/x", "{a,b}", "$'x'", "`x`",
                                "$(x)", "a[b]", "$((1))", "<(x)", "\"a`b`\"", "$\"x\"" };
    for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
        owned_parse o;
        strbuf cmd = STRBUF_INIT, v = STRBUF_INIT;
        strbuf_addf(&cmd, "echo %s\n", yes[i].word);
        parse(&o, cmd.buf);
        ok(sh_word_static_value(first_word(&o.p)->next, &v) && !strcmp(v.buf, yes[i].value),
           "static value of %s is '%s' (got '%s')", yes[i].word, yes[i].value, v.buf);
        done(&o);
        strbuf_release(&cmd);
        strbuf_release(&v);
    }
    for (size_t i = 0; i < ARRAY_SIZE(no); i++) {
        owned_parse o;
        strbuf cmd = STRBUF_INIT, v = STRBUF_INIT;
        strbuf_addf(&cmd, "echo %s\n", no[i]);
        parse(&o, cmd.buf);
        strbuf_addstr(&v, "keep");
        ok(!sh_word_static_value(first_word(&o.p)->next, &v) && !strcmp(v.buf, "keep"),
           "%s is not static, out unchanged", no[i]);
        done(&o);
        strbuf_release(&cmd);
        strbuf_release(&v);
    }
}

static void heredoc_text(void)
{
    static const struct { const char *src; int item; const char *want; } cases[] = {
        { "cat <<A && cat <<B\na\nA\nb\nB\necho next\n", 0,
          "cat <<A && cat <<B\na\nA\nb\nB\n" },
        { "cat <<A; cat <<B\na\nA\nb\nB\n", 1, "cat <<B\nb\nB\n" },
        { "x=$(cat <<EOF\nin\nEOF\n); echo $x\n", 0, "x=$(cat <<EOF\nin\nEOF\n)" },
        { "cat <<-T | wc -l\n\tx\n\tT\n", 0, "cat <<-T | wc -l\n\tx\n\tT\n" },
        { "cat <<EOF\nno end", 0, "cat <<EOF\nno end\nEOF\n" },
        { "echo $(cat <<EOF) tail\nbody\nEOF\n", 0, "echo $(cat <<EOF) tail\nbody\nEOF\n" },
        { "echo plain; echo two\n", 1, "echo two" },
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        owned_parse o;
        strbuf t = STRBUF_INIT;
        const sh_andor *a;
        int k = 0;
        parse(&o, cases[i].src);
        for (a = o.p.root->items; a && k < cases[i].item; a = a->next)
            k++;
        if (a)
            sh_span_text_with_heredocs(&o.p, a->span, &t);
        is_str(t.buf, cases[i].want, "span text with here-documents, case %zu", i + 1);
        strbuf_release(&t);
        done(&o);
    }
}

/* ---- options and messages --------------------------------------------------------------- */

static void shopt_tracking(void)
{
    static const char src[] = "shopt -s extglob\necho @(a|b)\nshopt -u extglob\n";
    owned_parse o;
    sh_parse_opts track = { .track_shopt = true };

    is_int(parse_n(&o, src, sizeof(src) - 1, NULL), SH_ERROR,
           "without track_shopt @( is an error on the next line (as bash -n)");
    done(&o);
    is_int(parse_n(&o, src, sizeof(src) - 1, &track), SH_OK,
           "with track_shopt, shopt -s extglob applies to the next line");
    ok(!o.p.extglob_after, "shopt -u extglob turns it off again");
    done(&o);
    is_int(parse_n(&o, "shopt -s extglob; echo @(a)\n", 28, &track), SH_ERROR,
           "not on the same line: bash parses the line before running it");
    done(&o);
}

static void messages(void)
{
    owned_parse o;
    char *e;
    strbuf w = STRBUF_INIT;

    parse(&o, "echo a\necho b\nif then\n");
    e = errors_of(&o.p);
    is_str(e, "sbxsh: line 3: syntax error near unexpected token `then'\n"
              "sbxsh: line 3: `if then'\n", "error on line 3");
    is_int(o.p.exit_status, 2, "exit status 2");
    is_int(o.p.err_line, 3, "err_line");
    is_str(o.p.err_text, "if then", "err_text is the offending line");
    free(e);
    done(&o);

    parse(&o, "a=(;)\necho after\n");
    is_int(o.p.status, SH_ERROR, "a=(;) is an error");
    is_int(o.p.exit_status, 1, "... that bash reads past: status 1");
    ok(o.p.root->items && o.p.root->items->span.start == 6,
       "the next line is still parsed");
    done(&o);

    parse(&o, "cat <<EOF\nx");
    is_int(o.p.status, SH_OK, "here-document at EOF: a warning, not an error");
    sh_parse_format_warnings(&o.p, "sbxsh: ", &w);
    is_str(w.buf, "sbxsh: line 2: warning: here-document at line 1 delimited by end-of-file "
                  "(wanted `EOF')\n", "the warning as bash prints it");
    strbuf_release(&w);
    done(&o);
}

int main(void)
{
    table_cases();
    incremental();
    depth_limits();
    big_inputs();
    nul_bytes();
    static_values();
    heredoc_text();
    shopt_tracking();
    messages();
    return done_testing();
}
