/*
 * libFuzzer driver for common/'s two readers of untrusted bytes: the bounded little-endian
 * reader (common/bytes.h, under both binary protocols) and the base64 decoder
 * (common/base64.h). The first input byte picks a script of reads over the rest:
 *   - no read goes past the input (ASan), a read after a failed one gives zeros, and the
 *     bytes taken plus those left always make the input's length while the reader is good;
 *   - whatever decodes as base64 encodes back to the same text once the line breaks are
 *     dropped, and every encoding decodes back to its bytes.
 *
 *   make fuzz-bytes FUZZ_SECONDS=300
 */
#include "common/base64.h"
#include "common/bytes.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void reader(const uint8_t *data, size_t size)
{
    sbx_rd r;
    size_t taken = 0;

    sbx_rd_init(&r, data, size);
    /* the script: each input byte (from the start) says which read comes next */
    for (size_t i = 0; i < size && i < 64; i++) {
        size_t before = r.left;
        const char *s;
        size_t len;
        bool was_bad = r.bad;
        uint64_t v = 0;
        switch (data[i] & 7) {
        case 0: v = sbx_rd_u8(&r); break;
        case 1: v = sbx_rd_u16(&r); break;
        case 2: v = sbx_rd_u32(&r); break;
        case 3: v = sbx_rd_u64(&r); break;
        case 4: sbx_rd_str(&r, data[i] >> 3, &s, &len); v = len; break;
        case 5: sbx_rd_str(&r, SIZE_MAX, &s, &len); v = len; break;
        default: v = sbx_rd_take(&r, data[i] >> 3) ? 0 : (r.bad ? 0 : 1); break;
        }
        if (was_bad && (v || !r.bad || r.left))
            abort();            /* a bad reader stays bad and gives nothing */
        if (!r.bad)
            taken += before - r.left;
        if (!r.bad && taken + r.left != size)
            abort();
    }
}

static void base64(const uint8_t *data, size_t size)
{
    strbuf dec = STRBUF_INIT, enc = STRBUF_INIT, clean = STRBUF_INIT, back = STRBUF_INIT;

    if (sbx_base64_decode((const char *)data, size, &dec) == 0) {
        sbx_base64_encode(dec.buf, dec.len, &enc);
        for (size_t i = 0; i < size; i++)
            if (data[i] != '\r' && data[i] != '\n')
                strbuf_addch(&clean, data[i]);
        /* the same text, except the bits a non-canonical last character carries */
        if (enc.len != clean.len || (enc.len >= 4 && memcmp(enc.buf, clean.buf, enc.len - 4)))
            abort();
    }
    strbuf_reset(&enc);
    sbx_base64_encode(data, size, &enc);
    if (sbx_base64_decode(enc.buf, enc.len, &back) < 0 || back.len != size ||
        memcmp(back.buf, data, size))
        abort();
    strbuf_release(&dec);
    strbuf_release(&enc);
    strbuf_release(&clean);
    strbuf_release(&back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    reader(data, size);
    base64(data, size);
    return 0;
}
