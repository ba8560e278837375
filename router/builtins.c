/*
 * echo and printf as bash 5.2 runs them (builtins/echo.def, printf.def,
 * lib/sh/strtrans.c, lib/sh/shquote.c), rewritten for sbxsh.
 *
 * Where bash hands a conversion to the C library's printf, so does this
 * file, with the same conversion text and argument types, in the locale
 * the environment names: the output is then the same by construction.
 * The comments mark the places where bash's exact (sometimes surprising)
 * behaviour is kept on purpose.
 */
#include "router/builtins.h"
#include "router/route.h"

#include "common/util.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <langinfo.h>
#include <limits.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#include <wctype.h>

#define DIGIT(c) ((c) >= '0' && (c) <= '9')
#define ISOCTAL(c) ((c) >= '0' && (c) <= '7')
#define OCTVALUE(c) ((c) - '0')
#define ISXDIGIT(c) (((c) >= '0' && (c) <= '9') || ((c) >= 'a' && (c) <= 'f') || \
                     ((c) >= 'A' && (c) <= 'F'))
#define HEXVALUE(c) (((c) >= 'a' && (c) <= 'f') ? (c) - 'a' + 10 : \
                     ((c) >= 'A' && (c) <= 'F') ? (c) - 'A' + 10 : (c) - '0')

/* ---- locale ------------------------------------------------------------ */

/* bash calls setlocale(LC_ALL, "") at startup; the builtins switch to the
 * locale the environment names for their duration only (uselocale is per
 * thread), so the rest of sbxsh keeps the C locale. Loading a locale costs
 * far more than routing a line, so the last one is kept for as long as the
 * variables that name it stay the same. A BI_CHECK run needs none: nothing
 * it decides depends on the locale. */
typedef struct bi_locale {
    locale_t saved;
    bool utf8, entered;
} bi_locale;

static void locale_enter(bi_locale *l, unsigned flags)
{
    static const char *const vars[] = { "LC_ALL", "LC_CTYPE", "LC_NUMERIC", "LC_COLLATE",
                                        "LC_MESSAGES", "LC_TIME", "LC_MONETARY", "LANG" };
    static locale_t cached;
    static strbuf cached_key = STRBUF_INIT;
    static bool cached_utf8;
    strbuf key = STRBUF_INIT;

    l->entered = false;
    l->utf8 = false;
    if (flags & BI_CHECK)
        return;
    for (size_t i = 0; i < ARRAY_SIZE(vars); i++) {
        const char *v = getenv(vars[i]);
        strbuf_addf(&key, "%s=%s%c", vars[i], v ? v : "", 0);
    }
    if (!cached || key.len != cached_key.len || memcmp(key.buf, cached_key.buf, key.len)) {
        locale_t loc = newlocale(LC_ALL_MASK, "", (locale_t)0);
        if (!loc)
            loc = newlocale(LC_ALL_MASK, "C", (locale_t)0);
        if (!loc)
            xdie_oom();
        if (cached)
            freelocale(cached);
        cached = loc;
        cached_utf8 = strcmp(nl_langinfo_l(CODESET, loc), "UTF-8") == 0;
        strbuf_reset(&cached_key);
        strbuf_add(&cached_key, key.buf, key.len);
    }
    strbuf_release(&key);
    l->utf8 = cached_utf8;
    l->saved = uselocale(cached);
    l->entered = true;
}

static void locale_leave(bi_locale *l)
{
    if (l->entered)
        uselocale(l->saved);
}

/* The ISO C basic character set (bash's is_basic()): tab, vertical tab,
 * form feed and the printable ASCII characters except $ @ `. */
static bool is_basic(unsigned char c)
{
    static const unsigned int table[8] = { 0x00001a00, 0xffffffef, 0xfffffffe, 0x7ffffffe };
    return (table[c >> 5] >> (c & 31)) & 1;
}

/* ---- messages ---------------------------------------------------------- */

/* Writes out the pending output through its last newline (all of it when
 * all is set), as a line-buffered stdio stream would have by now. */
static void out_flush(bi_env *env, bool all)
{
    size_t n = env->out.len;

    if (env->flags & BI_CHECK)
        return;
    if (!all) {
        while (n && env->out.buf[n - 1] != '\n')
            n--;
    }
    if (!n)
        return;
    if (!env->write_errno && write_full(env->out_fd, env->out.buf, n) < 0)
        env->write_errno = errno ? errno : EIO;
    strbuf_remove(&env->out, 0, n);
}

static void bi_error(bi_env *env, const char *cmd, const char *fmt, ...) SBX_PRINTF(3, 4);

/* bash's builtin_error(): "NAME: line N: CMD: message". */
static void bi_error(bi_env *env, const char *cmd, const char *fmt, ...)
{
    strbuf sb = STRBUF_INIT;
    va_list ap;

    if ((env->flags & BI_CHECK) || env->err_fd < 0)
        return;
    out_flush(env, false);
    strbuf_addf(&sb, "%s: ", env->errname ? env->errname : "sbxsh");
    if (env->line)
        strbuf_addf(&sb, "line %u: ", env->line);
    strbuf_addf(&sb, "%s: ", cmd);
    va_start(ap, fmt);
    strbuf_vaddf(&sb, fmt, ap);
    va_end(ap);
    strbuf_addch(&sb, '\n');
    write_full(env->err_fd, sb.buf, sb.len);
    strbuf_release(&sb);
}

/* The end of a builtin: the rest of the output, and bash's message and
 * status when a write failed. */
static int bi_finish(const char *cmd, bi_env *env, int status)
{
    if (status == BI_REFUSE || (env->flags & BI_CHECK)) {
        strbuf_release(&env->out);
        return status;
    }
    out_flush(env, true);
    strbuf_release(&env->out);
    if (!env->write_errno)
        return status;
    if (env->err_fd >= 0) {
        strbuf sb = STRBUF_INIT;
        strbuf_addf(&sb, "%s: ", env->errname ? env->errname : "sbxsh");
        if (env->line)
            strbuf_addf(&sb, "line %u: ", env->line);
        strbuf_addf(&sb, "%s: write error: %s\n", cmd, strerror(env->write_errno));
        write_full(env->err_fd, sb.buf, sb.len);
        strbuf_release(&sb);
    }
    return 1;
}

/* ---- echo ----------------------------------------------------------------- */

static int refuse(bi_env *env, const char *why)
{
    env->why = why;
    return BI_REFUSE;
}

/* ansicstr(s, len, 1, ...): echo -e's escapes. Appends to out; returns 1
 * after \c (stop all output), 0 otherwise, or BI_REFUSE for \u and \U. */
static int echo_escapes(const char *s, bi_env *env, bool utf8)
{
    strbuf *out = &env->out;
    while (*s) {
        int c = (unsigned char)*s++, temp;

        if (c != '\\' || *s == '\0') {
            size_t clen = 1;
            /* Multibyte characters are copied whole, so that a trailing
             * byte that looks like a backslash is not taken for one. */
            if ((utf8 && (c & 0x80)) || (!utf8 && MB_CUR_MAX > 1 && !is_basic(c))) {
                mbstate_t st;
                wchar_t wc;
                memset(&st, 0, sizeof(st));
                clen = mbrtowc(&wc, s - 1, MB_CUR_MAX, &st);
                if (clen == (size_t)-1 || clen == (size_t)-2 || clen == 0)
                    clen = 1;
            }
            strbuf_addch(out, c);
            for (--clen; clen > 0 && *s; clen--)
                strbuf_addch(out, *s++);
            continue;
        }
        switch (c = (unsigned char)*s++) {
        case 'a': c = '\a'; break;
        case 'v': c = '\v'; break;
        case 'b': c = '\b'; break;
        case 'e': case 'E': c = '\033'; break;
        case 'f': c = '\f'; break;
        case 'n': c = '\n'; break;
        case 'r': c = '\r'; break;
        case 't': c = '\t'; break;
        case '1': case '2': case '3': case '4': case '5': case '6': case '7':
            /* echo takes octal only after \0: "\1" stays as it is */
            strbuf_addch(out, '\\');
            break;
        case '0':
            temp = 3;
            for (c = 0; ISOCTAL(*s) && temp--; s++)
                c = c * 8 + OCTVALUE(*s);
            c &= 0xff;
            break;
        case 'x':
            for (temp = 2, c = 0; ISXDIGIT(*s) && temp--; s++)
                c = c * 16 + HEXVALUE(*s);
            if (temp == 2) {        /* no digit: "\x" passes through */
                strbuf_addch(out, '\\');
                c = 'x';
            }
            c &= 0xff;
            break;
        case 'u': case 'U':
            if (ISXDIGIT(*s))
                return refuse(env, "\\u and \\U escapes (the sandbox's bash converts them)");
            strbuf_addch(out, '\\');
            break;
        case '\\':
            break;
        case '\'': case '"': case '?':
            strbuf_addch(out, '\\');
            break;
        case 'c':
            return 1;
        default:
            strbuf_addch(out, '\\');
            break;
        }
        strbuf_addch(out, c);
    }
    return 0;
}

int route_builtin_echo(char *const *args, size_t nargs, bi_env *env)
{
    bool newline = true, escapes = false;
    bi_locale loc;
    size_t i = 0;
    int ret = 0;

    strbuf_init(&env->out, 0);
    env->write_errno = 0;
    /* Leading words made only of n, e and E after a dash are options;
     * anything else ("-", "--", "-x") starts the text. */
    for (; i < nargs && args[i][0] == '-'; i++) {
        const char *o = args[i] + 1;
        if (!*o || o[strspn(o, "neE")])
            break;
        for (; *o; o++) {
            if (*o == 'n')
                newline = false;
            else
                escapes = *o == 'e';
        }
    }
    locale_enter(&loc, env->flags);
    for (; i < nargs; i++) {
        if (escapes) {
            int r = echo_escapes(args[i], env, loc.utf8);
            if (r == BI_REFUSE) {
                ret = BI_REFUSE;
                break;
            }
            if (r == 1) {
                newline = false;
                break;
            }
        } else {
            strbuf_addstr(&env->out, args[i]);
        }
        if (i + 1 < nargs)
            strbuf_addch(&env->out, ' ');
        if ((env->flags & BI_CHECK) && env->out.len > ROUTE_MAX_OUTPUT) {
            ret = refuse(env, "output larger than the host limit");
            break;
        }
    }
    locale_leave(&loc);
    if (ret == 0 && newline)
        strbuf_addch(&env->out, '\n');
    return bi_finish("echo", env, ret);
}

/* ---- printf ------------------------------------------------------------- */

typedef struct pf {
    bi_env *env;
    strbuf *out;                /* &env->out */
    char *const *args;
    size_t nargs, next;         /* bash's garglist: args[next] is the next argument */
    bool conversion_error;
    bool refused;
    bool utf8;
} pf;

static void pf_refuse(pf *s, const char *why)
{
    if (!s->refused)
        s->env->why = why;
    s->refused = true;
}

static bool pf_room(pf *s, size_t more)
{
    if ((s->env->flags & BI_CHECK) && s->out->len + more > ROUTE_MAX_OUTPUT) {
        pf_refuse(s, "printf output larger than the host limit");
        return false;
    }
    return true;
}

static void pf_put(pf *s, const char *p, size_t n)
{
    if (pf_room(s, n))
        strbuf_add(s->out, p, n);
}

static const char *pf_peek(const pf *s)
{
    return s->next < s->nargs ? s->args[s->next] : NULL;
}

static void invalid_number(pf *s, const char *arg)
{
    const char *msg = "invalid number";
    if (arg[0] == '0' && DIGIT(arg[1]))
        msg = "invalid octal number";
    else if (arg[0] == '0' && arg[1] == 'x')
        msg = "invalid hex number";
    bi_error(s->env, "printf", "%s: %s", arg, msg);
}

static void erange(pf *s, const char *arg)
{
    bi_error(s->env, "printf", "warning: %s: %s", arg, strerror(ERANGE));
}

/* 'c or "c: the character's code (the wide character in a multibyte locale). */
static intmax_t asciicode(pf *s)
{
    const char *a = s->args[s->next++];
    size_t slen = strlen(a + 1);
    wchar_t wc = 0;

    if (slen) {
        mbstate_t st;
        size_t n;
        memset(&st, 0, sizeof(st));
        n = mbrtowc(&wc, a + 1, slen, &st);
        if (n != (size_t)-1 && n != (size_t)-2 && n > 0)
            return wc;
    }
    return (unsigned char)a[1];
}

/* After strto*() of argument A, stopped at EP: a number with junk after it
 * is reported and fails printf at the end (POSIX: what was converted is still
 * printed); one out of range is reported and clamped. Consumes A. */
static void conversion_done(pf *s, const char *a, const char *ep)
{
    if (*ep) {
        invalid_number(s, a);
        s->conversion_error = true;
    } else if (errno == ERANGE) {
        erange(s, a);
    }
    s->next++;
}

static intmax_t getintmax(pf *s)
{
    const char *a = pf_peek(s);
    char *ep;
    intmax_t r;

    if (!a)
        return 0;
    if (a[0] == '\'' || a[0] == '"')
        return asciicode(s);
    errno = 0;
    r = strtoimax(a, &ep, 0);
    conversion_done(s, a, ep);
    return r;
}

static uintmax_t getuintmax(pf *s)
{
    const char *a = pf_peek(s);
    char *ep;
    uintmax_t r;

    if (!a)
        return 0;
    if (a[0] == '\'' || a[0] == '"')
        return (uintmax_t)asciicode(s);
    errno = 0;
    r = strtoumax(a, &ep, 0);
    conversion_done(s, a, ep);
    return r;
}

static long double getfloatmax(pf *s)
{
    const char *a = pf_peek(s);
    char *ep;
    long double r;

    if (!a)
        return 0;
    if (a[0] == '\'' || a[0] == '"')
        return (long double)asciicode(s);
    errno = 0;
    r = strtold(a, &ep);
    conversion_done(s, a, ep);
    return r;
}

/* A '*' width or precision. As in bash, the range warning names the
 * argument after the one converted, and with no argument after it the
 * value is not clamped at all. */
static int getint(pf *s)
{
    intmax_t r = getintmax(s);
    const char *after = pf_peek(s);

    if (!after)
        return (int)r;
    if (r > INT_MAX) {
        erange(s, after);
        r = INT_MAX;
    } else if (r < INT_MIN) {
        erange(s, after);
        r = INT_MIN;
    }
    return (int)r;
}

static int getchr(pf *s)
{
    const char *a = pf_peek(s);
    if (!a)
        return '\0';
    s->next++;
    return (int)(char)a[0];
}

static const char *getstr(pf *s)
{
    const char *a = pf_peek(s);
    if (!a)
        return "";
    s->next++;
    return a;
}

/* One backslash escape at e (just after the backslash) into cp[0..*lenp).
 * Returns the number of bytes consumed. sawc != NULL: the rules of %b
 * arguments (\c ends everything, \0NNN takes three digits after the 0,
 * \' \" \? keep their backslash). */
static int tescape(pf *s, const char *e, char *cp, int *lenp, bool *sawc)
{
    const char *p = e;
    int temp, c, evalue;

    *lenp = 1;
    switch (c = (unsigned char)*p++) {
    case 'a': *cp = '\a'; break;
    case 'b': *cp = '\b'; break;
    case 'e': case 'E': *cp = '\033'; break;
    case 'f': *cp = '\f'; break;
    case 'n': *cp = '\n'; break;
    case 'r': *cp = '\r'; break;
    case 't': *cp = '\t'; break;
    case 'v': *cp = '\v'; break;
    case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7':
        evalue = OCTVALUE(c);
        for (temp = 2 + (!evalue && sawc); ISOCTAL(*p) && temp--; p++)
            evalue = evalue * 8 + OCTVALUE(*p);
        *cp = (char)(evalue & 0xff);
        break;
    case 'x':
        for (temp = 2, evalue = 0; ISXDIGIT(*p) && temp--; p++)
            evalue = evalue * 16 + HEXVALUE(*p);
        if (p == e + 1) {
            bi_error(s->env, "printf", "missing hex digit for \\x");
            *cp = '\\';
            return 0;
        }
        *cp = (char)(evalue & 0xff);
        break;
    case 'u': case 'U':
        if (ISXDIGIT(*p)) {
            pf_refuse(s, "\\u and \\U escapes (the sandbox's bash converts them)");
            *lenp = 0;
            return 1;
        }
        bi_error(s->env, "printf", "missing unicode digit for \\%c", c);
        *cp = '\\';
        return 0;
    case '\\':
        *cp = '\\';
        break;
    case '\'': case '"': case '?':
        if (!sawc) {
            *cp = (char)c;
        } else {
            *cp = '\\';
            return 0;
        }
        break;
    case 'c':
        if (sawc) {
            *sawc = true;
            break;
        }
        /* fall through */
    default:
        *cp = '\\';
        return 0;
    }
    return (int)(p - e);
}

/* %b: the argument with its escapes expanded; *sawc after \c. */
static void bexpand(pf *s, const char *str, bool *sawc, strbuf *r)
{
    *sawc = false;
    while (*str && !s->refused) {
        char c = *str++, mb[25];
        int mblen;
        bool c_seen = false;

        if (c != '\\' || *str == '\0') {
            strbuf_addch(r, c);
            continue;
        }
        str += tescape(s, str, mb, &mblen, &c_seen);
        if (c_seen) {
            *sawc = true;
            break;
        }
        strbuf_add(r, mb, (size_t)mblen);
    }
}

/* printstr(): %b, %q and %Q pad and cut the string themselves (it may hold
 * NUL bytes), reading flags, width and precision from the conversion text. */
static void printstr(pf *s, const char *fmt, const char *str, size_t len, int fieldwidth,
                     int precision)
{
    int fw = 0, pr = -1;
    long long padlen;
    bool ljust = false;
    size_t nc;

    if (*fmt == '%')
        fmt++;
    while (*fmt && strchr("#'-+ 0", *fmt)) {
        if (*fmt == '-')
            ljust = true;
        fmt++;
    }
    if (*fmt == '*') {
        fmt++;
        fw = fieldwidth;
        if (fw < 0) {
            fw = -fw;
            ljust = true;
        }
    } else if (DIGIT(*fmt)) {
        intmax_t mfw = *fmt++ - '0';
        while (DIGIT(*fmt)) {
            mfw = mfw * 10 + (*fmt++ - '0');
            if (mfw > INT_MAX)
                mfw = (intmax_t)INT_MAX + 1;
        }
        fw = mfw > INT_MAX ? INT_MAX : (int)mfw;
    }
    if (*fmt == '.') {
        fmt++;
        if (*fmt == '*') {
            fmt++;
            pr = precision;
        } else if (DIGIT(*fmt)) {
            intmax_t mpr = *fmt++ - '0';
            while (DIGIT(*fmt)) {
                mpr = mpr * 10 + (*fmt++ - '0');
                if (mpr > INT_MAX)
                    mpr = (intmax_t)INT_MAX + 1;
            }
            pr = mpr > INT_MAX ? INT_MAX : (int)mpr;
            if (pr < precision && precision < INT_MAX)
                pr = precision;
        } else {
            pr = 0;         /* "a null digit string is treated as zero" */
        }
    }
    nc = (pr >= 0 && (size_t)pr <= len) ? (size_t)pr : len;
    padlen = (long long)fw - (long long)nc;
    if (padlen < 0)
        padlen = 0;
    if (!pf_room(s, nc + (size_t)padlen))
        return;
    if (!ljust)
        for (; padlen > 0; padlen--)
            strbuf_addch(s->out, ' ');
    strbuf_add(s->out, str, nc);
    for (; padlen > 0; padlen--)
        strbuf_addch(s->out, ' ');
}

/* ansic_shouldquote(): does the string need $'...'? */
static bool ansic_shouldquote(const char *str)
{
    for (const unsigned char *p = (const unsigned char *)str; *p; p++) {
        if (!is_basic(*p)) {
            /* the rest, as wide characters: invalid or unprintable → quote */
            size_t n = mbstowcs(NULL, (const char *)p, 0);
            wchar_t *w;
            bool q = false;
            if (n == (size_t)-1)
                return true;
            w = xmalloc((n + 1) * sizeof(*w));
            mbstowcs(w, (const char *)p, n + 1);
            for (size_t i = 0; i < n && !q; i++)
                q = !iswprint((wint_t)w[i]);
            free(w);
            return q;
        }
        if (!isprint(*p))
            return true;
    }
    return false;
}

/* ansic_quote(): $'...' with C escapes and \NNN for what cannot print. */
static void ansic_quote(const char *str, strbuf *r)
{
    strbuf_addstr(r, "$'");
    for (const char *s = str; *s; s++) {
        unsigned char c = (unsigned char)*s;
        size_t clen = 1;
        bool backslash = true;

        switch (c) {
        case '\033': c = 'E'; break;
        case '\a': c = 'a'; break;
        case '\v': c = 'v'; break;
        case '\b': c = 'b'; break;
        case '\f': c = 'f'; break;
        case '\n': c = 'n'; break;
        case '\r': c = 'r'; break;
        case '\t': c = 't'; break;
        case '\\': case '\'': break;
        default: {
            bool basic = is_basic(c), bad;
            if (!basic) {
                mbstate_t st;
                wchar_t wc;
                memset(&st, 0, sizeof(st));
                clen = mbrtowc(&wc, s, MB_CUR_MAX, &st);
                bad = clen == (size_t)-1 || clen == (size_t)-2 || !iswprint((wint_t)wc);
            } else {
                bad = !isprint(c);
            }
            if (bad) {
                strbuf_addf(r, "\\%c%c%c", '0' + ((c >> 6) & 7), '0' + ((c >> 3) & 7),
                            '0' + (c & 7));
                continue;
            }
            backslash = false;
            break;
        }
        }
        if (clen == 0)
            break;
        if (backslash)
            strbuf_addch(r, '\\');
        if (clen == 1) {
            strbuf_addch(r, c);
        } else {
            strbuf_add(r, s, clen);
            s += clen - 1;
        }
    }
    strbuf_addch(r, '\'');
}

/* sh_backslash_quote(s, NULL, 3): a backslash before each character the
 * shell would treat specially, a leading #, and a ~ where it would expand. */
static void backslash_quote(const char *str, bool utf8, strbuf *r)
{
    /* bash's bstab: space ! " $ & ' ( ) * , ; < > ? [ \ ] ^ ` { | } tab newline */
    static const char special[] = " !\"$&'()*,;<>?[\\]^`{|}\t\n";
    size_t slen = strlen(str);
    const char *send = str + slen;
    mbstate_t state;

    memset(&state, 0, sizeof(state));
    for (const char *s = str; *s; s++) {
        int c = *s;     /* signed, as bash's: bytes above 127 are negative */

        if (c >= 0 && c <= 127 && c && strchr(special, c)) {
            strbuf_addch(r, '\\');
            strbuf_addch(r, c);
            continue;
        }
        if ((utf8 && (c & 0x80)) || (!utf8 && MB_CUR_MAX > 1 && !is_basic((unsigned char)c))) {
            /* COPY_CHAR_P: one whole character */
            size_t n = 1;
            if (MB_CUR_MAX > 1) {
                mbstate_t bak = state;
                n = mbrlen(s, (size_t)(send - s), &state);
                if (n == (size_t)-1 || n == (size_t)-2) {
                    state = bak;
                    n = 1;
                } else if (n < 1) {
                    n = 1;
                }
            }
            strbuf_add(r, s, n);
            s += n - 1;
            continue;
        }
        if ((c == '#' && s == str) ||
            (c == '~' && (s == str || s[-1] == ':' || s[-1] == '=')))
            strbuf_addch(r, '\\');
        strbuf_addch(r, c);
    }
}

/* Calls snprintf with the conversion f and bash's argument layout: the '*'
 * width and precision (when given) before the value. */
#define PF_FORMAT(buf, size, f, have_fw, fw, have_pr, pr, val)                 \
    ((have_fw) && (have_pr) ? snprintf(buf, size, f, fw, pr, val)               \
     : (have_fw)            ? snprintf(buf, size, f, fw, val)                   \
     : (have_pr)            ? snprintf(buf, size, f, pr, val)                   \
                            : snprintf(buf, size, f, val))

#define PF(s, f, have_fw, fw, have_pr, pr, val)                                        \
    do {                                                                               \
        int n_ = PF_FORMAT(NULL, 0, f, have_fw, fw, have_pr, pr, val);                 \
        if (n_ < 0) {                                                                  \
            pf_refuse(s, "a printf conversion the C library refuses");                 \
        } else if (pf_room(s, (size_t)n_)) {                                           \
            strbuf_grow((s)->out, (size_t)n_ + 1);                                     \
            PF_FORMAT((s)->out->buf + (s)->out->len, (size_t)n_ + 1, f, have_fw, fw,   \
                      have_pr, pr, val);                                               \
            strbuf_setlen((s)->out, (s)->out->len + (size_t)n_);                       \
        }                                                                              \
    } while (0)

/* The conversion text start[0..modlen) + mods + conv: bash's mklong(). */
static void conv_text(strbuf *f, const char *start, size_t modlen, const char *mods, char conv)
{
    strbuf_reset(f);
    strbuf_add(f, start, modlen);
    strbuf_addstr(f, mods);
    strbuf_addch(f, conv);
}

/* Whether a conversion's width or precision (digits in spec, or the '*'
 * values) could make more output than a host part may produce. */
static bool width_too_large(const char *spec, bool have_fw, int fw, bool have_pr, int pr)
{
    long long n = 0;

    if ((have_fw && (fw > ROUTE_MAX_OUTPUT || fw < -ROUTE_MAX_OUTPUT)) ||
        (have_pr && pr > ROUTE_MAX_OUTPUT))
        return true;
    for (const char *p = spec; *p && !strchr("hjlLtzdiouxXeEfFgGaAcsbqQn(", *p); p++) {
        if (DIGIT(*p)) {
            n = n * 10 + (*p - '0');
            if (n > ROUTE_MAX_OUTPUT)
                return true;
        } else {
            n = 0;
        }
    }
    return false;
}

/* One pass over the format. Returns -1 to go on, or the final status. */
static int printf_pass(pf *s, const char *format, strbuf *f)
{
    for (const char *fmt = format; *fmt && !s->refused; fmt++) {
        int fieldwidth = 0, precision = 0;
        bool have_fw = false, have_pr = false;
        const char *start, *precstart = NULL, *modstart;
        char convch;

        if (*fmt == '\\') {
            char mb[25];
            int mblen;
            fmt++;
            fmt += tescape(s, fmt, mb, &mblen, NULL);
            pf_put(s, mb, (size_t)mblen);
            fmt--;      /* the loop steps past the last byte used */
            continue;
        }
        if (*fmt != '%') {
            pf_put(s, fmt, 1);
            continue;
        }
        start = fmt++;
        if (*fmt == '%') {
            pf_put(s, "%", 1);
            continue;
        }
        while (*fmt && strchr("#'-+ 0", *fmt))
            fmt++;
        if (*fmt == '*') {
            fmt++;
            have_fw = true;
            fieldwidth = getint(s);
        } else {
            while (DIGIT(*fmt))
                fmt++;
        }
        if (*fmt == '.') {
            ++fmt;
            if (*fmt == '*') {
                fmt++;
                have_pr = true;
                precision = getint(s);
            } else {
                /* a negative precision is passed on, and ignored by printf(3) */
                if (*fmt == '-')
                    fmt++;
                if (DIGIT(*fmt))
                    precstart = fmt;
                while (DIGIT(*fmt))
                    fmt++;
            }
        }
        /* printf(3) would produce every byte of a huge padding just to
         * count them: such widths are the sandbox's */
        if (width_too_large(start + 1, have_fw, fieldwidth, have_pr, precision)) {
            pf_refuse(s, "printf width or precision larger than the host limit");
            return 1;
        }
        modstart = fmt;
        while (*fmt && strchr("hjlLtz", *fmt))
            fmt++;
        if (*fmt == '\0') {
            bi_error(s->env, "printf", "`%s': missing format character", start);
            return 1;
        }
        convch = *fmt;
        switch (convch) {
        case 'c': {
            char p = (char)getchr(s);
            conv_text(f, start, (size_t)(modstart - start), "", convch);
            PF(s, f->buf, have_fw, fieldwidth, have_pr, precision, p);
            break;
        }
        case 's': {
            const char *p = getstr(s);
            conv_text(f, start, (size_t)(modstart - start), "", convch);
            PF(s, f->buf, have_fw, fieldwidth, have_pr, precision, p);
            break;
        }
        case '(':
            pf_refuse(s, "printf %(...)T (the clock and TZ are the sandbox's)");
            return 1;
        case 'n':
            pf_refuse(s, "printf %n assigns a shell variable");
            return 1;
        case 'b': {
            strbuf xp = STRBUF_INIT;
            bool sawc;
            bexpand(s, getstr(s), &sawc, &xp);
            conv_text(f, start, (size_t)(modstart - start), "", convch);
            printstr(s, f->buf, xp.buf, xp.len, fieldwidth, precision);
            strbuf_release(&xp);
            /* \c ends the output; the status ignores earlier bad numbers */
            if (sawc)
                return 0;
            break;
        }
        case 'q': case 'Q': {
            const char *arg = getstr(s);
            char *p = xstrdup(arg);
            strbuf xp = STRBUF_INIT;

            if (convch == 'Q' && precstart) {
                intmax_t mpr = *precstart++ - '0';
                while (DIGIT(*precstart)) {
                    mpr = mpr * 10 + (*precstart++ - '0');
                    if (mpr > INT_MAX)
                        mpr = (intmax_t)INT_MAX + 1;
                }
                precision = mpr > INT_MAX ? INT_MAX : (int)mpr;
                if ((size_t)precision < strlen(p))
                    p[precision] = '\0';
            }
            if (*p == '\0')
                strbuf_addstr(&xp, "''");
            else if (ansic_shouldquote(p))
                ansic_quote(p, &xp);
            else
                backslash_quote(p, s->utf8, &xp);
            if (convch == 'Q' && xp.len > (size_t)precision)
                precision = xp.len > INT_MAX ? INT_MAX : (int)xp.len;
            conv_text(f, start, (size_t)(modstart - start), "", convch);
            printstr(s, f->buf, xp.buf, xp.len, fieldwidth, precision);
            strbuf_release(&xp);
            free(p);
            break;
        }
        case 'd': case 'i': {
            long p = (long)getintmax(s);
            conv_text(f, start, (size_t)(modstart - start), "l", convch);
            PF(s, f->buf, have_fw, fieldwidth, have_pr, precision, p);
            break;
        }
        case 'o': case 'u': case 'x': case 'X': {
            unsigned long p = (unsigned long)getuintmax(s);
            conv_text(f, start, (size_t)(modstart - start), "l", convch);
            PF(s, f->buf, have_fw, fieldwidth, have_pr, precision, p);
            break;
        }
        case 'e': case 'E': case 'f': case 'F': case 'g': case 'G': case 'a': case 'A': {
            long double p = getfloatmax(s);
            conv_text(f, start, (size_t)(modstart - start), "L", convch);
            PF(s, f->buf, have_fw, fieldwidth, have_pr, precision, p);
            break;
        }
        default:
            bi_error(s->env, "printf", "`%c': invalid format character", convch);
            return 1;
        }
    }
    return -1;
}

int route_builtin_printf(char *const *args, size_t nargs, bi_env *env)
{
    pf s = { .env = env, .out = &env->out };
    strbuf f = STRBUF_INIT;
    bi_locale loc;
    const char *format;
    int ret = -1;

    strbuf_init(&env->out, 0);
    env->write_errno = 0;
    /* bash's internal_getopt("v:"): "--" ends the options; -v is for the
     * sandbox (the router never sends it here); any other dash word is an
     * invalid option. */
    if (nargs && !strcmp(args[0], "--")) {
        args++;
        nargs--;
    } else if (nargs && args[0][0] == '-' && args[0][1]) {
        if (env->flags & BI_CHECK)
            return bi_finish("printf", env, refuse(env, "printf options"));
        bi_error(env, "printf", "%.2s: invalid option", args[0]);
        if (env->err_fd >= 0) {
            static const char usage[] = "printf: usage: printf [-v var] format [arguments]\n";
            write_full(env->err_fd, usage, sizeof(usage) - 1);
        }
        return bi_finish("printf", env, 2);
    }
    if (!nargs) {
        if (!(env->flags & BI_CHECK) && env->err_fd >= 0) {
            static const char usage[] = "printf: usage: printf [-v var] format [arguments]\n";
            write_full(env->err_fd, usage, sizeof(usage) - 1);
        }
        return bi_finish("printf", env, 2);
    }
    format = args[0];
    if (!*format)
        return bi_finish("printf", env, 0);
    s.args = args + 1;
    s.nargs = nargs - 1;

    locale_enter(&loc, env->flags);
    s.utf8 = loc.utf8;
    /* The format is reused while arguments remain, if a pass used any. */
    do {
        ret = printf_pass(&s, format, &f);
    } while (ret < 0 && !s.refused && s.next < s.nargs && s.next != 0);
    locale_leave(&loc);
    strbuf_release(&f);

    if (s.refused)
        ret = BI_REFUSE;
    else if (ret < 0)
        ret = s.conversion_error ? 1 : 0;
    return bi_finish("printf", env, ret);
}
