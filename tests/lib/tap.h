/*
 * A tiny TAP producer for C unit tests, run by prove.
 *
 *   int main(void) {
 *       ok(1 + 1 == 2, "arithmetic");
 *       is_int(f(), 3, "f gives 3");
 *       is_str(g(), "x", "g gives x");
 *       return done_testing();
 *   }
 *
 * Failures print the values as TAP diagnostics. Header-only: each test
 * program includes it once.
 *
 * Isolation, as tests/lib/tap.sh's: before main, every AGENT_SANDBOX_* variable and
 * XDG_STATE_HOME are taken out of the environment (a developer's shell or a CI job may set
 * any, and session_config_load reads them all), unless SBX_TEST_ISOLATED says a test that
 * runs this one made the environment on purpose.
 */
#ifndef SBX_TESTS_TAP_H
#define SBX_TESTS_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int tap_n, tap_failed;

__attribute__((constructor)) static void tap_isolate(void)
{
    if (getenv("SBX_TEST_ISOLATED"))
        return;
    for (size_t i = 0; environ[i];) {
        char name[256];
        size_t n = strcspn(environ[i], "=");
        if (strncmp(environ[i], "AGENT_SANDBOX_", 14) != 0 || n >= sizeof(name)) {
            i++;
            continue;
        }
        memcpy(name, environ[i], n);
        name[n] = '\0';
        unsetenv(name); /* moves the entries after it down: i is the next one now */
    }
    unsetenv("XDG_STATE_HOME");
    unsetenv("XDG_CONFIG_HOME");   /* the person's host-command policy (docs/policy.md) */
}

static inline void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void diag(const char *fmt, ...)
{
    va_list ap;
    char buf[4096];
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    /* Each diagnostic line gets the TAP comment prefix. On stderr, as Test::More's diag:
     * prove shows a test's stderr even when not verbose, so a failure in `make check`'s
     * log (CI's) says what was got and expected. */
    fflush(stdout);
    for (char *line = buf, *nl; line && *line; line = nl) {
        nl = strchr(line, '\n');
        if (nl)
            *nl++ = '\0';
        fprintf(stderr, "# %s\n", line);
    }
    fflush(stderr);
}

static inline int ok_at(int cond, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static inline int ok_at(int cond, const char *file, int line, const char *fmt, ...)
{
    char name[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof(name), fmt, ap);
    va_end(ap);
    for (char *p = name; *p; p++)
        if (*p == '\n' || *p == '#')
            *p = ' ';
    tap_n++;
    printf("%sok %d - %s\n", cond ? "" : "not ", tap_n, name);
    if (!cond) {
        tap_failed++;
        printf("#   failed at %s:%d\n", file, line);
    }
    fflush(stdout);
    return cond;
}

#define ok(cond, ...) ok_at(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

#define is_int(got, want, ...)                                                         \
    do {                                                                               \
        long long tap_g_ = (long long)(got), tap_w_ = (long long)(want);               \
        if (!ok_at(tap_g_ == tap_w_, __FILE__, __LINE__, __VA_ARGS__))                 \
            diag("     got: %lld\nexpected: %lld", tap_g_, tap_w_);                    \
    } while (0)

#define is_str(got, want, ...)                                                         \
    do {                                                                               \
        const char *tap_g_ = (got), *tap_w_ = (want);                                  \
        int tap_eq_ = (tap_g_ && tap_w_) ? strcmp(tap_g_, tap_w_) == 0 : tap_g_ == tap_w_; \
        if (!ok_at(tap_eq_, __FILE__, __LINE__, __VA_ARGS__))                          \
            diag("     got: '%s'\nexpected: '%s'", tap_g_ ? tap_g_ : "(null)",          \
                 tap_w_ ? tap_w_ : "(null)");                                          \
    } while (0)

#define skip(reason) (tap_n++, printf("ok %d # SKIP %s\n", tap_n, reason), fflush(stdout))

static inline int done_testing(void)
{
    printf("1..%d\n", tap_n);
    fflush(stdout);
    return tap_failed ? 1 : 0;
}

#endif
