/*
 * The two buffers of a framed byte stream over a non-blocking fd (framebuf.h): framebuf_fill(),
 * framebuf_consume() and framebuf_in_compact() for input, framebuf_write() and framebuf_send()
 * for output. It knows no header: the caller's parser (wire_parse, proto_parse) sizes each
 * frame. May call libc and common/ only (common/README.md).
 */
#include "common/framebuf.h"

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

void framebuf_in_init(framebuf_in *in)
{
    strbuf_init(&in->buf, 0);
    in->off = 0;
}

void framebuf_in_release(framebuf_in *in)
{
    strbuf_release(&in->buf);
    in->off = 0;
}

void framebuf_in_reset(framebuf_in *in)
{
    strbuf_reset(&in->buf);
    in->off = 0;
}

/* One read of at most room bytes (EINTR retried) appended to the input: the caller's
 * room is its bound on what a peer can make it buffer in one go; the parser's frame limit
 * (SYNC_MAX_FRAME, the proto's) bounds the whole, since a frame is consumed as soon as it
 * is complete. Returns read(2)'s result: 0 at EOF, -1 with EAGAIN when nothing is there. */
ssize_t framebuf_fill(framebuf_in *in, int fd, size_t room)
{
    for (;;) {
        ssize_t n;
        strbuf_grow(&in->buf, room);
        n = read(fd, in->buf.buf + in->buf.len, strbuf_avail(&in->buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n > 0)
            strbuf_setlen(&in->buf, in->buf.len + (size_t)n);
        return n;
    }
}

/* The caller parsed n bytes: they are skipped, not moved (compaction is lazy, below). */
void framebuf_consume(framebuf_in *in, size_t n)
{
    in->off += n;
}

/* Shared by both directions: buf's first *off bytes are done with. Emptied when all is
 * done, else moved down only past FRAMEBUF_COMPACT_AT, so that a stream of small frames
 * costs no memmove of the rest per frame (quadratic in a burst), and a long-lived
 * connection does not grow its buffer without end. */
static void compact(strbuf *buf, size_t *off)
{
    if (*off == buf->len) {
        strbuf_reset(buf);
        *off = 0;
    } else if (*off > FRAMEBUF_COMPACT_AT) {
        strbuf_remove(buf, 0, *off);
        *off = 0;
    }
}

void framebuf_in_compact(framebuf_in *in)
{
    compact(&in->buf, &in->off);
}

void framebuf_out_init(framebuf_out *o)
{
    strbuf_init(&o->q, 0);
    o->off = 0;
}

void framebuf_out_release(framebuf_out *o)
{
    strbuf_release(&o->q);
    o->off = 0;
}

void framebuf_out_reset(framebuf_out *o)
{
    strbuf_reset(&o->q);
    o->off = 0;
}

/* The loop of framebuf_write() and framebuf_send(): flags < 0 means write(2). Writes until
 * the queue is empty or the fd would block (EAGAIN: the rest waits for POLLOUT, never a
 * blocking write that a peer which stops reading could hang us on); -1 for a real error. */
static int flush(framebuf_out *o, int fd, int flags)
{
    int rc = 0;
    while (o->off < o->q.len) {
        const char *p = o->q.buf + o->off;
        size_t len = o->q.len - o->off;
        ssize_t n = flags < 0 ? write(fd, p, len) : send(fd, p, len, flags);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                rc = -1;
            break;
        }
        o->off += (size_t)n;
    }
    compact(&o->q, &o->off);   /* touches no errno */
    return rc;
}

int framebuf_write(framebuf_out *o, int fd)
{
    return flush(o, fd, -1);
}

/* send(2) with flags (MSG_NOSIGNAL: a peer gone is EPIPE, not a SIGPIPE that kills us). */
int framebuf_send(framebuf_out *o, int fd, int flags)
{
    return flush(o, fd, flags < 0 ? 0 : flags);
}
