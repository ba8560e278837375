/*
 * parse-bench: how fast the parser is.
 *
 *   1. Typical agent command lines (multi-line git commits, python
 *      here-documents, find -exec, loops, jq and sed programs): the median
 *      time of sh_parse_all() per line over many rounds. The target
 *      for parse + route is well under 100 microseconds.
 *   2. Throughput on real shell scripts: every file under the given
 *      directories whose first line names sh or bash (or that ends in .sh),
 *      parsed in-process; the baseline is `bash -n` run once on all of them
 *      concatenated (the ones bash accepts), in the same invocation. Also
 *      counts how many files get the same verdict as `bash -n` file.
 *
 *   make bench-parse     or     build/bench/parse-bench [--rounds N] [DIR...]
 */
#define _XOPEN_SOURCE 700
#include "bench/bench.h"
#include "common/strbuf.h"
#include "common/util.h"
#include "shell/parse.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const lines[] = {
    "git status --porcelain",
    "cd src && make -j8 2>&1 | tail -20",
    "git add -A && git commit -m \"$(cat <<'EOF'\nfix: handle empty input\n\n"
    "The parser now accepts \"quoted\" text.\nEOF\n)\" && git push origin HEAD",
    "python3 - <<'PY'\nimport json, sys\nprint(json.dumps({'ok': True}))\nPY",
    "find . -name '*.py' -not -path './.venv/*' -exec grep -l 'TODO' {} +",
    "for f in src/*.c; do echo \"$f: $(wc -l < \"$f\")\"; done",
    "jq -r '.items[] | select(.status == \"open\") | .id' issues.json | head -5",
    "sed -i -e 's/foo/bar/g' -e '/^#/d' config.ini && git diff --stat",
    "if [ -f package.json ]; then npm ci && npm test -- --coverage; else echo none; fi",
    "grep -rn --include='*.ts' 'useEffect(' src/ | wc -l",
    "curl -sS -H 'Accept: application/json' \"$API/v1/items?limit=10\" | jq .",
    "cat > /tmp/patch.diff <<'EOF'\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\nEOF\ngit apply /tmp/patch.diff",
    "test -d build || mkdir -p build/{debug,release}; ls -la build",
    "[[ $(git rev-parse --abbrev-ref HEAD) == main ]] && echo on-main || echo branch",
    "docker run --rm -v \"$PWD\":/w -w /w python:3.12 python -m pytest -q -k 'not slow'",
};

static void per_line(size_t rounds)
{
    uint64_t *t = xmalloc(rounds * sizeof(*t));
    double sum = 0, worst = 0;

    printf("typical agent command lines: median of %zu parses each\n", rounds);
    printf("  %8s  %6s  %s\n", "us", "bytes", "line");
    for (size_t i = 0; i < ARRAY_SIZE(lines); i++) {
        size_t len = strlen(lines[i]);
        char *buf = xmalloc(len);
        double us;
        memcpy(buf, lines[i], len);
        for (size_t r = 0; r < rounds; r++) {
            sh_parse p;
            uint64_t t0 = now_ns();
            sh_parse_all(&p, buf, len, NULL, true);
            t[r] = now_ns() - t0;
            if (p.status != SH_OK) {
                fprintf(stderr, "parse-bench: line %zu does not parse\n", i + 1);
                exit(1);
            }
            sh_parse_free(&p);
        }
        us = (double)bench_median_u64(t, rounds) / 1000.0;
        sum += us;
        if (us > worst)
            worst = us;
        {
            const char *nl = strchr(lines[i], '\n');
            int n = nl ? (int)(nl - lines[i]) : (int)len;
            printf("  %8.2f  %6zu  %.*s%s\n", us, len, n > 60 ? 60 : n, lines[i],
                   nl || n > 60 ? " ..." : "");
        }
    }
    printf("  mean %.2f us, worst %.2f us per line\n\n", sum / ARRAY_SIZE(lines), worst);
    free(t);
}

/* ---- the script corpus ------------------------------------------------------ */

static strbuf g_files;     /* NUL-separated paths */
static size_t g_nfiles;

static bool is_shell_script(const char *path)
{
    char head[128];
    size_t n;
    FILE *f;
    const char *dot = strrchr(path, '.');

    if (dot && !strcmp(dot, ".sh"))
        return true;
    f = fopen(path, "rb");
    if (!f)
        return false;
    n = fread(head, 1, sizeof(head) - 1, f);
    fclose(f);
    head[n] = 0;
    if (n < 3 || head[0] != '#' || head[1] != '!')
        return false;
    char *nl = strchr(head, '\n');
    if (nl)
        *nl = 0;
    return strstr(head, "/sh") || strstr(head, "bash") || strstr(head, "env sh");
}

static int visit(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)ftw;
    if (type == FTW_F && S_ISREG(st->st_mode) && st->st_size > 0 && st->st_size < (4 << 20) &&
        is_shell_script(path)) {
        strbuf_add(&g_files, path, strlen(path) + 1);
        g_nfiles++;
    }
    return 0;
}

static int bash_n(const char *path)
{
    pid_t pid = fork();
    int st;
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 2);
        dup2(fd, 1);
        execlp("bash", "bash", "-n", path, (char *)NULL);
        _exit(127);
    }
    if (pid < 0 || waitpid(pid, &st, 0) < 0)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void corpus(int ndirs, char **dirs)
{
    strbuf all = STRBUF_INIT;
    size_t bytes = 0, ok = 0, agree = 0;
    uint64_t ours = 0, t0, theirs;
    char tmp[] = "/tmp/parse-bench.XXXXXX";
    int fd;

    for (int i = 0; i < ndirs; i++)
        nftw(dirs[i], visit, 16, FTW_PHYS);
    printf("shell scripts under");
    for (int i = 0; i < ndirs; i++)
        printf(" %s", dirs[i]);
    printf(": %zu files\n", g_nfiles);
    if (!g_nfiles)
        return;

    for (const char *f = g_files.buf; f < g_files.buf + g_files.len; f += strlen(f) + 1) {
        char *buf;
        size_t len;
        sbx_err err;
        sh_parse p;
        int brc;

        if (read_file(f, 4 << 20, &buf, &len, &err) < 0)
            continue;
        t0 = now_ns();
        sh_parse_all(&p, buf, len, NULL, true);
        ours += now_ns() - t0;
        bytes += len;
        brc = bash_n(f);
        if ((p.status == SH_OK) == (brc == 0))
            agree++;
        else
            printf("  verdict differs from bash -n: %s (bash %d, sbxsh %s)\n", f, brc,
                   p.status == SH_OK ? "ok" : p.err_msg);
        if (p.status == SH_OK && brc == 0) {
            ok++;
            strbuf_add(&all, buf, len);
            if (len && buf[len - 1] != '\n')
                strbuf_addch(&all, '\n');
        }
        sh_parse_free(&p);
        free(buf);
    }
    printf("  same verdict as bash -n: %zu/%zu files; both accept %zu\n", agree, g_nfiles, ok);
    printf("  sbxsh parser, each file in-process: %.1f MB in %.1f ms = %.1f MB/s\n",
           (double)bytes / 1e6, (double)ours / 1e6, (double)bytes / 1e6 / ((double)ours / 1e9));

    /* The baseline: bash -n once over everything both accept. */
    fd = mkstemp(tmp);
    if (fd < 0 || write_full(fd, all.buf, all.len) < 0) {
        perror("parse-bench: temporary file");
        return;
    }
    close(fd);
    {
        sh_parse p;
        uint64_t best_ours = UINT64_MAX, best_bash = UINT64_MAX;
        for (int r = 0; r < 3; r++) {
            t0 = now_ns();
            sh_parse_all(&p, all.buf, all.len, NULL, true);
            uint64_t d = now_ns() - t0;
            sh_parse_free(&p);
            if (d < best_ours)
                best_ours = d;
            t0 = now_ns();
            int rc = bash_n(tmp);
            theirs = now_ns() - t0;
            if (rc != 0)
                printf("  (bash -n rejects the concatenation: %d)\n", rc);
            if (theirs < best_bash)
                best_bash = theirs;
        }
        printf("  all accepted scripts as one text (%.1f MB), best of 3:\n",
               (double)all.len / 1e6);
        printf("    sbxsh parser %.1f ms (%.1f MB/s); bash -n %.1f ms (%.1f MB/s); "
               "ratio %.2f\n",
               (double)best_ours / 1e6, (double)all.len / 1e6 / ((double)best_ours / 1e9),
               (double)best_bash / 1e6, (double)all.len / 1e6 / ((double)best_bash / 1e9),
               (double)best_ours / (double)best_bash);
    }
    unlink(tmp);
    strbuf_release(&all);
}

int main(int argc, char **argv)
{
    size_t rounds = 2000;
    int i = 1;
    char *defaults[] = { "/usr/bin", "/etc" };

    if (argc > 2 && !strcmp(argv[1], "--rounds")) {
        rounds = strtoul(argv[2], NULL, 10);
        i = 3;
    }
    if (rounds < 10)
        rounds = 10;
    per_line(rounds);
    if (i < argc)
        corpus(argc - i, argv + i);
    else
        corpus(2, defaults);
    strbuf_release(&g_files);
    return 0;
}
