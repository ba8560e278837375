/*
 * Replays every input the fuzzer ever found (tests/shell/regress/) through
 * the fuzz driver's checks, each in a child process so that an abort()
 * fails one test instead of the program.
 */
#include "../lib/tap.h"

#include "tests/fuzz/fuzz-parse.c"

#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

static int replay(const char *path)
{
    char *buf;
    size_t len;
    sbx_err err;
    if (read_file(path, 1 << 24, &buf, &len, &err) < 0) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
    free(buf);
    return 0;
}

int main(void)
{
    const char *dir = "tests/shell/regress";
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    if (!d) {
        ok(0, "open %s", dir);
        return done_testing();
    }
    while ((e = readdir(d)) != NULL) {
        char path[4096];
        pid_t pid;
        int st;
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        fflush(stdout);
        pid = fork();
        if (pid == 0)
            _exit(replay(path));
        waitpid(pid, &st, 0);
        ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fuzz regression %s", e->d_name);
        n++;
    }
    closedir(d);
    ok(n > 0, "%d fuzz regressions replayed", n);
    return done_testing();
}
