/* Unit tests of sync/ignore.c: wildmatch and gitignore rule semantics. */
#include "sync/ignore.h"
#include "tests/lib/tap.h"

#include <string.h>

static void wm(const char *pat, const char *text, bool pathname, bool want)
{
    ok(wildmatch(pat, text, pathname) == want, "'%s' %s '%s'%s", pat,
       want ? "matches" : "does not match", text, pathname ? " (pathname)" : "");
}

static int m(const ign_list *l, const char *rel, bool dir)
{
    return ign_match(l, rel, strlen(rel), dir);
}

int main(void)
{
    wm("foo", "foo", true, true);
    wm("foo", "bar", true, false);
    wm("*.c", "a.c", true, true);
    wm("*.c", "dir/a.c", true, false);
    wm("*.c", "dir/a.c", false, true);
    wm("a?c", "abc", true, true);
    wm("a?c", "a/c", true, false);
    wm("[a-c]x", "bx", true, true);
    wm("[!a-c]x", "bx", true, false);
    wm("[^a-c]x", "dx", true, true);
    wm("[]]", "]", true, true);
    wm("\\*", "*", true, true);
    wm("\\*", "x", true, false);
    wm("**/foo", "foo", true, true);
    wm("**/foo", "a/b/foo", true, true);
    wm("a/**/b", "a/b", true, true);
    wm("a/**/b", "a/x/y/b", true, true);
    wm("a/**", "a/x/y", true, true);
    wm("a/**", "b/x", true, false);
    wm("a**b", "a/b", true, false);
    wm("claude-*-cwd", "claude-1a2b-cwd", true, true);
    wm("[a-", "a", true, false);
    {
        /* A pathological pattern must finish promptly (wildmatch's aborts). */
        char text[201];
        memset(text, 'a', 200);
        text[200] = '\0';
        wm("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", text, true, false);
    }
    ok(has_glob("a*", 2) && has_glob("[x]", 3) && !has_glob("plain", 5), "has_glob");

    {
        const char text[] = "# comment\n\n*.log\n!keep.log\nbuild/\n/top\nsub/*.tmp\n"
                            "trailing\\ \nspaces   \n";
        ign_list *l = ign_parse(text, sizeof(text) - 1, "", 0);
        is_int(ign_count(l), 7, "comments and blank lines are skipped");
        is_int(m(l, "x.log", false), 1, "*.log excludes at the top");
        is_int(m(l, "a/b/x.log", false), 1, "and at any depth");
        is_int(m(l, "keep.log", false), 0, "a later '!' rule re-includes");
        is_int(m(l, "build", true), 1, "build/ matches a directory");
        is_int(m(l, "build", false), -1, "but not a file");
        is_int(m(l, "top", false), 1, "/top is anchored");
        is_int(m(l, "a/top", false), -1, "so it does not match below");
        is_int(m(l, "sub/x.tmp", false), 1, "a pattern with a slash is relative to its file");
        is_int(m(l, "a/sub/x.tmp", false), -1, "and anchored there");
        is_int(m(l, "trailing ", false), 1, "an escaped trailing space is kept");
        is_int(m(l, "spaces", false), 1, "unescaped trailing spaces are trimmed");
        is_int(m(l, "other", false), -1, "no match");
        ign_free(l);
    }
    {
        const char text[] = "*.o\n";
        ign_list *l = ign_parse(text, sizeof(text) - 1, "lib", 3);
        is_int(m(l, "lib/x.o", false), 1, "a nested .sbxignore applies below its directory");
        is_int(m(l, "x.o", false), -1, "not beside it");
        is_int(m(l, "libx/x.o", false), -1, "nor in a directory sharing a prefix");
        ign_free(l);
    }
    {
        const char *p[] = { "node_modules/", "*.pyc" };
        ign_list *l = ign_from_patterns(p, NULL, 2);
        is_int(m(l, "a/node_modules", true), 1, "global patterns work like a root .sbxignore");
        is_int(m(l, "x.pyc", false), 1, "a global file pattern");
        ign_free(l);
    }
    return done_testing();
}
