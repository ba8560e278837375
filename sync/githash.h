/*
 * SHA-1 and SHA-256, as git uses them for object ids and for the checksum at the end of
 * `.git/index` (FIPS 180-4). The agent links libc alone, so they are here rather than from a
 * library; sync/gitindex.c is their user.
 */
#ifndef SBX_SYNC_GITHASH_H
#define SBX_SYNC_GITHASH_H

#include <stddef.h>
#include <stdint.h>

#define GH_SHA1_LEN 20
#define GH_SHA256_LEN 32

typedef struct gh_ctx {
    int algo;              /* GH_SHA1 or GH_SHA256 */
    uint32_t h[8];
    uint64_t len;          /* bytes so far */
    unsigned char buf[64];
    size_t nbuf;
} gh_ctx;

enum { GH_SHA1 = 1, GH_SHA256 = 2 };

void gh_init(gh_ctx *c, int algo);
void gh_update(gh_ctx *c, const void *data, size_t len);
/* Writes 20 (SHA-1) or 32 (SHA-256) bytes. */
void gh_final(gh_ctx *c, unsigned char *out);
/* The digest of one buffer. */
void gh_digest(int algo, const void *data, size_t len, unsigned char *out);
size_t gh_len(int algo);

#endif
