/*
 * The resumable stream's input (sync/resume.c) under libFuzzer: the bytes sbx-kube stream
 * reads from the pod are the sandbox's, so a hostile keeper may send anything. The input is
 * split into transport reads of sizes the data chooses; between reads the host end queues
 * and frames its own data as it would. Whatever arrives, rs_input either refuses it or keeps
 * the stream's bookkeeping sound: what was delivered is exactly what was counted as
 * received, and the unacknowledged window stays within what was queued.
 */
#include "sync/resume.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c) do { if (!(c)) abort(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rs_stream s;
    strbuf out = STRBUF_INIT, deliver = STRBUF_INIT;
    uint64_t queued = 0;
    size_t off = 0;

    rs_init(&s, 0x0123456789abcdefULL);
    rs_new_transport(&s, &out);
    while (off < size) {
        /* one control byte: how much to read next, and whether our end sends first */
        uint8_t ctl = data[off++];
        size_t n = (size_t)(ctl & 0x3f) * 7 + 1;
        const char *why = NULL;
        if (n > size - off)
            n = size - off;
        if (ctl & 0x40) {
            char buf[300];
            memset(buf, 'q', sizeof(buf));
            if (rs_can_queue(&s)) {
                rs_queue(&s, buf, sizeof(buf));
                queued += sizeof(buf);
            }
        }
        if (ctl & 0x80)
            rs_new_transport(&s, &out);
        size_t before = deliver.len;
        uint64_t received = s.received;
        if (rs_input(&s, data + off, n, &deliver, &why) < 0) {
            CHECK(why != NULL);
            break;
        }
        off += n;
        CHECK(deliver.len - before == s.received - received);
        CHECK(s.base <= s.sent && s.sent <= s.base + s.unacked.len);
        CHECK(s.base + s.unacked.len == queued);
        rs_frame_out(&s, &out, 1u << 20, (ctl & 0x20) != 0);
        CHECK(s.acked == s.received || s.received - s.acked < RS_ACK_EVERY);
        strbuf_reset(&out);
    }
    rs_free(&s);
    strbuf_release(&out);
    strbuf_release(&deliver);
    return 0;
}
