/* Unit tests of common/arena.c. */
#include "common/arena.h"
#include "tests/lib/tap.h"

#include <stdint.h>

int main(void)
{
    arena a = ARENA_INIT;
    char *p = arena_alloc(&a, 10);
    int zero = 1;
    for (int i = 0; i < 10; i++)
        zero &= p[i] == 0;
    ok(zero, "allocations are zeroed");
    ok(((uintptr_t)arena_alloc(&a, 3) & 15) == 0, "allocations are 16-byte aligned");

    arena_mark m = arena_get_mark(&a);
    for (int i = 0; i < 1000; i++)
        arena_alloc(&a, 1000);
    ok(a.head != m.head, "big allocations move to new blocks");
    arena_pop(&a, m);
    ok(a.head == m.head && a.used == m.used, "pop returns to the mark");

    char *s = arena_strndup(&a, "hello world", 5);
    is_str(s, "hello", "strndup copies n bytes and terminates");
    int *v = arena_grow(&a, NULL, 0, 4, sizeof(int));
    v[3] = 7;
    v = arena_grow(&a, v, 4, 100, sizeof(int));
    is_int(v[3], 7, "grow keeps old elements");
    is_int(v[99], 0, "and zeroes new ones");

    void *big = arena_alloc(&a, 1 << 20);
    ok(big != NULL, "one allocation larger than a block");
    arena_free(&a);
    ok(a.head == NULL, "free releases everything");
    return done_testing();
}
