/* Unit tests of common/strbuf.c. */
#include "common/strbuf.h"
#include "common/util.h"
#include "tests/lib/tap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void pipe_or_bail(int p[2])
{
    if (pipe2(p, O_CLOEXEC) < 0) {
        printf("Bail out! pipe2: %s\n", strerror(errno));
        exit(1);
    }
}

static void test_avail_and_read_fd(void)
{
    int p[2];
    pid_t pid;
    strbuf sb = STRBUF_INIT;

    is_int(strbuf_avail(&sb), 0, "strbuf_avail of an unowned strbuf is 0");
    strbuf_grow(&sb, 100);
    ok(strbuf_avail(&sb) >= 100 && strbuf_avail(&sb) == sb.alloc - sb.len - 1,
       "strbuf_avail is the room before the NUL's byte");

    /* 300000 bytes from a writer that is slower than one read: several reads, to EOF. */
    pipe_or_bail(p);
    pid = fork();
    if (pid == 0) {
        static char big[100000];
        close(p[0]);
        memset(big, 'z', sizeof(big));
        for (int i = 0; i < 3; i++)
            if (write(p[1], big, sizeof(big)) != (ssize_t)sizeof(big))
                _exit(1);
        _exit(0);
    }
    close(p[1]);
    strbuf_addstr(&sb, "x");
    is_int(strbuf_read_fd(&sb, p[0], SIZE_MAX), 0, "strbuf_read_fd reads to end of file");
    is_int(sb.len, 1 + 300000, "and appends every byte after what was there");
    ok(sb.buf[0] == 'x' && sb.buf[1] == 'z' && sb.buf[sb.len] == '\0', "NUL-terminated");
    close(p[0]);
    waitpid(pid, NULL, 0);

    strbuf_reset(&sb);
    pipe_or_bail(p);
    if (write(p[1], "0123456789", 10) != 10)
        printf("Bail out! write\n");
    close(p[1]);
    ok(strbuf_read_fd(&sb, p[0], 5) < 0 && errno == EFBIG, "more than max is -1 with EFBIG");
    ok(sb.len == 10 && memcmp(sb.buf, "0123456789", 10) == 0, "with what was read kept");
    close(p[0]);

    ok(strbuf_read_fd(&sb, -1, SIZE_MAX) < 0 && errno == EBADF, "a read error is -1 with errno");
    strbuf_release(&sb);
}

int main(void)
{
    strbuf sb = STRBUF_INIT;
    char *s;
    size_t n;

    is_int(sb.len, 0, "a new strbuf is empty");
    is_str(sb.buf, "", "and its buffer is a valid empty string");

    strbuf_addstr(&sb, "hello");
    strbuf_addch(&sb, ' ');
    strbuf_addf(&sb, "%s %d", "world", 42);
    is_str(sb.buf, "hello world 42", "add, addch and addf append");

    strbuf_add(&sb, "\0x", 2);
    is_int(sb.len, 16, "embedded NUL counts in len");
    ok(sb.buf[sb.len] == '\0', "buffer stays NUL-terminated");

    strbuf_remove(&sb, 0, 6);
    ok(memcmp(sb.buf, "world 42\0x", 10) == 0, "remove shifts the rest");

    strbuf_reset(&sb);
    for (int i = 0; i < 10000; i++)
        strbuf_addch(&sb, 'a' + i % 26);
    is_int(sb.len, 10000, "grows across many reallocations");

    s = strbuf_detach(&sb, &n);
    is_int(n, 10000, "detach returns the length");
    is_int(sb.len, 0, "detach leaves the strbuf empty");
    free(s);

    strbuf_add_shell_quoted(&sb, "it's", 4);
    is_str(sb.buf, "'it'\\''s'", "shell quoting of a single quote");
    strbuf_reset(&sb);
    strbuf_add_shell_quoted(&sb, "a\nb", 3);
    is_str(sb.buf, "$'a\\nb'", "control bytes use $'...'");
    strbuf_reset(&sb);
    strbuf_add_json_escaped(&sb, "\"\\\x01", 3);
    is_str(sb.buf, "\\\"\\\\\\u0001", "JSON escaping");
    strbuf_reset(&sb);
    strbuf_add_json_escaped(&sb, "h\xc3\xa9\xff\xc3", 5);
    is_str(sb.buf, "h\xc3\xa9\\u00ff\\u00c3", "valid UTF-8 stays, other bytes become \\u00XX");
    strbuf_reset(&sb);
    strbuf_add_json_escaped(&sb, "\xed\xa0\x80\xc0\xaf", 5);
    is_str(sb.buf, "\\u00ed\\u00a0\\u0080\\u00c0\\u00af", "surrogates and overlong forms are not UTF-8");
    strbuf_release(&sb);

    s = strbuf_detach(&sb, NULL);
    is_str(s, "", "detach of an empty strbuf gives an owned empty string");
    free(s);

    test_avail_and_read_fd();
    return done_testing();
}
