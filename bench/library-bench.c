/*
 * The per-call cost of libsbxsh (issue 24) against `sbxsh -c`, in one warm session:
 *
 *   build/bench/library-bench PROGRAM RUNS LINE...
 *
 * For each LINE, RUNS times each, interleaved (after 3 warm-up runs of each): `sbxsh -c LINE`
 * started as a program starts a command and collects its output (posix_spawn, stdout and
 * stderr on pipes read to their end, waitpid), then sbxsh_run() on one handle (its default
 * capture, no callback). Prints one Markdown row per line: the medians and quartiles in ms and
 * the library's difference. The session is the one sbxsh derives from the cwd and the
 * environment (bench/library.sh gives it a world of its own). Not a test: no assertions.
 */
#include "bench/bench.h"
#include "lib/sbxsh.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static uint64_t now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* `sbxsh -c line`, its output read and thrown away; returns its wait status or -1. */
static int spawn_c(const char *program, const char *line)
{
    char *argv[] = { (char *)program, "-c", (char *)line, NULL };
    posix_spawn_file_actions_t fa;
    int op[2], ep[2], ws;
    pid_t pid;
    struct pollfd p[2];

    if (pipe2(op, O_CLOEXEC) < 0 || pipe2(ep, O_CLOEXEC) < 0)
        return -1;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, op[1], 1);
    posix_spawn_file_actions_adddup2(&fa, ep[1], 2);
    if (posix_spawn(&pid, program, &fa, NULL, argv, environ) != 0)
        return -1;
    posix_spawn_file_actions_destroy(&fa);
    close(op[1]);
    close(ep[1]);
    p[0] = (struct pollfd){ .fd = op[0], .events = POLLIN };
    p[1] = (struct pollfd){ .fd = ep[0], .events = POLLIN };
    while (p[0].fd >= 0 || p[1].fd >= 0) {
        char b[65536];
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        for (int i = 0; i < 2; i++) {
            if (p[i].fd < 0 || !p[i].revents)
                continue;
            if (read(p[i].fd, b, sizeof(b)) <= 0) {
                close(p[i].fd);
                p[i].fd = -1;
            }
        }
    }
    while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
        ;
    return ws;
}

static double ms(uint64_t ns)
{
    return (double)ns / 1e6;
}

int main(int argc, char **argv)
{
    sbxsh_error err;
    sbxsh_options *o;
    sbxsh *h;
    int runs;

    if (argc < 4 || (runs = atoi(argv[2])) < 4) {
        fprintf(stderr, "usage: library-bench PROGRAM RUNS(>=4) LINE...\n");
        return 2;
    }
    o = sbxsh_options_new();
    if (sbxsh_options_set_program(o, argv[1], &err) < 0 || sbxsh_open(o, &h, &err) < 0) {
        fprintf(stderr, "library-bench: %s\n", err.message);
        return 125;
    }
    sbxsh_options_free(o);
    uint64_t *a = calloc((size_t)runs, sizeof(*a)), *b = calloc((size_t)runs, sizeof(*b));
    for (int l = 3; l < argc; l++) {
        const char *line = argv[l];
        for (int i = -3; i < runs; i++) {
            sbxsh_result *res;
            uint64_t t0 = now();
            if (spawn_c(argv[1], line) < 0) {
                perror("library-bench: sbxsh -c");
                return 125;
            }
            uint64_t t1 = now();
            if (sbxsh_run(h, line, NULL, &res, &err) < 0) {
                fprintf(stderr, "library-bench: %s\n", err.message);
                return 125;
            }
            uint64_t t2 = now();
            sbxsh_result_free(res);
            if (i >= 0) {
                a[i] = t1 - t0;
                b[i] = t2 - t1;
            }
        }
        uint64_t ma = bench_median_u64(a, (size_t)runs), mb = bench_median_u64(b, (size_t)runs);
        /* (sorted by the medians above) */
        printf("| `%s` | %.2f ms [%.2f-%.2f] | %.2f ms [%.2f-%.2f] | %+.2f ms |\n", line, ms(ma),
               ms(a[runs / 4]), ms(a[runs * 3 / 4]), ms(mb), ms(b[runs / 4]),
               ms(b[runs * 3 / 4]), ms(mb) - ms(ma));
        fflush(stdout);
    }
    free(a);
    free(b);
    sbxsh_close(h);
    return 0;
}
