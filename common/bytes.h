/*
 * Little-endian integers and a bounded reader: the one codec under both binary protocols
 * (sync/wire.h between sbxsh and sbx-agent, session/proto.h between client and holder) and
 * the resumable stream's frames (sync/resume.h).
 *
 * The reader is where untrusted bytes are decoded (the agent's frames are the sandbox's), so
 * it never reads past its end: a read that would is refused, the reader turns bad, and every
 * later read gives zeros. A decoder reads all its fields and checks `bad` once.
 */
#ifndef SBX_COMMON_BYTES_H
#define SBX_COMMON_BYTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"

static inline uint16_t sbx_le16(const void *p)
{
    const uint8_t *b = p;
    return (uint16_t)(b[0] | b[1] << 8);
}

static inline uint32_t sbx_le32(const void *p)
{
    const uint8_t *b = p;
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static inline uint64_t sbx_le64(const void *p)
{
    const uint8_t *b = p;
    return (uint64_t)sbx_le32(b) | (uint64_t)sbx_le32(b + 4) << 32;
}

static inline void sbx_put_le16(void *p, uint16_t v)
{
    uint8_t *b = p;
    b[0] = (uint8_t)v;
    b[1] = (uint8_t)(v >> 8);
}

static inline void sbx_put_le32(void *p, uint32_t v)
{
    uint8_t *b = p;
    for (int i = 0; i < 4; i++)
        b[i] = (uint8_t)(v >> (8 * i));
}

static inline void sbx_put_le64(void *p, uint64_t v)
{
    uint8_t *b = p;
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
}

/* The writer: appends the integer's bytes to sb. */
void sbx_add_le16(strbuf *sb, uint16_t v);
void sbx_add_le32(strbuf *sb, uint32_t v);
void sbx_add_le64(strbuf *sb, uint64_t v);
/* A u32 length then the bytes. */
void sbx_add_lestr(strbuf *sb, const void *s, size_t len);

/* The bounded reader over len bytes at p (not copied: they must outlive it). */
typedef struct sbx_rd {
    const uint8_t *p;   /* the next byte */
    size_t left;        /* bytes after it */
    bool bad;           /* a read went past the end (or over its limit): all later reads give 0 */
} sbx_rd;

void sbx_rd_init(sbx_rd *r, const void *p, size_t len);
/* The next n bytes, or NULL (and the reader bad) when fewer are left. */
const uint8_t *sbx_rd_take(sbx_rd *r, size_t n);
uint8_t sbx_rd_u8(sbx_rd *r);
uint16_t sbx_rd_u16(sbx_rd *r);
uint32_t sbx_rd_u32(sbx_rd *r);
uint64_t sbx_rd_u64(sbx_rd *r);
/* A u32 length then that many bytes, at most max: *s points into the input (not
 * NUL-terminated). false (and bad, with *s "" and *len 0) when short or over max. */
bool sbx_rd_str(sbx_rd *r, size_t max, const char **s, size_t *len);

#endif
