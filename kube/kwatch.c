/*
 * The watch stream's framer and event parser (kwatch.h): kwatch_feed() cuts the API server's
 * bytes into JSON objects, kwatch_parse_event() reads one with cJSON; no libcurl, so
 * tests/fuzz/fuzz-kwatch.c drives it. May call common/ (and cJSON); kube/ may also include
 * session/backend.h, session/config.h and sync/resume.h (tests/layers.sh). Untrusted: every
 * byte here; kwatch_feed() bounds an event's size and depth, kwatch_parse_event() each field.
 */
#include "kube/kwatch.h"

#include <string.h>

void kwatch_framer_init(kwatch_framer *f)
{
    memset(f, 0, sizeof(*f));
    strbuf_init(&f->obj, 0);
    f->max = KWATCH_MAX_EVENT;
}

void kwatch_framer_release(kwatch_framer *f)
{
    strbuf_release(&f->obj);
    f->depth = 0;
    f->in_str = f->esc = false;
}

bool kwatch_framer_partial(const kwatch_framer *f)
{
    return f->obj.len > 0;
}

static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* The framer, a small state machine over the bytes as they come (an event may be cut
 * anywhere by the transport): depth counts the open braces and brackets, in_str and esc
 * follow a JSON string so that a brace inside one does not count. An event is handed to
 * fn when its outer '}' closes. Its size (max) and nesting (KWATCH_MAX_DEPTH) are bounded
 * here, before cJSON sees it: a server (or whatever answers on its address) could
 * otherwise send an endless object to hold our memory, or one nested deep enough to
 * exhaust cJSON's recursion. */
int kwatch_feed(kwatch_framer *f, const char *data, size_t n, kwatch_object_fn *fn, void *ctx,
                sbx_err *err)
{
    size_t i = 0;
    while (i < n) {
        if (f->depth == 0) {
            /* Between objects: whitespace (the API server's '\n'), then a '{'. */
            char c = data[i];
            if (is_ws(c)) {
                i++;
                continue;
            }
            if (c != '{')
                return sbx_errf(err, "the watch stream is not JSON events (byte 0x%02x "
                                "between events)", (unsigned char)c);
        }
        /* Scan to the end of this object or of the data, then copy the span at once. */
        size_t start = i;
        bool complete = false;
        for (; i < n; i++) {
            char c = data[i];
            if (f->in_str) {
                if (f->esc)
                    f->esc = false;
                else if (c == '\\')
                    f->esc = true;
                else if (c == '"')
                    f->in_str = false;
                continue;
            }
            if (c == '"') {
                f->in_str = true;
            } else if (c == '{' || c == '[') {
                if (++f->depth > KWATCH_MAX_DEPTH)
                    return sbx_errf(err, "a watch event nests deeper than %d levels",
                                    KWATCH_MAX_DEPTH);
            } else if (c == '}' || c == ']') {
                if (--f->depth == 0) {
                    i++;
                    complete = true;
                    break;
                }
            }
        }
        if (f->obj.len + (i - start) > f->max)
            return sbx_errf(err, "a watch event is larger than %zu bytes", f->max);
        strbuf_add(&f->obj, data + start, i - start);
        if (complete) {
            int r = fn(ctx, f->obj.buf, f->obj.len, err);
            strbuf_reset(&f->obj);
            if (r)
                return r;
        }
    }
    return 0;
}

static const char *json_str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* One event: its type must be one of the watch API's, its object an object; an ERROR's
 * code a plausible HTTP status (it decides a retry), the others' resourceVersion kept
 * for the next watch to resume from. Strings point into ev->root (freed with it), and are
 * shown only through sbx_errf, which escapes what the server put in them. */
int kwatch_parse_event(const char *json, size_t len, kwatch_event *ev, sbx_err *err)
{
    static const char *const types[] = { "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR" };
    memset(ev, 0, sizeof(*ev));
    ev->root = cJSON_ParseWithLength(json, len);
    if (!cJSON_IsObject(ev->root)) {
        kwatch_event_free(ev);
        return sbx_errf(err, "a watch event is not a JSON object");
    }
    const char *type = json_str(ev->root, "type");
    for (size_t i = 0; type && i < ARRAY_SIZE(types); i++)
        if (!strcmp(type, types[i]))
            ev->type = types[i];
    if (!ev->type) {
        kwatch_event_free(ev);
        return sbx_errf(err, "a watch event has no known type");
    }
    ev->object = cJSON_GetObjectItemCaseSensitive(ev->root, "object");
    if (!cJSON_IsObject(ev->object)) {
        sbx_errf(err, "a watch event of type %s has no object", ev->type);
        kwatch_event_free(ev);
        return -1;
    }
    if (ev->type == types[4]) {
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(ev->object, "code");
        if (cJSON_IsNumber(code) && code->valuedouble >= 0 && code->valuedouble < 1000)
            ev->code = (int)code->valuedouble;
        ev->reason = json_str(ev->object, "reason");
        ev->message = json_str(ev->object, "message");
    } else {
        const cJSON *md = cJSON_GetObjectItemCaseSensitive(ev->object, "metadata");
        ev->rv = json_str(md, "resourceVersion");
        if (ev->rv && !*ev->rv)
            ev->rv = NULL;
    }
    return 0;
}

void kwatch_event_free(kwatch_event *ev)
{
    cJSON_Delete(ev->root);
    memset(ev, 0, sizeof(*ev));
}
