/*
 * libsbxsh's example (libsbxsh(3), docs/library.md): runs each argument as a command line
 * in the session of the current directory, printing its output as it comes and then its
 * exit code and how much of the output was kept.
 *
 *     cc -o example doc/libsbxsh-example.c $(pkg-config --cflags --libs sbxsh)
 *     ./example 'git status --short' 'make -j2 test'
 *     ./example --program ./sbxsh 'ls'      # another sbxsh than the installed one
 *
 * `make check` builds it against the build tree's library (tests/libsbxsh/example.t runs
 * it).
 */
#include <sbxsh.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Output as it comes: the command's stdout to ours, its stderr to ours. It is the sandbox's
 * bytes: to a terminal, control bytes but newline and tab are shown as \xNN, so that nothing
 * the sandbox wrote drives the terminal (its title, its clipboard, answers typed back);
 * to a pipe or a file, as they are. */
static int print_output(void *ctx, int stream, const void *data, size_t len)
{
    FILE *f = stream == SBXSH_STDERR ? stderr : stdout;
    const unsigned char *p = data;
    (void)ctx;
    if (!isatty(fileno(f))) {
        fwrite(data, 1, len, f);
        return 0;   /* non-zero would cancel the run */
    }
    for (size_t i = 0; i < len; i++) {
        /* C0 controls, DEL, and the C1 controls as UTF-8 (U+0080..U+009F: \xc2\x80..) */
        if ((p[i] < 0x20 && p[i] != '\n' && p[i] != '\t') || p[i] == 0x7f) {
            fprintf(f, "\\x%02x", p[i]);
        } else if (p[i] == 0xc2 && i + 1 < len && p[i + 1] >= 0x80 && p[i + 1] < 0xa0) {
            fprintf(f, "\\xc2\\x%02x", p[i + 1]);
            i++;
        } else {
            fputc(p[i], f);
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    sbxsh_error err;
    sbxsh_options *o = sbxsh_options_new();
    sbxsh_run_options *r = sbxsh_run_options_new();
    const char *program = NULL;
    sbxsh *h;
    int status = 0, first = 1;

    if (!o || !r)
        return 125;
    if (argc > 2 && !strcmp(argv[1], "--program")) {
        program = argv[2];
        first = 3;
    }
    if (program && sbxsh_options_set_program(o, program, &err) < 0)
        goto fail;
    if (sbxsh_open(o, &h, &err) < 0)
        goto fail;
    sbxsh_options_free(o);
    o = NULL;
    printf("libsbxsh %s, session %s\n", sbxsh_version(), sbxsh_session(h));
    sbxsh_run_options_set_output(r, print_output, NULL, NULL);
    sbxsh_run_options_set_capture(r, 4096, NULL);    /* keep 2 KiB of each end */
    sbxsh_run_options_set_timeout_ms(r, 600000, NULL);
    for (int i = first; i < argc; i++) {
        sbxsh_result *res;
        if (sbxsh_run(h, argv[i], r, &res, &err) < 0) {
            sbxsh_close(h);
            goto fail;
        }
        fflush(stdout);
        printf("[%s] exit %d, %llu bytes of output%s\n", argv[i], sbxsh_result_exit_code(res),
               (unsigned long long)sbxsh_result_total(res, SBXSH_OUTPUT),
               sbxsh_result_truncated(res, SBXSH_OUTPUT) ? " (truncated in the result)" : "");
        status = sbxsh_result_exit_code(res);
        sbxsh_result_free(res);
    }
    sbxsh_run_options_free(r);
    sbxsh_close(h);
    return status;
fail:
    fprintf(stderr, "example: %s (%s)\n", err.message, sbxsh_code_name(err.code));
    sbxsh_options_free(o);
    sbxsh_run_options_free(r);
    return 125;
}
