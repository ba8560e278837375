/* SHA-1 and SHA-256 (FIPS 180-4); see githash.h. */
#include "sync/githash.h"

#include <string.h>

static uint32_t rol(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }
static uint32_t ror(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void sha1_block(uint32_t *h, const unsigned char *p)
{
    uint32_t w[80], a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (int i = 0; i < 16; i++)
        w[i] = be32(p + 4 * i);
    for (int i = 16; i < 80; i++)
        w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    for (int i = 0; i < 80; i++) {
        uint32_t f, k, t;
        if (i < 20) {
            f = (b & c) | (~b & d);
            k = 0x5a827999;
        } else if (i < 40) {
            f = b ^ c ^ d;
            k = 0x6ed9eba1;
        } else if (i < 60) {
            f = (b & c) | (b & d) | (c & d);
            k = 0x8f1bbcdc;
        } else {
            f = b ^ c ^ d;
            k = 0xca62c1d6;
        }
        t = rol(a, 5) + f + e + k + w[i];
        e = d;
        d = c;
        c = rol(b, 30);
        b = a;
        a = t;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
}

static const uint32_t K256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2,
};

static void sha256_block(uint32_t *h, const unsigned char *p)
{
    uint32_t w[64], s[8];
    for (int i = 0; i < 16; i++)
        w[i] = be32(p + 4 * i);
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    memcpy(s, h, sizeof(s));
    for (int i = 0; i < 64; i++) {
        uint32_t S1 = ror(s[4], 6) ^ ror(s[4], 11) ^ ror(s[4], 25);
        uint32_t ch = (s[4] & s[5]) ^ (~s[4] & s[6]);
        uint32_t t1 = s[7] + S1 + ch + K256[i] + w[i];
        uint32_t S0 = ror(s[0], 2) ^ ror(s[0], 13) ^ ror(s[0], 22);
        uint32_t mj = (s[0] & s[1]) ^ (s[0] & s[2]) ^ (s[1] & s[2]);
        uint32_t t2 = S0 + mj;
        s[7] = s[6];
        s[6] = s[5];
        s[5] = s[4];
        s[4] = s[3] + t1;
        s[3] = s[2];
        s[2] = s[1];
        s[1] = s[0];
        s[0] = t1 + t2;
    }
    for (int i = 0; i < 8; i++)
        h[i] += s[i];
}

size_t gh_len(int algo)
{
    return algo == GH_SHA256 ? GH_SHA256_LEN : GH_SHA1_LEN;
}

void gh_init(gh_ctx *c, int algo)
{
    static const uint32_t h1[5] = { 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0 };
    static const uint32_t h256[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                      0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
    memset(c, 0, sizeof(*c));
    c->algo = algo == GH_SHA256 ? GH_SHA256 : GH_SHA1;
    if (c->algo == GH_SHA256)
        memcpy(c->h, h256, sizeof(h256));
    else
        memcpy(c->h, h1, sizeof(h1));
}

static void block(gh_ctx *c, const unsigned char *p)
{
    if (c->algo == GH_SHA256)
        sha256_block(c->h, p);
    else
        sha1_block(c->h, p);
}

void gh_update(gh_ctx *c, const void *data, size_t len)
{
    const unsigned char *p = data;
    c->len += len;
    if (c->nbuf) {
        size_t n = 64 - c->nbuf < len ? 64 - c->nbuf : len;
        memcpy(c->buf + c->nbuf, p, n);
        c->nbuf += n;
        p += n;
        len -= n;
        if (c->nbuf < 64)
            return;
        block(c, c->buf);
        c->nbuf = 0;
    }
    for (; len >= 64; p += 64, len -= 64)
        block(c, p);
    memcpy(c->buf, p, len);
    c->nbuf = len;
}

void gh_final(gh_ctx *c, unsigned char *out)
{
    uint64_t bits = c->len * 8;
    size_t words = c->algo == GH_SHA256 ? 8 : 5;
    c->buf[c->nbuf++] = 0x80;
    if (c->nbuf > 56) {
        memset(c->buf + c->nbuf, 0, 64 - c->nbuf);
        block(c, c->buf);
        c->nbuf = 0;
    }
    memset(c->buf + c->nbuf, 0, 56 - c->nbuf);
    for (int i = 0; i < 8; i++)
        c->buf[56 + i] = (unsigned char)(bits >> (56 - 8 * i));
    block(c, c->buf);
    for (size_t i = 0; i < words; i++) {
        out[4 * i] = (unsigned char)(c->h[i] >> 24);
        out[4 * i + 1] = (unsigned char)(c->h[i] >> 16);
        out[4 * i + 2] = (unsigned char)(c->h[i] >> 8);
        out[4 * i + 3] = (unsigned char)c->h[i];
    }
}

void gh_digest(int algo, const void *data, size_t len, unsigned char *out)
{
    gh_ctx c;
    gh_init(&c, algo);
    gh_update(&c, data, len);
    gh_final(&c, out);
}
