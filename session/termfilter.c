#include "session/termfilter.h"

#include <stdbool.h>
#include <string.h>
#include <strings.h>

/*
 * The filter's states. Plain mode keeps only text and SGR; pty mode keeps most sequences,
 * so it holds each one (seq[] for ESC and CSI, osc[] for OSC) until its final byte says
 * what it is, then writes it whole or drops it whole: a sequence is never half written.
 */
enum {
    T_GROUND,
    T_ESC,        /* after ESC */
    T_ESC_INTER,  /* ESC with intermediates (0x20-0x2f), up to a final byte */
    T_CSI,        /* ESC [ ... collecting into seq */
    T_CSI_DROP,   /* a CSI too long to keep: skip to its final byte */
    T_STRING,     /* DCS, SOS, PM, APC (and OSC in plain mode): skip to BEL or ST */
    T_STRING_ESC, /* ESC inside a string (ST is ESC \) */
    T_OSC,        /* pty mode: ESC ] ... collecting into osc */
    T_OSC_ESC,    /* ESC inside it */
    T_C2,         /* after 0xC2, the lead byte of U+0080..U+00BF */
};

void sbx_termfilter_init(sbx_termfilter *f)
{
    f->state = T_GROUND;
    f->pty = false;
    f->seqlen = f->osclen = 0;
    f->osc_over = false;
    f->modes = 0;
}

/*
 * The modes pty mode follows: each DEC private mode here, its bit set while the program has
 * it away from its default (for 25, the cursor hidden). The table's order is the reset's:
 * reports and keys first, then the alternate screens (leaving one puts back the main
 * screen and, for 1049, the cursor), the cursor shown last.
 */
static const struct { unsigned short mode; bool on_is_default; } pty_modes[] = {
    { 9, false }, { 1000, false }, { 1001, false }, { 1002, false }, { 1003, false },
    { 1005, false }, { 1006, false }, { 1015, false }, { 1016, false },  /* mouse reports */
    { 1004, false },                                                      /* focus reports */
    { 2004, false },                                                      /* bracketed paste */
    { 1, false },                                                         /* DECCKM */
    { 47, false }, { 1047, false }, { 1049, false },                      /* alternate screens */
    { 25, true },                                                         /* the cursor */
};
#define NPTY_MODES (sizeof(pty_modes) / sizeof(pty_modes[0]))
#define MODE_KEYPAD (1u << NPTY_MODES)        /* DECKPAM: ESC = (ESC > resets) */
#define MODE_INSERT (1u << (NPTY_MODES + 1))  /* IRM: CSI 4 h */

/* A kept CSI ending in h or l (set or reset mode): the modes it names, followed. */
static void track_modes(sbx_termfilter *f, unsigned char final)
{
    bool set = final == 'h', priv = f->seqlen > 2 && f->seq[2] == '?';
    size_t i = priv ? 3 : 2;
    while (i <= f->seqlen) {
        long v = 0;
        bool num = false;
        for (; i < f->seqlen && f->seq[i] >= '0' && f->seq[i] <= '9'; i++, num = true)
            if ((v = v * 10 + (f->seq[i] - '0')) > 100000)
                return;
        if (i < f->seqlen && f->seq[i] != ';')
            return;     /* intermediates or other bytes: not a plain mode list */
        if (num && priv) {
            for (size_t k = 0; k < NPTY_MODES; k++)
                if (pty_modes[k].mode == v) {
                    if (set != pty_modes[k].on_is_default)
                        f->modes |= 1u << k;
                    else
                        f->modes &= ~(1u << k);
                }
        } else if (num && v == 4) {
            if (set)
                f->modes |= MODE_INSERT;
            else
                f->modes &= ~MODE_INSERT;
        }
        i++;
    }
}

void sbx_termfilter_pty_reset(sbx_termfilter *f, strbuf *out)
{
    if (!f->pty)
        return;
    for (size_t k = 0; k < NPTY_MODES; k++)
        if (f->modes & (1u << k))
            strbuf_addf(out, "\x1b[?%u%c", pty_modes[k].mode,
                        pty_modes[k].on_is_default ? 'h' : 'l');
    if (f->modes & MODE_KEYPAD)
        strbuf_addstr(out, "\x1b>");
    if (f->modes & MODE_INSERT)
        strbuf_addstr(out, "\x1b[4l");
    f->modes = 0;
    f->state = T_GROUND;
    f->seqlen = f->osclen = 0;
}

void sbx_termfilter_init_pty(sbx_termfilter *f)
{
    sbx_termfilter_init(f);
    f->pty = true;
}

/* SGR: parameters are digits, ';' and ':' only. */
static bool is_sgr(const sbx_termfilter *f, unsigned char final)
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

/* The first parameter of a CSI when it is plain digits up to ';' or the end, else -1. */
static long csi_first_param(const sbx_termfilter *f)
{
    long v = 0;
    size_t i = 2;
    if (i >= f->seqlen || f->seq[i] < '0' || f->seq[i] > '9')
        return -1;
    for (; i < f->seqlen && f->seq[i] >= '0' && f->seq[i] <= '9'; i++)
        if ((v = v * 10 + (f->seq[i] - '0')) > 100000)
            return -1;
    if (i < f->seqlen && f->seq[i] != ';')
        return -1;
    for (; i < f->seqlen; i++)
        if (!((f->seq[i] >= '0' && f->seq[i] <= '9') || f->seq[i] == ';'))
            return -1;
    return v;
}

static bool keep_csi(const sbx_termfilter *f, unsigned char final)
{
    if (!f->pty)
        return is_sgr(f, final);
    if (final == 't') {
        /* window manipulation: only the title stack's push and pop */
        long p = csi_first_param(f);
        return p == 22 || p == 23;
    }
    return final != 'i';   /* media copy: printer controller mode */
}

/* Does the OSC's text hold something a terminal may read as the end of the sequence or a
 * control: a C0 byte, DEL, or a UTF-8 encoded C1 control (U+0080..U+009F)? */
static bool osc_has_control(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] < 0x20 || p[i] == 0x7f)
            return true;
        if (p[i] == 0xc2 && i + 1 < n && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f)
            return true;
    }
    return false;
}

/* The OSC held in osc[] (its text, ESC ] and the terminator excluded): kept? */
static bool keep_osc(const sbx_termfilter *f)
{
    const unsigned char *p = f->osc;
    size_t n = f->osclen, i = 0;
    long ps = 0;

    if (f->osc_over || osc_has_control(p, n))
        return false;
    if (!n || p[0] < '0' || p[0] > '9')
        return false;
    for (; i < n && p[i] >= '0' && p[i] <= '9'; i++)
        if ((ps = ps * 10 + (p[i] - '0')) > 100000)
            return false;
    if (i < n && p[i] != ';')
        return false;
    switch (ps) {
    case 0: case 1: case 2:
        return true;        /* the window and icon titles: set, never reported */
    case 4: case 5: case 104: case 105:
    case 10: case 11: case 12: case 13: case 14: case 15: case 16: case 17: case 18: case 19:
    case 110: case 111: case 112: case 113: case 114: case 115: case 116: case 117:
    case 118: case 119:
        /* colours: set or reset, but a query (`?`) has its answer typed into the input */
        return !memchr(p, '?', n);
    case 8: {
        /* 8;PARAMS;URI: a link's end (no URI), or a URI of a scheme that opens nothing on
         * the person's machine by its path */
        static const char *const schemes[] = { "http://", "https://", "mailto:" };
        const unsigned char *uri = i < n ? memchr(p + i + 1, ';', n - i - 1) : NULL;
        size_t ulen;
        if (!uri)
            return false;
        uri++;
        ulen = n - (size_t)(uri - p);
        if (!ulen)
            return true;
        for (size_t k = 0; k < sizeof(schemes) / sizeof(schemes[0]); k++)
            if (ulen >= strlen(schemes[k]) &&
                !strncasecmp((const char *)uri, schemes[k], strlen(schemes[k])))
                return true;
        return false;
    }
    default:
        return false;       /* 52 (the clipboard), 7, 9, 777, 1337, 50, ... */
    }
}

static void osc_end(sbx_termfilter *f, const char *term, strbuf *out)
{
    if (keep_osc(f)) {
        strbuf_add(out, "\x1b]", 2);
        strbuf_add(out, f->osc, f->osclen);
        strbuf_addstr(out, term);
    }
    f->state = T_GROUND;
}

/* Outside any escape sequence: text and the harmless controls pass; ESC and
 * the UTF-8 lead byte of a C1 control (0xc2) start a sequence to judge. */
static void ground(sbx_termfilter *f, unsigned char c, strbuf *out)
{
    if (c == 0x1b) {
        f->state = T_ESC;
    } else if (c < 0x20) {
        /* pty mode: every control a TTY program uses (SO/SI, FF...) but ENQ, whose
         * answerback the terminal types into the input */
        if (f->pty ? c != 0x05
                   : (c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\a'))
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
            /* U+00A0..U+00BF passes whole; a 0xc2 without its continuation byte is
             * dropped, so that no byte let through later (after dropped ones: "\xc2\x01\x9d")
             * can complete it into a C1 control */
            if (c >= 0xa0 && c <= 0xbf) {
                strbuf_addch(out, 0xc2);
                strbuf_addch(out, c);
                break;
            }
            ground(f, c, out);
            break;
        case T_ESC:
            if (c == '[') {
                f->state = T_CSI;
                f->seq[0] = 0x1b;
                f->seq[1] = '[';
                f->seqlen = 2;
            } else if (c == ']' && f->pty) {
                f->state = T_OSC;
                f->osclen = 0;
                f->osc_over = false;
            } else if (c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_') {
                f->state = T_STRING;
            } else if (c >= 0x20 && c <= 0x2f) {
                f->state = T_ESC_INTER;
                f->seq[0] = 0x1b;
                f->seq[1] = c;
                f->seqlen = 2;
            } else if (c == 0x1b) {
                f->state = T_ESC;
            } else if (c < 0x20 && f->pty) {
                /* a control cancels the sequence and is run (plain mode drops both) */
                f->state = T_GROUND;
                ground(f, c, out);
            } else if (f->pty && c >= 0x80) {
                /* not a sequence: the ESC goes, the byte is judged as text (0xc2 may
                 * start a C1 control) */
                f->state = T_GROUND;
                ground(f, c, out);
            } else {
                /* ESC x: dropped with its byte, or in pty mode kept (ESC 7, ESC =, ESC M) */
                if (f->pty && c >= 0x30 && c <= 0x7e) {
                    strbuf_addch(out, 0x1b);
                    strbuf_addch(out, c);
                    if (c == '=')
                        f->modes |= MODE_KEYPAD;
                    else if (c == '>')
                        f->modes &= ~MODE_KEYPAD;
                    else if (c == 'c')
                        f->modes = 0;       /* RIS: the terminal's full reset */
                }
                f->state = T_GROUND;
            }
            break;
        case T_ESC_INTER:
            if (c >= 0x20 && c <= 0x2f) {
                if (f->seqlen < sizeof(f->seq))
                    f->seq[f->seqlen++] = c;
            } else {
                /* ESC ( 0 and the like: charsets; kept in pty mode */
                if (f->pty && c >= 0x30 && c <= 0x7e && f->seqlen < sizeof(f->seq)) {
                    strbuf_add(out, f->seq, f->seqlen);
                    strbuf_addch(out, c);
                }
                f->state = T_GROUND;
                if (c < 0x20 && f->pty)
                    ground(f, c, out);
            }
            break;
        case T_CSI:
        case T_CSI_DROP:
            if (c >= 0x40 && c <= 0x7e) {
                if (f->state == T_CSI && keep_csi(f, c)) {
                    strbuf_add(out, f->seq, f->seqlen);
                    strbuf_addch(out, c);
                    if (f->pty && (c == 'h' || c == 'l'))
                        track_modes(f, c);
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
        case T_OSC:
            if (c == 0x07) {
                osc_end(f, "\a", out);
            } else if (c == 0x18 || c == 0x1a) {
                f->state = T_GROUND;     /* cancelled: dropped */
            } else if (c == 0x1b) {
                f->state = T_OSC_ESC;
            } else if (f->osclen < sizeof(f->osc)) {
                f->osc[f->osclen++] = c;
            } else {
                f->osc_over = true;
            }
            break;
        case T_OSC_ESC:
            if (c == '\\') {
                osc_end(f, "\x1b\\", out);
            } else {
                /* ESC inside the text: a control (keep_osc drops the OSC at its end) */
                f->osc_over = true;
                f->state = c == 0x1b ? T_OSC_ESC : T_OSC;
            }
            break;
        }
    }
}
