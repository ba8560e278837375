/* Unit tests of sync/fsmonitor.c: the tokens git's fsmonitor hook gets and gives back (an
 * unknown, another agent's, a too old one: everything), the journal's answers relative to the
 * work tree, the fresh (unwatched) directories named with every directory inside them, the
 * request parser and the hook's check of an answer. */
#include "sync/fsmonitor.h"
#include "tests/lib/tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The answer's paths (after the token) as one string, each followed by ';'. */
static char *paths(const strbuf *a, char *token, size_t tsize)
{
    strbuf o = STRBUF_INIT;
    size_t at = strlen(a->buf) + 1;
    snprintf(token, tsize, "%s", a->buf);
    while (at < a->len) {
        strbuf_addstr(&o, a->buf + at);
        strbuf_addch(&o, ';');
        at += strlen(a->buf + at) + 1;
    }
    if (!o.buf) 
        strbuf_addstr(&o, "");
    return strbuf_detach(&o, NULL);
}

static char *ask(fsm_state *s, const char *token, const char *base, const char *prefix,
                 char *newtok, size_t tsize)
{
    strbuf a = STRBUF_INIT;
    char *p;
    fsm_answer(s, token, true, 0, base, prefix, &a);
    ok(fsm_answer_ok(a.buf, a.len), "the answer to '%s' is one git takes", token);
    p = paths(&a, newtok, tsize);
    strbuf_release(&a);
    return p;
}

int main(void)
{
    fsm_state s;
    char t0[200], t1[200], t2[200], dir[] = "/tmp/t-fsm-XXXXXX";
    char *p, *bases[1];
    const char *tok, *cwd;

    ok(mkdtemp(dir) != NULL, "a scratch directory");
    bases[0] = dir;
    fsm_init(&s, 0x1234);

    p = ask(&s, "12345", dir, "", t0, sizeof(t0));
    is_str(p, "/;", "before any scan: everything");
    free(p);
    fsm_scanned(&s, true, bases, 1);
    p = ask(&s, "whatever", dir, "", t0, sizeof(t0));
    is_str(p, "/;", "an unknown token: everything");
    free(p);
    ok(!strncmp(t0, "sbx1:0000000000001234:", 22), "the token carries the instance (%s)", t0);

    /* The journal's story, a step a row: what happens first, then git's question. */
    static const struct {
        const char *noted;      /* paths noted first, ';' between, a trailing '/': a directory */
        int lost;               /* 1 or 0: fsm_lost(on or off) first; -1: not */
        bool scan;              /* fsm_scanned first */
        const char *token;      /* asked with this; NULL: with t[from] */
        int from, to;           /* the answer's new token goes to t[to] */
        const char *prefix, *want, *what;
    } steps[] = {
        { "a/f;w/x", -1, false, NULL, 0, 1, "", "a/f;w/x;", "the paths changed since the token" },
        { NULL, -1, false, NULL, 1, 2, "", "", "nothing since the newer token" },
        { NULL, -1, false, NULL, 0, 2, "w", "x;",
          "relative to a work tree below the root, and only what is in it" },
        { "w/", -1, false, NULL, 1, 2, "w", "/;",
          "the work tree's own directory changed: everything" },
        { ".git/index", -1, false, NULL, 2, 1, "", "", "what happens in .git is not named" },
        /* repeated events for one path: one entry, unless a token was given out between */
        { "d1;d1", -1, false, NULL, 1, 2, "", "d1;", "the same path twice in a row: named once" },
        { "d1", -1, false, NULL, 2, 1, "", "d1;",
          "again after a token was given out: named for that token" },
        { NULL, -1, false, "sbx1:0000000000001234:99999999", 0, 2, "", "/;",
          "a token from the future: everything" },
        { NULL, -1, false, "sbx1:0000000000001234:1x", 0, 2, "", "/;",
          "a malformed token: everything" },
        /* lost events: older tokens are everything, newer ones work again */
        { NULL, 1, false, NULL, 1, 2, "", "/;", "after lost events, an older token: everything" },
        { "b", -1, false, NULL, 2, 1, "", "b;", "a token given after: the list" },
        { NULL, 0, false, NULL, 1, 2, "", "/;", "watching off: everything" },
        { NULL, -1, true, NULL, 2, 0, "", "/;",
          "a token from before the scan that watched everything again: everything" },
    };
    char *t[3] = { t0, t1, t2 };
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        for (const char *n = steps[i].noted; n && *n;) {
            size_t len = strcspn(n, ";");
            bool isdir = n[len - 1] == '/';
            fsm_note(&s, 0, n, isdir ? len - 1 : len, isdir, false);
            n += len + (n[len] == ';');
        }
        if (steps[i].lost >= 0)
            fsm_lost(&s, steps[i].lost);
        if (steps[i].scan)
            fsm_scanned(&s, true, bases, 1);
        p = ask(&s, steps[i].token ? steps[i].token : t[steps[i].from], dir, steps[i].prefix,
                t[steps[i].to], sizeof(t0));
        is_str(p, steps[i].want, "%s", steps[i].what);
        free(p);
    }

    /* another instance's token (a restarted agent) */
    {
        fsm_state o;
        fsm_init(&o, 0x9999);
        fsm_scanned(&o, true, bases, 1);
        p = ask(&o, t1, dir, "", t2, sizeof(t2));
        is_str(p, "/;", "another agent's token (a restarted agent): everything");
        free(p);
        fsm_release(&o);
    }

    /* A fresh directory (made, not watched yet): it and every directory in it, each time. */
    {
        char path[4200];
        snprintf(path, sizeof(path), "%s/n", dir);
        mkdir(path, 0755);
        snprintf(path, sizeof(path), "%s/n/s", dir);
        mkdir(path, 0755);
        snprintf(path, sizeof(path), "%s/n/file", dir);
        fclose(fopen(path, "w"));
    }
    fsm_note(&s, 0, "n", 1, true, true);
    p = ask(&s, t0, dir, "", t1, sizeof(t1));
    ok(strstr(p, "n;n/;") && strstr(p, "n/" FSM_DUMMY ";") && strstr(p, "n/s/" FSM_DUMMY ";") &&
       !strstr(p, "file"), "a fresh directory: it, and each directory in it for git to list (%s)", p);
    free(p);
    p = ask(&s, t1, dir, "", t2, sizeof(t2));
    ok(strstr(p, "n/s/" FSM_DUMMY ";") != NULL, "named again with a newer token, until a scan");
    free(p);
    fsm_scanned(&s, true, bases, 1);
    p = ask(&s, t1, dir, "", t0, sizeof(t0));
    ok(strstr(p, "n/s/" FSM_DUMMY ";") != NULL, "a token from before the scan still gets it");
    free(p);
    p = ask(&s, t0, dir, "", t1, sizeof(t1));
    is_str(p, "", "a token from after the scan does not");
    free(p);

    /* The request and the answer checks. */
    {
        static const char req[] = FSM_REQUEST_MAGIC "\0tok\0/w\0";
        ok(fsm_parse_request(req, sizeof(req) - 1, &tok, &cwd) == 0 && !strcmp(tok, "tok") &&
           !strcmp(cwd, "/w"), "a request parses");
        ok(fsm_parse_request(req, sizeof(req) - 2, &tok, &cwd) < 0, "an unterminated one does not");
        ok(fsm_parse_request(req, sizeof(req), &tok, &cwd) < 0, "nor one with more after it");
        static const char rel[] = FSM_REQUEST_MAGIC "\0tok\0w\0";
        ok(fsm_parse_request(rel, sizeof(rel) - 1, &tok, &cwd) < 0, "nor a relative directory");
    }
    ok(fsm_answer_ok("t\0/\0", 4), "token and / is an answer");
    ok(fsm_answer_ok("t\0", 2), "a token alone is an answer");
    ok(!fsm_answer_ok("t\0a\0\0", 5), "an empty path is not (git reads before it)");
    ok(!fsm_answer_ok("t\0a", 3), "an unterminated path is not");
    ok(!fsm_answer_ok("t\n\0a\0", 5), "a token with a newline is not");
    ok(!fsm_answer_ok("\0a\0", 3), "an empty token is not");

    fsm_release(&s);
    {
        char cmd[200];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            diag("could not remove %s", dir);
    }
    return done_testing();
}
