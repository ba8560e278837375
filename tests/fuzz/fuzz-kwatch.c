/*
 * libFuzzer driver for the watch stream's parser (kube/kwatch.c): the bytes of a watch
 * body come from the API server (or whatever answers in its place). Whatever they are, the
 * framer cuts the same objects out of them however the bytes are split across reads, never
 * holds more than its limit, and every event the parser accepts has a known type and an
 * object.
 *
 *   make fuzz-kwatch FUZZ_SECONDS=300
 */
#include "kube/kwatch.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct sink {
    strbuf objs;    /* every object, each followed by a NUL */
    unsigned n;
} sink;

static int on_object(void *ctx, const char *json, size_t len, sbx_err *err)
{
    sink *s = ctx;
    kwatch_event ev;
    if (len == 0 || json[0] != '{' || (json[len - 1] != '}' && json[len - 1] != ']'))
        abort();
    strbuf_add(&s->objs, json, len);
    strbuf_addch(&s->objs, '\0');
    s->n++;
    if (kwatch_parse_event(json, len, &ev, err) == 0) {
        static const char *const types[] = { "ADDED", "MODIFIED", "DELETED", "BOOKMARK",
                                             "ERROR" };
        bool known = false;
        for (size_t i = 0; i < 5; i++)
            known |= !strcmp(ev.type, types[i]);
        if (!known || !cJSON_IsObject(ev.object) || (ev.rv && !*ev.rv) ||
            ev.code < 0 || ev.code >= 1000)
            abort();
        kwatch_event_free(&ev);
    }
    return 0;
}

/* Feeds the bytes in pieces; returns the framer's result. */
static int run(const uint8_t *data, size_t size, size_t piece, size_t max, sink *s, bool *partial)
{
    kwatch_framer f;
    sbx_err err;
    int r = 0;
    kwatch_framer_init(&f);
    f.max = max;
    strbuf_init(&s->objs, 0);
    s->n = 0;
    for (size_t off = 0; off < size && r == 0; off += piece) {
        size_t n = size - off < piece ? size - off : piece;
        r = kwatch_feed(&f, (const char *)data + off, n, on_object, s, &err);
        if (f.obj.len > max)
            abort();
    }
    *partial = kwatch_framer_partial(&f);
    kwatch_framer_release(&f);
    return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    /* The first byte picks the read size, the second the size limit. */
    size_t piece = (size_t)data[0] % 17 + 1;
    size_t max = data[1] & 1 ? KWATCH_MAX_EVENT : (size_t)data[1] * 8 + 16;
    data += 2;
    size -= 2;
    sink whole, split;
    bool pw, ps;
    int rw = run(data, size, size ? size : 1, max, &whole, &pw);
    int rs = run(data, size, piece, max, &split, &ps);
    /* The same objects, the same verdict, however the stream was cut. */
    if (rw != rs || whole.n != split.n || whole.objs.len != split.objs.len ||
        memcmp(whole.objs.buf, split.objs.buf, whole.objs.len) || (rw == 0 && pw != ps))
        abort();
    strbuf_release(&whole.objs);
    strbuf_release(&split.objs);
    return 0;
}
