/* The JSON writer (json.h). Its state machine is two bits per depth: whether the container
 * is an array (values without keys) and whether it has a value yet (so the next one is
 * preceded by a comma). */
#include "common/json.h"

#include <stdlib.h>
#include <string.h>

void sbx_json_init(sbx_json *j, strbuf *out)
{
    memset(j, 0, sizeof(*j));
    j->out = out;
}

/* Before any value: the comma after a previous sibling, and the key in an object. */
static void lead(sbx_json *j, const char *key)
{
    uint64_t bit = (uint64_t)1 << j->depth;

    if (j->depth) {
        if (j->members & bit)
            strbuf_addch(j->out, ',');
        j->members |= bit;
    }
    if (key && j->depth && !(j->arrays & bit)) {
        strbuf_addch(j->out, '"');
        strbuf_add_json_escaped(j->out, key, strlen(key));
        strbuf_addstr(j->out, "\":");
    }
}

static void begin(sbx_json *j, const char *key, bool array)
{
    lead(j, key);
    if (j->depth >= SBX_JSON_MAX_DEPTH)
        abort();
    j->depth++;
    uint64_t bit = (uint64_t)1 << j->depth;
    j->members &= ~bit;
    if (array)
        j->arrays |= bit;
    else
        j->arrays &= ~bit;
    strbuf_addch(j->out, array ? '[' : '{');
}

void sbx_json_begin_obj(sbx_json *j, const char *key)
{
    begin(j, key, false);
}

void sbx_json_begin_arr(sbx_json *j, const char *key)
{
    begin(j, key, true);
}

void sbx_json_end(sbx_json *j)
{
    if (!j->depth)
        abort();
    strbuf_addch(j->out, j->arrays & ((uint64_t)1 << j->depth) ? ']' : '}');
    j->depth--;
}

void sbx_json_strn(sbx_json *j, const char *key, const char *s, size_t n)
{
    lead(j, key);
    strbuf_addch(j->out, '"');
    strbuf_add_json_escaped(j->out, s, n);
    strbuf_addch(j->out, '"');
}

void sbx_json_str(sbx_json *j, const char *key, const char *s)
{
    if (!s)
        sbx_json_null(j, key);
    else
        sbx_json_strn(j, key, s, strlen(s));
}

void sbx_json_int(sbx_json *j, const char *key, long long v)
{
    lead(j, key);
    strbuf_addf(j->out, "%lld", v);
}

void sbx_json_uint(sbx_json *j, const char *key, unsigned long long v)
{
    lead(j, key);
    strbuf_addf(j->out, "%llu", v);
}

void sbx_json_bool(sbx_json *j, const char *key, bool v)
{
    lead(j, key);
    strbuf_addstr(j->out, v ? "true" : "false");
}

void sbx_json_null(sbx_json *j, const char *key)
{
    lead(j, key);
    strbuf_addstr(j->out, "null");
}

strbuf *sbx_json_value(sbx_json *j, const char *key)
{
    lead(j, key);
    return j->out;
}
