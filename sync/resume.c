/*
 * The resumable stream's frames and bookkeeping (resume.h); no I/O here. Its state is
 * three counters in stream bytes: base (the first byte still held, unacknowledged), sent
 * (the next to frame: back to base on a new transport, so everything held is resent) and
 * received (what arrived from the peer, which the next HELLO or ACK reports). The pod's
 * end may be the sandbox's own program, so what the peer reports is checked against what
 * this end really sent before it moves anything.
 */
#include "sync/resume.h"
#include "common/bytes.h"

#include <string.h>

/* A frame's header (len, type, three zero bytes) and its payload. */
static void frame(strbuf *out, int type, const void *payload, size_t len)
{
    unsigned char h[RS_HDR] = { 0 };
    sbx_put_le32(h, (uint32_t)len);
    h[4] = (unsigned char)type;
    strbuf_add(out, h, sizeof(h));
    if (len)
        strbuf_add(out, payload, len);
}

void rs_init(rs_stream *s, uint64_t id)
{
    memset(s, 0, sizeof(*s));
    s->id = id;
    strbuf_init(&s->unacked, 0);
    strbuf_init(&s->in, 0);
}

void rs_free(rs_stream *s)
{
    strbuf_release(&s->unacked);
    strbuf_release(&s->in);
}

/* A new transport: the half-read frame of the old one is dropped (its bytes will come
 * again, resent from the count this HELLO gives), and nothing is sent until the peer's
 * HELLO says how much it has. */
void rs_new_transport(rs_stream *s, strbuf *out)
{
    unsigned char p[16];
    sbx_put_le64(p, s->id);
    sbx_put_le64(p + 8, s->received);
    strbuf_reset(&s->in);
    s->peer_hello = false;
    s->sent = s->base;      /* until the peer says what it has */
    s->acked = s->received; /* the HELLO tells it */
    frame(out, RS_HELLO, p, sizeof(p));
}

void rs_queue(rs_stream *s, const void *buf, size_t len)
{
    strbuf_add(&s->unacked, buf, len);
}

bool rs_can_queue(const rs_stream *s)
{
    return s->unacked.len < RS_MAX_UNACKED;
}

void rs_frame_out(rs_stream *s, strbuf *out, size_t max, bool force_ack)
{
    bool framed = false;
    if (s->peer_hello) {
        uint64_t end = s->base + s->unacked.len;
        size_t added = 0;
        while (s->sent < end && added < max) {
            size_t n = (size_t)(end - s->sent);
            if (n > RS_MAX_DATA)
                n = RS_MAX_DATA;
            frame(out, RS_DATA, s->unacked.buf + (s->sent - s->base), n);
            s->sent += n;
            added += n;
            framed = true;
        }
    }
    /* an ACK rides along with data at no cost; alone it is one more message each way, so
     * it waits for RS_ACK_EVERY bytes or for the caller's idle moment (force_ack) */
    if (s->received - s->acked >= RS_ACK_EVERY ||
        ((force_ack || framed) && s->received != s->acked)) {
        unsigned char p[8];
        sbx_put_le64(p, s->received);
        frame(out, RS_ACK, p, sizeof(p));
        s->acked = s->received;
    }
}

void rs_close(strbuf *out)
{
    frame(out, RS_CLOSE, NULL, 0);
}

/* The peer has everything below upto: drop it. A count below base is a peer that lost
 * acknowledged bytes (it restarted: the stream cannot be resumed, those bytes are gone
 * here); one beyond what was queued is a lie, which would otherwise make this end skip
 * bytes it never sent. Both end the stream. */
static int trim(rs_stream *s, uint64_t upto, const char **why)
{
    if (upto < s->base) {
        *why = "the other end lost bytes it had acknowledged (it restarted)";
        return -1;
    }
    if (upto > s->base + s->unacked.len) {
        *why = "the other end acknowledged bytes never sent";
        return -1;
    }
    strbuf_remove(&s->unacked, 0, (size_t)(upto - s->base));
    s->base = upto;
    if (s->sent < upto)
        s->sent = upto;
    return 0;
}

/* The peer's bytes: whole frames are handled, the stream's DATA appended to deliver, and a
 * partial frame kept for the next call. The header is checked before its payload is
 * waited for (a length over RS_MAX_DATA, or nonzero pad bytes, is a peer out of step or
 * hostile: waiting for 4 GiB would hold the memory), and a HELLO must come first and name
 * this stream (a keeper of another session must not be spliced in). */
int rs_input(rs_stream *s, const void *buf, size_t len, strbuf *deliver, const char **why)
{
    size_t off = 0;
    strbuf_add(&s->in, buf, len);
    while (s->in.len - off >= RS_HDR) {
        const unsigned char *h = (const unsigned char *)s->in.buf + off;
        uint32_t n = sbx_le32(h);
        int type = h[4];
        if (n > RS_MAX_DATA || h[5] || h[6] || h[7]) {
            *why = "a malformed frame";
            return -1;
        }
        if (s->in.len - off < RS_HDR + n)
            break;
        const unsigned char *p = h + RS_HDR;
        if (!s->peer_hello && type != RS_HELLO) {
            *why = "a frame before HELLO";
            return -1;
        }
        switch (type) {
        case RS_HELLO:
            if (n != 16 || sbx_le64(p) != s->id) {
                *why = n != 16 ? "a malformed HELLO" : "the other end serves another stream";
                return -1;
            }
            s->peer_hello = true;
            if (trim(s, sbx_le64(p + 8), why) < 0)
                return -1;
            s->sent = s->base;  /* resend everything it has not got */
            break;
        case RS_DATA:
            strbuf_add(deliver, p, n);
            s->received += n;
            break;
        case RS_ACK:
            if (n != 8 || trim(s, sbx_le64(p), why) < 0) {
                if (n != 8)
                    *why = "a malformed ACK";
                return -1;
            }
            break;
        case RS_CLOSE:
            s->peer_closed = true;
            break;
        default:
            *why = "an unknown frame type";
            return -1;
        }
        off += RS_HDR + n;
    }
    strbuf_remove(&s->in, 0, off);
    return 0;
}
