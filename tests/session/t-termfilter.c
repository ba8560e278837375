/* The terminal escape filter (session/termfilter.h). */
#include "tests/lib/tap.h"

#include "session/termfilter.h"

static const char *filter_mode(bool pty, const char *in, size_t len, size_t split)
{
    static strbuf out = STRBUF_INIT;
    sbx_termfilter f;
    strbuf_reset(&out);
    if (pty)
        session_termfilter_init_pty(&f);
    else
        session_termfilter_init(&f);
    /* Feed in two pieces, so that sequences cut by a write boundary count. */
    session_termfilter_feed(&f, in, split < len ? split : len, &out);
    if (split < len)
        session_termfilter_feed(&f, in + split, len - split, &out);
    return out.buf;
}

static const char *filter(const char *in, size_t len, size_t split)
{
    return filter_mode(false, in, len, split);
}

#define F(s) filter(s, sizeof(s) - 1, sizeof(s))
#define FS(s, at) filter(s, sizeof(s) - 1, at)
/* pty mode */
#define P(s) filter_mode(true, s, sizeof(s) - 1, sizeof(s))
#define PS(s, at) filter_mode(true, s, sizeof(s) - 1, at)

/* pty mode, fed one byte at a time: every split point at once */
static const char *bytewise(const char *in)
{
    static strbuf out = STRBUF_INIT;
    sbx_termfilter f;
    strbuf_reset(&out);
    session_termfilter_init_pty(&f);
    for (size_t i = 0; in[i]; i++)
        session_termfilter_feed(&f, in + i, 1, &out);
    return out.buf;
}

/* pty mode: what the reset writes after in went through the filter */
static const char *reset_after(const char *in)
{
    static strbuf out = STRBUF_INIT;
    sbx_termfilter f;
    session_termfilter_init_pty(&f);
    strbuf_reset(&out);
    session_termfilter_feed(&f, in, strlen(in), &out);
    strbuf_reset(&out);
    session_termfilter_pty_reset(&f, &out);
    strbuf_addch(&out, '|');
    session_termfilter_pty_reset(&f, &out);   /* once reset, nothing more */
    return out.buf;
}

static void pty_reset(void)
{
    is_str(reset_after("text\x1b[1;31mred\x1b[0m\x1b[2J"), "|",
           "pty reset: nothing when no mode is on");
    is_str(reset_after("\x1b[?1049h\x1b[?25l\x1b[?1000;1006h\x1b[?2004h\x1b[?1h\x1b=\x1b[4h"),
           "\x1b[?1000l\x1b[?1006l\x1b[?2004l\x1b[?1l\x1b[?1049l\x1b[?25h\x1b>\x1b[4l|",
           "pty reset: mouse, paste, keys, the alternate screen, then the cursor shown");
    is_str(reset_after("\x1b[?1049h\x1b[?25l\x1b=\x1b[?1049l\x1b[?25h\x1b>"), "|",
           "pty reset: modes the program turned off again are left alone");
    is_str(reset_after("\x1b[?47h\x1b[?1002h\x1b[?1004h\x1b" "c"), "|",
           "pty reset: ESC c (the terminal's full reset) turned them all off");
    is_str(reset_after("\x1b[?1049h\x1b[?10"), "\x1b[?1049l|",
           "pty reset: a sequence left half written is not completed");
    is_str(reset_after("\x1b[?1049$p\x1b[?1049;1$y"), "|",
           "pty reset: a mode query is not a mode set");
    is_str(reset_after("\x1b[?1049h"), "\x1b[?1049l|", "pty reset: DECSET 1049 alone");
    sbx_termfilter f;
    strbuf out = STRBUF_INIT;
    session_termfilter_init(&f);
    session_termfilter_feed(&f, "\x1b[?1049h", 8, &out);
    session_termfilter_pty_reset(&f, &out);
    is_str(out.buf ? out.buf : "", "", "plain mode: nothing passed, nothing to reset");
    strbuf_release(&out);
}

static void pty_mode(void)
{
    /* what TTY programs need passes */
    is_str(P("a\x1b[2J\x1b[10;1Hb"), "a\x1b[2J\x1b[10;1Hb", "pty: clear and cursor moves pass");
    is_str(P("\x1b[?1049h\x1b[?25l\x1b[1;24r"), "\x1b[?1049h\x1b[?25l\x1b[1;24r",
           "pty: alternate screen, cursor hiding, scroll region pass");
    is_str(P("\x1b[38;5;208mx\x1b[0m"), "\x1b[38;5;208mx\x1b[0m", "pty: colours pass");
    is_str(P("\x1b" "7\x1b" "8\x1b=\x1b>\x1bM"), "\x1b" "7\x1b" "8\x1b=\x1b>\x1bM",
           "pty: ESC 7/8, keypad modes, reverse index pass");
    is_str(P("\x1b(0qqq\x1b(B"), "\x1b(0qqq\x1b(B", "pty: line-drawing charset passes");
    /* what vim, less and top write as they start and end (tests/integration/tty-apps.t) */
    is_str(P("\x1b[?1h\x1b=\x1b[?2004h\x1b[?1000h\x1b[?1002h\x1b[?1006h\x1b[?1004h"),
           "\x1b[?1h\x1b=\x1b[?2004h\x1b[?1000h\x1b[?1002h\x1b[?1006h\x1b[?1004h",
           "pty: DECCKM, DECKPAM, bracketed paste, mouse (SGR) and focus modes pass");
    is_str(P("\x1b[?1000l\x1b[?2004l\x1b[?1l\x1b>\x1b[?1049l\x1b[?12l\x1b[?25h"),
           "\x1b[?1000l\x1b[?2004l\x1b[?1l\x1b>\x1b[?1049l\x1b[?12l\x1b[?25h",
           "pty: the same reset (DECRST), the cursor shown again");
    is_str(P("\x1b[>4;2m\x1b[2 q\x1b[34h\x1b[27m\x1b[?7h\x1b[4l"),
           "\x1b[>4;2m\x1b[2 q\x1b[34h\x1b[27m\x1b[?7h\x1b[4l",
           "pty: modifyOtherKeys, cursor style, autowrap and insert modes pass");
    is_str(P("a\x0e\x0f\x0cb"), "a\x0e\x0f\x0cb", "pty: SO, SI, FF pass");
    is_str(P("\x1b]0;vim: f.c\x07x"), "\x1b]0;vim: f.c\x07x", "pty: a title (BEL) passes");
    is_str(P("\x1b]2;t\x1b\\x"), "\x1b]2;t\x1b\\x", "pty: a title (ST) passes");
    is_str(P("\x1b[22;0t\x1b[23;0t"), "\x1b[22;0t\x1b[23;0t", "pty: title push and pop pass");
    is_str(P("\x1b]8;;https://example.com/\x1b\\link\x1b]8;;\x1b\\"),
           "\x1b]8;;https://example.com/\x1b\\link\x1b]8;;\x1b\\", "pty: an https hyperlink passes");
    is_str(P("\x1b]11;rgb:00/00/00\x07"), "\x1b]11;rgb:00/00/00\x07", "pty: setting a colour passes");
    /* what a hostile program could use against the person stays out */
    is_str(P("a\x1b]52;c;aGk=\x07" "b"), "ab", "pty: OSC 52 clipboard write dropped");
    is_str(P("a\x1b]52;c;?\x1b\\b"), "ab", "pty: OSC 52 clipboard read dropped");
    is_str(P("a\x1b[21tb"), "ab", "pty: CSI 21 t (title report) dropped");
    is_str(P("a\x1b[20t\x1b[14t\x1b[3;0;0t\x1b[8;1;1tb"), "ab",
           "pty: icon label report, size report, window move and resize dropped");
    is_str(P("a\x1bP$qm\x1b\\b"), "ab", "pty: DECRQSS (DCS $ q) dropped");
    is_str(P("a\x1bP+q544e\x1b\\b"), "ab", "pty: XTGETTCAP dropped");
    is_str(P("a\x1b]11;?\x07" "b"), "ab", "pty: background colour query dropped");
    is_str(P("a\x1b]4;1;?\x07" "b"), "ab", "pty: palette query dropped");
    is_str(P("\x1b]8;;file:///etc/passwd\x1b\\x\x1b]8;;\x1b\\"), "x\x1b]8;;\x1b\\",
           "pty: a file: hyperlink dropped (its text and the link's end stay)");
    is_str(P("\x1b]8;;FILE:/x\x07y"), "y", "pty: FILE: too (schemes ignore case)");
    is_str(P("\x1b]8;;ssh://h/x\x07y"), "y", "pty: other schemes dropped");
    is_str(P("a\x1b]7;file://h/tmp\x07\x1b]777;notify;x;y\x07\x1b]1337;File=x\x07" "b"), "ab",
           "pty: OSC 7, 777, 1337 dropped");
    is_str(P("a\x1b]0;t\xc2\x9c\x1b]52;c;aGk=\x07" "b"), "ab",
           "pty: a title hiding a UTF-8 ST and an OSC 52 dropped whole");
    is_str(P("a\x1b]0;t\x1b]52;c;aGk=\x07" "b"), "ab", "pty: a title holding ESC ] dropped whole");
    is_str(P("a\x05" "b"), "ab", "pty: ENQ (answerback) dropped");
    is_str(P("a\x1b[5ib\x1b[4i"), "ab", "pty: media copy (printer mode) dropped");
    is_str(P("a\xc2\x9b" "21tb"), "a21tb", "pty: a UTF-8 encoded CSI dropped");
    is_str(P("\xc2\xa9\xe2\x9c\x93"), "\xc2\xa9\xe2\x9c\x93", "pty: UTF-8 text passes");
    {
        char big[SBX_TERMFILTER_OSC_MAX + 64] = "\x1b]0;";
        memset(big + 4, 'x', SBX_TERMFILTER_OSC_MAX);
        strcpy(big + 4 + SBX_TERMFILTER_OSC_MAX, "\x07Z");
        is_str(filter_mode(true, big, strlen(big), 100), "Z", "pty: an overlong OSC dropped whole");
    }
    /* split anywhere */
    is_str(PS("x\x1b]52;c;aGk=\x07y", 3), "xy", "pty: OSC 52 split after ESC ]");
    is_str(bytewise("x\x1b]52;c;aGk=\x07y\x1b[21t\x1b[1;31mz\x1b]0;t\x1b\\"),
           "xy\x1b[1;31mz\x1b]0;t\x1b\\", "pty: fed byte by byte, the same");
}

/* Every request the terminal answers into the input: dropped in pty mode, whole, in its
 * 7-bit form, its 8-bit C1 form and its UTF-8 encoded C1 form, fed whole and byte by byte;
 * the text around it stays. */
static void pty_queries(void)
{
    static const struct { const char *seq, *what; } csi[] = {
        { "5n", "DSR status (CSI 5 n)" },
        { "6n", "DSR cursor position (CSI 6 n)" },
        { "?6n", "DECXCPR (CSI ? 6 n)" },
        { "?15n", "DSR printer (CSI ? 15 n)" },
        { "?996n", "DSR colour scheme (CSI ? 996 n)" },
        { "c", "DA1 (CSI c)" },
        { "0c", "DA1 (CSI 0 c)" },
        { ">c", "DA2 (CSI > c)" },
        { ">0c", "DA2 (CSI > 0 c)" },
        { "=c", "DA3 (CSI = c)" },
        { "?1049$p", "DECRQM, private (CSI ? Ps $ p)" },
        { "4$p", "DECRQM, ANSI (CSI Ps $ p)" },
        { ">q", "XTVERSION (CSI > q)" },
        { ">0q", "XTVERSION (CSI > 0 q)" },
        { "11t", "window state report (CSI 11 t)" },
        { "13t", "window position report (CSI 13 t)" },
        { "13;2t", "window position report (CSI 13 ; 2 t)" },
        { "14t", "window size report (CSI 14 t)" },
        { "18t", "text area size report (CSI 18 t)" },
        { "19t", "screen size report (CSI 19 t)" },
        { "20t", "icon label report (CSI 20 t)" },
        { "21t", "title report (CSI 21 t)" },
        { "x", "DECREQTPARM (CSI x)" },
        { "?4m", "XTQMODKEYS (CSI ? 4 m)" },
        { "?u", "kitty keyboard flags (CSI ? u)" },
        { "?1;1S", "XTSMGRAPHICS (CSI ? 1 ; 1 S)" },
        { "1$w", "DECRQPSR (CSI 1 $ w)" },
        { "1$u", "DECRQTSR (CSI 1 $ u)" },
        { "1;1;1;1;1;1*y", "DECRQCRA (CSI ... * y)" },
        { "1'|", "DECRQLP (CSI 1 ' |)" },
        { "1;1;1;1#|", "XTREPORTSGR (CSI ... # |)" },
    };
    static const struct { const char *body, *what; } strings[] = {
        { "]4;1;?", "OSC 4 palette query" },
        { "]10;?", "OSC 10 foreground query" },
        { "]11;?", "OSC 11 background query" },
        { "]12;?", "OSC 12 cursor colour query" },
        { "]17;?", "OSC 17 highlight query" },
        { "]19;?", "OSC 19 highlight text query" },
        { "]104;?", "OSC 104 with a query" },
        { "]5;0;?", "OSC 5 special colour query" },
        { "]52;c;?", "OSC 52 clipboard read" },
        { "]52;c;aGk=", "OSC 52 clipboard write" },
        { "P$qm", "DECRQSS (DCS $ q)" },
        { "P$q\"q", "DECRQSS of DECSCA" },
        { "P+q544e", "XTGETTCAP (DCS + q)" },
    };
    char in[128], want[128];
    for (size_t i = 0; i < sizeof(csi) / sizeof(csi[0]); i++) {
        snprintf(in, sizeof(in), "a\x1b[%sb", csi[i].seq);
        is_str(filter_mode(true, in, strlen(in), strlen(in)), "ab", "pty: %s dropped", csi[i].what);
        is_str(bytewise(in), "ab", "pty: %s dropped, fed byte by byte", csi[i].what);
        snprintf(in, sizeof(in), "a\x9b%sb", csi[i].seq);
        snprintf(want, sizeof(want), "a%sb", csi[i].seq);
        is_str(filter_mode(true, in, strlen(in), 2), want, "pty: %s as 8-bit CSI (0x9b): the control dropped", csi[i].what);
        snprintf(in, sizeof(in), "a\xc2\x9b%sb", csi[i].seq);
        is_str(filter_mode(true, in, strlen(in), 2), want, "pty: %s as UTF-8 CSI (U+009B): the control dropped", csi[i].what);
    }
    for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
        static const char *const ends[] = { "\x07", "\x1b\\" };
        for (size_t e = 0; e < 2; e++) {
            snprintf(in, sizeof(in), "a\x1b%s%sb", strings[i].body, ends[e]);
            is_str(filter_mode(true, in, strlen(in), 3), "ab", "pty: %s dropped (ended by %s)",
                   strings[i].what, e ? "ST" : "BEL");
            is_str(bytewise(in), "ab", "pty: %s dropped, byte by byte", strings[i].what);
        }
        /* the 8-bit forms: 0x9d OSC, 0x90 DCS; the terminator 0x9c ST */
        snprintf(in, sizeof(in), "a%s%s\x9c" "b", strings[i].body[0] == ']' ? "\x9d" : "\x90",
                 strings[i].body + 1);
        snprintf(want, sizeof(want), "a%sb", strings[i].body + 1);
        is_str(filter_mode(true, in, strlen(in), 3), want, "pty: %s in 8-bit C1 form: the controls dropped",
               strings[i].what);
        snprintf(in, sizeof(in), "a%s%s\xc2\x9c" "b", strings[i].body[0] == ']' ? "\xc2\x9d" : "\xc2\x90",
                 strings[i].body + 1);
        is_str(filter_mode(true, in, strlen(in), 3), want,
               "pty: %s in UTF-8 C1 form: the controls dropped", strings[i].what);
    }
    is_str(P("a\x05" "b\x1bZc"), "abc", "pty: ENQ and DECID (ESC Z) dropped");
    is_str(P("a\x85\x9a" "b"), "ab", "pty: bare NEL and DECID (8-bit) dropped");
    /* what stays: colours, cursor moves and shape, modes, key modifiers, titles */
    is_str(P("\x1b[31mx\x1b[5;1H\x1b[2 q\x1b[?25l\x1b[>4;2m\x1b[>4n\x1b[!p\x1b]0;t\x07"),
           "\x1b[31mx\x1b[5;1H\x1b[2 q\x1b[?25l\x1b[>4;2m\x1b[>4n\x1b[!p\x1b]0;t\x07",
           "pty: SGR, CUP, DECSCUSR, DECTCEM, modifyOtherKeys set and reset, DECSTR, a title stay");
    is_str(P("\x1b]0;what? why?\x07"), "\x1b]0;what? why?\x07", "pty: a title with a ? stays");
    is_str(P("\xc3\x9b\xe2\x80\x9c\xf0\x9f\x98\x80"), "\xc3\x9b\xe2\x80\x9c\xf0\x9f\x98\x80",
           "pty: 0x80..0x9f continuing a UTF-8 character stays");
    is_str(P("\xe0\x9b" "6n"), "\xe0" "6n", "pty: 0x9b after E0 (an overlong form) is no continuation");
    is_str(P("\xe6\x1b[6n\x97\xa5"), "\xe6\xa5", "pty: a query between a lead byte and its rest");
    is_str(P("\x1b]0;t\x9c\x1b]52;c;aGk=\x07" "b"), "b",
           "pty: a title hiding an 8-bit ST and an OSC 52 dropped whole");
}

int main(void)
{
    is_str(F("plain text\n"), "plain text\n", "text passes");
    is_str(F("a\tb\rc\bd\a\n"), "a\tb\rc\bd\a\n", "tab, CR, backspace, bell pass");
    is_str(F("h\xc3\xa9llo \xe2\x9c\x93"), "h\xc3\xa9llo \xe2\x9c\x93", "UTF-8 passes");
    is_str(F("\x1b[1;31mred\x1b[0m"), "\x1b[1;31mred\x1b[0m", "SGR colours pass");
    is_str(F("\x1b[38:5:208mx\x1b[m"), "\x1b[38:5:208mx\x1b[m", "SGR with colons passes");
    is_str(F("a\x1b[2Jb"), "ab", "clear screen dropped");
    is_str(F("a\x1b[10;1Hb"), "ab", "cursor move dropped");
    is_str(F("a\x1b[?1049hb"), "ab", "private mode (alt screen) dropped");
    is_str(F("a\x1b[>1mb"), "ab", "SGR-looking private sequence dropped");
    is_str(F("a\x1b]0;evil title\x07" "b"), "ab", "OSC title (BEL) dropped");
    is_str(F("a\x1b]2;evil\x1b\\b"), "ab", "OSC title (ST) dropped");
    is_str(F("a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\b"), "alinkb", "OSC 8 hyperlink dropped");
    is_str(F("a\x1bPq#0;2;0;0;0\x1b\\b"), "ab", "DCS dropped");
    is_str(F("a\x1b" "7b\x1b" "8c"), "abc", "save/restore cursor dropped");
    is_str(F("a\x1b" "cb"), "ab", "terminal reset dropped");
    is_str(F("a\x1b(0b"), "ab", "charset switch dropped");
    is_str(F("a\x0e\x0f\x0c\x0b\x00z"), "az", "other C0 controls dropped");
    is_str(F("a\xc2\x9b" "2Jb"), "a2Jb", "UTF-8 encoded CSI (U+009B) dropped");
    is_str(F("\xc2\xa9"), "\xc2\xa9", "U+00A9 kept");
    is_str(F("a\x1b[6nb"), "ab", "cursor position query dropped");
    is_str(FS("x\x1b[31my", 2), "x\x1b[31my", "SGR split after ESC");
    is_str(FS("x\x1b[31my", 4), "x\x1b[31my", "SGR split inside params");
    is_str(FS("x\x1b]0;t\x07y", 4), "xy", "OSC split");
    is_str(FS("x\xc2\x9by", 2), "xy", "UTF-8 C1 split");
    {
        char big[200] = "\x1b[";
        memset(big + 2, '1', 150);
        strcpy(big + 152, "mX");
        is_str(filter(big, strlen(big), 1000), "X", "overlong SGR dropped whole");
    }
    is_str(F("a\x1b[1\nb"), "a\nb", "a newline inside a sequence cancels it");
    is_str(F("a\xc2\x01\x9d" "52;c;x\x07" "b"), "a52;c;x\x07" "b",
           "a 0xc2 whose next byte is dropped cannot pair with a later one into a C1 control");
    is_str(P("a\xc2\x01\x9b" "2J"), "a\x01" "2J", "...nor in pty mode");
    is_str(F("a\x9b" "6n\x9d" "0;t\x07\x90" "$qm\x9c" "b"), "a6n0;t\x07$qmb",
           "plain: bare 8-bit C1 bytes (CSI, OSC, DCS, ST) dropped");
    is_str(F("\xc3\x9b\xe2\x80\x9c\xf0\x9f\x98\x80"), "\xc3\x9b\xe2\x80\x9c\xf0\x9f\x98\x80",
           "plain: 0x80..0x9f continuing a UTF-8 character kept");
    pty_mode();
    pty_queries();
    pty_reset();
    return done_testing();
}
