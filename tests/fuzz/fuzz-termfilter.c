/*
 * libFuzzer driver for the terminal filter (session/termfilter.c), both modes, the input
 * cut at a point its first byte chooses: plain output holds no escape but SGR and no
 * control but \n \r \t \b \a; pty output holds no OSC 52, DCS, SOS, PM, APC, ENQ, ESC Z,
 * UTF-8 C1 control, CSI ... t other than 22 and 23, no query a terminal answers into the
 * input (DSR, DA1/2/3, DECRQM, XTVERSION, OSC colour queries...); neither holds a bare
 * 0x80..0x9f byte that continues no UTF-8 character (an 8-bit C1 control); and the pty
 * filter is idempotent (what it let through passes it again unchanged). The corpus holds
 * what broke it once.
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
        session_termfilter_init_pty(&f);
    else
        session_termfilter_init(&f);
    session_termfilter_feed(&f, data, cut, out);
    session_termfilter_feed(&f, data + cut, size - cut, out);
}

/* No byte 0x80..0x9f but as a continuation of a valid UTF-8 character (RFC 3629 ranges),
 * written here again rather than taken from the filter, so that the two can disagree. */
static void check_no_8bit_c1(const strbuf *o)
{
    const unsigned char *p = (const unsigned char *)o->buf;
    for (size_t i = 0; i < o->len; i++) {
        unsigned char c = p[i], lo = 0x80, hi = 0xbf;
        size_t need;
        if (c >= 0x80 && c <= 0x9f)
            abort();            /* stray: not inside a character */
        if (c < 0xc2 || c > 0xf4)
            continue;
        need = c < 0xe0 ? 1 : c < 0xf0 ? 2 : 3;
        if (c == 0xe0) lo = 0xa0;
        if (c == 0xed) hi = 0x9f;
        if (c == 0xf0) lo = 0x90;
        if (c == 0xf4) hi = 0x8f;
        for (size_t k = 1; k <= need; k++, lo = 0x80, hi = 0xbf) {
            if (i + k >= o->len || p[i + k] < lo || p[i + k] > hi) {
                need = k - 1;   /* cut short: what follows is judged on its own */
                break;
            }
        }
        i += need;
    }
}

/* A CSI (params and intermediates in p[0..n), final byte f) that asks for an answer. */
static bool csi_query(const char *p, size_t n, char f)
{
    char priv = n && strchr("<=>?", p[0]) ? p[0] : 0;
    bool dollar = memchr(p, '$', n), star = memchr(p, '*', n), amp = memchr(p, '&', n);
    bool quote = memchr(p, '\'', n), hash = memchr(p, '#', n);
    bool inter = false;
    for (size_t i = 0; i < n; i++)
        inter |= p[i] >= 0x20 && p[i] <= 0x2f;
    switch (f) {
    case 'n': return priv != '>';
    case 'c': case 'x': return !inter;
    case 'p': case 'w': return dollar;
    case 'q': return priv == '>';
    case 'u': return priv == '?' || dollar || amp;
    case 'm': case 'S': return priv == '?';
    case 'y': return star;
    case '|': return quote || hash;
    default: return false;
    }
}

static void check_plain(const strbuf *o)
{
    check_no_8bit_c1(o);
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
    check_no_8bit_c1(o);
    for (size_t i = 0; i < o->len; i++) {
        unsigned char c = (unsigned char)o->buf[i], n = i + 1 < o->len ? o->buf[i + 1] : 0;
        if (c == 0x05)
            abort();
        if (c == 0xc2 && n >= 0x80 && n <= 0x9f)
            abort();
        if (c != 0x1b)
            continue;
        if (n == 'P' || n == 'X' || n == '^' || n == '_' || n == 'Z')
            abort();
        if (n == ']' && i + 4 <= o->len && !memcmp(o->buf + i + 2, "52", 2))
            abort();
        if (n == ']') {
            /* a colour query: OSC 4, 5, 10-19, 104... whose text holds a ? */
            size_t j = i + 2;
            long v = 0;
            while (j < o->len && o->buf[j] >= '0' && o->buf[j] <= '9' && v < 100000)
                v = v * 10 + (o->buf[j++] - '0');
            if (v == 4 || v == 5 || (v >= 10 && v <= 19) || v == 104 || v == 105 ||
                (v >= 110 && v <= 119)) {
                for (; j < o->len && o->buf[j] != 0x07 && o->buf[j] != 0x1b; j++)
                    if (o->buf[j] == '?')
                        abort();
            }
        }
        if (n == '[') {
            size_t j = i + 2;
            while (j < o->len && (unsigned char)o->buf[j] >= 0x20 && (unsigned char)o->buf[j] <= 0x3f)
                j++;
            if (j < o->len && csi_query(o->buf + i + 2, j - i - 2, o->buf[j]))
                abort();
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
