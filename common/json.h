/*
 * A small JSON writer over a strbuf, for the documents sbxsh prints (sbx status, sbx ls,
 * --print-route): commas, colons and nesting kept by the writer, strings escaped by
 * strbuf_add_json_escaped. Why not cJSON here: these documents carry paths, session names
 * and command text, which are bytes, not UTF-8; cJSON would print invalid UTF-8 as it is
 * (invalid JSON), while strbuf_add_json_escaped writes each such byte as \u00XX. cJSON stays
 * where JSON is parsed and where the kube backend builds request bodies of UTF-8 strings.
 *
 *   sbx_json j;
 *   sbx_json_init(&j, &out);
 *   sbx_json_begin_obj(&j, NULL);
 *   sbx_json_str(&j, "session", name);
 *   sbx_json_begin_arr(&j, "code_dirs"); ... sbx_json_str(&j, NULL, dir); ... sbx_json_end(&j);
 *   sbx_json_end(&j);
 *
 * key is the member's name inside an object and NULL inside an array (or at the top).
 * Nesting deeper than SBX_JSON_MAX_DEPTH is a programming error (abort).
 */
#ifndef SBX_COMMON_JSON_H
#define SBX_COMMON_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"

#define SBX_JSON_MAX_DEPTH 63

typedef struct sbx_json {
    strbuf *out;        /* appended to from where it stands */
    unsigned depth;     /* objects and arrays open */
    uint64_t arrays;    /* bit d: the container at depth d is an array (its values have no key) */
    uint64_t members;   /* bit d: the container at depth d has a value (the next wants a ',') */
} sbx_json;

void sbx_json_init(sbx_json *j, strbuf *out);
void sbx_json_begin_obj(sbx_json *j, const char *key);
void sbx_json_begin_arr(sbx_json *j, const char *key);
/* Closes the innermost object or array. */
void sbx_json_end(sbx_json *j);
/* A string (NULL writes null). */
void sbx_json_str(sbx_json *j, const char *key, const char *s);
void sbx_json_strn(sbx_json *j, const char *key, const char *s, size_t n);
void sbx_json_int(sbx_json *j, const char *key, long long v);
void sbx_json_uint(sbx_json *j, const char *key, unsigned long long v);
void sbx_json_bool(sbx_json *j, const char *key, bool v);
void sbx_json_null(sbx_json *j, const char *key);
/* Writes the separator and key and returns the strbuf, for the caller to append exactly one
 * JSON value made elsewhere (a backend's status object). */
strbuf *sbx_json_value(sbx_json *j, const char *key);

#endif
