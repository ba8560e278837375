#include "common/strbuf.h"
#include "common/util.h"

#include <stdio.h>
#include <string.h>

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

void strbuf_add_json_escaped(strbuf *sb, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': strbuf_addstr(sb, "\\\""); break;
        case '\\': strbuf_addstr(sb, "\\\\"); break;
        case '\n': strbuf_addstr(sb, "\\n"); break;
        case '\t': strbuf_addstr(sb, "\\t"); break;
        case '\r': strbuf_addstr(sb, "\\r"); break;
        default:
            if (c < 0x20 || c == 0x7f)
                strbuf_addf(sb, "\\u%04x", c);
            else
                strbuf_addch(sb, (char)c);
        }
    }
}
