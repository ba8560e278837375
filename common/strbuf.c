/*
 * strbuf (strbuf.h): a growable byte string after git's strbuf, whose invariants every function
 * here keeps (buf never NULL, buf[len] always '\0'); also strbuf_read_fd(),
 * strbuf_add_shell_quoted() and strbuf_add_json_escaped(). May call libc and common/ only
 * (common/README.md).
 */
#include "common/strbuf.h"
#include "common/util.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

char strbuf_slopbuf[1];

void strbuf_init(strbuf *sb, size_t hint)
{
    sb->alloc = 0;
    sb->len = 0;
    sb->buf = strbuf_slopbuf;
    if (hint)
        strbuf_grow(sb, hint);
}

void strbuf_release(strbuf *sb)
{
    if (sb->alloc)
        free(sb->buf);
    strbuf_init(sb, 0);
}

char *strbuf_detach(strbuf *sb, size_t *len_out)
{
    char *res;
    if (len_out)
        *len_out = sb->len;
    if (!sb->alloc)
        res = xstrdup("");
    else
        res = sb->buf;
    strbuf_init(sb, 0);
    return res;
}

void strbuf_grow(strbuf *sb, size_t extra)
{
    size_t need;
    if (extra > SIZE_MAX - sb->len - 1)
        xdie_oom();
    need = sb->len + extra + 1;
    if (need <= sb->alloc)
        return;
    size_t n = sb->alloc ? sb->alloc : 64;
    while (n < need)
        n = n < SIZE_MAX / 2 ? n * 2 : need;
    if (!sb->alloc) {
        sb->buf = xmalloc(n);
        sb->buf[0] = '\0';
    } else {
        sb->buf = xrealloc(sb->buf, n);
    }
    sb->alloc = n;
}

void strbuf_setlen(strbuf *sb, size_t len)
{
    if (!sb->alloc) {
        /* Only 0 is a valid length for the shared empty buffer. */
        return;
    }
    sb->len = len;
    sb->buf[len] = '\0';
}

int strbuf_read_fd(strbuf *sb, int fd, size_t max)
{
    for (;;) {
        ssize_t r;
        strbuf_grow(sb, 65536);
        r = read(fd, sb->buf + sb->len, strbuf_avail(sb));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            return 0;
        strbuf_setlen(sb, sb->len + (size_t)r);
        /* Checked after each read, so that a file that grows past max stops being read. */
        if (sb->len > max) {
            errno = EFBIG;
            return -1;
        }
    }
}

void strbuf_add(strbuf *sb, const void *data, size_t len)
{
    if (!len)
        return;
    strbuf_grow(sb, len);
    memcpy(sb->buf + sb->len, data, len);
    sb->len += len;
    sb->buf[sb->len] = '\0';
}

void strbuf_addstr(strbuf *sb, const char *s)
{
    strbuf_add(sb, s, strlen(s));
}

void strbuf_addch(strbuf *sb, int c)
{
    strbuf_grow(sb, 1);
    sb->buf[sb->len++] = (char)c;
    sb->buf[sb->len] = '\0';
}

void strbuf_vaddf(strbuf *sb, const char *fmt, va_list ap)
{
    va_list cp;
    int n;
    strbuf_grow(sb, 64);
    va_copy(cp, ap);
    n = vsnprintf(sb->buf + sb->len, sb->alloc - sb->len, fmt, cp);
    va_end(cp);
    if (n < 0)
        return;
    if ((size_t)n >= sb->alloc - sb->len) {
        strbuf_grow(sb, (size_t)n);
        n = vsnprintf(sb->buf + sb->len, sb->alloc - sb->len, fmt, ap);
    }
    sb->len += (size_t)n;
}

void strbuf_addf(strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    strbuf_vaddf(sb, fmt, ap);
    va_end(ap);
}

void strbuf_remove(strbuf *sb, size_t pos, size_t n)
{
    if (pos >= sb->len)
        return;
    if (n > sb->len - pos)
        n = sb->len - pos;
    memmove(sb->buf + pos, sb->buf + pos + n, sb->len - pos - n);
    strbuf_setlen(sb, sb->len - n);
}

void strbuf_add_shell_quoted(strbuf *sb, const char *s, size_t len)
{
    int needs_ansi = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f) {
            needs_ansi = 1;
            break;
        }
    }
    if (!needs_ansi) {
        strbuf_addch(sb, '\'');
        for (size_t i = 0; i < len; i++) {
            if (s[i] == '\'')
                strbuf_addstr(sb, "'\\''");
            else
                strbuf_addch(sb, s[i]);
        }
        strbuf_addch(sb, '\'');
        return;
    }
    strbuf_addstr(sb, "$'");
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '\n': strbuf_addstr(sb, "\\n"); break;
        case '\t': strbuf_addstr(sb, "\\t"); break;
        case '\r': strbuf_addstr(sb, "\\r"); break;
        case '\\': strbuf_addstr(sb, "\\\\"); break;
        case '\'': strbuf_addstr(sb, "\\'"); break;
        default:
            if (c < 0x20 || c == 0x7f)
                strbuf_addf(sb, "\\x%02x", c);
            else
                strbuf_addch(sb, (char)c);
        }
    }
    strbuf_addch(sb, '\'');
}

/* The length of the valid UTF-8 sequence at s (at most n bytes), or 0: overlong
 * forms, surrogates and code points past U+10FFFF are not valid. */
static size_t utf8_seq_len(const unsigned char *s, size_t n)
{
    size_t len;
    uint32_t cp;

    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        len = 2, cp = s[0] & 0x1f;
    else if (s[0] >= 0xe0 && s[0] <= 0xef)
        len = 3, cp = s[0] & 0x0f;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        len = 4, cp = s[0] & 0x07;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    return len;
}

void strbuf_add_json_escaped(strbuf *sb, const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        unsigned char c = u[i];
        size_t n = utf8_seq_len(u + i, len - i);
        if (n > 1) {
            strbuf_add(sb, s + i, n);
            i += n;
            continue;
        }
        i++;
        switch (c) {
        case '"': strbuf_addstr(sb, "\\\""); break;
        case '\\': strbuf_addstr(sb, "\\\\"); break;
        case '\n': strbuf_addstr(sb, "\\n"); break;
        case '\t': strbuf_addstr(sb, "\\t"); break;
        case '\r': strbuf_addstr(sb, "\\r"); break;
        default:
            /* control bytes, and bytes that are not valid UTF-8 (as the code point
             * of the same number, so the JSON stays valid and bytes stay apart) */
            if (c < 0x20 || c == 0x7f || c >= 0x80)
                strbuf_addf(sb, "\\u%04x", c);
            else
                strbuf_addch(sb, (char)c);
        }
    }
}
