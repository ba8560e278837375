/*
 * libFuzzer driver for the sandbox's DNS stub (sync/dnsstub.c): every query, however
 * malformed, gets no answer or one that fits, carries the query's id with QR set, and a name
 * of at most 253 bytes of [a-z0-9._-?] for the notice.
 *
 *   make fuzz-dns FUZZ_SECONDS=300
 */
#include "sync/dnsstub.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t out[12 + DNS_MAX_NAME + 6];
    char name[DNS_MAX_NAME + 1];
    char line[700];
    size_t n = dns_answer(data, size, out, sizeof(out), name, sizeof(name));

    if (n > sizeof(out) || (n && n < 12) || strlen(name) > DNS_MAX_NAME)
        abort();
    if (n && (memcmp(out, data, 2) || !(out[2] & 0x80)))
        abort();
    for (const char *p = name; *p; p++)
        if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789._-?", *p))
            abort();
    dnsstub_notice(size & 1 ? "allowlist" : "none", name, line, sizeof(line));
    if (!strchr(line, '\n'))
        abort();
    return 0;
}
