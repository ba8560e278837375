/* Unit tests of common/urlcred.c (secrets in URLs) and sync/gitcred.c (which pushed .git
 * files are filtered, and restoring the host's lines on a pull). */
#include "common/urlcred.h"
#include "sync/gitcred.h"
#include "tests/lib/tap.h"

#include <stdlib.h>
#include <string.h>

/* strip(in) must give want. */
static void strips(const char *in, const char *want, size_t want_n)
{
    strbuf out = STRBUF_INIT;
    size_t n = urlcred_strip(in, strlen(in), &out);
    ok(!strcmp(out.buf, want) && n == want_n, "'%s' -> '%s' (%zu removed; got '%s', %zu)", in,
       want, want_n, out.buf, n);
    ok(urlcred_has(in, strlen(in)) == (want_n > 0), "  and it %s a secret", want_n ? "has" : "has no");
    strbuf_release(&out);
}

static void filtered(const char *path, bool want)
{
    ok(git_push_strips_credentials(path, strlen(path)) == want, "%s %s filtered on push", path,
       want ? "is" : "is not");
}

static char *restore(const char *host, const char *pulled, size_t *n)
{
    strbuf out = STRBUF_INIT;
    *n = gitcred_restore(host, strlen(host), pulled, strlen(pulled), &out);
    return strbuf_detach(&out, NULL);
}

#define O1 "1111111111111111111111111111111111111111"
#define O2 "2222222222222222222222222222222222222222"
#define O3 "3333333333333333333333333333333333333333"
#define WHO " Ann <a@b.c> 1700000000 +0000\t"

int main(void)
{
    /* http(s): the whole userinfo, a lone token included. */
    strips("pull https://user:s3cr3t@example.invalid/r: Fast-forward",
           "pull https://example.invalid/r: Fast-forward", 1);
    strips("https://ghp_TOKEN@github.com/o/r", "https://github.com/o/r", 1);
    strips("HTTP://u:p@h/r", "HTTP://h/r", 1);
    strips("ftps://u:p@h/r and ftp://tok@h/", "ftps://h/r and ftp://h/", 2);
    strips("https://:s3cr3t@h/r", "https://h/r", 1);
    /* Text run into the scheme is still that scheme. */
    strips("x-https://TOK@h/r", "x-https://h/r", 1);
    /* Other schemes: the password only; user names stay. */
    strips("ssh://git@github.com/o/r", "ssh://git@github.com/o/r", 0);
    strips("ssh://git:s3cr3t@host:22/r", "ssh://git@host:22/r", 1);
    strips("git+ssh://:pw@host/r", "git+ssh://host/r", 1);
    /* scp-like syntax has no secret and is never touched. */
    strips("git@github.com:o/r.git", "git@github.com:o/r.git", 0);
    strips("fetch git@github.com:o/r", "fetch git@github.com:o/r", 0);
    /* An '@' in the path, query or fragment is not userinfo. */
    strips("https://host/a@b/c", "https://host/a@b/c", 0);
    strips("https://host?x=a@b", "https://host?x=a@b", 0);
    strips("https://host#a:b@c", "https://host#a:b@c", 0);
    strips("https://u:p@host/a@b", "https://host/a@b", 1);
    /* Two '@' in the authority: up to the last one (git and curl differ). */
    strips("https://u@x:p@ss@host/r", "https://host/r", 1);
    /* IPv6 hosts: their colons are not a password. */
    strips("https://u:p@[::1]:8080/r", "https://[::1]:8080/r", 1);
    strips("ssh://git@[::1]:22/r", "ssh://git@[::1]:22/r", 0);
    strips("ssh://git:pw@[fe80::1%25eth0]/r", "ssh://git@[fe80::1%25eth0]/r", 1);
    strips("https://[::1]:8080/r", "https://[::1]:8080/r", 0);
    /* Percent-encoding stays encoded (it is removed with the rest). */
    strips("https://us%40er:p%3Aw%2F@host/r", "https://host/r", 1);
    /* Several URLs on a line, and at the end of a line without a path. */
    strips("pull https://a:1@h1/r https://b:2@h2/r ssh://c:3@h3/r",
           "pull https://h1/r https://h2/r ssh://c@h3/r", 3);
    strips("https://u:p@host", "https://host", 1);
    strips("fetch https://u:p@host: ok\nnext https://v:q@host2/\n",
           "fetch https://host: ok\nnext https://host2/\n", 2);
    /* Not URLs. */
    strips("mail a:b@c.d, ://u:p@h, 1://u:p@h", "mail a:b@c.d, ://u:p@h, 1://u:p@h", 0);
    strips("", "", 0);
    strips("https://", "https://", 0);
    strips("https://u:p@", "https://", 1);

    /* A line far longer than any buffer: 1 MiB of path before and after. */
    {
        size_t big = 1 << 20;
        strbuf in = STRBUF_INIT, want = STRBUF_INIT, out = STRBUF_INIT;
        for (size_t i = 0; i < big; i++)
            strbuf_addch(&in, 'a');
        strbuf_add(&want, in.buf, in.len);
        strbuf_addstr(&in, " https://user:s3cr3t@example.invalid/");
        strbuf_addstr(&want, " https://example.invalid/");
        for (size_t i = 0; i < big; i++) {
            strbuf_addch(&in, 'b');
            strbuf_addch(&want, 'b');
        }
        ok(urlcred_strip(in.buf, in.len, &out) == 1 && out.len == want.len &&
           !memcmp(out.buf, want.buf, want.len) && !strstr(out.buf, "s3cr3t"),
           "a 2 MiB line loses its secret and nothing else");
        strbuf_release(&in);
        strbuf_release(&want);
        strbuf_release(&out);
    }

    /* Which pushed files are filtered. */
    filtered(".git/logs/HEAD", true);
    filtered(".git/logs/refs/heads/main", true);
    filtered(".git/logs/refs/remotes/origin/HEAD", true);
    filtered(".git/logs/HEAD.sbx-conflict-sandbox-20260101T000000Z", true);
    filtered(".git/FETCH_HEAD", true);
    filtered(".git/MERGE_MSG", true);
    filtered(".git/SQUASH_MSG", true);
    filtered(".git/modules/sub/logs/HEAD", true);
    filtered(".git/worktrees/w/logs/HEAD", true);
    filtered("sub/.git/logs/HEAD", true);
    filtered(".GIT/logs/HEAD", true);
    filtered(".git/HEAD", false);
    filtered(".git/ORIG_HEAD", false);
    filtered(".git/packed-refs", false);
    filtered(".git/refs/heads/logs", false);
    filtered(".git/objects/ab/cdef", false);
    filtered("logs/HEAD", false);
    filtered("src/FETCH_HEAD", false);
    filtered(".git", false);
    filtered(".git/logs", false);

    /* Restoring: the host's lines come back, the sandbox's new lines stay. */
    {
        const char *host =
            O1 " " O2 WHO "pull https://user:s3cr3t@example.invalid/r: Fast-forward\n"
            O2 " " O3 WHO "commit: host\n";
        strbuf pushed = STRBUF_INIT;
        char *got;
        size_t n;
        urlcred_strip(host, strlen(host), &pushed);
        ok(!strstr(pushed.buf, "s3cr3t"), "the pushed reflog has no secret");
        strbuf_addstr(&pushed, O3 " " O1 WHO "commit: sandbox\n");
        got = restore(host, pushed.buf, &n);
        ok(n == 1 && !strncmp(got, host, strlen(host)) &&
           !strcmp(got + strlen(host), O3 " " O1 WHO "commit: sandbox\n"),
           "an appended reflog: the host's lines whole, then the sandbox's (%zu restored)", n);
        free(got);

        /* git reflog expire in the sandbox dropped the first line: nothing comes back. */
        got = restore(host, O2 " " O3 WHO "commit: host\n", &n);
        ok(n == 0 && !strcmp(got, O2 " " O3 WHO "commit: host\n"), "a dropped line stays dropped");
        free(got);

        /* A line the sandbox wrote itself, with no host line behind it, stays as it is. */
        got = restore(host, O1 " " O2 WHO "pull https://example.invalid/x: other\n", &n);
        ok(n == 0 && !strstr(got, "s3cr3t"), "a line the host does not have gets nothing");
        free(got);

        /* No final newline, and an empty pull. */
        got = restore(host, O1 " " O2 WHO "pull https://example.invalid/r: Fast-forward", &n);
        ok(n == 1 && strstr(got, "user:s3cr3t@") && got[strlen(got) - 1] != '\n',
           "a last line without a newline is restored and stays without one");
        free(got);
        got = restore(host, "", &n);
        ok(n == 0 && !*got, "an empty pull stays empty");
        free(got);
        got = restore("", pushed.buf, &n);
        ok(n == 0 && !strcmp(got, pushed.buf), "a host without the file restores nothing");
        free(got);
        strbuf_release(&pushed);
    }
    /* Many secret lines (sorted lookup), in the pulled order. */
    {
        strbuf host = STRBUF_INIT, pushed = STRBUF_INIT, rev = STRBUF_INIT;
        char *got;
        size_t n;
        for (int i = 0; i < 2000; i++)
            strbuf_addf(&host, O1 " " O2 WHO "pull https://u:tok%d@h/r%d: x\n", i, i);
        urlcred_strip(host.buf, host.len, &pushed);
        got = restore(host.buf, pushed.buf, &n);
        ok(n == 2000 && !strcmp(got, host.buf), "2000 secret lines all restored");
        free(got);
        for (int i = 1999; i >= 0; i--)
            strbuf_addf(&rev, O1 " " O2 WHO "pull https://h/r%d: x\n", i);
        got = restore(host.buf, rev.buf, &n);
        ok(n == 2000 && strstr(got, "u:tok1999@h/r1999") < strstr(got, "u:tok0@h/r0"),
           "each line finds its own, in the sandbox's order");
        free(got);
        strbuf_release(&host);
        strbuf_release(&pushed);
        strbuf_release(&rev);
    }
    return done_testing();
}
