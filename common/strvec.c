/*
 * strvec (strvec.h): a NULL-terminated, growable array of malloc'd strings (an argv or an
 * environment) after git's strvec; strvec_push() and its kin, strvec_clear(). May call libc and
 * common/ only (common/README.md).
 */
#include "common/strvec.h"
#include "common/strbuf.h"
#include "common/util.h"

#include <stdarg.h>
#include <string.h>

char *strvec_empty[1];

void strvec_init(strvec *sv)
{
    sv->v = strvec_empty;
    sv->n = 0;
    sv->alloc = 0;
}

static void strvec_push_owned(strvec *sv, char *s)
{
    if (!sv->alloc) {
        sv->v = NULL;
        sv->alloc = 0;
    }
    XGROW(sv->v, sv->alloc, sv->n + 2);
    sv->v[sv->n++] = s;
    sv->v[sv->n] = NULL;
}

void strvec_push(strvec *sv, const char *s)
{
    strvec_push_owned(sv, xstrdup(s));
}

void strvec_pushn(strvec *sv, const char *s, size_t len)
{
    strvec_push_owned(sv, xstrndup(s, len));
}

void strvec_pushf(strvec *sv, const char *fmt, ...)
{
    strbuf sb = STRBUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    strbuf_vaddf(&sb, fmt, ap);
    va_end(ap);
    strvec_push_owned(sv, strbuf_detach(&sb, NULL));
}

void strvec_pushv(strvec *sv, char *const *v)
{
    for (; v && *v; v++)
        strvec_push(sv, *v);
}

void strvec_clear(strvec *sv)
{
    if (sv->alloc) {
        for (size_t i = 0; i < sv->n; i++)
            free(sv->v[i]);
        free(sv->v);
    }
    strvec_init(sv);
}
