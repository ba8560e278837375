/* The client <-> holder framing (session/proto.h). */
#include "tests/lib/tap.h"

#include <stdlib.h>

#include "session/proto.h"

int main(void)
{
    strbuf sb = STRBUF_INIT;
    const char *list[] = { "a", "", "c\001d", NULL };
    proto_reader r;
    int type;
    uint32_t v;
    const char *s;
    size_t len;
    char *cs;

    proto_begin(&sb, P_RUN);
    proto_u32(&sb, 0xdeadbeef);
    proto_strz(&sb, "hello");
    proto_list(&sb, list);
    proto_end(&sb, 0);
    is_int(proto_parse(sb.buf, sb.len - 1, &type, &r), 0, "a partial frame needs more");
    is_int(proto_parse(sb.buf, sb.len, &type, &r), (long)sb.len, "a whole frame parses");
    is_int(type, P_RUN, "type");
    ok(proto_get_u32(&r, &v) == 0 && v == 0xdeadbeef, "u32 round-trips");
    ok(proto_get_str(&r, &s, &len) == 0 && len == 5 && !memcmp(s, "hello", 5), "string");
    ok(proto_get_u32(&r, &v) == 0 && v == 3, "list count");
    ok(proto_get_cstr(&r, &cs) == 0 && !strcmp(cs, "a"), "list item 1");
    free(cs);
    ok(proto_get_cstr(&r, &cs) == 0 && !strcmp(cs, ""), "empty item");
    free(cs);
    ok(proto_get_cstr(&r, &cs) == 0 && !strcmp(cs, "c\001d"), "control bytes kept");
    free(cs);
    is_int(r.left, 0, "nothing left");
    ok(proto_get_u32(&r, &v) < 0, "reading past the end fails");
    ok(proto_get_u32(&r, &v) < 0, "and stays failed");

    /* Hostile lengths. */
    strbuf_reset(&sb);
    proto_begin(&sb, P_OUTPUT);
    proto_u32(&sb, 0xffffffff);   /* a string length far beyond the frame */
    proto_end(&sb, 0);
    proto_parse(sb.buf, sb.len, &type, &r);
    ok(proto_get_str(&r, &s, &len) < 0, "string longer than its frame refused");

    strbuf_reset(&sb);
    proto_begin(&sb, P_OUTPUT);
    proto_str(&sb, "a\0b", 3);
    proto_end(&sb, 0);
    proto_parse(sb.buf, sb.len, &type, &r);
    ok(proto_get_cstr(&r, &cs) < 0, "NUL inside a C string refused");

    unsigned char huge[5] = { 0xff, 0xff, 0xff, 0x7f, 1 };
    is_int(proto_parse((char *)huge, 5, &type, &r), -1, "oversized frame refused");
    unsigned char empty[4] = { 0, 0, 0, 0 };
    is_int(proto_parse((char *)empty, 4, &type, &r), -1, "empty frame refused");
    strbuf_release(&sb);
    return done_testing();
}
