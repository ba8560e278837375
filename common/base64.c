/* Standard base64 (base64.h). The decoder reads bytes from files and servers that are not
 * sbxsh's: every byte is checked against the alphabet, nothing is read past n, and the
 * output grows through strbuf only (tests/fuzz/fuzz-base64.c). */
#include "common/base64.h"

#include <string.h>

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void sbx_base64_encode(const void *data, size_t n, strbuf *out)
{
    const unsigned char *d = data;
    size_t i;

    for (i = 0; i + 2 < n; i += 3) {
        unsigned v = (unsigned)d[i] << 16 | (unsigned)d[i + 1] << 8 | d[i + 2];
        strbuf_addch(out, b64[v >> 18]);
        strbuf_addch(out, b64[(v >> 12) & 63]);
        strbuf_addch(out, b64[(v >> 6) & 63]);
        strbuf_addch(out, b64[v & 63]);
    }
    if (i < n) {        /* one or two bytes left: two or three characters and padding */
        unsigned v = (unsigned)d[i] << 16 | (i + 1 < n ? (unsigned)d[i + 1] << 8 : 0);
        strbuf_addch(out, b64[v >> 18]);
        strbuf_addch(out, b64[(v >> 12) & 63]);
        strbuf_addch(out, i + 1 < n ? b64[(v >> 6) & 63] : '=');
        strbuf_addch(out, '=');
    }
}

int sbx_base64_decode(const char *s, size_t n, strbuf *out)
{
    /* acc holds the bits not yet written (bits of them); quad is the place in the current
     * group of four characters (padding included); pad counts the '=' seen, after which
     * only more '=' may come */
    unsigned acc = 0;
    int bits = 0, quad = 0, pad = 0;

    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        const char *p;
        if (c == '\r' || c == '\n')
            continue;
        if (c == '=') {
            /* padding only in a quad's third or fourth place */
            if (quad < 2)
                return -1;
            pad++;
            quad = (quad + 1) & 3;
            continue;
        }
        /* !c: strchr would find the table's terminating NUL */
        if (pad || !c || !(p = strchr(b64, c)))
            return -1;
        acc = (acc << 6) | (unsigned)(p - b64);
        bits += 6;
        quad = (quad + 1) & 3;
        if (bits >= 8) {
            bits -= 8;
            strbuf_addch(out, (int)((acc >> bits) & 0xff));
        }
    }
    /* Go's StdEncoding wants whole quads (padded) */
    if (quad != 0 || pad > 2)
        return -1;
    return 0;
}
