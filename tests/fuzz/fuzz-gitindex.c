/*
 * libFuzzer driver for the .git/index merge (sync/gitindex.c), whose input on the host is the
 * sandbox's index: any bytes, as the received index and as this side's, are merged or left
 * alone without a crash, leak or undefined behaviour; a result is never longer than what was
 * received, and is itself an index the merge accepts.
 *
 * Input: one byte of flags (1: give the received part a valid SHA-1 checksum, 2: SHA-256,
 * so that mutations get past the checksum; 4: there is a local index), two bytes of the
 * received part's length, then the received part and the local one.
 *
 *   make fuzz-gitindex FUZZ_SECONDS=300
 */
#include "sync/gitindex.h"
#include "sync/githash.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned flags;
    size_t in_len;
    unsigned char *in;
    const unsigned char *local;
    size_t local_len;
    strbuf out = STRBUF_INIT, again = STRBUF_INIT;
    gitindex_stats st;

    if (size < 3)
        return 0;
    flags = data[0];
    in_len = (size_t)data[1] << 8 | data[2];
    data += 3;
    size -= 3;
    if (in_len > size)
        in_len = size;
    in = malloc(in_len ? in_len : 1);
    memcpy(in, data, in_len);
    local = data + in_len;
    local_len = size - in_len;
    if (flags & 3) {
        int algo = (flags & 2) ? GH_SHA256 : GH_SHA1;
        size_t hs = gh_len(algo);
        if (in_len >= hs)
            gh_digest(algo, in, in_len - hs, in + in_len - hs);
    }
    if (gitindex_merge(in, in_len, (flags & 4) ? local : NULL, local_len, (int64_t)(flags >> 3),
                       &out, &st)) {
        bool null_sum = true;
        if (out.len > in_len || st.kept + st.cleared != st.entries || st.smudged > st.kept)
            abort();
        for (size_t i = out.len >= 20 ? out.len - 20 : 0; i < out.len; i++)
            null_sum = null_sum && !out.buf[i];
        /* A null checksum says nothing of the hash: the layout alone decides, and a
         * dropped extension can change what fits. */
        if (!null_sum && !gitindex_merge(out.buf, out.len, in, in_len, 0, &again, NULL))
            abort();
    } else if (out.len) {
        abort();
    }
    free(in);
    strbuf_release(&out);
    strbuf_release(&again);
    return 0;
}
