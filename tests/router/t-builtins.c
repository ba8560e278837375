/*
 * echo and printf (router/builtins.c) against the real bash: each case runs
 * `bash -c 'printf "$@"' sbxsh ARGS...` and the builtin with the same
 * arguments, and compares standard output, error messages and status. A
 * seeded generator adds random formats and arguments.
 */
#include "router/builtins.h"
#include "tests/lib/tap.h"

#include "common/strbuf.h"
#include "common/strvec.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct result {
    strbuf out, err;
    int status;
} result;

static void drain(int fd, strbuf *sb)
{
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
        if (n > 0)
            strbuf_add(sb, buf, (size_t)n);
}

/* bash -c 'CMD "$@"' sbxsh ARGS: the builtin as bash runs it. */
static void run_bash(const char *cmd, char *const *args, size_t n, bool merged, result *r)
{
    int po[2], pe[2];
    pid_t pid;
    strvec argv = STRVEC_INIT;
    char script[64];
    int st;

    snprintf(script, sizeof(script), "%s \"$@\"%s", cmd, merged ? " 2>&1" : "");
    strvec_push(&argv, "bash");
    strvec_push(&argv, "-c");
    strvec_push(&argv, script);
    strvec_push(&argv, "sbxsh");
    for (size_t i = 0; i < n; i++)
        strvec_push(&argv, args[i]);
    if (pipe(po) || pipe(pe))
        abort();
    pid = fork();
    if (pid == 0) {
        dup2(po[1], 1);
        dup2(pe[1], 2);
        close(po[0]); close(po[1]); close(pe[0]); close(pe[1]);
        execvp("bash", argv.v);
        _exit(127);
    }
    close(po[1]);
    close(pe[1]);
    /* outputs are small: stdout first, then stderr, cannot deadlock */
    drain(po[0], &r->out);
    drain(pe[0], &r->err);
    close(po[0]);
    close(pe[0]);
    waitpid(pid, &st, 0);
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    strvec_clear(&argv);
}

/* merged: stdout and stderr into one pipe, as 2>&1 */
static int run_builtin(const char *cmd, char *const *args, size_t n, bool merged, result *r)
{
    int po[2], pe[2];
    bi_env env = { .errname = "sbxsh", .line = 1 };
    bi_env chk = { .errname = "sbxsh", .line = 1, .flags = BI_CHECK, .err_fd = -1 };
    int cst;

    cst = !strcmp(cmd, "echo") ? route_builtin_echo(args, n, &chk) : route_builtin_printf(args, n, &chk);
    if (cst == BI_REFUSE)
        return BI_REFUSE;
    if (pipe(po) || pipe(pe))
        abort();
    env.out_fd = po[1];
    env.err_fd = merged ? po[1] : pe[1];
    r->status = !strcmp(cmd, "echo") ? route_builtin_echo(args, n, &env) : route_builtin_printf(args, n, &env);
    close(po[1]);
    close(pe[1]);
    drain(po[0], &r->out);
    drain(pe[0], &r->err);
    close(po[0]);
    close(pe[0]);
    if (r->status != cst)
        return -2;
    return 0;
}

static void show(strbuf *d, const char *what, const strbuf *sb)
{
    strbuf_addf(d, "%s: ", what);
    strbuf_add_shell_quoted(d, sb->buf, sb->len);
    strbuf_addch(d, '\n');
}

static int n_refused;

static void compare_mode(const char *cmd, char *const *args, size_t n, bool merged)
{
    result b = { STRBUF_INIT, STRBUF_INIT, 0 }, s = { STRBUF_INIT, STRBUF_INIT, 0 };
    strbuf name = STRBUF_INIT, d = STRBUF_INIT;
    int rc;

    strbuf_addstr(&name, cmd);
    for (size_t i = 0; i < n; i++) {
        strbuf_addch(&name, ' ');
        strbuf_add_shell_quoted(&name, args[i], strlen(args[i]));
    }
    if (merged)
        strbuf_addstr(&name, " 2>&1");
    rc = run_builtin(cmd, args, n, merged, &s);
    if (rc == BI_REFUSE) {
        n_refused++;
        goto out;
    }
    run_bash(cmd, args, n, merged, &b);
    if (!ok(rc == 0 && b.status == s.status && b.out.len == s.out.len &&
            !memcmp(b.out.buf, s.out.buf, b.out.len) && !strcmp(b.err.buf, s.err.buf),
            "%s", name.buf)) {
        show(&d, "bash out", &b.out);
        show(&d, "ours out", &s.out);
        show(&d, "bash err", &b.err);
        show(&d, "ours err", &s.err);
        strbuf_addf(&d, "status bash %d ours %d (check run %s)", b.status, s.status,
                    rc ? "disagreed" : "agreed");
        diag("%s", d.buf);
    }
out:
    strbuf_release(&b.out); strbuf_release(&b.err);
    strbuf_release(&s.out); strbuf_release(&s.err);
    strbuf_release(&name); strbuf_release(&d);
}

/* Each case twice: stdout and stderr apart, and together (their order). */
static void compare(const char *cmd, char *const *args, size_t n)
{
    compare_mode(cmd, args, n, false);
    compare_mode(cmd, args, n, true);
}

#define CASE(cmd, ...) do {                                   \
        char *a_[] = { __VA_ARGS__ };                          \
        compare(cmd, a_, ARRAY_SIZE(a_));                      \
    } while (0)

static void fixed_cases(void)
{
    compare("printf", NULL, 0);
    compare("echo", NULL, 0);
    CASE("printf", "");
    CASE("printf", "hello\\n");
    CASE("printf", "%s\\n", "a", "b", "c");
    CASE("printf", "%s %s\\n", "a", "b", "c");
    CASE("printf", "%d\\n", "x");
    CASE("printf", "%d %d\\n", "1.5", "2");
    CASE("printf", "%d\\n", "08");
    CASE("printf", "%d\\n", "0x1g");
    CASE("printf", "%d\\n", "0x1f");
    CASE("printf", "%d\\n", "'A", "\"b");
    CASE("printf", "%d\\n", "99999999999999999999");
    CASE("printf", "%u\\n", "-1");
    CASE("printf", "%x %X %o %#x %#o\\n", "255", "255", "8", "255", "8");
    CASE("printf", "%5s|%-5s|%.2s|%5.1s|\\n", "abc", "abc", "abc", "abc");
    CASE("printf", "%*s|%-*s|%.*s|\\n", "4", "a", "4", "b", "1", "xyz");
    CASE("printf", "%*d|\\n", "-6", "42");
    CASE("printf", "%*d|\\n", "99999999999", "1");
    CASE("printf", "%f %e %g %G %E\\n", "3.14159", "1e10", "0.0001", "1e-10", "2");
    CASE("printf", "%.3f %10.2f %-10.1e|\\n", "2.5", "3", "1234.5");
    CASE("printf", "%a\\n", "1");
    CASE("printf", "%f\\n", "abc");
    CASE("printf", "%c%c%c\\n", "hello", "", "x");
    CASE("printf", "%b\\n", "a\\tb\\nc");
    CASE("printf", "%b|%b\\n", "\\0101", "\\101");
    CASE("printf", "%b\\n", "stop\\chere", "more");
    CASE("printf", "%d%b%d\\n", "x", "\\c", "1");
    CASE("printf", "%b\\n", "\\x41\\x", "\\'\\\"\\?");
    CASE("printf", "\\x41\\x\\'\\\"\\?\\c\\q\\\\\\n");
    CASE("printf", "\\101\\0101\\1\\8\\n");
    CASE("printf", "%q\\n", "a b", "it's", "", "~x", "#c", "a~b", "x=~", "a\tb", "\x01");
    CASE("printf", "%q\\n", "$HOME", "`x`", "a*b?", "[x]", "{a,b}", "a|b&c;d<e>f", "!x");
    CASE("printf", "%10q|%-10q|%.2q|\\n", "a b", "c", "xyz");
    CASE("printf", "%Q|%.2Q|\\n", "a b c", "a b c");
    CASE("printf", "%q\\n", "caf\xc3\xa9", "\xff\xfe", "tab\there", "nl\nx", "\x1b[1m");
    CASE("printf", "abc%");
    CASE("printf", "%z");
    CASE("printf", "%5");
    CASE("printf", "%y\\n", "1");
    CASE("printf", "%5%\\n");
    CASE("printf", "%%|%s\\n", "x");
    CASE("printf", "%ld %hd %lld %Lf %jd %zd\\n", "1", "2", "3", "4", "5", "6");
    CASE("printf", "%-+ 05d|%+d|% d|%05.1f\\n", "3", "3", "3", "2.25");
    CASE("printf", "%s");
    CASE("printf", "no args %d %s|\\n");
    CASE("printf", "--", "%s\\n", "x");
    CASE("printf", "-");
    CASE("printf", "%.-3d|\\n", "5");
    CASE("printf", "%s\\n", "-n");
    CASE("printf", "trailing\\");
    CASE("printf", "%b", "trailing\\");
    CASE("printf", "%'d\\n", "1234567");
    CASE("printf", "%i\\n", "  42");
    CASE("printf", "%i\\n", "42  ");
    CASE("printf", "%d\\n", "");
    CASE("printf", "%s %d\\n", "a");
    CASE("printf", "%c", "\xc3\xa9");
    CASE("printf", "%d\\n", "'\xc3\xa9");
    CASE("echo", "hello", "world");
    CASE("echo", "-n", "x");
    CASE("echo", "-e", "a\\tb\\nc\\x41\\0101\\101\\c", "after");
    CASE("echo", "-E", "a\\tb");
    CASE("echo", "-neE", "a\\tb");
    CASE("echo", "-en", "a\\tb");
    CASE("echo", "-x", "y");
    CASE("echo", "-");
    CASE("echo", "--", "x");
    CASE("echo", "-n", "-e", "a\\n");
    CASE("echo", "-e", "\\x", "\\xZZ", "\\'", "\\\"", "\\?", "\\q", "\\\\", "x\\");
    CASE("echo", "-e", "\\e[1m\\E\\a\\b\\f\\r\\v");
    CASE("echo", "-e", "\\u", "\\U");
    CASE("echo", "-e", "\\0", "\\08", "\\0377", "\\0400");
    CASE("echo", "-e", "caf\xc3\xa9\\n");
    CASE("echo", "a", "", "b");
    CASE("echo", "-e", "");
    CASE("echo", "-e", "x\\cy");
    CASE("printf", "%s\\n", "\\u00e9 is left to the sandbox");
    CASE("printf", "\\u00e9\\n");
}

/* Random formats and arguments from a seeded generator. */
static unsigned long long rng;
static unsigned rnd(unsigned n)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)((rng >> 33) % n);
}

static void random_cases(unsigned count)
{
    static const char *pieces[] = {
        "%s", "%d", "%i", "%x", "%o", "%u", "%c", "%b", "%q", "%f", "%e", "%g", "%5s", "%-4d",
        "%.2f", "%*d", "%.*s", "%05d", "%+d", "% d", "%#x", "%%", "\\n", "\\t", "\\\\", "\\x41",
        "\\101", "\\0", "abc", " ", "-", "|", "%Q", "%.1q", "%10b", "\\c", "%", "\\", "%l",
        "%hhd", "\\'", "%-*s",
    };
    static const char *argv_pool[] = {
        "", "0", "1", "-1", "42", "3.5", "1e3", "x", "abc", "'a", "\"", "0x10", "010", "08",
        "a b", "\\n", "\\c", "\\x4", "-5", "+7", " 9", "9 ", "1e999", "99999999999999999999",
        "caf\xc3\xa9", "*", "$x", "~", "#", "\\0101", "nan", "inf", "0x",
    };
    char *args[8];
    strbuf fmt = STRBUF_INIT;

    for (unsigned i = 0; i < count; i++) {
        unsigned npieces = 1 + rnd(5), nargs = rnd(6);
        strbuf_reset(&fmt);
        for (unsigned k = 0; k < npieces; k++)
            strbuf_addstr(&fmt, pieces[rnd(ARRAY_SIZE(pieces))]);
        args[0] = fmt.buf;
        for (unsigned k = 0; k < nargs; k++)
            args[1 + k] = (char *)argv_pool[rnd(ARRAY_SIZE(argv_pool))];
        if (rnd(4) == 0) {
            /* echo with the same material */
            args[0] = (char *)(rnd(2) ? "-e" : "-n");
            compare("echo", args, 1 + nargs);
        } else {
            compare("printf", args, 1 + nargs);
        }
    }
    strbuf_release(&fmt);
}

int main(void)
{
    const char *seed = getenv("SBX_TEST_SEED");
    const char *locs[] = { "C", "C.UTF-8" };

    for (size_t l = 0; l < ARRAY_SIZE(locs); l++) {
        /* bash and the builtins both take the locale from the environment */
        setenv("LC_ALL", locs[l], 1);
        diag("locale %s", locs[l]);
        fixed_cases();
        rng = seed ? strtoull(seed, NULL, 0) : 20240611ULL + l;
        diag("random cases, seed %llu (SBX_TEST_SEED to repeat)", rng);
        random_cases(300);
    }
    diag("%d cases left to the sandbox by the check run", n_refused);
    return done_testing();
}
