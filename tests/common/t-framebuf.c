/* Unit tests of common/framebuf.c over real pipes and a socketpair: frames that arrive in
 * pieces, several frames in one read, end of file, a writer that meets a full pipe and one
 * whose reader is gone. The frame rule here is a toy one (a length byte, then that many
 * bytes): the buffer must not care. */
#include "common/framebuf.h"
#include "common/util.h"
#include "tests/lib/tap.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void setup_failed(const char *what)
{
    printf("Bail out! %s: %s\n", what, strerror(errno));
    exit(1);
}

/* The toy rule: 1 and the frame's length when a whole frame is there, else 0. */
static int toy_parse(const char *p, size_t avail, size_t *flen)
{
    if (avail < 1 || avail < 1 + (size_t)(unsigned char)p[0])
        return 0;
    *flen = 1 + (size_t)(unsigned char)p[0];
    return 1;
}

/* Takes every complete frame, appending their bodies to got with '|' after each. */
static int take_frames(framebuf_in *in, strbuf *got)
{
    size_t flen;
    int n = 0;
    while (toy_parse(framebuf_data(in), framebuf_len(in), &flen)) {
        const char *frame = framebuf_data(in);
        framebuf_consume(in, flen);
        /* The payload stays where it was until the next compact. */
        strbuf_add(got, frame + 1, flen - 1);
        strbuf_addch(got, '|');
        n++;
    }
    framebuf_in_compact(in);
    return n;
}

static void test_input(void)
{
    int p[2];
    framebuf_in in;
    strbuf got = STRBUF_INIT;
    ssize_t n;

    if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0)
        setup_failed("pipe2");
    framebuf_in_init(&in);

    n = framebuf_fill(&in, p[0], 64);
    ok(n < 0 && errno == EAGAIN, "fill from an empty non-blocking pipe says EAGAIN");

    (void)!write(p[1], "\003ab", 3);
    is_int(framebuf_fill(&in, p[0], 64), 3, "fill returns what one read gave");
    is_int(take_frames(&in, &got), 0, "a frame missing its last byte is not taken");
    is_int(framebuf_len(&in), 3, "and stays unconsumed");

    (void)!write(p[1], "c\002de\001f\004gh", 9);
    framebuf_fill(&in, p[0], 64);
    is_int(take_frames(&in, &got), 3, "the rest of it and two more frames come out of one read");
    is_str(got.buf, "abc|de|f|", "in order, whole");
    is_int(framebuf_len(&in), 3, "the partial fourth frame waits");
    is_int(in.off, 9, "the consumed bytes before it are not moved yet (compaction is lazy)");

    (void)!write(p[1], "ij", 2);
    framebuf_fill(&in, p[0], 64);
    take_frames(&in, &got);
    is_str(got.buf, "abc|de|f|ghij|", "a frame split across three reads");
    is_int(in.buf.len, 0, "a buffer with nothing unconsumed is emptied");

    close(p[1]);
    is_int(framebuf_fill(&in, p[0], 64), 0, "fill returns 0 at end of file");
    close(p[0]);
    framebuf_in_release(&in);
    strbuf_release(&got);
}

/* Many small frames, arriving so that one is always partial: the consumed prefix is moved
 * only once it passes FRAMEBUF_COMPACT_AT, and nothing is lost across the moves. */
static void test_compaction(void)
{
    int p[2];
    framebuf_in in;
    strbuf got = STRBUF_INIT, frames = STRBUF_INIT, want = STRBUF_INIT;
    size_t sent = 0, most = 0;
    int moves = 0;

    if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0)
        setup_failed("pipe2");
    framebuf_in_init(&in);
    for (int i = 0; i < 5000; i++) {
        strbuf_addch(&frames, (char)255);
        for (int k = 0; k < 255; k++)
            strbuf_addch(&frames, (char)('a' + (i + k) % 26));
        strbuf_add(&want, frames.buf + frames.len - 255, 255);
        strbuf_addch(&want, '|');
    }
    while (sent < frames.len) {
        /* 100 bytes, then 1024 at a time: every read but the last ends inside a frame. */
        size_t step = sent ? 1024 : 100;
        size_t w = frames.len - sent < step ? frames.len - sent : step;
        size_t before;
        if (write(p[1], frames.buf + sent, w) != (ssize_t)w)
            setup_failed("write");
        sent += w;
        while (framebuf_fill(&in, p[0], 4096) > 0) {
        }
        before = in.off;
        take_frames(&in, &got);
        if (in.off == 0 && framebuf_len(&in) > 0 && before > 0)
            moves++;
        if (in.buf.len > most)
            most = in.buf.len;
    }
    is_int(moves, 1, "1.28 MB of consumed frames behind a partial one are moved once");
    ok(most <= FRAMEBUF_COMPACT_AT + 1024 + 4096, "the buffer stays within the compaction bound (%zu)",
       most);
    ok(got.len == want.len && memcmp(got.buf, want.buf, want.len) == 0,
       "every frame came out once, whole and in order");
    close(p[0]);
    close(p[1]);
    framebuf_in_release(&in);
    strbuf_release(&got);
    strbuf_release(&frames);
    strbuf_release(&want);
}

static void test_output(void)
{
    int p[2];
    framebuf_out o;
    char buf[70000];
    size_t written, drained = 0;
    int rc;

    if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0)
        setup_failed("pipe2");
    fcntl(p[1], F_SETPIPE_SZ, 4096);
    framebuf_out_init(&o);

    for (int i = 0; i < 20000; i++)
        strbuf_addch(&o.q, (char)('A' + i % 26));
    rc = framebuf_write(&o, p[1]);
    written = o.q.len - framebuf_pending(&o);
    ok(rc == 0, "a full pipe is not an error");
    ok(framebuf_pending(&o) > 0 && written > 0, "part is written, the rest stays queued (%zu written)",
       written);
    while (framebuf_pending(&o)) {
        ssize_t n = read(p[0], buf + drained, sizeof(buf) - drained);
        if (n > 0)
            drained += (size_t)n;
        if (framebuf_write(&o, p[1]) < 0)
            break;
    }
    while (drained < 20000) {
        ssize_t n = read(p[0], buf + drained, sizeof(buf) - drained);
        if (n <= 0)
            break;
        drained += (size_t)n;
    }
    is_int(drained, 20000, "every byte reaches the reader");
    ok(drained == 20000 && buf[0] == 'A' && buf[19999] == 'A' + 19999 % 26 &&
       buf[12345] == 'A' + 12345 % 26, "in order");
    is_int(o.q.len, 0, "a drained queue is emptied");

    close(p[0]);
    strbuf_addstr(&o.q, "lost");
    signal(SIGPIPE, SIG_IGN);
    rc = framebuf_write(&o, p[1]);
    ok(rc < 0 && errno == EPIPE, "a gone reader is an error with errno EPIPE");
    is_int(framebuf_pending(&o), 4, "and the bytes stay queued");
    close(p[1]);
    framebuf_out_reset(&o);
    is_int(framebuf_pending(&o), 0, "reset forgets them");
    framebuf_out_release(&o);
}

static void test_send(void)
{
    int sv[2];
    framebuf_out o;
    char buf[16];
    ssize_t n;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        setup_failed("socketpair");
    signal(SIGPIPE, SIG_DFL);
    framebuf_out_init(&o);
    strbuf_addstr(&o.q, "\005hello");
    is_int(framebuf_send(&o, sv[0], MSG_NOSIGNAL | MSG_DONTWAIT), 0, "send writes a frame");
    n = read(sv[1], buf, sizeof(buf));
    ok(n == 6 && memcmp(buf, "\005hello", 6) == 0, "the peer reads it");
    close(sv[1]);
    strbuf_addstr(&o.q, "\001x");
    /* With MSG_NOSIGNAL a closed peer is EPIPE; without it SIGPIPE would end this test. */
    ok(framebuf_send(&o, sv[0], MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno == EPIPE,
       "a closed peer is EPIPE, not a signal");
    close(sv[0]);
    framebuf_out_release(&o);
}

int main(void)
{
    test_input();
    test_compaction();
    test_output();
    test_send();
    return done_testing();
}
