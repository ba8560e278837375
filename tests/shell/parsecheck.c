/*
 * parsecheck: the parser on its own, for tests and measurements.
 *
 *   parsecheck [-O extglob] [--ast] [--next] [--track-shopt] [-c STRING | FILE]
 *
 * Without -c or FILE it reads stdin. Like `bash -n`: prints bash's messages
 * (prefixed "sbxsh: ", or "sbxsh: -c: " with -c, or "FILE: ") and exits 0,
 * 1 or 2. --ast prints the JSON tree; --next parses with sh_parse_next()
 * one complete command at a time, feeding the input a line at a time as a
 * reader of a pipe would, and prints each command's text.
 */
#include "common/strbuf.h"
#include "common/util.h"
#include "shell/ast_json.h"
#include "shell/parse.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int run_next(const char *buf, size_t len, const sh_parse_opts *base, const char *prefix)
{
    sh_parse_opts o = *base;
    size_t off = 0, avail = 0;
    int status = 0;

    while (off < len) {
        sh_parse p;
        size_t used = 0;
        /* offer one more line each time the parser asks for more */
        if (avail <= off) {
            const char *nl = memchr(buf + off, '\n', len - off);
            avail = nl ? (size_t)(nl - buf) + 1 : len;
        }
        sh_status st = sh_parse_next(&p, buf + off, avail - off, &o, avail == len, &used);
        fwrite(p.warnings.buf, 1, p.warnings.len, stderr);
        if (st == SH_INCOMPLETE) {
            const char *nl = memchr(buf + avail, '\n', len - avail);
            avail = nl ? (size_t)(nl - buf) + 1 : len;
            sh_parse_free(&p);
            continue;
        }
        if (st == SH_ERROR) {
            strbuf e = STRBUF_INIT;
            sh_parse_format_error(&p, prefix, &e);
            fwrite(e.buf, 1, e.len, stderr);
            strbuf_release(&e);
            status = p.exit_status;
            sh_parse_free(&p);
            if (status == 2)
                return 2;
        } else {
            printf("[%.*s]\n", (int)used, buf + off);
            o.extglob = p.extglob_after;
            sh_parse_free(&p);
        }
        for (size_t i = off; i < off + used; i++)
            if (buf[i] == '\n')
                o.first_line++;
        if (used == 0)
            break;
        off += used;
        if (avail < off)
            avail = off;
    }
    return status;
}

int main(int argc, char **argv)
{
    sh_parse_opts o = { 0 };
    const char *cmd = NULL, *file = NULL;
    bool ast = false, next = false;
    char *buf = NULL;
    size_t len = 0;
    strbuf prefix = STRBUF_INIT;
    sbx_err err;
    int i, status;

    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-O") && i + 1 < argc && !strcmp(argv[i + 1], "extglob")) {
            o.extglob = true;
            i++;
        } else if (!strcmp(argv[i], "-n")) {
            continue;
        } else if (!strcmp(argv[i], "--ast")) {
            ast = true;
        } else if (!strcmp(argv[i], "--next")) {
            next = true;
        } else if (!strcmp(argv[i], "--track-shopt")) {
            o.track_shopt = true;
        } else if (!strcmp(argv[i], "-c") && i + 1 < argc) {
            cmd = argv[++i];
        } else {
            file = argv[i];
        }
    }
    if (cmd) {
        buf = xstrdup(cmd);
        len = strlen(cmd);
        strbuf_addstr(&prefix, "sbxsh: -c: ");
    } else if (file) {
        if (read_file(file, (size_t)1 << 30, &buf, &len, &err) < 0) {
            fprintf(stderr, "sbxsh: %s\n", err.msg);
            return 127;
        }
        strbuf_addf(&prefix, "%s: ", file);
    } else {
        strbuf sb = STRBUF_INIT;
        for (;;) {
            ssize_t r;
            strbuf_grow(&sb, 65536);
            r = read(0, sb.buf + sb.len, sb.alloc - sb.len - 1);
            if (r <= 0)
                break;
            strbuf_setlen(&sb, sb.len + (size_t)r);
        }
        buf = strbuf_detach(&sb, &len);
        strbuf_addstr(&prefix, "sbxsh: ");
    }

    if (next) {
        status = run_next(buf, len, &o, prefix.buf);
    } else {
        sh_parse p;
        sh_parse_all(&p, buf, len, &o, true);
        fwrite(p.warnings.buf, 1, p.warnings.len, stderr);
        if (p.status != SH_OK) {
            strbuf e = STRBUF_INIT;
            sh_parse_format_error(&p, prefix.buf, &e);
            fwrite(e.buf, 1, e.len, stderr);
            strbuf_release(&e);
            status = p.exit_status ? p.exit_status : 2;
        } else {
            status = 0;
            if (ast && sh_ast_json_print(&p, stdout, &err) < 0) {
                fprintf(stderr, "sbxsh: %s\n", err.msg);
                status = 125;
            }
        }
        sh_parse_free(&p);
    }
    free(buf);
    strbuf_release(&prefix);
    return status;
}
