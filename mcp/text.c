/*
 * Output escaping and capping for the MCP server (text.h says what and why).
 *
 * The text is walked in units: one valid UTF-8 character (one output character), or one
 * byte that is escaped as \xNN (four output characters). Units never split a character,
 * so a cap never cuts one in half and the result is always valid UTF-8 whatever the
 * command wrote.
 */
#include "text.h"

#include <stdio.h>

#include "common/report.h"

/* The raw length of the unit at s[0..n) (n > 0), and in *chars what it becomes. */
static size_t unit(const unsigned char *s, size_t n, size_t *chars)
{
    if (s[0] >= 0x80) {
        size_t l = sbx_utf8_len(s, n);
        if (l) {
            *chars = 1;
            return l;
        }
        *chars = 4;
        return 1;
    }
    *chars = s[0] ? 1 : 4;
    return 1;
}

size_t mcp_text_escape(strbuf *out, const void *text, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = text;
    size_t i = 0, total = 0;
    while (i < len) {
        size_t run = i;
        /* the common case, printable ASCII and valid characters, appended in one piece */
        while (run < len) {
            size_t c, l = unit(s + run, len - run, &c);
            if (c != 1)
                break;
            run += l;
            total++;
        }
        if (run > i)
            strbuf_add(out, s + i, run - i);
        if (run < len) {
            char esc[4] = { '\\', 'x', hex[s[run] >> 4], hex[s[run] & 15] };
            strbuf_add(out, esc, 4);
            total += 4;
            run++;
        }
        i = run;
    }
    return total;
}

static size_t count_chars(const unsigned char *s, size_t n)
{
    size_t i = 0, total = 0, c;
    while (i < n) {
        i += unit(s + i, n - i, &c);
        total += c;
    }
    return total;
}

/* The raw bytes of the longest start of s[0..n) that escapes to at most max characters. */
static size_t head_bytes(const unsigned char *s, size_t n, size_t max)
{
    size_t i = 0, used = 0, c;
    while (i < n) {
        size_t l = unit(s + i, n - i, &c);
        if (used + c > max)
            break;
        used += c;
        i += l;
    }
    return i;
}

/* Where the shortest end of s[0..n) that escapes to at most max characters starts. */
static size_t tail_start(const unsigned char *s, size_t n, size_t max)
{
    size_t left = count_chars(s, n), i = 0, c;
    while (i < n && left > max) {
        i += unit(s + i, n - i, &c);
        left -= c;
    }
    return i;
}

/* The length of s[0..n) without a character cut short at its end: the collector's head
 * ends where its cap fell, perhaps inside a character, whose first bytes would otherwise
 * be escaped as if the command had written broken UTF-8. */
static size_t trim_cut_end(const unsigned char *s, size_t n)
{
    for (size_t k = 1; k <= 3 && k <= n; k++) {
        unsigned char c = s[n - k];
        if (c < 0x80)
            break;
        if (c >= 0xc0) {
            size_t want = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
            return want > k ? n - k : n;
        }
    }
    return n;
}

void mcp_text_cap(strbuf *out, const void *head_v, size_t hlen, const void *tail_v, size_t tlen,
                  unsigned long long total, size_t cap, bool *truncated)
{
    const unsigned char *head = head_v, *tail = tail_v;
    if (cap < MCP_TEXT_CAP_MIN)
        cap = MCP_TEXT_CAP_MIN;
    if (!tail && count_chars(head, hlen) <= cap) {
        mcp_text_escape(out, head, hlen);
        *truncated = false;
        return;
    }
    size_t room = cap - MCP_TEXT_MARK_ROOM, hc = room / 2, tc = room - hc;
    bool collected_tail = tail != NULL;
    if (collected_tail) {
        hlen = trim_cut_end(head, hlen);
        /* and the tail's start, where the collector's window began inside a character */
        for (int k = 0; k < 3 && tlen && (tail[0] & 0xc0) == 0x80; k++)
            tail++, tlen--;
    } else {
        tail = head, tlen = hlen;
    }
    size_t hraw = head_bytes(head, hlen, hc);
    if (!collected_tail)     /* the tail is what follows the head kept */
        tail += hraw, tlen -= hraw;
    size_t ts = tail_start(tail, tlen, tc);
    unsigned long long kept = (unsigned long long)hraw + (tlen - ts);
    mcp_text_escape(out, head, hraw);
    strbuf_addf(out, "\n[... %llu bytes omitted ...]\n", total > kept ? total - kept : 0);
    mcp_text_escape(out, tail + ts, tlen - ts);
    *truncated = true;
}
