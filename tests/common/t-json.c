/* Unit tests of common/json.c: commas, keys and nesting come out right, strings stay valid
 * JSON for any bytes. */
#include "common/json.h"
#include "tests/lib/tap.h"

int main(void)
{
    strbuf sb = STRBUF_INIT;
    sbx_json j;

    sbx_json_init(&j, &sb);
    sbx_json_begin_obj(&j, NULL);
    sbx_json_end(&j);
    is_str(sb.buf, "{}", "an empty object");

    strbuf_reset(&sb);
    sbx_json_init(&j, &sb);
    sbx_json_begin_obj(&j, NULL);
    sbx_json_str(&j, "s", "a\"b\\c\n");
    sbx_json_str(&j, "null", NULL);
    sbx_json_int(&j, "i", -5);
    sbx_json_uint(&j, "u", 18446744073709551615ull);
    sbx_json_bool(&j, "t", true);
    sbx_json_begin_arr(&j, "a");
    sbx_json_begin_arr(&j, NULL);
    sbx_json_end(&j);
    sbx_json_strn(&j, NULL, "\xff\x01", 2);
    sbx_json_begin_obj(&j, NULL);
    sbx_json_bool(&j, "f", false);
    sbx_json_end(&j);
    sbx_json_end(&j);
    strbuf_addstr(sbx_json_value(&j, "raw"), "{\"x\":1}");
    sbx_json_null(&j, "n");
    sbx_json_end(&j);
    is_str(sb.buf, "{\"s\":\"a\\\"b\\\\c\\n\",\"null\":null,\"i\":-5,\"u\":18446744073709551615,"
                   "\"t\":true,\"a\":[[],\"\\u00ff\\u0001\",{\"f\":false}],\"raw\":{\"x\":1},"
                   "\"n\":null}",
           "members, nesting, escapes, a value from elsewhere");

    strbuf_reset(&sb);
    strbuf_addstr(&sb, "prefix ");
    sbx_json_init(&j, &sb);
    sbx_json_begin_arr(&j, NULL);
    sbx_json_int(&j, "ignored", 1);
    sbx_json_int(&j, NULL, 2);
    sbx_json_end(&j);
    is_str(sb.buf, "prefix [1,2]", "appends where the buffer stands; an array's values have no key");
    strbuf_release(&sb);
    return done_testing();
}
