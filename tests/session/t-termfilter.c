/* The terminal escape filter (session/termfilter.h). */
#include "tests/lib/tap.h"

#include "session/termfilter.h"

static const char *filter(const char *in, size_t len, size_t split)
{
    static strbuf out = STRBUF_INIT;
    sbx_termfilter f;
    strbuf_reset(&out);
    sbx_termfilter_init(&f);
    /* Feed in two pieces, so that sequences cut by a write boundary count. */
    sbx_termfilter_feed(&f, in, split < len ? split : len, &out);
    if (split < len)
        sbx_termfilter_feed(&f, in + split, len - split, &out);
    return out.buf;
}

#define F(s) filter(s, sizeof(s) - 1, sizeof(s))
#define FS(s, at) filter(s, sizeof(s) - 1, at)

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
    return done_testing();
}
