/* Credentials in URLs; see urlcred.h. */
#include "common/urlcred.h"

#include <string.h>
#include <strings.h>

static bool scheme_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '+' || c == '-' || c == '.';
}

/* Where an authority ends: a blank or a control byte ends the URL itself in any text
 * (reflog messages, argv words joined by spaces). */
static bool authority_end(unsigned char c)
{
    return c == '/' || c == '?' || c == '#' || c <= ' ' || c == 0x7f;
}

/* Schemes on which git sends a lone user name as a credential (a token goes there). By
 * the end of the scheme's run of characters, so that "xhttps://TOKEN@" or
 * "pull-https://TOKEN@" (text run into the URL) is still treated as https. */
static bool user_is_secret(const char *s, size_t n)
{
    static const char *const schemes[] = { "http", "https", "ftp", "ftps" };
    for (size_t k = 0; k < sizeof(schemes) / sizeof(schemes[0]); k++) {
        size_t m = strlen(schemes[k]);
        if (n >= m && !strncasecmp(s + n - m, schemes[k], m))
            return true;
    }
    return false;
}

bool urlcred_find(const char *text, size_t len, size_t from, size_t *start, size_t *end)
{
    for (size_t i = from; i + 3 <= len; i++) {
        size_t s, a, e, at = 0;
        bool have_at = false;
        const char *colon;

        if (text[i] != ':' || text[i + 1] != '/' || text[i + 2] != '/')
            continue;
        /* The scheme: letters, digits, + - . back to its start, which must be a letter. */
        s = i;
        while (s > 0 && scheme_char((unsigned char)text[s - 1]))
            s--;
        while (s < i && !((text[s] >= 'a' && text[s] <= 'z') || (text[s] >= 'A' && text[s] <= 'Z')))
            s++;
        if (s == i)
            continue;
        a = i + 3;
        for (e = a; e < len && !authority_end((unsigned char)text[e]); e++) {
            if (text[e] == '@') {
                at = e;
                have_at = true;
            }
        }
        if (!have_at)
            continue;
        if (user_is_secret(text + s, i - s)) {
            *start = a;
            *end = at + 1;
            return true;
        }
        /* Another scheme: the password only; with no user name, the whole userinfo. */
        colon = memchr(text + a, ':', at - a);
        if (!colon)
            continue;
        *start = colon == text + a ? a : (size_t)(colon - text);
        *end = colon == text + a ? at + 1 : at;
        return true;
    }
    return false;
}

bool urlcred_has(const char *text, size_t len)
{
    size_t s, e;
    return urlcred_find(text, len, 0, &s, &e);
}

size_t urlcred_strip(const char *text, size_t len, strbuf *out)
{
    size_t pos = 0, s, e, n = 0;
    while (urlcred_find(text, len, pos, &s, &e)) {
        strbuf_add(out, text + pos, s - pos);
        pos = e;
        n++;
    }
    strbuf_add(out, text + pos, len - pos);
    return n;
}
