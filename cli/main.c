/*
 * sbxsh's main(): parse the options, then check, print or run.
 *
 * Everything that can fail below main returns a status and an error
 * message; this file alone decides exit statuses: 2 for usage and syntax
 * errors (as bash), 125 for sbxsh's own failures, else the command's status.
 */
#include "common/version.h"
#include "common/strbuf.h"
#include "common/util.h"
#include "shell/ast_json.h"
#include "cli/options.h"
#include "shell/parse.h"
#include "cli/line.h"
#include "cli/policy.h"
#include "cli/run.h"
#include "router/route.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>


/* The text -n, --ast and --route work on: the -c string, the script file, or
 * all of stdin. *owned is set when buf must be freed. */
static int load_input(const cli_options *o, char **buf, size_t *len, bool *owned, sbx_err *err)
{
    *owned = false;
    switch (o->mode) {
    case SH_INPUT_COMMAND:
        *buf = (char *)o->command;
        *len = strlen(o->command);
        return 0;
    case SH_INPUT_SCRIPT:
        *owned = true;
        return read_file(o->script, (size_t)1 << 30, buf, len, err);
    case SH_INPUT_STDIN:
    case SH_INPUT_INTERACTIVE: {
        strbuf sb = STRBUF_INIT;
        if (strbuf_read_fd(&sb, 0, SIZE_MAX) < 0) {
            strbuf_release(&sb);
            return sbx_errno(err, "reading stdin");
        }
        *owned = true;
        *buf = strbuf_detach(&sb, len);
        return 0;
    }
    }
    return sbx_errf(err, "no input");
}

/* The prefix bash puts before a syntax error in each input mode. */
static void error_prefix(const cli_options *o, strbuf *out)
{
    switch (o->mode) {
    case SH_INPUT_COMMAND:
        strbuf_addf(out, "%s: -c: ", o->progname);
        break;
    case SH_INPUT_SCRIPT:
        strbuf_addf(out, "%s: ", o->script);
        break;
    default:
        strbuf_addf(out, "%s: ", o->progname);
        break;
    }
}

static void parse_opts_from(const cli_options *o, sh_parse_opts *po)
{
    memset(po, 0, sizeof(*po));
    po->extglob = o->extglob;
}

/* -n, --ast and --route: load the input, refuse a binary script, parse it as
 * bash -n does (its warnings and errors in bash's words), then hand a good
 * parse to then() (none for -n). Returns the exit status. */
typedef int parsed_fn(const cli_options *o, const sh_parse *p, sbx_err *err);

static int with_parsed_input(const cli_options *o, parsed_fn *then)
{
    char *buf;
    size_t len;
    bool owned;
    sbx_err err;
    sh_parse p;
    sh_parse_opts po;
    int status = 0;

    if (load_input(o, &buf, &len, &owned, &err) < 0) {
        fprintf(stderr, "%s: %s\n", o->progname, err.msg);
        return o->mode == SH_INPUT_SCRIPT ? 127 : 2;
    }
    if (o->mode == SH_INPUT_SCRIPT && cli_script_is_binary(buf, len)) {
        fprintf(stderr, "%s: %s: cannot execute binary file\n", o->script, o->script);
        free(buf);
        return 126;
    }
    parse_opts_from(o, &po);
    sh_parse_all(&p, buf, len, &po, true);
    if (p.warnings.len) {
        /* bash: "bash: line 2: warning: ..." even with -c; "script: ..." */
        strbuf prefix = STRBUF_INIT, msg = STRBUF_INIT;
        strbuf_addf(&prefix, "%s: ", o->mode == SH_INPUT_SCRIPT ? o->script : o->progname);
        sh_parse_format_warnings(&p, prefix.buf, &msg);
        sbx_report_lines(msg.buf);   /* it quotes the script's text: sanitized */
        strbuf_release(&prefix);
        strbuf_release(&msg);
    }
    if (p.status != SH_OK) {
        strbuf prefix = STRBUF_INIT, msg = STRBUF_INIT;
        error_prefix(o, &prefix);
        sh_parse_format_error(&p, prefix.buf, &msg);
        sbx_report_lines(msg.buf);   /* it quotes the script's text: sanitized */
        strbuf_release(&prefix);
        strbuf_release(&msg);
        status = p.exit_status ? p.exit_status : 2;   /* 1 after an a=( ) error, as bash */
    } else if (then && then(o, &p, &err) < 0) {
        fprintf(stderr, "%s: %s\n", o->progname, err.msg);
        status = SBX_EXIT_INTERNAL;
    }
    sh_parse_free(&p);
    if (owned)
        free(buf);
    return status;
}

/* --ast: the syntax tree as JSON on stdout. */
static int print_ast(const cli_options *o, const sh_parse *p, sbx_err *err)
{
    return sh_ast_json_print(p, stdout, err);
}

/* --route: where each part would run (router/route.h); executes nothing. The
 * context is execution's (cli/line.h), so what execution refuses, this refuses. */
static int print_route(const cli_options *o, const sh_parse *p, sbx_err *err)
{
    return line_print_route(p, o->json, o->session, err);
}

int main(int argc, char **argv)
{
    cli_options o;
    sbx_err err;
    int status;

    /* sbx policy show|check: sbx execs this (cli/policy.c) */
    if (argc >= 2 && !strcmp(argv[1], "--policy"))
        return cli_policy_main(argc - 1, argv + 1);
    cli_options_init(&o);
    if (cli_options_parse(&o, argc, argv, isatty(0) && isatty(2), &err) < 0) {
        fprintf(stderr, "%s: %s\n", o.progname, err.msg);
        if (!o.error_without_usage)
            cli_options_print_usage(o.progname);
        cli_options_release(&o);
        return 2;
    }
    switch (o.action) {
    case SH_ACT_HELP:
        cli_options_print_help(o.progname);
        status = 0;
        break;
    case SH_ACT_VERSION:
        printf("sbxsh %s (bash-compatible; runs commands in a sandbox)\n", SBXSH_VERSION);
        status = 0;
        break;
    case SH_ACT_CHECK:
        status = with_parsed_input(&o, NULL);
        break;
    case SH_ACT_AST:
        status = with_parsed_input(&o, print_ast);
        break;
    case SH_ACT_ROUTE:
        status = with_parsed_input(&o, print_route);
        break;
    case SH_ACT_RUN:
    default:
        status = cli_shell_run(&o);
        break;
    }
    cli_options_release(&o);
    return status;
}
