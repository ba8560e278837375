/* The terminal escape filter (session/termfilter.h). */
#include "tests/lib/tap.h"

#include "session/termfilter.h"

static const char *filter_mode(bool pty, const char *in, size_t len, size_t split)
{
    static strbuf out = STRBUF_INIT;
    sbx_termfilter f;
    strbuf_reset(&out);
    if (pty)
        sbx_termfilter_init_pty(&f);
    else
        sbx_termfilter_init(&f);
    /* Feed in two pieces, so that sequences cut by a write boundary count. */
    sbx_termfilter_feed(&f, in, split < len ? split : len, &out);
    if (split < len)
        sbx_termfilter_feed(&f, in + split, len - split, &out);
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
    sbx_termfilter_init_pty(&f);
    for (size_t i = 0; in[i]; i++)
        sbx_termfilter_feed(&f, in + i, 1, &out);
    return out.buf;
}

/* pty mode: what the reset writes after in went through the filter */
static const char *reset_after(const char *in)
{
    static strbuf out = STRBUF_INIT;
    sbx_termfilter f;
    sbx_termfilter_init_pty(&f);
    strbuf_reset(&out);
    sbx_termfilter_feed(&f, in, strlen(in), &out);
    strbuf_reset(&out);
    sbx_termfilter_pty_reset(&f, &out);
    strbuf_addch(&out, '|');
    sbx_termfilter_pty_reset(&f, &out);   /* once reset, nothing more */
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
    sbx_termfilter_init(&f);
    sbx_termfilter_feed(&f, "\x1b[?1049h", 8, &out);
    sbx_termfilter_pty_reset(&f, &out);
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
    is_str(P("\x1b[6n\x1b[c"), "\x1b[6n\x1b[c", "pty: cursor position and DA queries pass");
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
    is_str(F("a\xc2\x01\x9d" "52;c;x\x07" "b"), "a\x9d" "52;c;x\x07" "b",
           "a 0xc2 whose next byte is dropped cannot pair with a later one into a C1 control");
    is_str(P("a\xc2\x01\x9b" "2J"), "a\x01\x9b" "2J", "...nor in pty mode");
    pty_mode();
    pty_reset();
    return done_testing();
}
