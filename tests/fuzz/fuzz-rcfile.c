/*
 * libFuzzer driver for the startup-file filter (sync/rcfile.c): any text, however
 * malformed (open quotes, here-documents without an end, NUL bytes), is filtered without a
 * crash, leak or undefined behaviour; the filtered text has exactly the input's lines (the
 * filter keeps every line, so line numbers in bash's messages stay right) and grows only by
 * its notes; and every sourced path it finds is clean, home-relative, allowed and listed
 * once.
 *
 *   make fuzz-rcfile FUZZ_SECONDS=300
 */
#include "sync/rcfile.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NOTE_LEN 52   /* " # sbxsh: value removed (a secret stays on the host)" */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *t = (const char *)data;
    strbuf out = STRBUF_INIT;
    strvec rel = STRVEC_INIT;
    size_t in_lines = 0, out_lines = 0, removed;

    removed = rc_filter(t, size, &out);
    for (size_t i = 0; i < size; i++)
        in_lines += t[i] == '\n';
    for (size_t i = 0; i < out.len; i++)
        out_lines += out.buf[i] == '\n';
    if (in_lines != out_lines)
        abort();
    /* a removed multi-line value becomes two quotes around its newlines */
    if (out.len > size + removed * (NOTE_LEN + 2))
        abort();
    rc_sourced(t, size, &rel);
    for (size_t i = 0; i < rel.n; i++) {
        if (!rc_path_allowed(rel.v[i], strlen(rel.v[i])) || rel.v[i][0] == '/')
            abort();
        for (size_t k = 0; k < i; k++)
            if (!strcmp(rel.v[i], rel.v[k]))
                abort();
    }
    strvec_clear(&rel);
    strbuf_release(&out);
    return 0;
}
