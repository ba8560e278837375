/*
 * The client <-> holder frames on the session socket (proto.h, private to session/):
 * proto_begin() to proto_end() encode, proto_parse() and proto_get_*() decode. Calls only
 * common/ (bytes, strbuf, util); session/ may call common/ and sync/. Untrusted: a frame's
 * bytes, which may carry the sandbox's output; proto_parse() refuses an empty frame or one over
 * SBX_PROTO_MAX_FRAME, the bounded reader a read past its end, a string over
 * SBX_PROTO_MAX_STRING, and proto_get_cstr() a NUL.
 */
#include "session/proto.h"

#include <string.h>

#include "common/util.h"

void proto_begin(strbuf *sb, int type)
{
    static const char hdr[5];
    strbuf_add(sb, hdr, sizeof(hdr));
    sb->buf[sb->len - 1] = (char)type;
}

void proto_strz(strbuf *sb, const char *s)
{
    proto_str(sb, s ? s : "", s ? strlen(s) : 0);
}

void proto_list(strbuf *sb, const char *const *v)
{
    uint32_t n = 0;
    for (const char *const *p = v; p && *p; p++)
        n++;
    proto_u32(sb, n);
    for (uint32_t i = 0; i < n; i++)
        proto_strz(sb, v[i]);
}

void proto_end(strbuf *sb, size_t start)
{
    sbx_put_le32(sb->buf + start, (uint32_t)(sb->len - start - 4));
}

int proto_get_u32(proto_reader *r, uint32_t *v)
{
    uint32_t x = sbx_rd_u32(r);
    if (r->bad)
        return -1;              /* *v as it was, as before */
    *v = x;
    return 0;
}

int proto_get_str(proto_reader *r, const char **s, size_t *len)
{
    return sbx_rd_str(r, SBX_PROTO_MAX_STRING, s, len) ? 0 : -1;
}

int proto_get_cstr(proto_reader *r, char **out)
{
    const char *s;
    size_t n;
    if (proto_get_str(r, &s, &n) < 0)
        return -1;
    if (memchr(s, '\0', n)) {
        r->bad = true;
        return -1;
    }
    *out = xstrndup(s, n);
    return 0;
}

long proto_parse(const char *buf, size_t len, int *type, proto_reader *r)
{
    uint32_t n;
    if (len < 4)
        return 0;
    n = sbx_le32(buf);
    if (n == 0 || n > SBX_PROTO_MAX_FRAME)
        return -1;
    if (len < 4 + (size_t)n)
        return 0;
    *type = (unsigned char)buf[4];
    sbx_rd_init(r, buf + 5, n - 1);
    return 4 + (long)n;
}
