/*
 * libFuzzer driver for the terminal filter (session/termfilter.c), both modes, the input
 * cut at a point its first byte chooses: plain output holds no escape but SGR and no
 * control but \n \r \t \b \a; pty output holds no OSC 52, DCS, SOS, PM, APC, ENQ, UTF-8 C1
 * control, or CSI ... t other than 22 and 23; and the pty filter is idempotent (what it
 * let through passes it again unchanged). The corpus holds what broke it once.
 *
 *   make fuzz-termfilter FUZZ_SECONDS=300
 */
#include "session/termfilter.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void run(bool pty, const uint8_t *data, size_t size, size_t cut, strbuf *out)
{
    sbx_termfilter f;
    if (pty)
        sbx_termfilter_init_pty(&f);
    else
        sbx_termfilter_init(&f);
    sbx_termfilter_feed(&f, data, cut, out);
    sbx_termfilter_feed(&f, data + cut, size - cut, out);
}

static void check_plain(const strbuf *o)
{
    for (size_t i = 0; i < o->len; i++) {
        unsigned char c = (unsigned char)o->buf[i];
        if (c == 0x1b) {
            size_t j = i + 1;
            if (j >= o->len || o->buf[j] != '[')
                abort();
            for (j++; j < o->len && strchr("0123456789;:", o->buf[j]); j++)
                ;
            if (j >= o->len || o->buf[j] != 'm')
                abort();
            i = j;
        } else if (c < 0x20 && !strchr("\n\r\t\b\a", c)) {
            abort();
        } else if (c == 0xc2 && i + 1 < o->len && (unsigned char)o->buf[i + 1] >= 0x80 &&
                   (unsigned char)o->buf[i + 1] <= 0x9f) {
            abort();
        }
    }
}

static void check_pty(const strbuf *o)
{
    for (size_t i = 0; i < o->len; i++) {
        unsigned char c = (unsigned char)o->buf[i], n = i + 1 < o->len ? o->buf[i + 1] : 0;
        if (c == 0x05)
            abort();
        if (c == 0xc2 && n >= 0x80 && n <= 0x9f)
            abort();
        if (c != 0x1b)
            continue;
        if (n == 'P' || n == 'X' || n == '^' || n == '_')
            abort();
        if (n == ']' && i + 4 <= o->len && !memcmp(o->buf + i + 2, "52", 2))
            abort();
        if (n == '[') {
            size_t j = i + 2;
            while (j < o->len && (unsigned char)o->buf[j] >= 0x20 && (unsigned char)o->buf[j] <= 0x3f)
                j++;
            if (j < o->len && o->buf[j] == 't') {
                /* the first parameter, as a number: 22 or 23 */
                size_t k = i + 2;
                long v = 0;
                while (k < j && o->buf[k] >= '0' && o->buf[k] <= '9' && v < 1000)
                    v = v * 10 + (o->buf[k++] - '0');
                if ((v != 22 && v != 23) || k == i + 2 || (k < j && o->buf[k] != ';'))
                    abort();
            }
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    strbuf a = STRBUF_INIT, b = STRBUF_INIT;
    size_t cut = size ? data[0] % (size + 1) : 0;

    run(false, data, size, cut, &a);
    check_plain(&a);
    strbuf_reset(&a);
    run(true, data, size, cut, &a);
    check_pty(&a);
    /* a newline after it, so that a byte the filter holds at the end of its input (the
     * 0xc2 that may start a C1 control) is judged as it was the first time */
    strbuf_addch(&a, '\n');
    run(true, (const uint8_t *)a.buf, a.len, a.len / 2, &b);
    if (a.len != b.len || memcmp(a.buf, b.buf, a.len))
        abort();
    strbuf_release(&a);
    strbuf_release(&b);
    return 0;
}
