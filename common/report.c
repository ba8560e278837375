/*
 * The one sink for sbxsh's own messages (report.h): sbx_error(), sbx_warning(), sbx_report(),
 * sbx_report_lines(); and the sanitizers, sbx_sanitize() with its _buf and _inplace forms and
 * sbx_json_for_terminal(). May call libc and common/ only (common/README.md). Untrusted: the
 * text a message quotes (the sandbox's file names, an API server's message, a pod's stderr);
 * sanitize() here writes each control byte, C1 control and invalid UTF-8 byte as \xNN.
 */
#include "common/report.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Where sanitized text goes: a strbuf, or a fixed buffer that stops taking pieces at the
 * first one that does not fit whole (so an escape or a character is never cut). */
struct sink {
    strbuf *sb;
    char *buf;
    size_t cap, len;
    bool full;
};

static void put(struct sink *o, const void *p, size_t n)
{
    if (o->sb) {
        strbuf_add(o->sb, p, n);
        return;
    }
    if (o->full || o->len + n + 1 > o->cap) {
        o->full = true;
        return;
    }
    memcpy(o->buf + o->len, p, n);
    o->len += n;
}

static void put_hex(struct sink *o, unsigned char c)
{
    static const char hex[] = "0123456789abcdef";
    char e[4] = { '\\', 'x', hex[c >> 4], hex[c & 15] };
    put(o, e, 4);
}

/* RFC 3629's ranges exclude overlong forms, surrogates and code points over U+10FFFF: a
 * terminal may read any of those as something else. */
size_t sbx_utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0], lo = 0x80, hi = 0xbf;
    size_t len;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0)
            lo = 0xa0;
        else if (c == 0xed)
            hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0)
            lo = 0x90;
        else if (c == 0xf4)
            hi = 0x8f;
    } else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return len;
}

/* U+0080..U+009F encoded in UTF-8 (C2 80..C2 9F): a C1 control to a terminal that decodes
 * UTF-8 before it parses controls. s holds a valid 2-byte character. */
static bool utf8_c1(const unsigned char *s)
{
    return s[0] == 0xc2 && s[1] <= 0x9f;
}

bool sbx_text_shows_plain(const void *text, size_t len)
{
    const unsigned char *s = text;
    for (size_t i = 0; i < len;) {
        size_t n;
        if (s[i] < 0x20 || s[i] == 0x7f)
            return false;
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        n = sbx_utf8_len(s + i, len - i);
        if (!n || utf8_c1(s + i))
            return false;
        i += n;
    }
    return true;
}

static void sanitize(struct sink *o, const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n && !o->full) {
        unsigned char c = s[i];
        size_t run = i;
        /* printable ASCII in one piece */
        while (run < n && s[run] >= 0x20 && s[run] < 0x7f)
            run++;
        if (run > i) {
            if (o->sb) {
                put(o, s + i, run - i);
            } else {
                for (size_t k = i; k < run && !o->full; k++)
                    put(o, s + k, 1);
            }
            i = run;
            continue;
        }
        if (c == '\t') {
            put(o, "\\t", 2);
            i++;
        } else if (c == '\n') {
            put(o, "\\n", 2);
            i++;
        } else if (c < 0x80) {
            put_hex(o, c);          /* C0 controls (ESC, BEL, ENQ...) and DEL */
            i++;
        } else {
            size_t len = sbx_utf8_len(s + i, n - i);
            if (len == 2 && utf8_c1(s + i)) {
                /* U+0080..U+009F: a C1 control (CSI, OSC, DCS, ST) to a terminal that
                 * decodes UTF-8 before it parses controls */
                put_hex(o, s[i]);
                put_hex(o, s[i + 1]);
                i += 2;
            } else if (len) {
                put(o, s + i, len);
                i += len;
            } else {
                /* not UTF-8: a bare 0x80..0x9f is an 8-bit C1 control to a terminal not
                 * in UTF-8 mode, and any stray byte may join what follows into one */
                put_hex(o, c);
                i++;
            }
        }
    }
}

void sbx_sanitize(strbuf *out, const void *text, size_t len)
{
    struct sink o = { .sb = out };
    sanitize(&o, text, len);
}

size_t sbx_sanitize_buf(char *out, size_t outsz, const void *text, size_t len)
{
    struct sink o = { .buf = out, .cap = outsz };
    if (!outsz)
        return 0;
    sanitize(&o, text, len);
    out[o.len] = '\0';
    return o.len;
}

void sbx_sanitize_inplace(char *buf, size_t bufsz)
{
    /* an escape is at most 4 bytes for each byte; a message is about a kilobyte, so the
     * copy fits on the stack and nothing is allocated (this runs in forked children too) */
    char copy[4096];
    size_t n = strnlen(buf, bufsz);
    bool clean = true;
    for (size_t i = 0; i < n && clean; i++)
        clean = (unsigned char)buf[i] >= 0x20 && (unsigned char)buf[i] < 0x7f;
    if (clean)
        return;         /* the common case: plain ASCII, nothing to do */
    if (n >= sizeof(copy))
        n = sizeof(copy) - 1;
    memcpy(copy, buf, n);
    sbx_sanitize_buf(buf, bufsz, copy, n);
}

void sbx_vreport(const char *prefix, const char *eol, const char *fmt, va_list ap)
{
    strbuf msg = STRBUF_INIT, line = STRBUF_INIT;
    strbuf_vaddf(&msg, fmt, ap);
    if (prefix) {
        strbuf_addstr(&line, prefix);
        strbuf_addstr(&line, ": ");
    }
    sbx_sanitize(&line, msg.buf, msg.len);
    strbuf_addstr(&line, eol ? eol : "\n");
    fwrite(line.buf, 1, line.len, stderr);
    fflush(stderr);
    strbuf_release(&msg);
    strbuf_release(&line);
}

void sbx_report_lines(const char *text)
{
    strbuf out = STRBUF_INIT;
    const char *p = text;
    /* newlines and tabs as they are (a quoted script line keeps its indentation, as bash
     * shows it), every other control escaped */
    for (;;) {
        size_t n = strcspn(p, "\n\t");
        sbx_sanitize(&out, p, n);
        if (!p[n])
            break;
        strbuf_addch(&out, p[n]);
        p += n + 1;
    }
    fwrite(out.buf, 1, out.len, stderr);
    fflush(stderr);
    strbuf_release(&out);
}

void sbx_report(const char *prefix, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sbx_vreport(prefix, "\n", fmt, ap);
    va_end(ap);
}

void sbx_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sbx_vreport("sbxsh", "\n", fmt, ap);
    va_end(ap);
}

void sbx_warning(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sbx_vreport("sbxsh: warning", "\n", fmt, ap);
    va_end(ap);
}

void sbx_json_for_terminal(strbuf *out, const char *json, size_t len)
{
    const unsigned char *s = (const unsigned char *)json;
    for (size_t i = 0; i < len;) {
        unsigned char c = s[i];
        if (c < 0x80) {
            if (c == 0x7f)  /* (below 0x20: escaped in strings already, else whitespace) */
                strbuf_addf(out, "\\u%04x", c);
            else
                strbuf_addch(out, (char)c);
            i++;
            continue;
        }
        size_t n = sbx_utf8_len(s + i, len - i);
        if (!n) {
            strbuf_addstr(out, "\\ufffd");
            i++;
        } else if (n == 2 && utf8_c1(s + i)) {
            strbuf_addf(out, "\\u%04x", (unsigned)(0x80 + (s[i + 1] - 0x80)));
            i += 2;
        } else {
            strbuf_add(out, s + i, n);
            i += n;
        }
    }
}
