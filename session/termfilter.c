/*
 * The escape-sequence filter for output relayed to a terminal (termfilter.h): plain mode
 * (session_termfilter_init()) and pty mode (session_termfilter_init_pty()), bytes fed through
 * session_termfilter_feed(), the modes a program left on turned off by
 * session_termfilter_pty_reset(). Calls only common/ (report.h's UTF-8 checks). Untrusted:
 * every byte fed is a sandbox command's output, checked here before it reaches the terminal.
 */
#include "session/termfilter.h"

#include "common/report.h"

#include <stdbool.h>
#include <string.h>
#include <strings.h>

/*
 * The filter's states. Plain mode keeps only text and SGR; pty mode keeps most sequences,
 * so it holds each one (seq[] for ESC and CSI, osc[] for OSC) until its final byte says
 * what it is, then writes it whole or drops it whole: a sequence is never half written (a
 * half written one would take the person's next output, or the prompt, as its end).
 */
enum {
    T_GROUND,     /* text; UTF-8 followed (utf8_need) so that no stray 8-bit C1 byte passes */
    T_ESC,        /* after ESC: the next byte says which kind of sequence */
    T_ESC_INTER,  /* ESC with intermediates (0x20-0x2f), up to a final byte (charsets) */
    T_CSI,        /* ESC [ ... collecting into seq, judged whole at its final byte */
    T_CSI_DROP,   /* a CSI too long to judge: skipped to its final byte, never written */
    T_STRING,     /* DCS, SOS, PM, APC (and OSC in plain mode): skip to BEL or ST; their
                   * queries (DECRQSS, XTGETTCAP) have the terminal answer into the input */
    T_STRING_ESC, /* ESC inside a string (ST is ESC \) */
    T_OSC,        /* pty mode: ESC ] ... collecting into osc, judged whole at its end */
    T_OSC_ESC,    /* ESC inside it */
    T_C2,         /* after 0xC2, the lead byte of U+0080..U+00BF: U+0080..U+009F are the C1
                   * controls (CSI, OSC, DCS) to a terminal that decodes UTF-8 first */
};

void session_termfilter_init(sbx_termfilter *f)
{
    f->state = T_GROUND;
    f->pty = false;
    f->seqlen = f->osclen = 0;
    f->osc_over = false;
    f->modes = 0;
    f->utf8_need = 0;
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

void session_termfilter_pty_reset(sbx_termfilter *f, strbuf *out)
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

void session_termfilter_init_pty(sbx_termfilter *f)
{
    session_termfilter_init(f);
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

/*
 * Does the CSI held in seq[], ending in final, ask the terminal for an answer? A terminal
 * answers by typing into the input: the bytes land in the next line the person types (or in
 * the prompt's line editor), where a hostile program chose part of them (a title, a colour)
 * and the rest looks like keys pressed. So every request for a report is dropped; a TTY
 * program that asks gets no answer, as on a terminal that does not know the request.
 */
static bool csi_is_query(const sbx_termfilter *f, unsigned char final)
{
    /* the private marker (< = > ?), and which intermediate bytes (space to /) it holds: any
     * one of a query's is enough, as a terminal may dispatch on either of two */
    unsigned char priv = f->seqlen > 2 && f->seq[2] >= 0x3c && f->seq[2] <= 0x3f ? f->seq[2] : 0;
    bool inter = false, dollar = false, star = false, amp = false, quote = false, hash = false;
    for (size_t i = 2; i < f->seqlen; i++) {
        unsigned char c = f->seq[i];
        inter |= c >= 0x20 && c <= 0x2f;
        dollar |= c == '$';
        star |= c == '*';
        amp |= c == '&';
        quote |= c == '\'';
        hash |= c == '#';
    }
    switch (final) {
    case 'n':   /* DSR: status (5), cursor position (6, ?6), ?15, ?25, ?996...; CSI > n
                 * resets key modifiers and answers nothing */
        return priv != '>';
    case 'c':   /* DA1 (CSI c, CSI 0 c), DA2 (CSI > c), DA3 (CSI = c) */
        return !inter;
    case 'x':   /* DECREQTPARM (CSI x); with an intermediate, DECSACE and DECFRA */
        return !inter;
    case 'p':   /* DECRQM (CSI Ps $ p, CSI ? Ps $ p) */
        return dollar;
    case 'q':   /* XTVERSION (CSI > q); CSI Ps SP q, the cursor's shape, stays */
        return priv == '>';
    case 'u':   /* the kitty keyboard flags (CSI ? u), DECRQTSR ($ u), DECRQUPSS (& u) */
        return priv == '?' || dollar || amp;
    case 'm':   /* XTQMODKEYS (CSI ? Pp m); CSI > Pp ; Pv m sets them and stays */
        return priv == '?';
    case 'S':   /* XTSMGRAPHICS (CSI ? Pi ; Pa ; Pv S): answered whatever it asks */
        return priv == '?';
    case 'w':   /* DECRQPSR (CSI Ps $ w) */
        return dollar;
    case 'y':   /* DECRQCRA (CSI ... * y): a checksum of what the screen shows */
        return star;
    case '|':   /* DECRQLP (CSI Ps ' |), XTREPORTSGR (CSI ... # |) */
        return quote || hash;
    default:
        return false;
    }
}

static bool keep_csi(const sbx_termfilter *f, unsigned char final)
{
    if (!f->pty)
        return is_sgr(f, final);
    if (csi_is_query(f, final))
        return false;
    if (final == 't') {
        /* window manipulation: only the title stack's push and pop */
        long p = csi_first_param(f);
        return p == 22 || p == 23;
    }
    return final != 'i';   /* media copy: printer controller mode */
}

/* The OSC held in osc[] (its text, ESC ] and the terminator excluded): kept? */
static bool keep_osc(const sbx_termfilter *f)
{
    const unsigned char *p = f->osc;
    size_t n = f->osclen, i = 0;
    long ps = 0;

    /* the OSC's text: a C0 byte, DEL, a C1 control or a byte that is not UTF-8 in it a
     * terminal may read as the end of the sequence or a control (a bare 0x9c is ST, 0x9d
     * OSC, to a terminal that takes 8-bit controls) */
    if (f->osc_over || !sbx_text_shows_plain(p, n))
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
    if (c >= 0x80 && c <= 0xbf) {
        /* A continuation byte: text when it continues a character where RFC 3629 allows. */
        if (f->utf8_need && c >= f->utf8_lo && c <= f->utf8_hi) {
            f->utf8_need--;
            f->utf8_lo = 0x80;
            f->utf8_hi = 0xbf;
            strbuf_addch(out, c);
            return;
        }
        /* A stray one. 0x80..0x9f is an 8-bit C1 control (0x9b CSI, 0x9d OSC, 0x90 DCS,
         * 0x9a DECID, 0x85 NEL) to a terminal not in UTF-8 mode or one that takes 8-bit
         * controls: `\x9b 6n` is a cursor position query there. Dropped. 0xa0..0xbf is
         * a control nowhere: kept (the terminal shows a replacement character). */
        f->utf8_need = 0;
        if (c >= 0xa0)
            strbuf_addch(out, c);
        return;
    }
    f->utf8_need = 0;
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
        /* Text, UTF-8 included: a lead byte says how many continuation bytes follow, and
         * the range of the first (RFC 3629: no overlong form, surrogate, or past U+10FFFF) */
        if (c >= 0xc3 && c <= 0xf4) {
            f->utf8_need = c < 0xe0 ? 1 : c < 0xf0 ? 2 : 3;
            f->utf8_lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80;
            f->utf8_hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
        }
        strbuf_addch(out, c);
    }
}

void session_termfilter_feed(sbx_termfilter *f, const void *buf, size_t len, strbuf *out)
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
            } else if (c == 'Z') {
                /* DECID: the terminal answers as to DA1, into the input; dropped */
                f->state = T_GROUND;
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
