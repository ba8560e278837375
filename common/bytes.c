/* Little-endian writer and bounded reader (bytes.h). */
#include "common/bytes.h"

void sbx_add_le16(strbuf *sb, uint16_t v)
{
    uint8_t b[2];
    sbx_put_le16(b, v);
    strbuf_add(sb, b, sizeof(b));
}

void sbx_add_le32(strbuf *sb, uint32_t v)
{
    uint8_t b[4];
    sbx_put_le32(b, v);
    strbuf_add(sb, b, sizeof(b));
}

void sbx_add_le64(strbuf *sb, uint64_t v)
{
    uint8_t b[8];
    sbx_put_le64(b, v);
    strbuf_add(sb, b, sizeof(b));
}

void sbx_add_lestr(strbuf *sb, const void *s, size_t len)
{
    sbx_add_le32(sb, (uint32_t)len);
    strbuf_add(sb, s, len);
}

void sbx_rd_init(sbx_rd *r, const void *p, size_t len)
{
    r->p = p;
    r->left = len;
    r->bad = false;
}

const uint8_t *sbx_rd_take(sbx_rd *r, size_t n)
{
    const uint8_t *p;

    /* the one bounds check: a length field the other side chose (n) is compared with what
     * is really there before anything is read, and a failure sticks, so that a decoder
     * cannot go on from a misaligned position */
    if (r->bad || r->left < n) {
        r->bad = true;
        r->left = 0;
        return NULL;
    }
    p = r->p;
    r->p += n;
    r->left -= n;
    return p;
}

uint8_t sbx_rd_u8(sbx_rd *r)
{
    const uint8_t *p = sbx_rd_take(r, 1);
    return p ? p[0] : 0;
}

uint16_t sbx_rd_u16(sbx_rd *r)
{
    const uint8_t *p = sbx_rd_take(r, 2);
    return p ? sbx_le16(p) : 0;
}

uint32_t sbx_rd_u32(sbx_rd *r)
{
    const uint8_t *p = sbx_rd_take(r, 4);
    return p ? sbx_le32(p) : 0;
}

uint64_t sbx_rd_u64(sbx_rd *r)
{
    const uint8_t *p = sbx_rd_take(r, 8);
    return p ? sbx_le64(p) : 0;
}

bool sbx_rd_str(sbx_rd *r, size_t max, const char **s, size_t *len)
{
    uint32_t n = sbx_rd_u32(r);
    const uint8_t *p;

    *s = "";
    *len = 0;
    if (r->bad)
        return false;
    if (n > max) {              /* over the caller's limit: as bad as a short read */
        r->bad = true;
        r->left = 0;
        return false;
    }
    if (!(p = sbx_rd_take(r, n)))
        return false;
    *s = (const char *)p;
    *len = n;
    return true;
}
