/* Unit tests of common/strvec.c. */
#include "common/strvec.h"
#include "tests/lib/tap.h"

int main(void)
{
    strvec sv = STRVEC_INIT;
    ok(sv.n == 0 && sv.v[0] == NULL, "a new strvec is an empty NULL-terminated array");
    strvec_push(&sv, "bash");
    strvec_pushf(&sv, "-%c", 'c');
    strvec_pushn(&sv, "echo hi; junk", 7);
    is_int(sv.n, 3, "three pushed");
    is_str(sv.v[1], "-c", "pushf formats");
    is_str(sv.v[2], "echo hi", "pushn copies n bytes");
    ok(sv.v[3] == NULL, "still NULL-terminated");
    char *more[] = { "a", "b", NULL };
    strvec_pushv(&sv, more);
    is_int(sv.n, 5, "pushv appends a vector");
    strvec_clear(&sv);
    ok(sv.n == 0 && sv.v[0] == NULL, "clear empties it");
    return done_testing();
}
