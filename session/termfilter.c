#include "session/termfilter.h"

#include <stdbool.h>
#include <string.h>

enum {
    T_GROUND,
    T_ESC,        /* after ESC */
    T_ESC_INTER,  /* ESC with intermediates (0x20-0x2f), up to a final byte */
    T_CSI,        /* ESC [ ... collecting into seq */
    T_CSI_DROP,   /* a CSI too long to keep: skip to its final byte */
    T_STRING,     /* OSC, DCS, SOS, PM, APC: skip to BEL or ST */
    T_STRING_ESC, /* ESC inside a string (ST is ESC \) */
    T_C2,         /* after 0xC2, the lead byte of U+0080..U+00BF */
};

void sbx_termfilter_init(sbx_termfilter *f)
{
    memset(f, 0, sizeof(*f));
}

/* SGR: parameters are digits, ';' and ':' only. */
static bool keep_csi(const sbx_termfilter *f, unsigned char final)
{
    if (final != 'm')
        return false;
    for (size_t i = 2; i < f->seqlen; i++) {
        unsigned char c = f->seq[i];
        if (!((c >= '0' && c <= '9') || c == ';' || c == ':'))
            return false;
    }
    return true;
}

/* Outside any escape sequence: text and the harmless controls pass; ESC and
 * the UTF-8 lead byte of a C1 control (0xc2) start a sequence to judge. */
static void ground(sbx_termfilter *f, unsigned char c, strbuf *out)
{
    if (c == 0x1b) {
        f->state = T_ESC;
    } else if (c < 0x20) {
        if (c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\a')
            strbuf_addch(out, c);
    } else if (c == 0xc2) {
        f->state = T_C2;
    } else {
        /* Text, UTF-8 included. A bare 0x80..0x9f byte is a continuation
         * byte to a UTF-8 terminal, not a control: kept. */
        strbuf_addch(out, c);
    }
}

void sbx_termfilter_feed(sbx_termfilter *f, const void *buf, size_t len, strbuf *out)
{
    const unsigned char *p = buf;

    for (size_t i = 0; i < len; i++) {
        unsigned char c = p[i];
        switch (f->state) {
        case T_GROUND:
            ground(f, c, out);
            break;
        case T_C2:
            f->state = T_GROUND;
            if (c >= 0x80 && c <= 0x9f)
                break;          /* U+0080..U+009F: a C1 control, dropped */
            strbuf_addch(out, 0xc2);
            ground(f, c, out);
            break;
        case T_ESC:
            if (c == '[') {
                f->state = T_CSI;
                f->seq[0] = 0x1b;
                f->seq[1] = '[';
                f->seqlen = 2;
            } else if (c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_') {
                f->state = T_STRING;
            } else if (c >= 0x20 && c <= 0x2f) {
                f->state = T_ESC_INTER;
            } else if (c == 0x1b) {
                f->state = T_ESC;
            } else {
                f->state = T_GROUND;   /* ESC x: dropped with its byte */
            }
            break;
        case T_ESC_INTER:
            if (c < 0x20 || c > 0x2f)
                f->state = T_GROUND;
            break;
        case T_CSI:
        case T_CSI_DROP:
            if (c >= 0x40 && c <= 0x7e) {
                if (f->state == T_CSI && keep_csi(f, c)) {
                    strbuf_add(out, f->seq, f->seqlen);
                    strbuf_addch(out, c);
                }
                f->state = T_GROUND;
            } else if (c >= 0x20 && c <= 0x3f) {
                if (f->state == T_CSI && f->seqlen < sizeof(f->seq))
                    f->seq[f->seqlen++] = c;
                else
                    f->state = T_CSI_DROP;
            } else {
                /* A control inside a sequence cancels it (terminals run
                 * the control); treat the byte as text. */
                f->state = T_GROUND;
                ground(f, c, out);
            }
            break;
        case T_STRING:
            if (c == 0x07 || c == 0x18 || c == 0x1a)
                f->state = T_GROUND;
            else if (c == 0x1b)
                f->state = T_STRING_ESC;
            break;
        case T_STRING_ESC:
            f->state = c == '\\' ? T_GROUND : (c == 0x1b ? T_STRING_ESC : T_STRING);
            break;
        }
    }
}
