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

    fsm_note(&s, 0, "a/f", 3, false, false);
    fsm_note(&s, 0, "w/x", 3, false, false);
    p = ask(&s, t0, dir, "", t1, sizeof(t1));
    is_str(p, "a/f;w/x;", "the paths changed since the token");
    free(p);
    p = ask(&s, t1, dir, "", t2, sizeof(t2));
    is_str(p, "", "nothing since the newer token");
    free(p);
    p = ask(&s, t0, dir, "w", t2, sizeof(t2));
    is_str(p, "x;", "relative to a work tree below the root, and only what is in it");
    free(p);
    fsm_note(&s, 0, "w", 1, true, false);
    p = ask(&s, t1, dir, "w", t2, sizeof(t2));
    is_str(p, "/;", "the work tree's own directory changed: everything");
    free(p);
    fsm_note(&s, 0, ".git/index", 10, false, false);
    p = ask(&s, t2, dir, "", t1, sizeof(t1));
    is_str(p, "", "what happens in .git is not named");
    free(p);

    /* Repeated events for one path: one entry, unless a token was given out between. */
    fsm_note(&s, 0, "d1", 2, false, false);
    fsm_note(&s, 0, "d1", 2, false, false);
    p = ask(&s, t1, dir, "", t2, sizeof(t2));
    is_str(p, "d1;", "the same path twice in a row: named once");
    free(p);
    fsm_note(&s, 0, "d1", 2, false, false);
    p = ask(&s, t2, dir, "", t1, sizeof(t1));
    is_str(p, "d1;", "again after a token was given out: named for that token");
    free(p);

    /* Another instance's token, and a token from the future. */
    {
        fsm_state o;
        fsm_init(&o, 0x9999);
        fsm_scanned(&o, true, bases, 1);
        p = ask(&o, t1, dir, "", t2, sizeof(t2));
        is_str(p, "/;", "another agent's token (a restarted agent): everything");
        free(p);
        fsm_release(&o);
    }
    p = ask(&s, "sbx1:0000000000001234:99999999", dir, "", t2, sizeof(t2));
    is_str(p, "/;", "a token from the future: everything");
    free(p);
    p = ask(&s, "sbx1:0000000000001234:1x", dir, "", t2, sizeof(t2));
    is_str(p, "/;", "a malformed token: everything");
    free(p);

    /* Lost events: older tokens are everything, newer ones work again. */
    fsm_lost(&s, true);
    p = ask(&s, t1, dir, "", t2, sizeof(t2));
    is_str(p, "/;", "after lost events, an older token: everything");
    free(p);
    fsm_note(&s, 0, "b", 1, false, false);
    p = ask(&s, t2, dir, "", t1, sizeof(t1));
    is_str(p, "b;", "a token given after: the list");
    free(p);
    fsm_lost(&s, false);
    p = ask(&s, t1, dir, "", t2, sizeof(t2));
    is_str(p, "/;", "watching off: everything");
    free(p);
    fsm_scanned(&s, true, bases, 1);
    p = ask(&s, t2, dir, "", t0, sizeof(t0));
    is_str(p, "/;", "a token from before the scan that watched everything again: everything");
    free(p);

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
