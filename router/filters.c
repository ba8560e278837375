/*
 * Filters fed by a pipe: grep, jq, head, tail, sort, uniq, cut, tr, wc.
 *
 * Each takes short options from its own list only (GNU long options may be
 * abbreviated, so none is accepted), options come before the operands
 * (so that a file operand can never be mistaken for one, whatever
 * POSIXLY_CORRECT says), and none reads or writes a file: no file operand,
 * no sort -o/-T, no grep -f/-r, no uniq output operand, no jq -f/-L.
 */
#include "router/rules.h"

#include <string.h>

typedef enum fval {
    F_NONE,
    F_NUM,      /* digits */
    F_COUNT,    /* head/tail: [-+]?digits with an optional size suffix */
    F_ANY,      /* any static text (a pattern) */
    F_KEY,      /* sort -k KEYDEF */
    F_LIST,     /* cut -b/-c/-f LIST */
    F_CHAR,     /* cut -d, sort -t: at most one character */
} fval;

typedef struct fopt {
    char c;
    fval val;   /* F_NONE: a flag */
} fopt;

typedef struct filter {
    const char *name;
    const fopt *opts;
    unsigned min_ops, max_ops;     /* operands (patterns, sets, jq's program) */
    bool digits;                   /* grep -NUM (context), head/tail -NUM as the first word */
} filter;

static const fopt grep_opts[] = {
    { 'i', F_NONE }, { 'y', F_NONE }, { 'c', F_NONE }, { 'v', F_NONE }, { 'n', F_NONE },
    { 'o', F_NONE }, { 'q', F_NONE }, { 's', F_NONE }, { 'w', F_NONE }, { 'x', F_NONE },
    { 'E', F_NONE }, { 'F', F_NONE }, { 'G', F_NONE }, { 'h', F_NONE }, { 'H', F_NONE },
    { 'l', F_NONE }, { 'L', F_NONE }, { 'z', F_NONE }, { 'a', F_NONE }, { 'b', F_NONE },
    { 'Z', F_NONE }, { 'T', F_NONE }, { 'U', F_NONE },
    { 'm', F_NUM }, { 'A', F_NUM }, { 'B', F_NUM }, { 'C', F_NUM }, { 'e', F_ANY },
    { 0, F_NONE },
};
static const fopt head_opts[] = {
    { 'q', F_NONE }, { 'v', F_NONE }, { 'z', F_NONE }, { 'n', F_COUNT }, { 'c', F_COUNT },
    { 0, F_NONE },
};
static const fopt sort_opts[] = {
    { 'b', F_NONE }, { 'd', F_NONE }, { 'f', F_NONE }, { 'g', F_NONE }, { 'h', F_NONE },
    { 'i', F_NONE }, { 'M', F_NONE }, { 'n', F_NONE }, { 'r', F_NONE }, { 'R', F_NONE },
    { 's', F_NONE }, { 'u', F_NONE }, { 'V', F_NONE }, { 'z', F_NONE },
    { 'k', F_KEY }, { 't', F_CHAR },
    { 0, F_NONE },
};
static const fopt uniq_opts[] = {
    { 'c', F_NONE }, { 'd', F_NONE }, { 'D', F_NONE }, { 'i', F_NONE }, { 'u', F_NONE },
    { 'z', F_NONE }, { 'f', F_NUM }, { 's', F_NUM }, { 'w', F_NUM },
    { 0, F_NONE },
};
static const fopt cut_opts[] = {
    { 's', F_NONE }, { 'n', F_NONE }, { 'z', F_NONE }, { 'b', F_LIST }, { 'c', F_LIST },
    { 'f', F_LIST }, { 'd', F_CHAR },
    { 0, F_NONE },
};
static const fopt tr_opts[] = {
    { 'c', F_NONE }, { 'C', F_NONE }, { 'd', F_NONE }, { 's', F_NONE }, { 't', F_NONE },
    { 0, F_NONE },
};
static const fopt wc_opts[] = {
    { 'c', F_NONE }, { 'l', F_NONE }, { 'w', F_NONE }, { 'm', F_NONE }, { 'L', F_NONE },
    { 0, F_NONE },
};
/* jq 1.6 finds a short option anywhere in a dash word (strchr), so every
 * letter of a cluster must be on this list. */
static const fopt jq_opts[] = {
    { 'r', F_NONE }, { 'j', F_NONE }, { 'a', F_NONE }, { 'c', F_NONE }, { 's', F_NONE },
    { 'n', F_NONE }, { 'e', F_NONE }, { 'S', F_NONE }, { 'C', F_NONE }, { 'M', F_NONE },
    { 0, F_NONE },
};

static const filter filters[] = {
    { "grep", grep_opts, 0, 1, true },
    { "head", head_opts, 0, 0, true },
    { "tail", head_opts, 0, 0, true },
    { "sort", sort_opts, 0, 0, false },
    { "uniq", uniq_opts, 0, 0, false },
    { "cut", cut_opts, 0, 0, false },
    { "tr", tr_opts, 1, 2, false },
    { "wc", wc_opts, 0, 0, false },
    { "jq", jq_opts, 0, 1, false },
};

static const filter *find_filter(const char *name)
{
    for (size_t i = 0; i < ARRAY_SIZE(filters); i++)
        if (!strcmp(filters[i].name, name))
            return &filters[i];
    return NULL;
}

bool route_is_filter(const char *name)
{
    return find_filter(name) != NULL;
}

static bool all_digits(const char *s, size_t max)
{
    size_t n = strspn(s, "0123456789");
    return n >= 1 && n <= max && !s[n];
}

static bool valid_value(fval k, const char *v)
{
    switch (k) {
    case F_NONE:
        return true;
    case F_NUM:
        return all_digits(v, 12);
    case F_COUNT: {
        size_t n;
        if (*v == '-' || *v == '+')
            v++;
        n = strspn(v, "0123456789");
        return n >= 1 && n <= 12 && (!v[n] || (strchr("bkKmMGT", v[n]) && !v[n + 1]));
    }
    case F_ANY:
        return true;
    case F_KEY: {
        /* POS1[,POS2], POS = F[.C][OPTS] */
        for (int part = 0; part < 2; part++) {
            size_t n = strspn(v, "0123456789");
            if (!n || n > 9)
                return false;
            v += n;
            if (*v == '.') {
                n = strspn(++v, "0123456789");
                if (!n || n > 9)
                    return false;
                v += n;
            }
            v += strspn(v, "bdfgiMhnRrV");
            if (!*v)
                return true;
            if (*v != ',' || part)
                return false;
            v++;
        }
        return false;
    }
    case F_LIST: {
        size_t n = strlen(v);
        return n && n <= 64 && strspn(v, "0123456789,-") == n;
    }
    case F_CHAR:
        return strlen(v) <= 1;
    }
    return false;
}

/* jq: a program that reads no file and no environment. Every identifier
 * in the text (strings included, so that "\(env)" is seen too) is looked
 * at; the few that reach outside jq's input are refused. */
static int check_jq_program(const char *prog, strbuf *why)
{
    static const char *const denied[] = {
        "env", "ENV", "import", "include", "modulemeta", "input_filename",
    };
    const char *p = prog;

    while (*p) {
        const char *s;
        size_t n;

        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_')) {
            p++;
            continue;
        }
        s = p;
        while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' ||
               (*p >= '0' && *p <= '9'))
            p++;
        n = (size_t)(p - s);
        for (size_t i = 0; i < ARRAY_SIZE(denied); i++) {
            if (strlen(denied[i]) == n && !strncmp(denied[i], s, n)) {
                strbuf_addf(why, "jq: %s reads the host's %s", denied[i],
                            i < 2 ? "environment" : "files");
                return -1;
            }
        }
        if ((n >= 2 && s[0] == '_' && s[1] == '_') || (n > 4 && !strncmp(s, "get_", 4))) {
            strbuf_addstr(why, "jq: ");
            route_reason_add(why, s, n);
            strbuf_addstr(why, " reveals host paths");
            return -1;
        }
    }
    return 0;
}

int route_check_filter(const route_ctx *ctx, const rcmd *c, strbuf *why)
{
    const char *name = c->argv.v[0];
    const filter *f = find_filter(name);
    size_t i = 1;
    int nops = 0, max_ops;
    bool is_grep = !strcmp(name, "grep");
    const char *program = NULL;

    if (!f) {
        strbuf_addf(why, "%s is not a host filter", name);
        return -1;
    }
    max_ops = (int)f->max_ops;
    if (f->digits && !is_grep && c->argv.n > 1 && c->argv.v[1][0] == '-' &&
        all_digits(c->argv.v[1] + 1, 12))
        i = 2;      /* head -5, tail -5 */
    for (; i < c->argv.n; i++) {
        const char *a = c->argv.v[i];

        if (a[0] != '-' || !a[1] || nops) {
            if (nops && a[0] == '-' && a[1]) {
                strbuf_addf(why, "%s: option after an operand", name);
                return -1;
            }
            goto operand;
        }
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        if (a[1] == '-') {
            strbuf_addf(why, "%s: long option ", name);
            route_reason_add(why, a, strlen(a));
            strbuf_addstr(why, " (only short options from a fixed list)");
            return -1;
        }
        for (const char *p = a + 1; *p; p++) {
            const fopt *o = NULL;
            if (is_grep && *p >= '0' && *p <= '9')
                continue;       /* grep -2: context lines */
            for (const fopt *q = f->opts; q->c; q++)
                if (q->c == *p)
                    o = q;
            if (!o) {
                strbuf_addf(why, "%s: option -", name);
                route_reason_add(why, p, 1);
                strbuf_addstr(why, " is not allowed on the host");
                return -1;
            }
            if (o->val == F_NONE)
                continue;
            if (!strcmp(name, "jq")) {
                strbuf_addstr(why, "jq: option with a value");
                return -1;
            }
            if (p[1]) {
                a = p + 1;
            } else if (i + 1 < c->argv.n) {
                a = c->argv.v[++i];
            } else {
                strbuf_addf(why, "%s: -%c needs a value", name, *p);
                return -1;
            }
            if (!valid_value(o->val, a)) {
                strbuf_addf(why, "%s: unexpected value for -%c", name, *p);
                return -1;
            }
            if (is_grep && o->c == 'e')
                max_ops = 0;    /* the pattern was given with -e */
            break;
        }
        continue;
operand:
        if (++nops > max_ops) {
            strbuf_addf(why, "%s: file operand ", name);
            route_reason_add(why, a, strlen(a));
            strbuf_addstr(why, " (filters read only their pipe)");
            return -1;
        }
        program = a;
    }
    for (; i < c->argv.n; i++) {
        if (++nops > max_ops) {
            strbuf_addf(why, "%s: file operand after -- (filters read only their pipe)", name);
            return -1;
        }
        program = c->argv.v[i];
    }
    if (nops < (int)f->min_ops) {
        strbuf_addf(why, "%s: missing operand", name);
        return -1;
    }
    if (!strcmp(name, "jq")) {
        if (ctx->home && *ctx->home && route_in_synced(ctx, ctx->home)) {
            strbuf_addstr(why, "jq reads ~/.jq, and HOME is inside the code directories");
            return -1;
        }
        if (program && check_jq_program(program, why) < 0)
            return -1;
    }
    return 0;
}
