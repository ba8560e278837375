/*
 * libFuzzer driver for the undo journal's parser (sync/journal.c): any bytes, however cut or
 * malformed, parse without a crash, leak or undefined behaviour; every entry kept has checked
 * paths (relative, no "." or ".."), absolute roots, ids that grow; and the log's text for what
 * was parsed parses back to the same text (nothing is lost or invented by a round trip).
 *
 *   make fuzz-journal FUZZ_SECONDS=300
 */
#include "sync/journal.h"
#include "sync/safefs.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    jnl_log a, b;
    strbuf ta = STRBUF_INIT, tb = STRBUF_INIT;
    sbx_err err;

    jnl_parse((const char *)data, size, &a);
    for (size_t i = 0; i < a.n; i++) {
        if (i && a.v[i].id <= a.v[i - 1].id)
            abort();
        for (size_t k = 0; k < a.v[i].n; k++) {
            const jnl_change *c = &a.v[i].changes[k];
            if (c->root[0] != '/' || sf_check_relpath(c->path, strlen(c->path), &err) < 0)
                abort();
            if (c->old.type == 'l' && (!c->old.target || !c->old.target[0]))
                abort();
        }
    }
    jnl_log_format(&a, &ta);
    jnl_parse(ta.buf, ta.len, &b);
    jnl_log_format(&b, &tb);
    if (a.n != b.n || ta.len != tb.len || memcmp(ta.buf, tb.buf, ta.len))
        abort();
    jnl_log_free(&a);
    jnl_log_free(&b);
    strbuf_release(&ta);
    strbuf_release(&tb);
    return 0;
}
