/* Exclude rules and glob matching; see ignore.h. */
#include "sync/ignore.h"
#include "common/util.h"

#include <string.h>

enum { WM_NOMATCH = 0, WM_MATCH = 1, WM_ABORT_ALL = -1, WM_ABORT_TO_STARSTAR = -2 };

/* Whether c makes a pattern a glob (a pattern without one is matched as a literal). */
static bool glob_special(unsigned char c)
{
    return c == '*' || c == '?' || c == '[' || c == '\\';
}

/* A bracket expression at p (just past '['): sets *matched for t; returns the pointer to the
 * closing ']' or NULL when the class is unterminated. */
static const unsigned char *match_class(const unsigned char *p, unsigned char t, int *matched)
{
    bool negated = false;
    unsigned char prev = 0;
    *matched = 0;
    if (*p == '!' || *p == '^') {
        negated = true;
        p++;
    }
    /* A ']' right after the '[' (or the negation) is a literal. */
    for (bool first = true;; first = false, p++) {
        unsigned char c = *p;
        if (!c)
            return NULL;
        if (c == ']' && !first)
            break;
        if (c == '\\') {
            c = *++p;
            if (!c)
                return NULL;
            if (t == c)
                *matched = 1;
        } else if (c == '-' && prev && p[1] && p[1] != ']') {
            unsigned char hi = *++p;
            if (hi == '\\') {
                hi = *++p;
                if (!hi)
                    return NULL;
            }
            if (t >= prev && t <= hi)
                *matched = 1;
            c = 0;   /* a range end cannot start another range */
        } else if (t == c) {
            *matched = 1;
        }
        prev = c;
    }
    if (negated)
        *matched = !*matched;
    return p;
}

/*
 * git's wildmatch (wildmatch.c), so that .sbxignore means what .gitignore would: '*' and '?'
 * stop at '/' when pathname, "**" between slashes crosses directories, brackets as in
 * match_class(). Returns WM_MATCH, WM_NOMATCH, or an abort code that ends the backtracking
 * early (no later start can match), which keeps a hostile pattern from going exponential.
 */
static int dowild(const unsigned char *p, const unsigned char *text, bool pathname)
{
    const unsigned char *pattern = p;

    for (; *p; text++, p++) {
        unsigned char pc = *p, tc = *text;
        bool match_slash;
        int r;

        if (!tc && pc != '*')
            return WM_ABORT_ALL;
        switch (pc) {
        case '\\':
            pc = *++p;
            /* fall through */
        default:
            if (tc != pc)
                return WM_NOMATCH;
            continue;
        case '?':
            if (pathname && tc == '/')
                return WM_NOMATCH;
            continue;
        case '[': {
            int matched;
            const unsigned char *end = match_class(p + 1, tc, &matched);
            if (!end)
                return WM_ABORT_ALL;
            if (!matched || (pathname && tc == '/'))
                return WM_NOMATCH;
            p = end;
            continue;
        }
        case '*':
            if (p[1] == '*') {
                const unsigned char *first = p;
                while (p[1] == '*')
                    p++;
                p++;
                if (!pathname) {
                    match_slash = true;
                } else if ((first == pattern || first[-1] == '/') &&
                           (!*p || *p == '/')) {
                    /* "**" as a whole component: try it as zero directories first. */
                    if (*p == '/' && dowild(p + 1, text, pathname) == WM_MATCH)
                        return WM_MATCH;
                    match_slash = true;
                } else {
                    match_slash = false;
                }
            } else {
                p++;
                match_slash = !pathname;
            }
            if (!*p) {
                if (!match_slash && strchr((const char *)text, '/'))
                    return WM_ABORT_TO_STARSTAR;
                return WM_MATCH;
            }
            if (!match_slash && *p == '/') {
                const char *slash = strchr((const char *)text, '/');
                if (!slash)
                    return WM_ABORT_ALL;
                text = (const unsigned char *)slash;
                continue;   /* the loop consumes the '/' of both */
            }
            for (;; tc = *++text) {
                if (!tc)
                    break;
                if (!glob_special(*p)) {
                    /* A literal follows: skip to its next occurrence. */
                    while ((tc = *text) && (match_slash || tc != '/') && tc != *p)
                        text++;
                    if (tc != *p)
                        return match_slash ? WM_ABORT_ALL : WM_ABORT_TO_STARSTAR;
                }
                r = dowild(p, text, pathname);
                if (r != WM_NOMATCH) {
                    if (!match_slash || r != WM_ABORT_TO_STARSTAR)
                        return r;
                } else if (!match_slash && tc == '/') {
                    return WM_ABORT_TO_STARSTAR;
                }
            }
            return WM_ABORT_ALL;
        }
    }
    return *text ? WM_NOMATCH : WM_MATCH;
}

bool wildmatch(const char *pattern, const char *text, bool pathname)
{
    return dowild((const unsigned char *)pattern, (const unsigned char *)text, pathname) ==
           WM_MATCH;
}

bool has_glob(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (glob_special((unsigned char)s[i]))
            return true;
    return false;
}

/* ---- rule lists ---------------------------------------------------------------------------- */

enum { RULE_NEGATE = 1, RULE_DIRONLY = 2, RULE_ANCHORED = 4 };

typedef struct ign_rule {
    char *pattern;
    unsigned flags;
} ign_rule;

struct ign_list {
    char *base;          /* "" or "dir/sub" */
    size_t base_len;
    ign_rule *rules;
    size_t n, alloc;
};

/* One line of an ignore file, as gitignore reads it: comments and blank lines skipped,
 * unescaped trailing spaces dropped, '!' negates, a trailing '/' matches directories only,
 * a '/' elsewhere anchors the rule to the file's directory. Lines over the limits are
 * dropped (IGN_MAX_PATTERN bytes, IGN_MAX_RULES rules). */
static void add_rule(ign_list *l, const char *s, size_t len)
{
    unsigned flags = 0;
    ign_rule *r;

    /* Trailing spaces go, unless escaped with a backslash. */
    while (len && s[len - 1] == ' ' && !(len >= 2 && s[len - 2] == '\\'))
        len--;
    if (!len || s[0] == '#' || len > IGN_MAX_PATTERN || l->n >= IGN_MAX_RULES)
        return;
    if (s[0] == '!') {
        flags |= RULE_NEGATE;
        s++;
        len--;
    }
    if (len && s[len - 1] == '/') {
        flags |= RULE_DIRONLY;
        len--;
    }
    if (!len)
        return;
    if (memchr(s, '/', len))
        flags |= RULE_ANCHORED;
    if (s[0] == '/') {
        s++;
        len--;
    }
    if (!len || memchr(s, '\0', len))
        return;
    XGROW(l->rules, l->alloc, l->n + 1);
    r = &l->rules[l->n++];
    r->pattern = xstrndup(s, len);
    r->flags = flags;
}

/* An empty rule list for the ignore file in directory base ("" for the root). */
static ign_list *new_list(const char *base, size_t base_len)
{
    ign_list *l = xcalloc(1, sizeof(*l));
    l->base = xstrndup(base ? base : "", base_len);
    l->base_len = base_len;
    return l;
}

ign_list *ign_parse(const char *text, size_t len, const char *base, size_t base_len)
{
    ign_list *l = new_list(base, base_len);
    size_t i = 0;
    if (len > IGN_MAX_FILE)
        len = IGN_MAX_FILE;
    while (i < len) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - text) : len;
        size_t line_end = end;
        if (line_end > i && text[line_end - 1] == '\r')
            line_end--;
        add_rule(l, text + i, line_end - i);
        i = end + 1;
    }
    return l;
}

ign_list *ign_from_patterns(const char *const *patterns, const size_t *lens, size_t n)
{
    ign_list *l = new_list("", 0);
    for (size_t i = 0; i < n; i++)
        add_rule(l, patterns[i], lens ? lens[i] : strlen(patterns[i]));
    return l;
}

void ign_free(ign_list *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++)
        free(l->rules[i].pattern);
    free(l->rules);
    free(l->base);
    free(l);
}

size_t ign_count(const ign_list *l)
{
    return l ? l->n : 0;
}

int ign_match(const ign_list *l, const char *rel, size_t rel_len, bool is_dir)
{
    char buf[4096 + 1];
    const char *sub, *name;

    if (!l || !l->n)
        return -1;
    if (l->base_len) {
        if (rel_len <= l->base_len || memcmp(rel, l->base, l->base_len) ||
            rel[l->base_len] != '/')
            return -1;
        rel += l->base_len + 1;
        rel_len -= l->base_len + 1;
    }
    if (rel_len >= sizeof(buf))
        return -1;
    memcpy(buf, rel, rel_len);
    buf[rel_len] = '\0';
    sub = buf;
    name = strrchr(buf, '/');
    name = name ? name + 1 : buf;

    for (size_t i = l->n; i-- > 0;) {
        const ign_rule *r = &l->rules[i];
        bool m;
        if ((r->flags & RULE_DIRONLY) && !is_dir)
            continue;
        if (r->flags & RULE_ANCHORED)
            m = wildmatch(r->pattern, sub, true);
        else
            m = wildmatch(r->pattern, name, true);
        if (m)
            return (r->flags & RULE_NEGATE) ? 0 : 1;
    }
    return -1;
}
