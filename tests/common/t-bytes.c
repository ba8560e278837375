/* Unit tests of common/bytes.c (little-endian codec, bounded reader) and common/base64.c. */
#include "common/base64.h"
#include "common/bytes.h"
#include "tests/lib/tap.h"

#include <string.h>

static void b64(const char *raw, const char *want)
{
    strbuf e = STRBUF_INIT, d = STRBUF_INIT;
    sbx_base64_encode(raw, strlen(raw), &e);
    is_str(e.buf, want, "base64 of \"%s\"", raw);
    ok(sbx_base64_decode(want, strlen(want), &d) == 0 && !strcmp(d.buf, raw),
       "and back: \"%s\"", want);
    strbuf_release(&e);
    strbuf_release(&d);
}

static bool bad64(const char *s)
{
    strbuf d = STRBUF_INIT;
    int r = sbx_base64_decode(s, strlen(s), &d);
    strbuf_release(&d);
    return r < 0;
}

int main(void)
{
    strbuf sb = STRBUF_INIT;
    sbx_rd r;
    const char *s;
    size_t len;

    sbx_add_le16(&sb, 0x0201);
    sbx_add_le32(&sb, 0x06050403);
    sbx_add_le64(&sb, 0x0e0d0c0b0a090807ull);
    sbx_add_lestr(&sb, "hi", 2);
    ok(sb.len == 20 && !memcmp(sb.buf, "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e"
                                       "\x02\x00\x00\x00hi", 20),
       "the writer puts the low byte first, a string after its u32 length");
    sbx_rd_init(&r, sb.buf, sb.len);
    ok(sbx_rd_u16(&r) == 0x0201 && sbx_rd_u32(&r) == 0x06050403 &&
           sbx_rd_u64(&r) == 0x0e0d0c0b0a090807ull,
       "the reader gives back each integer");
    ok(sbx_rd_str(&r, 2, &s, &len) && len == 2 && !memcmp(s, "hi", 2) && !r.bad && r.left == 0,
       "and the string, at its limit");
    ok(sbx_rd_u8(&r) == 0 && r.bad, "a read past the end gives 0 and the reader turns bad");
    sbx_rd_init(&r, sb.buf + 14, sb.len - 14);
    ok(!sbx_rd_str(&r, 1, &s, &len) && r.bad && len == 0 && !strcmp(s, ""),
       "a string over the caller's limit is refused");
    ok(sbx_rd_u8(&r) == 0 && r.bad, "and the reader stays bad");
    sbx_rd_init(&r, "\xff\xff\xff\xff" "ab", 6);
    ok(!sbx_rd_str(&r, SIZE_MAX, &s, &len) && r.bad, "a length longer than what is left is refused");
    unsigned char b[8];
    sbx_put_le64(b, 0x8877665544332211ull);
    ok(sbx_le64(b) == 0x8877665544332211ull && sbx_le32(b + 4) == 0x88776655 &&
           sbx_le16(b) == 0x2211, "sbx_put_le64 and sbx_le16/32/64 agree");
    strbuf_release(&sb);

    /* RFC 4648's vectors */
    b64("", "");
    b64("f", "Zg==");
    b64("fo", "Zm8=");
    b64("foo", "Zm9v");
    b64("foob", "Zm9vYg==");
    b64("fooba", "Zm9vYmE=");
    b64("foobar", "Zm9vYmFy");
    strbuf d = STRBUF_INIT;
    ok(sbx_base64_decode("Zm9v\r\nYmFy\n", 11, &d) == 0 && !strcmp(d.buf, "foobar"),
       "line breaks are skipped");
    strbuf_release(&d);
    ok(bad64("Zm9"), "a cut quad is refused");
    ok(bad64("Z==="), "padding in a quad's second place is refused");
    ok(bad64("Zg==Zg=="), "data after padding is refused");
    ok(bad64("Zm9v!"), "a byte outside the alphabet is refused");
    ok(bad64("Zm 9v"), "a space is refused");
    return done_testing();
}
