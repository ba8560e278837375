/*
 * Helpers shared by the C benchmarks in bench/.
 */
#ifndef SBX_BENCH_H
#define SBX_BENCH_H

#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

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

/* sbx-agent (agent) serving the tree under prefix over two pipes, as the benchmarks of the
 * sync drive it: *rfd reads its stream, *wfd writes to it; watch=false adds --no-watch.
 * The agent's pid, or -1 (errno set). */
static inline pid_t bench_agent_start(const char *agent, const char *prefix, bool watch,
                                      int *rfd, int *wfd)
{
    int to[2], from[2];
    pid_t pid;
    if (pipe2(to, O_CLOEXEC) < 0)
        return -1;
    if (pipe2(from, O_CLOEXEC) < 0) {
        close(to[0]);
        close(to[1]);
        return -1;
    }
    pid = fork();
    if (pid == 0) {
        dup2(to[0], 0);
        dup2(from[1], 1);
        execl(agent, "sbx-agent", "--root-prefix", prefix, watch ? (char *)NULL : "--no-watch",
              (char *)NULL);
        perror(agent);
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    if (pid < 0) {
        close(to[1]);
        close(from[0]);
        return -1;
    }
    *rfd = from[0];
    *wfd = to[1];
    return pid;
}

#endif
