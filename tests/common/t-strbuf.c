/* Unit tests of common/strbuf.c. */
#include "common/strbuf.h"
#include "common/util.h"
#include "tests/lib/tap.h"

#include <string.h>

int main(void)
{
    strbuf sb = STRBUF_INIT;
    char *s;
    size_t n;

    is_int(sb.len, 0, "a new strbuf is empty");
    is_str(sb.buf, "", "and its buffer is a valid empty string");

    strbuf_addstr(&sb, "hello");
    strbuf_addch(&sb, ' ');
    strbuf_addf(&sb, "%s %d", "world", 42);
    is_str(sb.buf, "hello world 42", "add, addch and addf append");

    strbuf_add(&sb, "\0x", 2);
    is_int(sb.len, 16, "embedded NUL counts in len");
    ok(sb.buf[sb.len] == '\0', "buffer stays NUL-terminated");

    strbuf_remove(&sb, 0, 6);
    ok(memcmp(sb.buf, "world 42\0x", 10) == 0, "remove shifts the rest");

    strbuf_reset(&sb);
    for (int i = 0; i < 10000; i++)
        strbuf_addch(&sb, 'a' + i % 26);
    is_int(sb.len, 10000, "grows across many reallocations");

    s = strbuf_detach(&sb, &n);
    is_int(n, 10000, "detach returns the length");
    is_int(sb.len, 0, "detach leaves the strbuf empty");
    free(s);

    strbuf_add_shell_quoted(&sb, "it's", 4);
    is_str(sb.buf, "'it'\\''s'", "shell quoting of a single quote");
    strbuf_reset(&sb);
    strbuf_add_shell_quoted(&sb, "a\nb", 3);
    is_str(sb.buf, "$'a\\nb'", "control bytes use $'...'");
    strbuf_reset(&sb);
    strbuf_add_json_escaped(&sb, "\"\\\x01", 3);
    is_str(sb.buf, "\\\"\\\\\\u0001", "JSON escaping");
    strbuf_reset(&sb);
    strbuf_add_json_escaped(&sb, "h\xc3\xa9\xff\xc3", 5);
    is_str(sb.buf, "h\xc3\xa9\\u00ff\\u00c3", "valid UTF-8 stays, other bytes become \\u00XX");
    strbuf_reset(&sb);
    strbuf_add_json_escaped(&sb, "\xed\xa0\x80\xc0\xaf", 5);
    is_str(sb.buf, "\\u00ed\\u00a0\\u0080\\u00c0\\u00af", "surrogates and overlong forms are not UTF-8");
    strbuf_release(&sb);

    s = strbuf_detach(&sb, NULL);
    is_str(s, "", "detach of an empty strbuf gives an owned empty string");
    free(s);
    return done_testing();
}
