/*
 * libsbxsh (lib/sbxsh.h) as a program uses it, against real sandboxes (the default local
 * runtime): exit statuses and output equal to `sbxsh -c` on a sample of the route table's
 * lines and a few of its own; the caps (head and tail kept, UTF-8 characters whole, totals),
 * streaming, stdin from a buffer and from an fd, the timeout, a cancel from another thread,
 * two threads on two sessions at once, status, and a handle used after its release. Its
 * own HOME, runtime and state directories under a scratch directory, sessions released at
 * the end. Runs under `make check-asan` too (the library and sbxsh built with ASan).
 */
#include "lib/sbxsh.h"
#include "tests/lib/tap.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static char top[4096], tmp[4096], code_a[4200], code_b[4200], program[4200];
static char sess_a[64], sess_b[64];

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
    char cmd[16384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    if (system(cmd) != 0)
        diag("setup command failed: %s", cmd);
}

/* A growable byte buffer for what sbxsh -c printed. */
typedef struct out {
    char *p;
    size_t len;
} out;

/* `sbxsh --session S -c LINE` from dir, stdin /dev/null, as a shell would run it: the
 * reference the library must equal. Returns bash's $? (128+N for a signal). */
static int sbxsh_c(const char *dir, const char *session, const char *line, out *o, out *e)
{
    int op[2], ep[2], ws;
    pid_t pid;
    struct pollfd p[2];

    if (pipe(op) < 0 || pipe(ep) < 0)
        return -1;
    pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_RDONLY);
        dup2(null, 0);
        dup2(op[1], 1);
        dup2(ep[1], 2);
        close(op[0]);
        close(ep[0]);
        if (chdir(dir) < 0)
            _exit(126);
        alarm(120);   /* a bound: a line that waits for ever fails the test, not hangs it */
        execl(program, program, "--session", session, "-c", line, (char *)NULL);
        _exit(127);
    }
    close(op[1]);
    close(ep[1]);
    /* both pipes, so that neither fills while the other is read */
    p[0] = (struct pollfd){ .fd = op[0], .events = POLLIN };
    p[1] = (struct pollfd){ .fd = ep[0], .events = POLLIN };
    while (p[0].fd >= 0 || p[1].fd >= 0) {
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        for (int i = 0; i < 2; i++) {
            char b[65536];
            ssize_t n;
            if (p[i].fd < 0 || !p[i].revents)
                continue;
            n = read(p[i].fd, b, sizeof(b));
            if (n > 0) {
                out *t = i ? e : o;
                t->p = realloc(t->p, t->len + (size_t)n + 1);
                memcpy(t->p + t->len, b, (size_t)n);
                t->len += (size_t)n;
                t->p[t->len] = '\0';
            } else if (n == 0 || errno != EINTR) {
                close(p[i].fd);
                p[i].fd = -1;
            }
        }
    }
    while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
        ;
    return WIFSIGNALED(ws) ? 128 + WTERMSIG(ws) : WEXITSTATUS(ws);
}

static sbxsh *open_at(const char *dir, const char *session)
{
    sbxsh_options *o = sbxsh_options_new();
    sbxsh_error err;
    sbxsh *h = NULL;
    if (sbxsh_options_set_program(o, program, &err) < 0 || sbxsh_options_set_cwd(o, dir, &err) < 0 ||
        sbxsh_options_add_code_dir(o, dir, &err) < 0 ||
        sbxsh_options_set_session(o, session, &err) < 0 || sbxsh_open(o, &h, &err) < 0)
        diag("opening %s in %s: %s", session, dir, err.message);
    sbxsh_options_free(o);
    return h;
}

/* Runs line on h with the given options; returns the result (NULL: diag'd). */
static sbxsh_result *run(sbxsh *h, const char *line, const sbxsh_run_options *r)
{
    sbxsh_result *res = NULL;
    sbxsh_error err;
    if (sbxsh_run(h, line, r, &res, &err) < 0)
        diag("sbxsh_run(%s): %s (%s)", line, err.message, sbxsh_code_name(err.code));
    return res;
}

/* ---- the route table's lines ---------------------------------------------------------- */

/* Lines of the route table safe to run twice in a repository with no remote: nothing that
 * reaches the network (URLs, user@host), changes the tree (a run would see the other's
 * change), times itself, waits, runs in the background or drives sbx itself (release). */
static bool runnable(const char *line)
{
    static const char *const no[] = { "@", "://", "clone", "sbx", "sudo", "rm ", "while", "sleep",
                                      "source", "python", "pytest", "git add", "commit", "time ",
                                      "RANDOM", "date", "read ", "ssh", "<NL>", "<CR>", "<TAB>",
                                      "<NUL>", "<ESC>", "::", "fd:", "ext:", "TRACE", "push .", "9999", "%(", "mkdir", "touch", ">", "checkout",
                                      "switch", "stash", "git tag", "branch -", "init", "config",
                                      "reset", "merge", "rebase", "cherry", "worktree", "gc",
                                      "submodule", "$$", "ps ", "kill", "top", "exec", "cd -" };
    const char *amp = strchr(line, '&');
    if (amp && !strstr(line, "&&"))
        return false;
    for (size_t i = 0; i < NELEM(no); i++)
        if (strstr(line, no[i]))
            return false;
    return true;
}

static void parity(sbxsh *h)
{
    FILE *f;
    char path[4200], line[8192];
    size_t n = 0, picked = 0;
    static const char *const own[] = {
        "exit 3", "false", "echo out; echo err >&2; exit 7", "nosuchcommand_x", "( exit 300 )",
        "kill -TERM $BASHPID", "printf 'a\\0b\\n'", "git status --short; echo $?",
        "git log --oneline -1 | wc -l", "cd sub && pwd", "echo x | grep -c x && ls",
        "git push; echo after $?", "set -e; false; echo not", "trap 'echo bye' EXIT; exit 4",
    };

    sbxsh_run_options *bounded = sbxsh_run_options_new();
    sbxsh_run_options_set_timeout_ms(bounded, 120000, NULL);
    snprintf(path, sizeof(path), "%s/tests/router/route-table.txt", top);
    f = fopen(path, "r");
    ok(f != NULL, "the route table is read (%s)", path);
    if (!f) {
        sbxsh_run_options_free(bounded);
        return;
    }
    /* every 5th runnable line: a sample that changes only when the table does */
    while (fgets(line, sizeof(line), f)) {
        char *tab, *text, *end;
        line[strcspn(line, "\n")] = '\0';
        /* the policy's section routes real programs (kubectl, curl) to the host under a
         * policy file these runs do not load: their output (timestamps) differs each run */
        if (!strncmp(line, "@policy", 7))
            break;
        if (!line[0] || line[0] == '#' || line[0] == '@' || !(tab = strchr(line, '\t')))
            continue;
        text = tab + 1;
        if ((end = strchr(text, '\t')))
            *end = '\0';
        if (!runnable(text) || n++ % 5)
            continue;
        picked++;
        out o = { 0 }, e = { 0 };
        int want = sbxsh_c(code_a, sess_a, text, &o, &e);
        sbxsh_result *res = run(h, text, bounded);
        size_t ol, el;
        const char *go = res ? sbxsh_result_data(res, SBXSH_STDOUT, &ol) : "";
        const char *ge = res ? sbxsh_result_data(res, SBXSH_STDERR, &el) : "";
        bool same = res && sbxsh_result_exit_code(res) == want && ol == o.len &&
                    !memcmp(go, o.p ? o.p : "", ol) && el == e.len && !memcmp(ge, e.p ? e.p : "", el);
        ok(same, "as sbxsh -c (status %d): %s", want, text);
        if (!same && res)
            diag("library: %d, stdout [%s], stderr [%s]\nsbxsh -c: %d, stdout [%s], stderr [%s]",
                 sbxsh_result_exit_code(res), go, ge, want, o.p ? o.p : "", e.p ? e.p : "");
        sbxsh_result_free(res);
        free(o.p);
        free(e.p);
    }
    fclose(f);
    ok(picked >= 20, "%zu lines of the route table were run", picked);
    for (size_t i = 0; i < NELEM(own); i++) {
        out o = { 0 }, e = { 0 };
        int want = sbxsh_c(code_a, sess_a, own[i], &o, &e);
        sbxsh_result *res = run(h, own[i], bounded);
        size_t ol, el;
        const char *go = res ? sbxsh_result_data(res, SBXSH_STDOUT, &ol) : "";
        const char *ge = res ? sbxsh_result_data(res, SBXSH_STDERR, &el) : "";
        ok(res && sbxsh_result_exit_code(res) == want && ol == o.len &&
               !memcmp(go, o.p ? o.p : "", ol) && el == e.len && !memcmp(ge, e.p ? e.p : "", el),
           "as sbxsh -c (status %d): %s", want, own[i]);
        sbxsh_result_free(res);
        free(o.p);
        free(e.p);
    }
    sbxsh_run_options_free(bounded);
}

/* ---- caps, streaming, stdin ------------------------------------------------------------ */

static bool valid_utf8(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t len = s[i] < 0x80 ? 1 : s[i] >= 0xf0 ? 4 : s[i] >= 0xe0 ? 3 : s[i] >= 0xc0 ? 2 : 0;
        if (!len || i + len > n)
            return false;
        for (size_t k = 1; k < len; k++)
            if ((s[i + k] & 0xc0) != 0x80)
                return false;
        i += len;
    }
    return true;
}

typedef struct counted {
    uint64_t bytes[3];
    int calls;
} counted;

static int count_output(void *ctx, int stream, const void *data, size_t len)
{
    counted *c = ctx;
    (void)data;
    c->bytes[stream] += len;
    c->calls++;
    return 0;
}

static void caps(sbxsh *h)
{
    sbxsh_run_options *r = sbxsh_run_options_new();
    sbxsh_result *res;
    size_t len;
    const char *d;
    counted c = { 0 };

    sbxsh_run_options_set_capture(r, 1000, NULL);
    res = run(h, "head -c 300000 /dev/zero | tr '\\0' a; printf END; echo oops >&2", r);
    ok(res != NULL, "a long output runs");
    if (res) {
        d = sbxsh_result_data(res, SBXSH_STDOUT, &len);
        is_int((long long)sbxsh_result_total(res, SBXSH_STDOUT), 300003, "its total is counted");
        ok(sbxsh_result_truncated(res, SBXSH_STDOUT), "stdout is truncated");
        is_int((long long)len, 1000, "1000 bytes of it are kept");
        is_int((long long)sbxsh_result_head_len(res, SBXSH_STDOUT), 500, "the first 500 ...");
        ok(len >= 3 && !memcmp(d + len - 3, "END", 3) && d[0] == 'a', "... and the last 500");
        d = sbxsh_result_data(res, SBXSH_STDERR, &len);
        ok(!sbxsh_result_truncated(res, SBXSH_STDERR) && len == 5 && !strcmp(d, "oops\n"),
           "stderr is apart, whole");
        is_int((long long)sbxsh_result_total(res, SBXSH_OUTPUT), 300008, "both streams in output");
        ok(sbxsh_result_truncated(res, SBXSH_OUTPUT), "output is truncated too");
        sbxsh_result_free(res);
    }

    /* 2-byte characters and an odd cap: neither end of the gap cuts one */
    sbxsh_run_options_set_capture(r, 1001, NULL);
    res = run(h, "for i in $(seq 2000); do printf '\\303\\251'; done; printf x", r);
    if (res) {
        d = sbxsh_result_data(res, SBXSH_STDOUT, &len);
        ok(sbxsh_result_truncated(res, SBXSH_STDOUT) &&
               valid_utf8((const unsigned char *)d, len) && d[len - 1] == 'x',
           "a cut keeps UTF-8 characters whole (%zu bytes kept, head %zu)", len,
           sbxsh_result_head_len(res, SBXSH_STDOUT));
        sbxsh_result_free(res);
    } else {
        ok(0, "a cut keeps UTF-8 characters whole");
    }

    /* capture 0 and a callback: every byte streamed, none kept */
    sbxsh_run_options_set_capture(r, 0, NULL);
    sbxsh_run_options_set_output(r, count_output, &c, NULL);
    res = run(h, "seq 100000; echo e >&2", r);
    ok(res && c.bytes[SBXSH_STDOUT] == 588895 && c.bytes[SBXSH_STDERR] == 2 && c.calls >= 2,
       "the callback gets every byte, by stream (%llu, %llu)",
       (unsigned long long)c.bytes[SBXSH_STDOUT], (unsigned long long)c.bytes[SBXSH_STDERR]);
    ok(res && sbxsh_result_data(res, SBXSH_STDOUT, &len) && len == 0 &&
           sbxsh_result_total(res, SBXSH_STDOUT) == 588895,
       "capture 0 keeps nothing but counts");
    sbxsh_result_free(res);
    sbxsh_run_options_free(r);

    /* stdin: a buffer, then a file's fd */
    r = sbxsh_run_options_new();
    char *big = malloc(200000);
    memset(big, 'z', 200000);
    sbxsh_run_options_set_stdin_buffer(r, big, 200000, NULL);
    free(big);
    res = run(h, "wc -c", r);
    ok(res && !strcmp(sbxsh_result_data(res, SBXSH_STDOUT, NULL), "200000\n"),
       "stdin from a buffer: the command reads all of it, then end of file");
    sbxsh_result_free(res);
    /* a command that reads none of it: the pipe closes under the library's write, and the
     * SIGPIPE must not reach this process (which, as C programs do, does not ignore it) */
    big = malloc(4 << 20);
    memset(big, 'y', 4 << 20);
    sbxsh_run_options_set_stdin_buffer(r, big, 4 << 20, NULL);
    free(big);
    res = run(h, "head -c 3; echo", r);
    ok(res && !strcmp(sbxsh_result_data(res, SBXSH_STDOUT, NULL), "yyy\n") &&
           sbxsh_result_exit_code(res) == 0,
       "stdin the command stops reading: its result, and no SIGPIPE here");
    sbxsh_result_free(res);
    res = run(h, "true", r);
    ok(res && sbxsh_result_exit_code(res) == 0, "stdin the command never reads");
    sbxsh_result_free(res);
    sbxsh_run_options_set_stdin_buffer(r, "", 0, NULL);
    char file[4300];
    snprintf(file, sizeof(file), "%s/stdin.txt", tmp);
    int fd = open(file, O_CREAT | O_TRUNC | O_RDWR, 0600);
    if (write(fd, "line one\nline two\n", 18) != 18)
        diag("write failed");
    lseek(fd, 0, SEEK_SET);
    sbxsh_run_options_set_stdin_fd(r, fd, NULL);
    res = run(h, "grep -c line", r);
    ok(res && !strcmp(sbxsh_result_data(res, SBXSH_STDOUT, NULL), "2\n"), "stdin from an fd");
    ok(fcntl(fd, F_GETFD) >= 0, "the caller's fd stays open");
    close(fd);
    sbxsh_result_free(res);
    sbxsh_run_options_free(r);
    res = run(h, "cat; echo rc=$?", NULL);
    ok(res && !strcmp(sbxsh_result_data(res, SBXSH_STDOUT, NULL), "rc=0\n"),
       "no stdin given: empty, not the caller's");
    sbxsh_result_free(res);
}

/* ---- timeout and cancel ---------------------------------------------------------------- */

typedef struct cancel_run {
    sbxsh *h;
    pthread_mutex_t m;
    pthread_cond_t cv;
    bool started;
    sbxsh_result *res;
} cancel_run;

static int on_started(void *ctx, int stream, const void *data, size_t len)
{
    cancel_run *c = ctx;
    (void)stream;
    if (memmem(data, len, "started", 7)) {
        pthread_mutex_lock(&c->m);
        c->started = true;
        pthread_cond_signal(&c->cv);
        pthread_mutex_unlock(&c->m);
    }
    return 0;
}

static void *cancel_thread(void *arg)
{
    cancel_run *c = arg;
    sbxsh_run_options *r = sbxsh_run_options_new();
    sbxsh_run_options_set_output(r, on_started, c, NULL);
    c->res = run(c->h, "echo started; sleep 120; echo not reached", r);
    sbxsh_run_options_free(r);
    return NULL;
}

static void timeout_and_cancel(sbxsh *h)
{
    sbxsh_run_options *r = sbxsh_run_options_new();
    sbxsh_result *res;
    cancel_run c = { .h = h };
    pthread_t t;

    sbxsh_run_options_set_timeout_ms(r, 4000, NULL);   /* room for "before" under load */
    res = run(h, "echo before; sleep 120; echo after", r);
    ok(res && sbxsh_result_timed_out(res) && !sbxsh_result_cancelled(res),
       "a line past its timeout is ended, and says so");
    ok(res && sbxsh_result_exit_code(res) != 0 &&
           !strcmp(sbxsh_result_data(res, SBXSH_STDOUT, NULL), "before\n"),
       "what it printed before is kept (status %d)", res ? sbxsh_result_exit_code(res) : -1);
    sbxsh_result_free(res);
    sbxsh_run_options_free(r);

    is_int(sbxsh_cancel(h), 0, "cancel with nothing running does nothing");
    pthread_mutex_init(&c.m, NULL);
    pthread_cond_init(&c.cv, NULL);
    pthread_create(&t, NULL, cancel_thread, &c);
    pthread_mutex_lock(&c.m);
    while (!c.started)
        pthread_cond_wait(&c.cv, &c.m);
    pthread_mutex_unlock(&c.m);
    is_int(sbxsh_cancel(h), 1, "cancel from another thread while a line runs");
    pthread_join(t, NULL);
    ok(c.res && sbxsh_result_cancelled(c.res) && !sbxsh_result_timed_out(c.res) &&
           !strcmp(sbxsh_result_data(c.res, SBXSH_STDOUT, NULL), "started\n"),
       "the cancelled line returns its result, marked cancelled (status %d)",
       c.res ? sbxsh_result_exit_code(c.res) : -1);
    sbxsh_result_free(c.res);
    res = run(h, "echo again", NULL);
    ok(res && !strcmp(sbxsh_result_data(res, SBXSH_STDOUT, NULL), "again\n"),
       "the handle runs lines after a cancel");
    sbxsh_result_free(res);

    /* a cancel fd made readable before the run: the run is cancelled, none is lost */
    int cfd[2];
    if (pipe(cfd) < 0 || write(cfd[1], "c", 1) != 1)
        diag("pipe failed");
    r = sbxsh_run_options_new();
    ok(sbxsh_run_options_set_cancel_fd(r, cfd[0], NULL) == 0, "a cancel fd is taken");
    res = run(h, "sleep 120; echo never", r);
    ok(res && sbxsh_result_cancelled(res) && !strstr(sbxsh_result_data(res, SBXSH_STDOUT, NULL), "never"),
       "a cancel fd readable before the run cancels it");
    sbxsh_result_free(res);
    char got;
    ok(read(cfd[0], &got, 1) == 1 && got == 'c', "the caller's byte is still there (not read)");
    sbxsh_run_options_set_cancel_fd(r, -1, NULL);
    res = run(h, "echo after", r);
    ok(res && !sbxsh_result_cancelled(res), "without it, the next run runs");
    sbxsh_result_free(res);
    sbxsh_run_options_free(r);
    close(cfd[0]);
    close(cfd[1]);
}

/* ---- two threads, two sessions --------------------------------------------------------- */

typedef struct two {
    const char *dir, *session, *word;
    int good;
} two;

static void *two_thread(void *arg)
{
    two *w = arg;
    sbxsh *h = open_at(w->dir, w->session);
    char line[256], want[64];
    if (!h)
        return NULL;
    snprintf(want, sizeof(want), "%s\n", w->word);
    for (int i = 0; i < 4; i++) {
        snprintf(line, sizeof(line), "echo %s >>made-%s.txt; tail -n1 made-%s.txt", w->word,
                 w->word, w->word);
        sbxsh_result *res = run(h, line, NULL);
        if (res && sbxsh_result_exit_code(res) == 0 &&
            !strcmp(sbxsh_result_data(res, SBXSH_STDOUT, NULL), want))
            w->good++;
        sbxsh_result_free(res);
    }
    sbxsh_close(h);
    return NULL;
}

static void two_sessions(void)
{
    two a = { code_a, sess_a, "alpha", 0 }, b = { code_b, sess_b, "beta", 0 },
        g = { code_a, sess_a, "gamma", 0 };
    pthread_t ta, tb, tg;
    char path[4300], *text = NULL;
    size_t len;
    FILE *f;

    pthread_create(&ta, NULL, two_thread, &a);
    pthread_create(&tb, NULL, two_thread, &b);
    pthread_create(&tg, NULL, two_thread, &g);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    pthread_join(tg, NULL);
    is_int(a.good, 4, "thread A ran its 4 lines in its session");
    is_int(b.good, 4, "thread B ran its 4 lines in its session, at the same time");
    is_int(g.good, 4, "and a third thread, a second handle on A's session, beside A's");
    snprintf(path, sizeof(path), "%s/made-beta.txt", code_b);
    f = fopen(path, "r");
    if (f) {
        text = calloc(1, 256);
        len = fread(text, 1, 255, f);
        text[len] = '\0';
        fclose(f);
    }
    ok(text && !strcmp(text, "beta\nbeta\nbeta\nbeta\n"), "B's file came back to B's code directory");
    free(text);
    snprintf(path, sizeof(path), "%s/made-alpha.txt", code_b);
    ok(access(path, F_OK) != 0, "and A's did not land there");
}

int main(void)
{
    const char *bin = getenv("SBXSH_BIN");
    sbxsh_error err;
    sbxsh_options *o;
    sbxsh *h;
    char *json = NULL;

    if (!bin || !getcwd(top, sizeof(top))) {
        printf("1..0 # SKIP SBXSH_BIN is not set (make check sets it)\n");
        return 0;
    }
    snprintf(program, sizeof(program), "%s/sbxsh", bin);
    snprintf(tmp, sizeof(tmp), "%s/sbxsh-libt-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmp))
        return 1;
    snprintf(code_a, sizeof(code_a), "%s/code-a", tmp);
    snprintf(code_b, sizeof(code_b), "%s/code-b", tmp);
    snprintf(sess_a, sizeof(sess_a), "libt-%d-a", (int)getpid());
    snprintf(sess_b, sizeof(sess_b), "libt-%d-b", (int)getpid());
    /* a world of its own: HOME, the runtime and state directories */
    char v[4300];
    snprintf(v, sizeof(v), "%s/home", tmp);
    setenv("HOME", v, 1);
    snprintf(v, sizeof(v), "%s/run", tmp);
    setenv("XDG_RUNTIME_DIR", v, 1);
    snprintf(v, sizeof(v), "%s/state", tmp);
    setenv("AGENT_SANDBOX_STATE_DIR", v, 1);
    sh("cd '%s' && mkdir -p home run state code-a/sub code-b && chmod 700 run && "
       "printf '[user]\\n\\tname = T\\n\\temail = t@example.com\\n' >home/.gitconfig && "
       "cd code-a && git init -q && echo x >file.txt && printf 'a\\nb\\n' >other.txt && "
       "git add . && git commit -qm one && cd ../code-b && git init -q", tmp);

    is_str(sbxsh_version(), SBXSH_VERSION_STRING, "the library's version is the header's");

    /* errors as values */
    o = sbxsh_options_new();
    ok(sbxsh_options_set_cwd(o, "relative/dir", &err) < 0 && err.code == SBXSH_E_INVALID,
       "a relative cwd is refused: %s", err.message);
    sbxsh_options_set_program(o, program, NULL);
    sbxsh_options_set_cwd(o, code_a, NULL);
    sbxsh_options_set_session(o, "bad name", NULL);
    ok(sbxsh_open(o, &h, &err) < 0 && err.code == SBXSH_E_CONFIG && !h &&
           strstr(err.message, "invalid session name"),
       "a session name sbxsh refuses fails the open with sbxsh's words: %s", err.message);
    sbxsh_options_free(o);
    o = sbxsh_options_new();
    sbxsh_options_set_program(o, "/nonexistent/sbxsh", NULL);
    ok(sbxsh_open(o, &h, &err) < 0 && err.code == SBXSH_E_SBXSH && strstr(err.message, "/nonexistent/sbxsh"),
       "a missing sbxsh is said: %s", err.message);
    sbxsh_options_free(o);

    h = open_at(code_a, sess_a);
    ok(h != NULL, "a handle opens");
    if (!h) {
        sh("rm -rf '%s'", tmp);
        return done_testing();
    }
    is_str(sbxsh_session(h), sess_a, "it names its session");

    parity(h);
    caps(h);
    timeout_and_cancel(h);
    two_sessions();

    ok(sbxsh_status(h, &json, &err) == 0 && json && strstr(json, "\"active\":true") &&
           strstr(json, sess_a),
       "status: the session runs");
    sbxsh_free(json);
    ok(sbxsh_release(h, &err) == 0, "release: %s", err.message);
    sbxsh_result *res = NULL;
    ok(sbxsh_run(h, "echo x", NULL, &res, &err) < 0 && err.code == SBXSH_E_RELEASED && !res,
       "a line on a released handle is an error: %s", err.message);
    ok(sbxsh_status(h, &json, &err) < 0 && err.code == SBXSH_E_RELEASED,
       "so is its status");
    ok(sbxsh_release(h, &err) < 0 && err.code == SBXSH_E_RELEASED, "and a second release");
    sbxsh_close(h);

    /* B's session, and the derived one of nothing else */
    h = open_at(code_b, sess_b);
    if (h) {
        sbxsh_release(h, NULL);
        sbxsh_close(h);
    }
    sh("rm -rf '%s'", tmp);
    return done_testing();
}
