/*
 * Helpers shared by the C benchmarks in bench/.
 */
#ifndef SBX_BENCH_H
#define SBX_BENCH_H

#include <stdint.h>
#include <stdlib.h>

static inline int bench_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The median of n timings (sorting v in place): the upper of the two middle
 * ones when n is even. */
static inline uint64_t bench_median_u64(uint64_t *v, size_t n)
{
    qsort(v, n, sizeof(*v), bench_cmp_u64);
    return v[n / 2];
}

#endif
