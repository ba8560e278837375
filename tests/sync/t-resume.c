/*
 * The resumable stream (sync/resume.h) between two ends in one process: bytes both ways
 * through transports that drop at arbitrary points, each drop followed by a new transport
 * (HELLO both ways, resend from the other's count). Everything arrives exactly once and in
 * order; acknowledged bytes are dropped from memory; a peer claiming more than was sent, a
 * stranger's stream id, or a malformed frame ends the stream.
 */
#include "sync/resume.h"
#include "tests/lib/tap.h"

#include <stdlib.h>
#include <string.h>

typedef struct end {
    rs_stream rs;
    strbuf wire;        /* framed, not yet "delivered" to the other end */
    strbuf got;         /* what this end's sink received */
} end;

static void end_init(end *e, uint64_t id)
{
    rs_init(&e->rs, id);
    strbuf_init(&e->wire, 0);
    strbuf_init(&e->got, 0);
}

static void end_free(end *e)
{
    rs_free(&e->rs);
    strbuf_release(&e->wire);
    strbuf_release(&e->got);
}

/* Moves at most max bytes of a's wire to b; -1 on a protocol error. */
static int carry(end *a, end *b, size_t max, const char **why)
{
    size_t n = a->wire.len < max ? a->wire.len : max;
    int r = rs_input(&b->rs, a->wire.buf, n, &b->got, why);
    strbuf_remove(&a->wire, 0, n);
    return r;
}

/* A transport drops: what was in flight is lost, both ends start a new one. */
static void drop(end *a, end *b)
{
    strbuf_reset(&a->wire);
    strbuf_reset(&b->wire);
    rs_new_transport(&a->rs, &a->wire);
    rs_new_transport(&b->rs, &b->wire);
}

int main(void)
{
    const char *why = "";
    end h, k;
    size_t total = 3u << 20;
    char *data = malloc(total), *back = malloc(total);
    unsigned seed = 12345;
    for (size_t i = 0; i < total; i++) {
        data[i] = (char)(rand_r(&seed) & 0xff);
        back[i] = (char)(data[i] ^ 0x5a);
    }

    end_init(&h, 0xabcdef);
    end_init(&k, 0xabcdef);
    rs_new_transport(&h.rs, &h.wire);
    rs_new_transport(&k.rs, &k.wire);
    size_t fed_h = 0, fed_k = 0;
    int drops = 0, errors = 0;
    for (int step = 0; step < 200000 && (h.got.len < total || k.got.len < total); step++) {
        /* the sources, a random piece at a time, while there is room */
        size_t n = (size_t)(rand_r(&seed) % 20000);
        if (fed_h < total && rs_can_queue(&h.rs)) {
            if (n > total - fed_h)
                n = total - fed_h;
            rs_queue(&h.rs, data + fed_h, n);
            fed_h += n;
        }
        n = (size_t)(rand_r(&seed) % 20000);
        if (fed_k < total && rs_can_queue(&k.rs)) {
            if (n > total - fed_k)
                n = total - fed_k;
            rs_queue(&k.rs, back + fed_k, n);
            fed_k += n;
        }
        bool idle = step % 7 == 0;
        rs_frame_out(&h.rs, &h.wire, RS_MAX_DATA * 2, idle);
        rs_frame_out(&k.rs, &k.wire, RS_MAX_DATA * 2, idle);
        if (carry(&h, &k, (size_t)(rand_r(&seed) % 50000), &why) < 0 ||
            carry(&k, &h, (size_t)(rand_r(&seed) % 50000), &why) < 0) {
            errors++;
            break;
        }
        if (rand_r(&seed) % 8 == 0) {
            drop(&h, &k);
            drops++;
        }
    }
    is_int(errors, 0, "no protocol error across the drops");
    if (errors)
        diag("%s", why);
    ok(drops > 20, "the transport dropped many times mid-stream");
    is_int((long)h.got.len, (long)total, "one way: every byte arrived once");
    ok(h.got.len == total && !memcmp(h.got.buf, back, total), "...in order");
    is_int((long)k.got.len, (long)total, "the other way too");
    ok(k.got.len == total && !memcmp(k.got.buf, data, total), "...in order");
    /* once both are idle, the ACKs go and nothing unacknowledged is kept */
    for (int i = 0; i < 4; i++) {
        rs_frame_out(&h.rs, &h.wire, RS_MAX_DATA, true);
        rs_frame_out(&k.rs, &k.wire, RS_MAX_DATA, true);
        carry(&h, &k, SIZE_MAX, &why);
        carry(&k, &h, SIZE_MAX, &why);
    }
    is_int((long)h.rs.unacked.len + (long)k.rs.unacked.len, 0, "acknowledged bytes are dropped");
    rs_close(&h.wire);
    carry(&h, &k, SIZE_MAX, &why);
    ok(k.rs.peer_closed, "CLOSE ends the stream on the other side");

    /* a keeper that restarted (it lost bytes it had acknowledged) cannot be resumed */
    end fresh;
    end_init(&fresh, 0xabcdef);
    drop(&h, &fresh);
    ok(carry(&fresh, &h, SIZE_MAX, &why) < 0 && strstr(why, "restarted"),
       "an end that lost what it had acknowledged (a keeper restarted) is refused");
    ok(carry(&h, &fresh, SIZE_MAX, &why) < 0, "...and it refuses a peer claiming bytes never sent to it");
    end_free(&fresh);

    end other;
    end_init(&other, 0x1234);
    strbuf_reset(&h.wire);
    rs_new_transport(&other.rs, &other.wire);
    rs_new_transport(&h.rs, &h.wire);
    ok(carry(&other, &h, SIZE_MAX, &why) < 0 && strstr(why, "another stream"),
       "a HELLO of another stream is refused");
    end_free(&other);

    end a, b;
    end_init(&a, 7);
    end_init(&b, 7);
    rs_new_transport(&a.rs, &a.wire);
    rs_new_transport(&b.rs, &b.wire);
    carry(&a, &b, SIZE_MAX, &why);
    const unsigned char bad[8] = { 0xff, 0xff, 0xff, 0x7f, RS_DATA, 0, 0, 0 };
    ok(rs_input(&b.rs, bad, sizeof(bad), &b.got, &why) < 0, "a frame over RS_MAX_DATA is refused");
    end_free(&a);
    end_free(&b);
    const unsigned char early[8] = { 0, 0, 0, 0, RS_DATA, 0, 0, 0 };
    end c;
    end_init(&c, 9);
    rs_new_transport(&c.rs, &c.wire);
    ok(rs_input(&c.rs, early, sizeof(early), &c.got, &why) < 0, "DATA before HELLO is refused");
    end_free(&c);

    end_free(&h);
    end_free(&k);
    free(data);
    free(back);
    return done_testing();
}
