#include "session/proto.h"

#include <string.h>

#include "common/util.h"

static void put_le32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

static uint32_t get_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void proto_begin(strbuf *sb, int type)
{
    static const char hdr[5];
    strbuf_add(sb, hdr, sizeof(hdr));
    sb->buf[sb->len - 1] = (char)type;
}

void proto_u32(strbuf *sb, uint32_t v)
{
    unsigned char b[4];
    put_le32(b, v);
    strbuf_add(sb, b, 4);
}

void proto_str(strbuf *sb, const char *s, size_t len)
{
    proto_u32(sb, (uint32_t)len);
    strbuf_add(sb, s, len);
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
    put_le32((unsigned char *)sb->buf + start, (uint32_t)(sb->len - start - 4));
}

int proto_get_u32(proto_reader *r, uint32_t *v)
{
    if (r->failed || r->left < 4)
        return r->failed = -1;
    *v = get_le32(r->p);
    r->p += 4;
    r->left -= 4;
    return 0;
}

int proto_get_str(proto_reader *r, const char **s, size_t *len)
{
    uint32_t n;
    if (proto_get_u32(r, &n) < 0)
        return -1;
    if (n > SBX_PROTO_MAX_STRING || n > r->left)
        return r->failed = -1;
    *s = (const char *)r->p;
    *len = n;
    r->p += n;
    r->left -= n;
    return 0;
}

int proto_get_cstr(proto_reader *r, char **out)
{
    const char *s;
    size_t n;
    if (proto_get_str(r, &s, &n) < 0)
        return -1;
    if (memchr(s, '\0', n))
        return r->failed = -1;
    *out = xstrndup(s, n);
    return 0;
}

long proto_parse(const char *buf, size_t len, int *type, proto_reader *r)
{
    uint32_t n;
    if (len < 4)
        return 0;
    n = get_le32((const unsigned char *)buf);
    if (n == 0 || n > SBX_PROTO_MAX_FRAME)
        return -1;
    if (len < 4 + (size_t)n)
        return 0;
    *type = (unsigned char)buf[4];
    r->p = (const unsigned char *)buf + 5;
    r->left = n - 1;
    r->failed = 0;
    return 4 + (long)n;
}
