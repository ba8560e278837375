/*
 * sync/safefs.c: conflict copies are placed without ever replacing a file (the name is
 * chosen by making the entry, EEXIST moves on to the next name), and the no-replace rename
 * they use.
 */
#include "sync/safefs.h"
#include "tests/lib/tap.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int taken_before;    /* place_some: names refused before one is taken */
static int calls;

/* Refuses the first taken_before names as taken, then takes one. */
static int place_some(int dfd, const char *cname, void *ctx)
{
    (void)dfd;
    (void)ctx;
    (void)cname;
    if (calls++ < taken_before) {
        errno = EEXIST;
        return -1;
    }
    return 0;
}

static int place_fail(int dfd, const char *cname, void *ctx)
{
    (void)dfd;
    (void)cname;
    errno = *(int *)ctx;
    calls++;
    return -1;
}

static int place_rename(int dfd, const char *cname, void *ctx)
{
    return sf_rename_noreplace(dfd, (const char *)ctx, dfd, cname);
}

static void put(int dfd, const char *name, const char *text)
{
    int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        if (write(fd, text, strlen(text)) < 0)
            perror("write");
        close(fd);
    }
}

static char *get(int dfd, const char *name)
{
    static char buf[64];
    int fd = openat(dfd, name, O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
    if (fd >= 0)
        close(fd);
    buf[n > 0 ? n : 0] = '\0';
    return buf;
}

int main(void)
{
    char dir[] = "/tmp/sbx-t-safefs.XXXXXX", out[NAME_MAX + 1], first[NAME_MAX + 1];
    int dfd, e;

    if (!mkdtemp(dir) || (dfd = open(dir, O_RDONLY | O_DIRECTORY)) < 0) {
        printf("Bail out! cannot make a temporary directory\n");
        return 1;
    }

    taken_before = 0;
    calls = 0;
    ok(sf_conflict_place(dfd, "f.txt", out, sizeof(out), place_some, NULL) == 0 && calls == 1,
       "a free first name: placed at once");
    ok(!strncmp(out, "f.txt.sbx-conflict-sandbox-", 27) && strlen(out) == 27 + 15,
       "...named NAME.sbx-conflict-sandbox-YYYYMMDDTHHMMSS: %s", out);
    strcpy(first, out);

    taken_before = 5;
    calls = 0;
    ok(sf_conflict_place(dfd, "f.txt", out, sizeof(out), place_some, NULL) == 0 && calls == 6,
       "five names taken: the sixth is tried and placed");
    ok(strlen(out) == strlen(first) + 2 && !strcmp(out + strlen(out) - 2, "-5"),
       "...with -5 added: %s", out);

    taken_before = 100000;
    calls = 0;
    errno = 0;
    {
        int r = sf_conflict_place(dfd, "f.txt", out, sizeof(out), place_some, NULL), err = errno;
        ok(r < 0 && err == EEXIST && calls == 1000,
           "every name taken: -1 and EEXIST after 1,000 tries, nothing replaced (%d tries)",
           calls);
    }

    e = EACCES;
    calls = 0;
    ok(sf_conflict_place(dfd, "f.txt", out, sizeof(out), place_fail, &e) < 0 && errno == EACCES &&
       calls == 1, "another error: given back at once");

    {
        char longname[NAME_MAX + 1];
        memset(longname, 'a', NAME_MAX);
        longname[NAME_MAX] = '\0';
        taken_before = 0;
        calls = 0;
        ok(sf_conflict_place(dfd, longname, out, sizeof(out), place_some, NULL) == 0 &&
           strlen(out) == NAME_MAX, "a name of NAME_MAX bytes: shortened to fit");
    }

    /* the no-replace rename */
    put(dfd, "a", "from a");
    put(dfd, "b", "was b");
    errno = 0;
    ok(sf_rename_noreplace(dfd, "a", dfd, "b") < 0 && errno == EEXIST,
       "sf_rename_noreplace onto an existing name: EEXIST");
    is_str(get(dfd, "b"), "was b", "...which keeps its content");
    is_str(get(dfd, "a"), "from a", "...and the source stays");
    ok(sf_rename_noreplace(dfd, "a", dfd, "c") == 0, "onto a free name: renamed");
    is_str(get(dfd, "c"), "from a", "...content moved");
    ok(faccessat(dfd, "a", F_OK, 0) < 0, "...source gone");

    /* a conflict copy through it, with its first names already taken by files */
    put(dfd, "x", "incoming");
    taken_before = 0;
    calls = 0;
    ok(sf_conflict_place(dfd, "y", out, sizeof(out), place_rename, (void *)"x") == 0,
       "a conflict copy placed by rename");
    put(dfd, "x", "second");
    {
        char taken[NAME_MAX + 1];
        strcpy(taken, out);
        /* in the same second its first name is the first copy's: -1 is added */
        ok(sf_conflict_place(dfd, "y", out, sizeof(out), place_rename, (void *)"x") == 0 &&
           strcmp(out, taken) != 0, "a second conflict copy: a name of its own (%s)", out);
        is_str(get(dfd, taken), "incoming", "...the first copy kept");
        is_str(get(dfd, out), "second", "...the second beside it");
    }

    {
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            diag("could not remove %s", dir);
    }
    close(dfd);
    return done_testing();
}
