/*
 * arena (arena.h): bump allocation with marks, after dash's stack allocator; arena_alloc(),
 * arena_strdup(), arena_grow(), arena_get_mark() and arena_pop() to a mark, arena_free().
 * May call libc and common/ only (common/README.md: sbx-agent links it, built with musl).
 */
#include "common/arena.h"
#include "common/util.h"

#include <stdint.h>
#include <string.h>

#define ARENA_BLOCK_MIN 16384
#define ARENA_ALIGN 16

struct arena_block {
    arena_block *prev;
    size_t size;           /* usable bytes in data[] */
    _Alignas(ARENA_ALIGN) unsigned char data[];
};

void arena_init(arena *a)
{
    a->head = NULL;
    a->used = 0;
    a->total = 0;
}

void *arena_alloc(arena *a, size_t n)
{
    void *p;
    n = (n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    if (!n)
        n = ARENA_ALIGN;
    if (!a->head || a->head->size - a->used < n) {
        size_t sz = n > ARENA_BLOCK_MIN ? n : ARENA_BLOCK_MIN;
        arena_block *b;
        if (sz > SIZE_MAX - sizeof(*b))
            xdie_oom();
        b = xmalloc(sizeof(*b) + sz);
        b->prev = a->head;
        b->size = sz;
        a->head = b;
        a->used = 0;
    }
    p = a->head->data + a->used;
    a->used += n;
    a->total += n;
    memset(p, 0, n);
    return p;
}

char *arena_strndup(arena *a, const char *s, size_t n)
{
    char *p = arena_alloc(a, n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *arena_strdup(arena *a, const char *s)
{
    return arena_strndup(a, s, strlen(s));
}

void *arena_grow(arena *a, void *old, size_t old_n, size_t new_n, size_t elem)
{
    void *p;
    if (new_n && elem > SIZE_MAX / new_n)
        xdie_oom();
    p = arena_alloc(a, new_n * elem);
    if (old && old_n)
        memcpy(p, old, (old_n < new_n ? old_n : new_n) * elem);
    return p;
}

arena_mark arena_get_mark(const arena *a)
{
    arena_mark m = { a->head, a->used };
    return m;
}

void arena_pop(arena *a, arena_mark m)
{
    while (a->head && a->head != m.head) {
        arena_block *prev = a->head->prev;
        free(a->head);
        a->head = prev;
    }
    a->used = m.head ? m.used : 0;
}

void arena_free(arena *a)
{
    arena_mark none = { NULL, 0 };
    arena_pop(a, none);
    a->total = 0;
}
