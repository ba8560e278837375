/*
 * libFuzzer driver for the host-command policy (router/policy.c): the parser and the match
 * of a command's words against the rules. The input is a policy's text, then a NUL, then
 * the command's words separated by NULs (the first is the command name). Everything is
 * loaded and matched against a fixture context (PATH /usr/bin:/bin, so `program sh` and
 * `program env` resolve), and the results are checked independently of the matcher:
 *   - a match names a rule, a file, a line and an absolute program path whose base name
 *     is the command name, and never a program a built-in rule owns;
 *   - every reason and problem is printable text, one line each (no control byte but
 *     the newline ending a problem), so nothing a policy or a word holds reaches the
 *     terminal raw;
 *   - `sbx policy check` and `show` run to the end on whatever was loaded.
 * Patterns are the fuzzer's too: pcre2's limits (router/policy.h) must stop every match.
 *
 *   make fuzz-policy                (FUZZ_SECONDS, seeded)
 *   build-fuzz/fuzz-policy CORPUS   (by hand)
 */
#include "common/strbuf.h"
#include "router/policy.h"
#include "router/route.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void printable(const char *s, size_t n, bool newlines)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c < 0x20 && !(newlines && c == '\n')) || c == 0x7f)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const dirs[] = { "/nonexistent-fuzz-code" };
    const route_ctx ctx = { .code_dirs = dirs, .n_code_dirs = 1, .cwd = "/",
                            .path = "/usr/bin:/bin" };
    const char *text = (const char *)data, *nul = memchr(data, '\0', size);
    size_t tlen = nul ? (size_t)(nul - text) : size;
    char *words = NULL;
    char *argv[64];
    size_t argc = 0;
    strbuf why = STRBUF_INIT, out = STRBUF_INIT;
    route_policy_match m;
    route_policy *pol = route_policy_new();

    route_policy_load_text(pol, "fuzz", text, tlen, &ctx);
    printable(route_policy_problems(pol), strlen(route_policy_problems(pol)), true);
    if (nul) {
        size_t wlen = size - tlen - 1;
        words = malloc(wlen + 1);
        memcpy(words, nul + 1, wlen);
        words[wlen] = '\0';
        for (char *w = words; argc < 64; ) {
            argv[argc++] = w;
            char *next = memchr(w, '\0', (size_t)(words + wlen - w));
            if (!next || next >= words + wlen)
                break;
            w = next + 1;
        }
        if (route_policy_match_argv(pol, &ctx, argv, argc, &m, &why)) {
            const char *base;
            if (!m.rule || !m.file || !m.line || !m.prog || m.prog[0] != '/')
                abort();
            base = strrchr(m.prog, '/') + 1;
            if (strcmp(base, argv[0]))
                abort();
            if (strchr(argv[0], '/') || route_policy_builtin_name(argv[0]))
                abort();
        } else {
            printable(why.buf, why.len, false);
        }
    }
    route_policy_check(pol, &out);
    printable(out.buf, out.len, true);
    strbuf_reset(&out);
    route_policy_show(pol, &out);
    free(words);
    strbuf_release(&why);
    strbuf_release(&out);
    route_policy_free(pol);
    return 0;
}
