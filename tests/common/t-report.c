/* Unit tests of common/report.c: the sanitizer every sbxsh message passes through. */
#include "common/report.h"
#include "common/util.h"
#include "sync/safefs.h"
#include "tests/lib/tap.h"

#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char *san(const char *s, size_t n)
{
    static strbuf sb = STRBUF_INIT;
    strbuf_reset(&sb);
    sbx_sanitize(&sb, s, n);
    return sb.buf;
}
#define SAN(lit) san(lit, sizeof(lit) - 1)

/* No byte a terminal reads as a control: C0, DEL, 8-bit C1, UTF-8 C1. */
static bool has_control(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; p[i]; i++) {
        if (p[i] < 0x20 || p[i] == 0x7f || (p[i] >= 0x80 && p[i] <= 0x9f && (!i || p[i - 1] == 0xc2)))
            return true;
        if (p[i] == 0xc2 && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f)
            return true;
    }
    return false;
}

int main(void)
{
    static const char hostile[] = "a\x1b]0;x\x07" "b\x1b]52;c;aGk=\x07" "c\x1b[6n" "d\x9b" "6n"
                                  "e\xc2\x9b" "6n" "f\xc2\x9d" "0;t\xc2\x9c" "g\x05\x7f";
    is_str(SAN("plain text, /a/b.c"), "plain text, /a/b.c", "printable ASCII is kept");
    is_str(SAN("caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80"),
           "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80",
           "valid UTF-8 (a non-ASCII file name) is kept readable");
    is_str(SAN("\xc2\xa0nbsp"), "\xc2\xa0nbsp", "U+00A0, right after the C1 range, is kept");
    is_str(SAN("a\x1b]0;x\x07"), "a\\x1b]0;x\\x07", "ESC and BEL show as \\x1b and \\x07");
    is_str(SAN("t\tn\nr\r"), "t\\tn\\nr\\x0d", "tab shows as \\t, newline as \\n, CR as \\x0d");
    is_str(SAN("\x05\x7f"), "\\x05\\x7f", "ENQ and DEL are escaped");
    is_str(SAN("x\x9b" "6n"), "x\\x9b6n", "a raw 8-bit CSI (0x9b) is escaped");
    is_str(SAN("\x9d\x90"), "\\x9d\\x90", "raw 8-bit OSC and DCS are escaped");
    is_str(SAN("\xc2\x9b" "6n"), "\\xc2\\x9b6n", "C1 CSI encoded in UTF-8 (U+009B) is escaped");
    is_str(SAN("\xc2\x80\xc2\x9f"), "\\xc2\\x80\\xc2\\x9f", "U+0080 and U+009F are escaped");
    is_str(SAN("\xc0\x9b"), "\\xc0\\x9b", "an overlong encoding is escaped byte by byte");
    is_str(SAN("\xed\xa0\x80"), "\\xed\\xa0\\x80", "a surrogate is escaped");
    is_str(SAN("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80", "a code point over U+10FFFF is escaped");
    is_str(SAN("ab\xe6\x97"), "ab\\xe6\\x97", "a truncated character is escaped");
    is_str(SAN("\xe6\x1b[6n"), "\\xe6\\x1b[6n", "a lead byte does not swallow a following ESC");
    is_str(san("a\0b", 3), "a\\x00b", "NUL is escaped");
    ok(!has_control(SAN(hostile)), "the hostile string leaves no control byte: %s", SAN(hostile));
    {
        char once[512];
        snprintf(once, sizeof(once), "%s", SAN(hostile));
        is_str(san(once, strlen(once)), once, "sanitizing twice changes nothing");
    }

    char buf[16];
    is_int((int)sbx_sanitize_buf(buf, sizeof(buf), "abc\x1b[6n", 7), 10, "into a buffer");
    is_str(buf, "abc\\x1b[6n", "the same form into a buffer");
    sbx_sanitize_buf(buf, 6, "abc\x1b[6n", 7);
    is_str(buf, "abc", "an escape that does not fit is left out whole");
    sbx_sanitize_buf(buf, 6, "ab\xe6\x97\xa5" "c", 6);
    is_str(buf, "ab\xe6\x97\xa5", "a character that fits is kept whole");
    sbx_sanitize_buf(buf, 5, "ab\xe6\x97\xa5" "c", 6);
    is_str(buf, "ab", "one that does not is left out whole");

    sbx_err err;
    sbx_errf(&err, "cannot sync '%s': %s", hostile, "refused");
    ok(!has_control(err.msg), "sbx_errf sanitizes what it formats: %s", err.msg);
    ok(strstr(err.msg, "a\\x1b]0;x\\x07b") != NULL, "and shows the escapes");
    sbx_err_prefix(&err, "pull %s", "\x1b[c");
    ok(!has_control(err.msg) && !strncmp(err.msg, "pull \\x1b[c: cannot sync", 24),
       "sbx_err_prefix too: %s", err.msg);
    errno = ENOENT;
    sbx_errno(&err, "open %s", "\x9b" "6n");
    is_str(err.msg, "open \\x9b6n: No such file or directory", "sbx_errno too");
    {
        char big[2000];
        memset(big, 0x1b, sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        sbx_errf(&err, "%s", big);
        ok(!has_control(err.msg) && strlen(err.msg) < sizeof(err.msg) &&
           !strncmp(err.msg, "\\x1b\\x1b", 8), "a long message is cut to fit, escapes whole");
    }
    {
        /* the sink: "prog: message\n" with the message sanitized; lines keep \n and tabs */
        char path[] = "/tmp/t-report.XXXXXX", got[512] = "";
        int fd = mkstemp(path), saved = dup(2);
        dup2(fd, 2);
        sbx_report("sbx-kube", "pod: %s", "a\x1b]52;c;aGk=\x07\n\x9b" "6n");
        sbx_warning("%s", "\xc2\x9b" "c");
        sbx_report_lines("x: line 1: `\tif \x1b[c'\ny\n");
        dup2(saved, 2);
        close(saved);
        ssize_t n = pread(fd, got, sizeof(got) - 1, 0);
        got[n > 0 ? n : 0] = '\0';
        close(fd);
        unlink(path);
        is_str(got, "sbx-kube: pod: a\\x1b]52;c;aGk=\\x07\\n\\x9b6n\n"
                    "sbxsh: warning: \\xc2\\x9bc\n"
                    "x: line 1: `\tif \\x1b[c'\ny\n", "the sink writes what it formats sanitized");
    }
    /* sf_check_relpath quotes the sandbox's path in its errors, which the host prints */
    static const char *const bad_paths[] = {
        "/\x1b]0;x\x07\x1b[6n", "a//\x1b]52;c;aGk=\x07", "a/../\x9b\x36n\xc2\x9b",
    };
    for (size_t i = 0; i < sizeof(bad_paths) / sizeof(bad_paths[0]); i++) {
        int r = sf_check_relpath(bad_paths[i], strlen(bad_paths[i]), &err);
        ok(r < 0 && !has_control(err.msg) && strstr(err.msg, "\\x"),
           "sf_check_relpath's error on a hostile path is escaped: %s", err.msg);
    }
    /* sbx_text_shows_plain: the names completion may offer, the OSC text the pty filter keeps */
    ok(sbx_text_shows_plain("plain-name.txt", 14), "ASCII text shows safely");
    ok(sbx_text_shows_plain("caf\xc3\xa9", 5), "UTF-8 text shows safely");
    ok(sbx_text_shows_plain("zz; touch x", 11), "blanks and ; show (quoting is completion's)");
    ok(!sbx_text_shows_plain("a\033[31mb", 8), "ESC does not");
    ok(!sbx_text_shows_plain("a\nb", 3), "a newline does not");
    ok(!sbx_text_shows_plain("a\x7f", 2), "DEL does not");
    ok(!sbx_text_shows_plain("a\xc2\x9b" "6n", 5), "a C1 CSI in UTF-8 does not");
    ok(!sbx_text_shows_plain("a\x9b" "6n", 4), "a bare 0x9b (not UTF-8) does not");
    ok(!sbx_text_shows_plain("a\xe2\x82", 3), "a cut UTF-8 sequence does not");
    ok(!sbx_text_shows_plain("\xc0\xaf", 2), "an overlong encoding does not");

    /* sbx_json_for_terminal: sbx status --json and sbx ls --json quote the sandbox's and
     * the cluster's words: DEL, C1 and bytes that are not UTF-8 become \u escapes, valid
     * UTF-8 and the JSON's own whitespace stay */
    {
        static const char in[] = "{\"a\":\"x\x7fy\xc2\x9b" "6n\x9b\xc3\xa9\\u001b\"}\n";
        strbuf j = STRBUF_INIT;
        sbx_json_for_terminal(&j, in, sizeof(in) - 1);
        is_str(j.buf, "{\"a\":\"x\\u007fy\\u009b6n\\ufffd\xc3\xa9\\u001b\"}\n",
           "sbx_json_for_terminal escapes DEL, a C1 and a stray byte, keeps UTF-8 and newline");
        ok(sbx_text_shows_plain(j.buf, j.len - 1), "...so the JSON shows as plain text");
        strbuf_release(&j);
    }
    return done_testing();
}
