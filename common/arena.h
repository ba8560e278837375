/*
 * arena: bump allocation with marks, after dash's stack allocator.
 *
 * A parse allocates every node, word and string from one arena; an error or
 * a finished command frees all of it at once with arena_pop() to a mark or
 * arena_free(). Individual objects are never freed. Memory is zeroed.
 */
#ifndef SBX_COMMON_ARENA_H
#define SBX_COMMON_ARENA_H

#include <stddef.h>

typedef struct arena_block arena_block;

typedef struct arena {
    arena_block *head;  /* current block; older blocks follow ->prev */
    size_t used;        /* bytes used in head */
    size_t total;       /* bytes handed out over the arena's life (for limits) */
} arena;

typedef struct arena_mark {
    arena_block *head;
    size_t used;
} arena_mark;

#define ARENA_INIT { 0, 0, 0 }

void arena_init(arena *a);
/* Zeroed memory, aligned for any type. Never NULL (out of memory aborts). */
void *arena_alloc(arena *a, size_t n);
char *arena_strndup(arena *a, const char *s, size_t n);
char *arena_strdup(arena *a, const char *s);
/* Grows an array allocated from the arena (copying; the old one is wasted). */
void *arena_grow(arena *a, void *old, size_t old_n, size_t new_n, size_t elem);
arena_mark arena_get_mark(const arena *a);
void arena_pop(arena *a, arena_mark m);
void arena_free(arena *a);

#endif
