/*
 * The input loops: -c, a script, stdin and a terminal. Each hands complete
 * commands to the line executor (cli/line.h), which decides where each
 * part runs.
 */
#include "cli/run.h"
#include "common/strbuf.h"
#include "cli/interactive.h"
#include "cli/line.h"
#include "cli/startup.h"
#include "session/termfilter.h"
#include "shell/parse.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

bool cli_script_is_binary(const char *text, size_t len)
{
    for (size_t i = 0; i < len && i < 80; i++) {
        if (text[i] == '\n')
            return false;
        if (text[i] == '\0')
            return true;
    }
    return false;
}

/* The loops below return a wait status: what sbxsh ends with (line_exit()). */
#define EXIT_WITH(code) W_EXITCODE((code), 0)

static int fail(const cli_options *o, const sbx_err *err)
{
    fflush(stdout);
    fprintf(stderr, "%s: %s\n", o->progname, err->msg);
    return EXIT_WITH(SBX_EXIT_INTERNAL);
}

/* Are fds 0, 1 and 2 one terminal? Only then do sandbox commands get a pty: a pty has one
 * output, so a stderr redirected away from the terminal (`2>log`) keeps pipes, and with
 * them its redirection. */
static bool stdio_is_one_terminal(void)
{
    struct stat st[3];
    for (int fd = 0; fd < 3; fd++)
        if (!isatty(fd) || fstat(fd, &st[fd]) < 0)
            return false;
    return st[0].st_rdev == st[1].st_rdev && st[1].st_rdev == st[2].st_rdev;
}

static void line_opts_from(const cli_options *o, line_opts *lo)
{
    memset(lo, 0, sizeof(*lo));
    lo->argv0 = o->argv0;
    lo->dollar0 = o->dollar0;
    lo->errname = o->progname;
    lo->promptname = strrchr(o->argv0, '/') ? strrchr(o->argv0, '/') + 1 : o->argv0;
    lo->bash_args = (const char *const *)o->bash_args.v;
    lo->positional = (const char *const *)o->positional.v;
    lo->session = o->session;
    lo->errexit = o->errexit;
    lo->stdin_is_script = o->mode == SH_INPUT_STDIN || o->mode == SH_INPUT_INTERACTIVE;
    lo->interactive = o->mode == SH_INPUT_INTERACTIVE;
    lo->login = o->login;
    /* as bash gives a program the terminal: -c, a script, a terminal session (stdin mode
     * reads its commands from fd 0, which is then not the commands' terminal) */
    lo->tty = o->mode != SH_INPUT_STDIN && stdio_is_one_terminal();
    for (size_t i = 0; i + 1 < o->bash_args.n; i++)
        if (!strcmp(o->bash_args.v[i], "-o") && !strcmp(o->bash_args.v[i + 1], "pipefail"))
            lo->pipefail = true;
}

/* -c STRING and SCRIPT: the whole text at once. */
static int run_program(const cli_options *o, line_exec *x)
{
    sbx_err err;
    int ws;
    char *text = NULL;
    size_t len;

    if (o->mode == SH_INPUT_SCRIPT) {
        if (read_file(o->script, (size_t)1 << 30, &text, &len, &err) < 0) {
            /* bash: "bash: nosuch.sh: No such file or directory", status 127 */
            fprintf(stderr, "%s: %s: %s\n", o->progname, o->script,
                    errno == ENOENT ? "No such file or directory" : err.msg);
            return EXIT_WITH(errno == ENOENT ? 127 : 126);
        }
        if (cli_script_is_binary(text, len)) {
            fprintf(stderr, "%s: %s: cannot execute binary file\n", o->script, o->script);
            free(text);
            return EXIT_WITH(126);
        }
    }
    if (line_exec_program(x, text ? text : o->command, text ? len : strlen(o->command),
                          o->extglob, o->mode == SH_INPUT_SCRIPT ? o->script : NULL, &ws,
                          &err) < 0) {
        free(text);
        return fail(o, &err);
    }
    free(text);
    return ws;
}

/* Reads more input into buf: from readline at a terminal (prompt decides
 * PS1 or PS2), else from fd 0. Returns 0 at end of input. */
static int read_more(const cli_options *o, interactive *ia, strbuf *buf, bool continuation)
{
    if (o->mode == SH_INPUT_INTERACTIVE)
        return interactive_read(ia, continuation, buf);
    for (;;) {
        ssize_t r;
        strbuf_grow(buf, 65536);
        r = read(0, buf->buf + buf->len, strbuf_avail(buf));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return 0;
        strbuf_setlen(buf, buf->len + (size_t)r);
        return 1;
    }
}

/*
 * Prints a syntax error of interactive mode, where bash reports it and goes on, as bash's
 * parser_error does when it reads from a person: "NAME: MESSAGE" (NAME: argv[0]'s basename,
 * as in every message of bash at its prompt: get_name_for_error), without the "line N: "
 * of a script and without the offending line that a script's error is followed by
 * (parse.y: report_syntax_error prints it only when not interactive).
 */
static void print_syntax_error(const cli_options *o, const sh_parse *p)
{
    strbuf msg = STRBUF_INIT, offending = STRBUF_INIT;
    const char *s = p->errors.buf, *end = s + p->errors.len;
    /* bash -i names itself as argv[0]'s basename, a login shell's '-' kept ("-bash: ") */
    const char *name = strrchr(o->argv0, '/') ? strrchr(o->argv0, '/') + 1 : o->argv0;

    strbuf_addf(&offending, "`%s'", p->err_text);
    while (s < end) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
        const char *m = s;
        /* "line N: " */
        if (n > 5 && !strncmp(m, "line ", 5)) {
            const char *d = m + 5;
            while (d < s + n && *d >= '0' && *d <= '9')
                d++;
            if (d + 1 < s + n && d[0] == ':' && d[1] == ' ')
                m = d + 2;
        }
        if (!(p->err_text[0] && (size_t)(s + n - m) == offending.len &&
              !memcmp(m, offending.buf, offending.len)))
            strbuf_addf(&msg, "%s: %.*s\n", name, (int)(s + n - m), m);
        s += n + (nl ? 1 : 0);
    }
    sbx_report_lines(msg.buf);   /* it quotes the script's text: sanitized */
    strbuf_release(&msg);
    strbuf_release(&offending);
}

/*
 * Commands after which the persistent shell cannot be driven one command at
 * a time, so that bash itself must read the rest of the input (as after a
 * syntax error, line_exec_raw_rest):
 * - `set -n` (noexec): bash then executes nothing, not even the wrapper
 *   that would report the command's end, so sbxsh would wait for ever;
 * - `shopt -s expand_aliases`: bash then expands aliases while it parses,
 *   and sbxsh's parser does not, so they can disagree on where a command
 *   ends (an alias that opens a quote or a here-document takes the
 *   wrapper's lines, and the lines after, into it).
 * The test is on the text, and errs on the safe side: a `set` where a
 * command starts with an option cluster that holds an n, or the words
 * `noexec` or `expand_aliases` anywhere. Interactive bash ignores `set -n` and a terminal's user wants
 * each command routed, so this is for stdin mode only.
 */
static bool is_word_char(char c)
{
    return c && !strchr(" \t\n;&|(){}`'\"<>", c);
}

static bool word_at(const char *text, size_t len, size_t i, const char *w)
{
    size_t n = strlen(w);
    return i + n <= len && !memcmp(text + i, w, n) && (i == 0 || !is_word_char(text[i - 1])) &&
           (i + n == len || !is_word_char(text[i + n]));
}

/* Is the word at i where a command name goes: first on its line or after an
 * operator, or after a keyword that a command follows? (So that `echo set
 * -n` or `kubectl set -n ns` is not taken for set.) */
static bool at_command_position(const char *text, size_t i)
{
    static const char *const keywords[] = { "then", "do", "else", "elif", "if", "while",
                                            "until", "time", "!", "builtin", "command" };
    size_t e = i, b;

    while (e > 0 && (text[e - 1] == ' ' || text[e - 1] == '\t'))
        e--;
    if (e == 0 || strchr(";&|({\n", text[e - 1]))
        return true;
    for (b = e; b > 0 && is_word_char(text[b - 1]); b--)
        ;
    for (size_t k = 0; k < ARRAY_SIZE(keywords); k++)
        if (e - b == strlen(keywords[k]) && !memcmp(text + b, keywords[k], e - b))
            return at_command_position(text, b);
    return false;
}

static bool needs_bash_to_read_on(const char *text, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (word_at(text, len, i, "noexec") || word_at(text, len, i, "expand_aliases"))
            return true;
        if (!word_at(text, len, i, "set") || !at_command_position(text, i))
            continue;
        /* the words after `set`, up to the end of its command */
        for (size_t j = i + 3; j < len && !strchr(";&|)}\n", text[j]); j++) {
            if ((text[j] == '-' || text[j] == '+') && !is_word_char(text[j - 1])) {
                size_t k = j + 1;
                while (k < len && is_word_char(text[k]) && text[k] != 'n')
                    k++;
                if (k < len && text[k] == 'n' && text[j + 1] != '-')
                    return true;
            }
        }
    }
    return false;
}

/*
 * PROMPT_COMMAND, before each primary prompt, as bash runs it: the session shell's value
 * (each element of an array a line of its own), parsed as a line of its own, not added to
 * the history; $? and PIPESTATUS are the last command's again afterwards
 * (line_exec_prompt_command). A syntax error is reported as bash reports it and the prompt
 * comes anyway. Returns true when it ended the shell (an exit in it), with *ws set.
 *
 * Where it runs: the value is the sandbox shell's report, which the sandbox can choose (a
 * line an earlier `sbxsh -c` appended to its ~/.bashrc, a process there writing an
 * assignment into the shell's script pipe). Routed, or offered to sbxsh's own `fc`, such a
 * value would run on the host with the person's rights (`fc -e "bash -c CMD"`, `git push`).
 * So it runs wholly in the sandbox's shell (trusted false), where it came from, as bash
 * there would run it; only a value byte for byte what the person assigned on a line they
 * typed (or sbxsh's startup file: interactive_note_typed) runs as any typed line does,
 * sbxsh's `history -a` and host git included (trusted true).
 */
static bool run_prompt_element(const cli_options *o, line_exec *x, interactive *ia,
                               const char *pc, size_t len, bool trusted, int *ws)
{
    sh_parse_opts po = { .extglob = o->extglob, .track_shopt = true };
    bool exited = false;
    sh_parse p;
    sbx_err err;

    sh_parse_all(&p, pc, len, &po, true);
    if (p.status != SH_OK) {
        strbuf msg = STRBUF_INIT, prefix = STRBUF_INIT;
        strbuf_addf(&prefix, "%s: PROMPT_COMMAND: ", o->progname);
        sh_parse_format_error(&p, prefix.buf, &msg);
        /* the message quotes the text, which the sandbox may have chosen: sanitized */
        sbx_report_lines(msg.buf);
        strbuf_release(&msg);
        strbuf_release(&prefix);
    } else if (p.root && p.root->items) {
        strbuf rerun = STRBUF_INIT;
        interactive_prompt_command_starts(ia);
        if (!(trusted && interactive_builtin(ia, &p)) &&
            line_exec_prompt_command(x, &p, !trusted, &exited, ws, &err) < 0)
            fail(o, &err);
        /* an `fc -s` there would re-run a command before every prompt: not done */
        interactive_take_rerun(ia, &rerun);
        strbuf_release(&rerun);
    }
    sh_parse_free(&p);
    return exited;
}

static bool run_prompt_command(const cli_options *o, line_exec *x, interactive *ia, int *ws)
{
    const char *pc = line_exec_vars(x)->prompt_command;
    const char *typed = interactive_typed_prompt_command(ia);
    char *copy = pc ? xstrdup(pc) : NULL;
    bool exited = false, trusted = pc && typed && !strcmp(pc, typed);

    /* each element of the array as a command line of its own, as bash 5.1 runs them */
    for (char *e = copy, *end; e && *e && !exited; e = end + (*end != '\0')) {
        end = strchrnul(e, '\001');
        if (strspn(e, " \t\n") < (size_t)(end - e))
            exited = run_prompt_element(o, x, ia, e, (size_t)(end - e), trusted, ws);
    }
    free(copy);
    return exited;
}

/* stdin and interactive modes: one complete command at a time, each run as
 * soon as it is read, state carried in the sandbox's persistent bash. */
static int run_stream(const cli_options *o, line_exec *x, interactive *ia)
{
    strbuf buf = STRBUF_INIT;
    size_t start = 0;
    size_t replay_end = 0;     /* buf[0, replay_end) is what fc has run (not typed) */
    bool at_eof = false, exited = false;
    sh_parse_opts po = { .extglob = o->extglob, .track_shopt = true };
    sbx_err err;
    int ws = 0;

    while (!exited) {
        if (buf.len > start) {
            sh_parse p;
            size_t consumed = 0;
            sh_status st = sh_parse_next(&p, buf.buf + start, buf.len - start, &po, at_eof,
                                         &consumed);
            if (st == SH_OK && consumed > 0 && o->mode != SH_INPUT_INTERACTIVE &&
                needs_bash_to_read_on(buf.buf + start, consumed)) {
                int rc;
                sh_parse_free(&p);
                rc = line_exec_raw_rest(x, buf.buf + start, buf.len - start,
                                        po.first_line + 1, 0, &ws, &err);
                strbuf_release(&buf);
                if (rc < 0)
                    return fail(o, &err);
                exited = true;
                break;
            }
            if (st == SH_OK && consumed > 0) {
                int rc = 0;
                bool own = false;
                if (ia) {
                    if (start < replay_end)
                        interactive_command_replayed(ia, buf.buf + start, consumed);
                    else
                        interactive_command_seen(ia);
                    /* the person's own line: what it assigns is the host's to obey */
                    interactive_note_typed(ia, &p);
                    own = interactive_builtin(ia, &p);
                }
                /* set -v: bash echoes the lines as it reads them (line_exec_verbose) */
                if (line_exec_verbose(x)) {
                    fwrite(buf.buf + start, 1, consumed, stderr);
                    fflush(stderr);
                }
                if (p.root && p.root->items && !own)
                    rc = line_exec_command(x, &p,
                                           o->mode == SH_INPUT_INTERACTIVE ? 0 : po.first_line + 1,
                                           &exited, &ws, &err);
                po.extglob = p.extglob_after;
                po.first_line = p.end_line;
                /* bash at a terminal: a command stopped by Ctrl-C ends its line (the
                 * sandbox's shell, interactive, did it already) */
                if (o->mode == SH_INPUT_INTERACTIVE && line_exec_last_status(x) == 128 + SIGINT &&
                    !line_exec_shell_ended_line(x))
                    fputc('\n', stderr);
                sh_parse_free(&p);
                if (rc < 0) {
                    if (o->mode != SH_INPUT_INTERACTIVE) {
                        strbuf_release(&buf);
                        return fail(o, &err);
                    }
                    fail(o, &err);
                }
                start += consumed;
                /* fc -s, or fc's editor: what it chose runs next, as if typed there */
                if (ia && !exited) {
                    strbuf next = STRBUF_INIT;
                    if (interactive_take_rerun(ia, &next)) {
                        replay_end = next.len;
                        strbuf_add(&next, buf.buf + start, buf.len - start);
                        strbuf_release(&buf);
                        buf = next;
                        start = 0;
                    } else {
                        strbuf_release(&next);
                    }
                }
                continue;
            }
            if (st == SH_ERROR && o->mode == SH_INPUT_INTERACTIVE) {
                interactive_command_seen(ia);
                print_syntax_error(o, &p);
                sh_parse_free(&p);
                start = buf.len;
                continue;
            }
            sh_parse_free(&p);
            if (st == SH_ERROR) {
                /* Not sbxsh's to judge: bash in the sandbox reads the rest of the
                 * input, reports the error in its own words and exits as it would. */
                int rc = line_exec_raw_rest(x, buf.buf + start, buf.len - start,
                                            po.first_line + 1, 0, &ws, &err);
                strbuf_release(&buf);
                if (rc < 0)
                    return fail(o, &err);
                exited = true;
                break;
            }
        }
        if (at_eof)
            break;
        if (start == buf.len) {
            strbuf_reset(&buf);
            start = replay_end = 0;
        }
        if (ia && buf.len == start && run_prompt_command(o, x, ia, &ws)) {
            exited = true;
            break;
        }
        if (!read_more(o, ia, &buf, buf.len > start)) {
            /* Ctrl-D with stopped jobs: bash's answer, once (cli/line.h) */
            if (ia && buf.len == start && !interactive_hung_up(ia) &&
                line_exec_exit_refused(x, true))
                continue;
            at_eof = true;
        }
    }
    strbuf_release(&buf);
    if (!exited && line_exec_finish(x, &ws, &err) < 0)
        return fail(o, &err);
    /* Ctrl-D: bash -i runs its exit builtin, which says so (a login shell: logout) */
    if (o->mode == SH_INPUT_INTERACTIVE && !exited)
        fputs(o->login ? "logout\n" : "exit\n", stderr);
    return ws;
}

/* The rc text (cli/startup.h) as commands typed before the first prompt: a syntax error
 * in it is reported with its name and skips it, as bash does. Returns true when it ended
 * the shell (an exit in it), with *ws set. */
static bool run_rc(const cli_options *o, line_exec *x, interactive *ia, const char *text,
                   const char *name, int *ws)
{
    sh_parse p;
    sh_parse_opts po = { .extglob = o->extglob, .track_shopt = true };
    bool exited = false;
    sbx_err err;

    sh_parse_all(&p, text, strlen(text), &po, true);
    if (p.status != SH_OK) {
        strbuf msg = STRBUF_INIT, prefix = STRBUF_INIT;
        strbuf_addf(&prefix, "%s: ", name);
        sh_parse_format_error(&p, prefix.buf, &msg);
        sbx_report_lines(msg.buf);   /* it quotes the script's text: sanitized */
        strbuf_release(&msg);
        strbuf_release(&prefix);
    } else if (p.root && p.root->items) {
        /* sbxsh's own startup file is the person's, as typed lines are */
        interactive_note_typed(ia, &p);
        if (line_exec_command(x, &p, 1, &exited, ws, &err) < 0)
            fail(o, &err);
    }
    sh_parse_free(&p);
    return exited;
}

int cli_shell_run(const cli_options *o)
{
    line_opts lo;
    line_exec *x;
    sbx_err err;
    int ws;
    const char *rc_name = NULL;
    char *rc_text;

    /* an interactive login takes the environment its profile files set up, before the
     * configuration is read from it */
    startup_login_env(o);
    line_opts_from(o, &lo);
    rc_text = startup_rc_text(o, &rc_name, &lo.sandbox_bashrc);
    if (line_exec_new(&lo, &x, &err) < 0) {
        free(rc_text);
        fail(o, &err);
        return SBX_EXIT_INTERNAL;
    }
    if (o->mode == SH_INPUT_COMMAND || o->mode == SH_INPUT_SCRIPT) {
        ws = run_program(o, x);
    } else {
        interactive *ia = o->mode == SH_INPUT_INTERACTIVE ? interactive_new(o, x) : NULL;
        if (rc_text && run_rc(o, x, ia, rc_text, rc_name, &ws))
            ;   /* the rc file ended the shell */
        else
            ws = run_stream(o, x, ia);
        /* bash dies of the SIGHUP that hung its terminal up, its history saved */
        if (ia && interactive_hung_up(ia))
            ws = SIGHUP;
        interactive_free(ia);
    }
    free(rc_text);
    line_exec_free(x);
    line_exit(ws);
}
