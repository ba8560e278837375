/*
 * The host-command policy (router/policy.h, sbxsh-policy(5)): its files, read through a
 * descriptor that is checked before a byte is used; its parser (one stanza a rule); its
 * patterns, compiled once with pcre2 under limits; and the match of a command's words
 * against its rules, with the nearest miss when none accepts them.
 *
 * Why each check:
 * - the sandbox writes the code directories: a policy there (or a link there, or a link
 *   to one there) would let it choose what the host runs, so such a file is refused as
 *   ssh refuses an authorized_keys that others can write;
 * - the words are checked exactly as the program will get them (no shell, no expansion,
 *   no abbreviation, no bundling of short options), so what is checked is what runs;
 * - a pattern is pcre2's, anchored at both ends (a pattern cannot accept a prefix only),
 *   without UTF (bytes are bytes: no invalid-UTF-8 path, no \C), with no callout (refused
 *   at load), and with match, depth and heap limits: an error or a limit is never a match.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "router/policy.h"
#include "router/rules.h"

#include "common/report.h"
#include "common/strvec.h"
#include "common/util.h"

#include <pcre2.h>

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A value or operand pattern: its text as written, and pcre2's compiled form (NULL when it
 * did not compile or uses a callout: then nothing matches it, and the command stays in the
 * sandbox with a warning). */
typedef struct ppat {
    char *src;
    unsigned line;
    pcre2_code *code;
    char *error;               /* why code is NULL */
} ppat;

typedef struct popt {
    char *name;                /* "--repo", "-R": spelled exactly */
    bool valued;               /* option (takes a value) or flag */
    unsigned max;              /* how many times it may appear */
    ppat pat;                  /* valued: what the value must be */
    unsigned line;
} popt;

typedef struct poperand {
    unsigned max;              /* how many operands this position takes */
    ppat pat;
} poperand;

typedef struct prule {
    char *name;
    size_t file;               /* index into the policy's files */
    unsigned line;
    char *program;             /* as written: a name, or an absolute path */
    unsigned program_line;
    char *prog;                /* resolved at load; NULL: not found (why in prog_why) */
    char *prog_why;
    strvec words;              /* the fixed subcommand words */
    popt *opts;
    size_t n_opts;
    poperand *ops;
    size_t n_ops;
    strvec env;                /* host variables it keeps */
    bool bad;                  /* a syntax error: dropped from matching */
} prule;

struct route_policy {
    prule *rules;
    size_t n;
    strvec files;              /* as shown: ~ for HOME */
    strvec reals;              /* ... each one's real path when read from a file ("" else) */
    strbuf problems;
    pcre2_compile_context *cc;
    pcre2_match_context *mc;
};

/* ---- patterns ------------------------------------------------------------------- */

static int count_callout(pcre2_callout_enumerate_block *b, void *data)
{
    (void)b;
    (*(unsigned *)data)++;
    return 0;
}

/* Compiles src once: anchored at both ends (the whole word must match), no UTF and no UCP
 * (nor may the pattern turn them on with (*UTF)), no \C, $ only at the very end. A pattern
 * with a callout is refused: nothing in a policy may call out of the matcher. */
static void pat_compile(route_policy *pol, ppat *p)
{
    const uint32_t opts = PCRE2_ANCHORED | PCRE2_ENDANCHORED | PCRE2_NEVER_UTF |
                          PCRE2_NEVER_UCP | PCRE2_NEVER_BACKSLASH_C | PCRE2_DOLLAR_ENDONLY;
    PCRE2_UCHAR msg[256];
    PCRE2_SIZE off;
    unsigned callouts = 0;
    int code;

    p->code = pcre2_compile((PCRE2_SPTR)p->src, strlen(p->src), opts, &code, &off, pol->cc);
    if (!p->code) {
        pcre2_get_error_message(code, msg, sizeof(msg));
        p->error = xasprintf("does not compile: %s at offset %zu", (char *)msg, (size_t)off);
        return;
    }
    pcre2_callout_enumerate(p->code, count_callout, &callouts);
    if (callouts) {
        pcre2_code_free(p->code);
        p->code = NULL;
        p->error = xstrdup("uses a callout ((?C...)): not allowed in a policy");
        return;
    }
    /* JIT where the platform has it; the interpreter otherwise (same limits: the match
     * limit applies to both, the depth limit to the interpreter, the JIT's stack is its
     * own bound) */
    (void)pcre2_jit_compile(p->code, PCRE2_JIT_COMPLETE);
}

enum { PM_NO, PM_YES, PM_LIMIT };

/* Matches the whole of s (a C string: argv words hold no NUL) against p. An error or a
 * limit is PM_LIMIT, never a match. */
static int pat_match(const route_policy *pol, const ppat *p, const char *s)
{
    pcre2_match_data *md;
    int rc;

    if (!p->code)
        return PM_LIMIT;
    md = pcre2_match_data_create_from_pattern(p->code, NULL);
    if (!md)
        return PM_LIMIT;
    rc = pcre2_match(p->code, (PCRE2_SPTR)s, strlen(s), 0, 0, md, pol->mc);
    pcre2_match_data_free(md);
    if (rc >= 0)
        return PM_YES;
    return rc == PCRE2_ERROR_NOMATCH ? PM_NO : PM_LIMIT;
}

static void pat_free(ppat *p)
{
    free(p->src);
    free(p->error);
    if (p->code)
        pcre2_code_free(p->code);
}

/* ---- the policy ----------------------------------------------------------------------- */

route_policy *route_policy_new(void)
{
    route_policy *pol = xcalloc(1, sizeof(*pol));
    strvec_init(&pol->files);
    strvec_init(&pol->reals);
    strbuf_init(&pol->problems, 0);
    pol->cc = pcre2_compile_context_create(NULL);
    pol->mc = pcre2_match_context_create(NULL);
    if (!pol->cc || !pol->mc)
        xdie_oom();
    pcre2_set_parens_nest_limit(pol->cc, 64);
    pcre2_set_match_limit(pol->mc, ROUTE_POLICY_MATCH_LIMIT);
    pcre2_set_depth_limit(pol->mc, ROUTE_POLICY_DEPTH_LIMIT);
    pcre2_set_heap_limit(pol->mc, ROUTE_POLICY_HEAP_LIMIT);
    return pol;
}

static void rule_free(prule *r)
{
    free(r->name);
    free(r->program);
    free(r->prog);
    free(r->prog_why);
    strvec_clear(&r->words);
    for (size_t i = 0; i < r->n_opts; i++) {
        free(r->opts[i].name);
        if (r->opts[i].valued)
            pat_free(&r->opts[i].pat);
    }
    free(r->opts);
    for (size_t i = 0; i < r->n_ops; i++)
        pat_free(&r->ops[i].pat);
    free(r->ops);
    strvec_clear(&r->env);
}

void route_policy_free(route_policy *pol)
{
    if (!pol)
        return;
    for (size_t i = 0; i < pol->n; i++)
        rule_free(&pol->rules[i]);
    free(pol->rules);
    strvec_clear(&pol->files);
    strvec_clear(&pol->reals);
    strbuf_release(&pol->problems);
    pcre2_compile_context_free(pol->cc);
    pcre2_match_context_free(pol->mc);
    free(pol);
}

const char *route_policy_problems(const route_policy *pol)
{
    return pol->problems.buf;
}

size_t route_policy_rule_count(const route_policy *pol)
{
    size_t n = 0;
    for (size_t i = 0; i < pol->n; i++)
        n += !pol->rules[i].bad;
    return n;
}

static void problem(route_policy *pol, size_t file, unsigned line, const char *fmt, ...)
    SBX_PRINTF(4, 5);
static void problem(route_policy *pol, size_t file, unsigned line, const char *fmt, ...)
{
    strbuf msg = STRBUF_INIT;
    va_list ap;

    va_start(ap, fmt);
    strbuf_vaddf(&msg, fmt, ap);
    va_end(ap);
    if (line)
        strbuf_addf(&pol->problems, "%s:%u: ", pol->files.v[file], line);
    else
        strbuf_addf(&pol->problems, "%s: ", pol->files.v[file]);
    sbx_sanitize(&pol->problems, msg.buf, msg.len);
    strbuf_addch(&pol->problems, '\n');
    strbuf_release(&msg);
}

/* The programs whose words the built-in rules check (router/classify.c): a policy rule
 * never widens them. */
bool route_policy_builtin_name(const char *name)
{
    static const char *const names[] = { "echo", "printf", "cd", "git", "sbx" };
    for (size_t i = 0; i < ARRAY_SIZE(names); i++)
        if (!strcmp(name, names[i]))
            return true;
    return route_is_filter(name);
}

/* ---- the parser ------------------------------------------------------------------------- */

/*
 * The format, one stanza a rule (sbxsh-policy(5) has it in full):
 *
 *   # a comment: a line whose first non-blank is '#'
 *   rule gh-pr-view                  NAME: letters, digits, . _ -
 *       program gh                   a name found on the host PATH, or an absolute path
 *       subcommand pr view           the fixed words after the program
 *       flag --web                   an option without a value
 *       option --repo ^[\w.-]+/[\w.-]+$    an option and its value's pattern (the rest of
 *                                    the line); NAME*N: it may appear N times (default 1)
 *       operand ^[0-9]+$             the next operand's pattern; operand*N: up to N of them
 *       env GH_TOKEN GH_HOST         host variables the command keeps
 *
 * A line is a keyword and its arguments, separated by blanks. Parsing is line by line; a
 * keyword outside a stanza, an unknown keyword or a bad argument is an error with the
 * file and line, and the rule it is in is dropped (never half-kept).
 */

static bool name_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '_' || c == '-';
}

static bool all_name_chars(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!name_char((unsigned char)s[i]))
            return false;
    return n > 0;
}

/* The next blank-separated token of *s, or false at the end of the line. */
static bool next_token(const char **s, const char **tok, size_t *n)
{
    const char *p = *s + strspn(*s, " \t");
    if (!*p)
        return false;
    *tok = p;
    *n = strcspn(p, " \t");
    *s = p + *n;
    return true;
}

/* "NAME" or "NAME*N" (N in 1..ROUTE_POLICY_MAX_COUNT) into name and max. */
static bool split_count(const char *tok, size_t n, size_t *name_len, unsigned *max)
{
    const char *star = memchr(tok, '*', n);
    unsigned long v = 0;

    *max = 1;
    *name_len = n;
    if (!star)
        return true;
    *name_len = (size_t)(star - tok);
    if (star + 1 == tok + n)
        return false;
    for (const char *d = star + 1; d < tok + n; d++) {
        if (*d < '0' || *d > '9' || v > ROUTE_POLICY_MAX_COUNT)
            return false;
        v = v * 10 + (unsigned long)(*d - '0');
    }
    if (v < 1 || v > ROUTE_POLICY_MAX_COUNT)
        return false;
    *max = (unsigned)v;
    return true;
}

/* An option's name: -x or --long-name, letters, digits, - _ . after the dashes; never
 * "--" itself, never with '='. */
static bool option_name(const char *s, size_t n)
{
    if (n < 2 || s[0] != '-')
        return false;
    if (n == 2 && s[1] == '-')
        return false;
    return all_name_chars(s + 1, n - 1);
}

/* An env variable's name as the shell spells one. */
static bool var_name(const char *s, size_t n)
{
    if (!n || (s[0] >= '0' && s[0] <= '9'))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
            return false;
    return true;
}

/* A word the command line must hold exactly: printable ASCII, no blanks. */
static bool fixed_word(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f)
            return false;
    return n > 0;
}

/* A pattern that does not compile is a problem of the load (said once, as a warning, and
 * by sbx policy check); its rule stays, and the pattern accepts nothing. */
static void pattern_from(route_policy *pol, ppat *p, const char *rest, unsigned line,
                         size_t file, const char *rule)
{
    const char *s = rest + strspn(rest, " \t");
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    p->src = xstrndup(s, n);
    p->line = line;
    pat_compile(pol, p);
    if (!p->code)
        problem(pol, file, line, "rule %s: pattern %s %s", rule, p->src, p->error);
}

/* The program: resolved now on the host PATH (route_find_host_program: never a file that
 * is, or resolves to, inside the code directories or sync paths), and that absolute path
 * is what runs; a rule whose program is not found accepts nothing. */
static void resolve_program(prule *r, const route_ctx *ctx)
{
    strbuf out = STRBUF_INIT;
    const char *why = NULL;
    if (ctx && route_find_host_program(ctx, r->program, &out, &why) == 0)
        r->prog = strbuf_detach(&out, NULL);
    else
        r->prog_why = xstrdup(ctx ? why : "not resolved");
    strbuf_release(&out);
}

/* Finishes a stanza: it needs a program; one with an error is kept for messages but never
 * matches. */
static void end_rule(route_policy *pol, prule *r, const route_ctx *ctx)
{
    if (!r || r->bad)
        return;
    if (!r->program) {
        problem(pol, r->file, r->line, "rule %s: no program line", r->name);
        r->bad = true;
        return;
    }
    resolve_program(r, ctx);
}

/* A file's name as every message shows it: sanitized once here (a name is the host's, but
 * may hold any byte), so that no output of the policy's quotes a control byte raw. */
static void add_file(route_policy *pol, const char *name, const char *real)
{
    strbuf shown = STRBUF_INIT;
    sbx_sanitize(&shown, name, strlen(name));
    strvec_push(&pol->files, shown.buf);
    strvec_push(&pol->reals, real);
    strbuf_release(&shown);
}

static int load_text(route_policy *pol, const char *name, const char *real, const char *text,
                     size_t len, const route_ctx *ctx);

int route_policy_load_text(route_policy *pol, const char *name, const char *text, size_t len,
                           const route_ctx *ctx)
{
    return load_text(pol, name, "", text, len, ctx);
}

static int load_text(route_policy *pol, const char *name, const char *real, const char *text,
                     size_t len, const route_ctx *ctx)
{
    size_t file = pol->files.n, before = pol->problems.len;
    prule *r = NULL;
    unsigned lineno = 0;
    const char *p = text, *end = text + len;

    add_file(pol, name, real);
    if (memchr(text, '\0', len)) {
        problem(pol, file, 0, "a NUL byte: not a policy file");
        return -1;
    }
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        char *line;
        const char *s, *kw;
        size_t kwn;

        lineno++;
        if (n > ROUTE_POLICY_MAX_LINE) {
            problem(pol, file, lineno, "a line longer than %d bytes", ROUTE_POLICY_MAX_LINE);
            if (r)
                r->bad = true;
            p = nl ? nl + 1 : end;
            continue;
        }
        line = xstrndup(p, n);
        p = nl ? nl + 1 : end;
        if (n && line[n - 1] == '\r')
            line[--n] = '\0';
        s = line;
        if (!next_token(&s, &kw, &kwn) || kw[0] == '#') {
            free(line);
            continue;
        }
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)line[i] < ' ' && line[i] != '\t') {
                problem(pol, file, lineno, "a control character");
                if (r)
                    r->bad = true;
                goto next;
            }
#define KW(k) (kwn == strlen(k) && !strncmp(kw, k, kwn))
        if (KW("rule")) {
            const char *nm;
            size_t nn;
            end_rule(pol, r, ctx);
            r = NULL;
            if (pol->n >= ROUTE_POLICY_MAX_RULES) {
                problem(pol, file, lineno, "more than %d rules", ROUTE_POLICY_MAX_RULES);
                goto next;
            }
            pol->rules = xrealloc(pol->rules, (pol->n + 1) * sizeof(*pol->rules));
            r = &pol->rules[pol->n++];
            memset(r, 0, sizeof(*r));
            strvec_init(&r->words);
            strvec_init(&r->env);
            r->file = file;
            r->line = lineno;
            if (!next_token(&s, &nm, &nn) || !all_name_chars(nm, nn) ||
                next_token(&s, &kw, &kwn)) {
                r->name = xstrdup("?");
                problem(pol, file, lineno, "rule: one name of letters, digits, '.', '_', '-'");
                r->bad = true;
                goto next;
            }
            r->name = xstrndup(nm, nn);
            goto next;
        }
        if (!r) {
            problem(pol, file, lineno, "%.*s outside a rule (a stanza starts with `rule NAME`)",
                    (int)kwn, kw);
            goto next;
        }
        if (KW("program")) {
            const char *t;
            size_t tn;
            if (r->program || !next_token(&s, &t, &tn) || next_token(&s, &kw, &kwn) ||
                !fixed_word(t, tn) || (t[0] != '/' && memchr(t, '/', tn))) {
                problem(pol, file, lineno, "program: one program name, or an absolute path, "
                                           "once a rule");
                r->bad = true;
                goto next;
            }
            r->program = xstrndup(t, tn);
            r->program_line = lineno;
            {
                const char *base = strrchr(r->program, '/');
                if (route_policy_builtin_name(base ? base + 1 : r->program)) {
                    problem(pol, file, lineno, "program %s: a built-in rule's program (sbx "
                                               "policy show); the policy cannot widen it",
                            r->program);
                    r->bad = true;
                }
            }
        } else if (KW("subcommand")) {
            const char *t;
            size_t tn;
            if (r->words.n || r->n_opts || r->n_ops) {
                problem(pol, file, lineno, "subcommand: once a rule, before its options");
                r->bad = true;
                goto next;
            }
            while (next_token(&s, &t, &tn)) {
                if (!fixed_word(t, tn) || t[0] == '-' || r->words.n >= 16) {
                    problem(pol, file, lineno, "subcommand: plain words (no leading '-')");
                    r->bad = true;
                    goto next;
                }
                strvec_pushn(&r->words, t, tn);
            }
            if (!r->words.n) {
                problem(pol, file, lineno, "subcommand: at least one word");
                r->bad = true;
            }
        } else if (KW("flag") || KW("option")) {
            bool valued = KW("option");
            const char *t;
            size_t tn, nl2;
            unsigned max;
            popt *o;
            if (!next_token(&s, &t, &tn) || !split_count(t, tn, &nl2, &max) ||
                !option_name(t, nl2) || (!valued && next_token(&s, &kw, &kwn))) {
                problem(pol, file, lineno, valued ? "option: NAME[*N] PATTERN (NAME: -x or --long)"
                                                  : "flag: NAME[*N] (NAME: -x or --long)");
                r->bad = true;
                goto next;
            }
            for (size_t i = 0; i < r->n_opts; i++)
                if (strlen(r->opts[i].name) == nl2 && !strncmp(r->opts[i].name, t, nl2)) {
                    problem(pol, file, lineno, "%.*s: named twice in rule %s", (int)nl2, t,
                            r->name);
                    r->bad = true;
                    goto next;
                }
            if (r->n_opts >= ROUTE_POLICY_MAX_ITEMS) {
                problem(pol, file, lineno, "more than %d options", ROUTE_POLICY_MAX_ITEMS);
                r->bad = true;
                goto next;
            }
            if (valued && !*(s + strspn(s, " \t"))) {
                problem(pol, file, lineno, "option %.*s: no pattern for its value", (int)nl2, t);
                r->bad = true;
                goto next;
            }
            r->opts = xrealloc(r->opts, (r->n_opts + 1) * sizeof(*r->opts));
            o = &r->opts[r->n_opts++];
            memset(o, 0, sizeof(*o));
            o->name = xstrndup(t, nl2);
            o->valued = valued;
            o->max = max;
            o->line = lineno;
            if (valued)
                pattern_from(pol, &o->pat, s, lineno, file, r->name);
        } else if (kwn >= 7 && !strncmp(kw, "operand", 7) && (kwn == 7 || kw[7] == '*')) {
            size_t nl2;
            unsigned max;
            poperand *op;
            if (!split_count(kw, kwn, &nl2, &max) || nl2 != 7 || !*(s + strspn(s, " \t")) ||
                r->n_ops >= ROUTE_POLICY_MAX_ITEMS) {
                problem(pol, file, lineno, "operand[*N] PATTERN (N from 1 to %d)",
                        ROUTE_POLICY_MAX_COUNT);
                r->bad = true;
                goto next;
            }
            r->ops = xrealloc(r->ops, (r->n_ops + 1) * sizeof(*r->ops));
            op = &r->ops[r->n_ops++];
            memset(op, 0, sizeof(*op));
            op->max = max;
            pattern_from(pol, &op->pat, s, lineno, file, r->name);
        } else if (KW("env")) {
            const char *t;
            size_t tn;
            bool any = false;
            while (next_token(&s, &t, &tn)) {
                if (!var_name(t, tn) || r->env.n >= ROUTE_POLICY_MAX_ITEMS) {
                    problem(pol, file, lineno, "env: variable names (letters, digits, _)");
                    r->bad = true;
                    goto next;
                }
                /* PATH is always the cut one (no entry inside the code directories, where
                 * the sandbox could plant what the program runs), PWD the held cwd */
                if ((tn == 4 && !strncmp(t, "PATH", 4)) || (tn == 3 && !strncmp(t, "PWD", 3))) {
                    problem(pol, file, lineno, "env %.*s: sbxsh sets it (PATH without the code "
                                               "directories, PWD the current directory)",
                            (int)tn, t);
                    r->bad = true;
                    goto next;
                }
                strvec_pushn(&r->env, t, tn);
                any = true;
            }
            if (!any) {
                problem(pol, file, lineno, "env: at least one variable name");
                r->bad = true;
            }
        } else {
            problem(pol, file, lineno, "%.*s: not a keyword (rule, program, subcommand, flag, "
                                       "option, operand, env)", (int)kwn, kw);
            r->bad = true;
        }
#undef KW
    next:
        free(line);
    }
    end_rule(pol, r, ctx);
    return pol->problems.len > before ? -1 : 0;
}

/* ---- the file, and whether it is the host's own ---------------------------------------- */

/* path as shown in messages: $HOME's prefix as ~ */
static char *shown_name(const char *path)
{
    const char *home = getenv("HOME");
    size_t hl = home ? strlen(home) : 0;
    if (hl > 1 && !strncmp(path, home, hl) && path[hl] == '/')
        return xasprintf("~%s", path + hl);
    return xstrdup(path);
}

/* A directory a policy may sit in (or below): owned by root or the user, and writable by
 * nobody else, unless (for an ancestor above the file's own directory) it is sticky, as
 * /tmp is, so that no other user can rename what is below it. */
static const char *dir_refusal(const char *dir, bool parent)
{
    struct stat st;
    if (stat(dir, &st) < 0)
        return "cannot be read";
    if (st.st_uid != 0 && st.st_uid != getuid())
        return "is owned by another user";
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) && (parent || !(st.st_mode & S_ISVTX)))
        return "is writable by its group or others";
    return NULL;
}

/* Each directory from path's parent up to /: dir_refusal. */
static int check_dirs(const char *path, strbuf *why)
{
    char *d = xstrdup(path);
    bool parent = true;
    int ret = 0;

    for (char *slash = strrchr(d, '/'); slash; slash = strrchr(d, '/')) {
        const char *w;
        if (slash == d)
            slash[1] = '\0';
        else
            *slash = '\0';
        if ((w = dir_refusal(d, parent))) {
            strbuf_addf(why, "its directory %s %s", d, w);
            ret = -1;
            break;
        }
        parent = false;
        if (slash == d)
            break;
    }
    free(d);
    return ret;
}

/*
 * Opens path and decides whether it is the host's own: the descriptor's fstat (a regular
 * file, owned by the user or root, writable by nobody else), the real path that
 * descriptor names (not inside the code directories or sync paths), the directories above
 * it, and, when path is a link, the directory the link is in and where the link itself
 * lies (a link inside a code directory is the sandbox's to retarget). The bytes parsed are
 * the ones read from this descriptor: nothing is opened again by name.
 */
static int open_trusted(const char *path, const route_ctx *ctx, int *fd_out, char *real,
                        strbuf *why)
{
    char proc[64], given_dir[PATH_MAX];
    struct stat st;
    ssize_t n;
    int fd;

    *fd_out = -1;
    fd = open(path, O_RDONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        strbuf_addstr(why, strerror(errno));
        return errno == ENOENT ? 1 : -1;
    }
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        strbuf_addstr(why, "not a regular file");
        goto refuse;
    }
    if (st.st_uid != 0 && st.st_uid != getuid()) {
        strbuf_addstr(why, "owned by another user");
        goto refuse;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        strbuf_addstr(why, "writable by its group or others (chmod go-w)");
        goto refuse;
    }
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
    n = readlink(proc, real, PATH_MAX - 1);
    if (n <= 0 || real[0] != '/') {
        strbuf_addstr(why, "its real path cannot be known");
        goto refuse;
    }
    real[n] = '\0';
    if (ctx && route_in_synced(ctx, real)) {
        strbuf_addf(why, "it is %s, inside the code directories, which the sandbox can change",
                    real);
        goto refuse;
    }
    if (check_dirs(real, why) < 0)
        goto refuse;
    /* the name given, when it is a link or under one: where the link lies counts too */
    {
        char *copy = xstrdup(path), *slash = strrchr(copy, '/');
        const char *base = slash ? slash + 1 : copy;
        bool ok = true;
        if (slash == copy)
            snprintf(given_dir, sizeof(given_dir), "/");
        else if (slash) {
            *slash = '\0';
            ok = realpath(copy, given_dir) != NULL;
        } else
            ok = getcwd(given_dir, sizeof(given_dir)) != NULL;
        if (ok) {
            strbuf link = STRBUF_INIT;
            strbuf_addf(&link, "%s%s%s", given_dir, strcmp(given_dir, "/") ? "/" : "", base);
            if (ctx && route_in_synced(ctx, link.buf)) {
                strbuf_addf(why, "it is named through %s, inside the code directories, which "
                                 "the sandbox can change", link.buf);
                ok = false;
            } else if (strcmp(link.buf, real) && check_dirs(link.buf, why) < 0) {
                ok = false;
            }
            strbuf_release(&link);
        } else {
            strbuf_addstr(why, "its directory cannot be resolved");
        }
        free(copy);
        if (!ok)
            goto refuse;
    }
    *fd_out = fd;
    return 0;
refuse:
    close(fd);
    return -1;
}

int route_policy_load(route_policy *pol, const char *path, bool must_exist,
                      const route_ctx *ctx)
{
    strbuf why = STRBUF_INIT, text = STRBUF_INIT;
    char *shown = shown_name(path), real[PATH_MAX] = "";
    int fd, r, ret = -1;

    r = open_trusted(path, ctx, &fd, real, &why);
    if (r == 1 && !must_exist) {
        ret = 0;
        goto out;
    }
    if (r != 0) {
        add_file(pol, shown, "");
        problem(pol, pol->files.n - 1, 0, "policy not used: %s", why.buf);
        goto out;
    }
    if (strbuf_read_fd(&text, fd, ROUTE_POLICY_MAX_FILE) < 0) {
        add_file(pol, shown, "");
        problem(pol, pol->files.n - 1, 0, "policy not used: %s",
                errno == EFBIG ? "larger than 1 MiB" : strerror(errno));
        close(fd);
        goto out;
    }
    close(fd);
    ret = load_text(pol, shown, real, text.buf, text.len, ctx);
out:
    free(shown);
    strbuf_release(&why);
    strbuf_release(&text);
    return ret;
}

/* ---- matching ------------------------------------------------------------------------------ */

/* How far a rule got with a command's words, and why it stopped: the nearest miss is the
 * rule that got furthest. */
typedef struct attempt {
    size_t at;                 /* the word that failed (1-based, as --route counts) */
    strbuf why;
    bool limit;
} attempt;

static void fail_word(attempt *a, size_t i, const char *word, const char *fmt, ...)
    SBX_PRINTF(4, 5);
static void fail_word(attempt *a, size_t i, const char *word, const char *fmt, ...)
{
    va_list ap;
    a->at = i;
    strbuf_reset(&a->why);
    strbuf_addf(&a->why, "word %zu ", i + 1);   /* the command name is word 1 */
    if (word) {
        strbuf_addch(&a->why, '\'');
        route_reason_add(&a->why, word, strlen(word));
        strbuf_addstr(&a->why, "' ");
    }
    va_start(ap, fmt);
    strbuf_vaddf(&a->why, fmt, ap);
    va_end(ap);
}

static void fail_pattern(attempt *a, size_t i, const char *word, const char *what,
                         const ppat *p, int m)
{
    /* the pattern as a reason shows it: one printable line (a tab in it would split
     * --route's columns) */
    strbuf pat = STRBUF_INIT;
    sbx_sanitize(&pat, p->src, strlen(p->src));
    if (m == PM_LIMIT) {
        a->limit = true;
        fail_word(a, i, word, "%s: pattern %.40s %s", what, pat.buf,
                  p->code ? "hit pcre2's match limit" : p->error);
    } else {
        fail_word(a, i, word, "does not match %s pattern %.60s", what, pat.buf);
    }
    strbuf_release(&pat);
}

/*
 * The words after the program, against one rule. The state: the fixed subcommand words
 * first (exactly); then each word is
 *   - after `--`: an operand, whatever it looks like;
 *   - `--` (once): ends the options; kept in argv as typed;
 *   - starting with '-' (not "-" alone): an option, spelled exactly as a flag or option
 *     of the rule; `--long=VALUE` or `NAME VALUE` for an option (a separate value may not
 *     start with '-': parsers disagree on whether that is a value or the next option);
 *     each at most its count;
 *   - else an operand: the next operand position's pattern, each position taking up to its
 *     count.
 * Any word that fits none of these fails the rule.
 */
static bool try_rule(const route_policy *pol, const prule *r, char *const *argv, size_t argc,
                     attempt *a)
{
    unsigned counts[ROUTE_POLICY_MAX_ITEMS] = { 0 };
    size_t i = 1, pos = 0;
    unsigned in_pos = 0;
    bool dd = false;

    for (size_t k = 0; k < r->words.n; k++, i++)
        if (i >= argc || strcmp(argv[i], r->words.v[k])) {
            fail_word(a, i, i < argc ? argv[i] : NULL, "is not the subcommand '%s'",
                      r->words.v[k]);
            if (i >= argc)
                a->at = i;
            return false;
        }
    for (; i < argc; i++) {
        const char *w = argv[i];
        if (!dd && !strcmp(w, "--")) {
            dd = true;
            continue;
        }
        if (!dd && w[0] == '-' && w[1]) {
            const char *eq = w[1] == '-' ? strchr(w, '=') : NULL;
            size_t nl = eq ? (size_t)(eq - w) : strlen(w);
            const popt *o = NULL;
            const char *val;
            size_t k;
            int m;
            for (k = 0; k < r->n_opts; k++)
                if (strlen(r->opts[k].name) == nl && !strncmp(r->opts[k].name, w, nl)) {
                    o = &r->opts[k];
                    break;
                }
            if (!o) {
                fail_word(a, i, w, "is not one of rule %s's options", r->name);
                return false;
            }
            if (++counts[k] > o->max) {
                fail_word(a, i, w, "more than %u time%s", o->max, o->max == 1 ? "" : "s");
                return false;
            }
            if (!o->valued) {
                if (eq) {
                    fail_word(a, i, w, "%s takes no value", o->name);
                    return false;
                }
                continue;
            }
            if (eq) {
                val = eq + 1;
            } else {
                if (i + 1 >= argc) {
                    fail_word(a, i, w, "without its value");
                    return false;
                }
                val = argv[++i];
                if (val[0] == '-') {
                    fail_word(a, i, val, "a value starting with '-' (write %s=VALUE)", o->name);
                    return false;
                }
            }
            m = pat_match(pol, &o->pat, val);
            if (m != PM_YES) {
                fail_pattern(a, i, val, o->name, &o->pat, m);
                return false;
            }
            continue;
        }
        /* an operand: the current position, or the next one once it is full */
        while (pos < r->n_ops && in_pos >= r->ops[pos].max) {
            pos++;
            in_pos = 0;
        }
        if (pos >= r->n_ops) {
            fail_word(a, i, w, r->n_ops ? "one operand too many" : "an operand: rule %s takes none",
                      r->name);
            return false;
        }
        {
            int m = pat_match(pol, &r->ops[pos].pat, w);
            if (m != PM_YES) {
                fail_pattern(a, i, w, "the operand", &r->ops[pos].pat, m);
                return false;
            }
        }
        in_pos++;
    }
    return true;
}

/* The program, or what it resolves to, lies in this context's code directories or sync
 * paths (a program found while another session's were the code directories may be a
 * link into this one's). */
static bool prog_in_synced(const route_ctx *ctx, const char *prog)
{
    char real[PATH_MAX];
    if (route_in_synced(ctx, prog))
        return true;
    return !realpath(prog, real) || route_in_synced(ctx, real);
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

bool route_policy_match_argv(const route_policy *pol, const route_ctx *ctx,
                             char *const *argv, size_t argc, route_policy_match *m,
                             strbuf *why)
{
    attempt best = { 0, STRBUF_INIT, false }, cur = { 0, STRBUF_INIT, false };
    const prule *near = NULL;
    bool any = false, ok = false, limit = false;

    memset(m, 0, sizeof(*m));
    if (!pol || !argc || strchr(argv[0], '/'))
        goto out;
    for (size_t k = 0; k < pol->n; k++) {
        const prule *r = &pol->rules[k];
        if (r->bad || strcmp(base_name(r->program), argv[0]))
            continue;
        any = true;
        cur.at = 0;
        cur.limit = false;
        if (!r->prog) {
            cur.at = 0;
            strbuf_reset(&cur.why);
            strbuf_addf(&cur.why, "its program: %s", r->prog_why);
        } else if (ctx && *pol->reals.v[r->file] &&
                   route_in_synced(ctx, pol->reals.v[r->file])) {
            /* checked at load against that session's directories; this one's may differ */
            strbuf_reset(&cur.why);
            strbuf_addf(&cur.why, "its file %s is inside the code directories",
                        pol->reals.v[r->file]);
        } else if (ctx && prog_in_synced(ctx, r->prog)) {
            /* resolved outside the code directories at load, but this session's may differ */
            strbuf_reset(&cur.why);
            strbuf_addf(&cur.why, "its program %s is inside the code directories", r->prog);
        } else if (try_rule(pol, r, argv, argc, &cur)) {
            m->rule = r->name;
            m->file = pol->files.v[r->file];
            m->line = r->line;
            m->prog = r->prog;
            m->env = (const char *const *)r->env.v;
            ok = true;
            break;
        }
        limit |= cur.limit;
        if (!near || cur.at > best.at) {
            near = r;
            best.at = cur.at;
            strbuf_reset(&best.why);
            strbuf_add(&best.why, cur.why.buf, cur.why.len);
        }
    }
out:
    if (!ok) {
        m->limit = limit;
        if (!any) {
            route_reason_add(why, argv[0], strlen(argv[0]));
            strbuf_addstr(why, " is not a host command");
        } else {
            route_reason_add(why, argv[0], strlen(argv[0]));
            strbuf_addf(why, ": no policy rule allows it; nearest %s (%s:%u): %s", near->name,
                        pol->files.v[near->file], near->line, best.why.buf);
        }
    }
    strbuf_release(&best.why);
    strbuf_release(&cur.why);
    return ok;
}

/* ---- check and show ------------------------------------------------------------------------ */

/* Options that make a program run another program or read a file of settings that could:
 * a rule accepting one gives the command line a way to run something else on the host. */
static const char *const running_options[] = {
    "--exec", "-exec", "-e", "--eval", "--command", "-c", "--config", "--config-file",
    "--editor", "--shell", "--pager", "--upload-pack", "--receive-pack", "--run",
    "--hook", "--plugin", "--kubeconfig", "-K", "--proxy-command", "--ssh-command",
    "--exec-path", "-F", "--rcfile", "--init-file", "--load", "--require", "-r",
};

/* Programs whose words are programs or code: a rule for one hands the command line a host
 * shell (sbx policy check says so; a rule may still be written, as the person decides). */
static const char *const running_programs[] = {
    "sh", "bash", "dash", "zsh", "ksh", "fish", "csh", "tcsh", "busybox", "python", "python3",
    "perl", "ruby", "node", "nodejs", "deno", "bun", "php", "lua", "env", "xargs", "sudo",
    "doas", "su", "ssh", "nohup", "timeout", "nice", "setsid", "stdbuf", "npx", "make",
};

static bool pat_covers(const ppat *a, const ppat *b)
{
    return !strcmp(a->src, b->src) || !strcmp(a->src, ".*") || !strcmp(a->src, "(?s).*");
}

/* Rule b is shadowed by an earlier a when a accepts everything b does, as far as their
 * text shows: the same program and subcommand, every option of b in a with a pattern at
 * least as wide (the same text, or .*), and each operand position likewise. */
static bool shadows(const prule *a, const prule *b)
{
    if (strcmp(base_name(a->program), base_name(b->program)) || a->words.n != b->words.n)
        return false;
    for (size_t k = 0; k < a->words.n; k++)
        if (strcmp(a->words.v[k], b->words.v[k]))
            return false;
    for (size_t k = 0; k < b->n_opts; k++) {
        const popt *ob = &b->opts[k], *oa = NULL;
        for (size_t j = 0; j < a->n_opts; j++)
            if (!strcmp(a->opts[j].name, ob->name))
                oa = &a->opts[j];
        if (!oa || oa->valued != ob->valued || oa->max < ob->max ||
            (ob->valued && !pat_covers(&oa->pat, &ob->pat)))
            return false;
    }
    if (b->n_ops > a->n_ops)
        return false;
    for (size_t k = 0; k < b->n_ops; k++)
        if (a->ops[k].max != b->ops[k].max || !pat_covers(&a->ops[k].pat, &b->ops[k].pat))
            return false;
    return true;
}

size_t route_policy_check(const route_policy *pol, strbuf *out)
{
    size_t errors = 0;
    const char *p = pol->problems.buf;

    /* the loading's own problems, one a line */
    while (*p) {
        const char *nl = strchr(p, '\n');
        errors++;
        p = nl ? nl + 1 : p + strlen(p);
    }
    strbuf_add(out, pol->problems.buf, pol->problems.len);
    for (size_t k = 0; k < pol->n; k++) {
        const prule *r = &pol->rules[k];
        const char *file = pol->files.v[r->file];
        if (r->bad)
            continue;
        if (!r->prog) {
            strbuf_addf(out, "%s:%u: rule %s: program %s %s\n", file, r->program_line,
                        r->name, r->program, r->prog_why);
            errors++;
        }
        for (size_t j = 0; j < ARRAY_SIZE(running_programs); j++)
            if (!strcmp(base_name(r->program), running_programs[j])) {
                strbuf_addf(out, "%s:%u: rule %s: program %s runs the programs or code its "
                                 "words name: a host shell for the sandbox\n",
                            file, r->program_line, r->name, r->program);
                errors++;
            }
        /* (patterns that do not compile are problems of the load, above) */
        for (size_t i = 0; i < r->n_opts; i++) {
            for (size_t j = 0; j < ARRAY_SIZE(running_options); j++)
                if (!strcmp(r->opts[i].name, running_options[j])) {
                    strbuf_addf(out, "%s:%u: rule %s: %s: an option that runs a program or "
                                     "reads settings that can; do not allow it on the host\n",
                                file, r->opts[i].line, r->name, r->opts[i].name);
                    errors++;
                }
        }
        for (size_t j = 0; j < k; j++)
            if (!pol->rules[j].bad && shadows(&pol->rules[j], r)) {
                strbuf_addf(out, "%s:%u: rule %s: never used: rule %s (%s:%u) before it accepts "
                                 "all it does\n",
                            file, r->line, r->name, pol->rules[j].name,
                            pol->files.v[pol->rules[j].file], pol->rules[j].line);
                errors++;
                break;
            }
    }
    return errors;
}

static void show_rule(const route_policy *pol, const prule *r, strbuf *out)
{
    strbuf_addf(out, "# %s:%u%s\nrule %s\n", pol->files.v[r->file], r->line,
                r->bad ? " (has errors: never used)" : "", r->name);
    if (r->program)
        strbuf_addf(out, "    program %s%s%s\n", r->program, r->prog ? "    # " : "",
                    r->prog ? r->prog : "");
    if (r->words.n) {
        strbuf_addstr(out, "    subcommand");
        for (size_t i = 0; i < r->words.n; i++)
            strbuf_addf(out, " %s", r->words.v[i]);
        strbuf_addch(out, '\n');
    }
    for (size_t i = 0; i < r->n_opts; i++) {
        const popt *o = &r->opts[i];
        strbuf_addf(out, "    %s %s", o->valued ? "option" : "flag", o->name);
        if (o->max != 1)
            strbuf_addf(out, "*%u", o->max);
        if (o->valued) {
            strbuf_addch(out, ' ');
            sbx_sanitize(out, o->pat.src, strlen(o->pat.src));
        }
        strbuf_addch(out, '\n');
    }
    for (size_t i = 0; i < r->n_ops; i++) {
        strbuf_addstr(out, "    operand");
        if (r->ops[i].max != 1)
            strbuf_addf(out, "*%u", r->ops[i].max);
        strbuf_addch(out, ' ');
        sbx_sanitize(out, r->ops[i].pat.src, strlen(r->ops[i].pat.src));
        strbuf_addch(out, '\n');
    }
    if (r->env.n) {
        strbuf_addstr(out, "    env");
        for (size_t i = 0; i < r->env.n; i++)
            strbuf_addf(out, " %s", r->env.v[i]);
        strbuf_addch(out, '\n');
    }
}

void route_policy_show(const route_policy *pol, strbuf *out)
{
    route_git_rules_text(out);
    if (!pol || !pol->n) {
        strbuf_addstr(out, "\n# no policy rules: every other program runs in the sandbox\n");
        return;
    }
    for (size_t k = 0; k < pol->n; k++) {
        strbuf_addch(out, '\n');
        show_rule(pol, &pol->rules[k], out);
    }
}
