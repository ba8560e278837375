/*
 * The watch stream's parser: bytes from the API server (untrusted) cut into events.
 *
 * A watch body is a stream of JSON objects {"type":..,"object":{..}}; the real API server
 * ends each with '\n', but Go clients read concatenated JSON (json.Decoder), so the framer
 * splits on object boundaries (brace depth, string-aware) and accepts either. Bytes arrive
 * in whatever pieces libcurl's write callback gets; the framer keeps the partial object.
 * Kept apart from client.c (no libcurl) so that tests/fuzz/fuzz-kwatch.c can drive it.
 */
#ifndef SBX_KUBE_KWATCH_H
#define SBX_KUBE_KWATCH_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/strbuf.h"
#include "common/util.h"

/* An event larger than this ends the watch with an error (etcd's own limit on an object is
 * 1.5 MiB; a List never comes down a watch). */
#define KWATCH_MAX_EVENT (8u << 20)
/* Nesting deeper than this is refused before cJSON sees it. */
#define KWATCH_MAX_DEPTH 512

typedef struct kwatch_framer {
    strbuf obj;     /* the bytes of the object under way */
    unsigned depth; /* of '{' and '[' outside strings */
    bool in_str, esc;
    size_t max;     /* KWATCH_MAX_EVENT unless a test sets less */
} kwatch_framer;

void kwatch_framer_init(kwatch_framer *f);
void kwatch_framer_release(kwatch_framer *f);
/* Whether bytes of an unfinished object are held (a stream cut mid-event). */
bool kwatch_framer_partial(const kwatch_framer *f);

/* Called for each complete object; returns 0 to go on, anything else to stop (returned). */
typedef int kwatch_object_fn(void *ctx, const char *json, size_t len, sbx_err *err);

/* Feeds n bytes. Returns 0, fn's non-zero value, or -1 with err filled when the stream is
 * not a sequence of JSON objects (bytes other than whitespace between objects, an object
 * over max, nesting over KWATCH_MAX_DEPTH). */
int kwatch_feed(kwatch_framer *f, const char *data, size_t n, kwatch_object_fn *fn, void *ctx,
                sbx_err *err);

typedef struct kwatch_event {
    cJSON *root;             /* owned: the whole event */
    const char *type;        /* "ADDED" "MODIFIED" "DELETED" "BOOKMARK" "ERROR" */
    const cJSON *object;     /* the object (a Status for ERROR) */
    const char *rv;          /* object.metadata.resourceVersion, or NULL */
    int code;                /* ERROR: the Status's code (0 when none) */
    const char *reason;      /* ERROR: the Status's reason, or NULL */
    const char *message;     /* ERROR: the Status's message, or NULL */
} kwatch_event;

/* Parses one object from the framer. -1 with err when it is not a watch event (no JSON,
 * no string "type" among the five, no object "object"). */
int kwatch_parse_event(const char *json, size_t len, kwatch_event *ev, sbx_err *err);
void kwatch_event_free(kwatch_event *ev);

#endif
