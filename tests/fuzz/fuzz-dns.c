/*
 * libFuzzer driver for the sandbox's DNS stub (sync/dnsstub.c): every query, however
 * malformed, gets no answer or one that fits, carries the query's id with QR set, and a name
 * of at most 253 bytes of [a-z0-9._-?] for the notice; an answer record only for the
 * sandbox's own names ("sbx" here, and localhost).
 *
 *   make fuzz-dns FUZZ_SECONDS=300
 */
#include "sync/dnsstub.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t out[DNS_MAX_ANSWER];
    char name[DNS_MAX_NAME + 1];
    char line[700];
    size_t n = dns_answer(data, size, "sbx", out, sizeof(out), name, sizeof(name));

    if (n > sizeof(out) || (n && n < 12) || strlen(name) > DNS_MAX_NAME)
        abort();
    if (n && (memcmp(out, data, 2) || !(out[2] & 0x80)))
        abort();
    if (n > 7 && (out[6] || out[7]) &&
        (dns_answer_refused(out, n) || (strcmp(name, "sbx") && strcmp(name, "localhost"))))
        abort();
    for (const char *p = name; *p; p++)
        if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789._-?", *p))
            abort();
    dnsstub_notice(size & 1 ? "allowlist" : "none", name, line, sizeof(line));
    if (!strchr(line, '\n'))
        abort();
    return 0;
}
