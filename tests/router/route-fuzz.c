/*
 * route-fuzz: command lines generated from a grammar, routed, and every
 * line the router sends to the host executed twice, by sbxsh's host runner
 * and by real bash, inside a throwaway mount and PID namespace.
 *
 *   route-fuzz [--seed N] [--count N] [--jobs N] [--only INDEX] [--verbose] [--tap]
 *
 * Each job is a separate process in its own namespaces (root only): a
 * fresh tmpfs at FUZZ_ROOT holds the code directory (a git repository,
 * with a file:// upstream inside it), HOME and TMPDIR; every other mount is
 * made read-only, so a wrong decision cannot harm the machine. fanotify
 * marks every mount and reports each program executed (FAN_OPEN_EXEC) and
 * each file written (FAN_CLOSE_WRITE, FAN_MODIFY) by the processes of the
 * namespace. For every executed line the checks are:
 *   - the runner executed only the programs the line names (never a shell;
 *     git may run its own helpers, and /bin/sh for its local transport);
 *   - nothing was written, except by git inside the code directory;
 *   - stdout, stderr and the exit status are bash's.
 * Lines with host and sandbox parts run their host parts under the runner
 * for the first two checks. Line INDEX of seed S is the same line on every
 * machine: a failure prints both, and --seed S --only INDEX replays it.
 */
#include "router/route.h"
#include "tests/router/hostline.h"

#include "common/strbuf.h"
#include "common/strvec.h"
#include "common/util.h"
#include "shell/parse.h"

#include <dirent.h>
#include <ftw.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FUZZ_ROOT "/tmp/sbxsh-route-fuzz"
#define CODE FUZZ_ROOT "/code"
#define LINE_TIMEOUT_MS 20000

extern char **environ;

static unsigned long long opt_seed = 1;
static unsigned long opt_count = 100000;
static int opt_jobs = 2;
static long opt_only = -1;
static bool opt_verbose, opt_tap;

/* ---- random numbers: line i of seed s is always the same line ---------------- */

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static unsigned pick(rng *r, unsigned n)
{
    return (unsigned)(splitmix(&r->s) % n);
}

static bool chance(rng *r, unsigned percent)
{
    return pick(r, 100) < percent;
}

#define ONE_OF(r, arr) ((arr)[pick(r, ARRAY_SIZE(arr))])

/* ---- the grammar ------------------------------------------------------------------ */

typedef struct gen {
    rng r;
    strbuf *line;
    bool git;          /* the line has a git command (git may write in the code dir) */
} gen;

/* A value as bash would read it back: unquoted, '...', "..." or \-escaped. */
static void add_value(gen *g, const char *v)
{
    size_t n = strlen(v);
    bool plain = n && strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                "0123456789_./:=@%+,-") == n && v[0] != '=';
    unsigned style = pick(&g->r, plain ? 4 : 3);

    if (plain && style == 3) {
        strbuf_addstr(g->line, v);
    } else if (style == 0) {
        strbuf_addch(g->line, '\'');
        for (const char *p = v; *p; p++)
            if (*p == '\'')
                strbuf_addstr(g->line, "'\\''");
            else
                strbuf_addch(g->line, *p);
        strbuf_addch(g->line, '\'');
    } else if (style == 1 || strchr(v, '\n') || !n) {
        strbuf_addch(g->line, '"');
        for (const char *p = v; *p; p++) {
            if (strchr("\\\"$`", *p))
                strbuf_addch(g->line, '\\');
            strbuf_addch(g->line, *p);
        }
        strbuf_addch(g->line, '"');
    } else {
        for (const char *p = v; *p; p++) {
            if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                  (*p >= '0' && *p <= '9') || (unsigned char)*p >= 0x80))
                strbuf_addch(g->line, '\\');
            strbuf_addch(g->line, *p);
        }
    }
}

static void sp(gen *g)
{
    strbuf_addch(g->line, ' ');
}

/* Words bash would expand, or that a parser could misread. */
static const char *const specials[] = {
    "$HOME", "${PATH}", "\"$USER\"", "$(id)", "`id`", "$((1+2))", "*", "*.c", "file?", "[ab]",
    "~", "~/x", "a=~/x", "{a,b}", "{1..3}", "$'a\\nb'", "$\"hi\"", "<(echo x)", ">(cat)",
    "${x:-y}", "$1", "$@", "\\$HOME", "'$HOME'", "\"\\$x\"", "$IFS", "@(a|b)", "a\\ b",
    "$x'y'", "\"$(cat /etc/passwd)\"",
};

static const char *const words[] = {
    "hello", "world", "a b", "x", "42", "-1", "3.5", "", "-n", "-e", "-E", "-ne", "--", "-",
    "%s", "%d", "%q", "\\n", "a\\tb", "\\c", "\\x41", "\\0101", "caf\xc3\xa9", "it's",
    "\"quoted\"", "a=b", "#hash", "semi;colon", "pipe|bar", "amp&", "<lt>", "back\\slash",
    "two\nlines", "  spaced  ", "tab\there", "main", "HEAD", "origin", "*", "?", "~",
};

static void add_word(gen *g)
{
    if (chance(&g->r, 8))
        strbuf_addstr(g->line, ONE_OF(&g->r, specials));
    else
        add_value(g, ONE_OF(&g->r, words));
}

static void add_redirs(gen *g)
{
    static const char *const host_ok[] = {
        ">/dev/null", "2>/dev/null", "2>&1", ">&2", "1>&2", "&>/dev/null", "</dev/null",
        ">>/dev/null", "2>>/dev/null", ">& /dev/null", "> \"/dev/null\"",
    };
    static const char *const bad[] = {
        "> " FUZZ_ROOT "/tmp/out", ">> ~/f", "2> " FUZZ_ROOT "/outside/e", "> out.txt",
        "3>/dev/null", ">&3", ">&-", "<<< text", "< README", "> /dev/stdout", "<> x",
        ">| " FUZZ_ROOT "/home/clobber", "{fd}>/dev/null", "&> ../leak",
    };
    while (chance(&g->r, 30)) {
        sp(g);
        strbuf_addstr(g->line, chance(&g->r, 80) ? ONE_OF(&g->r, host_ok) : ONE_OF(&g->r, bad));
    }
}

static void gen_echo(gen *g)
{
    static const char *const opts[] = { "-n", "-e", "-E", "-ne", "-en", "-neE", "-x", "--" };
    unsigned n = pick(&g->r, 5);

    strbuf_addstr(g->line, "echo");
    if (chance(&g->r, 40)) {
        sp(g);
        strbuf_addstr(g->line, ONE_OF(&g->r, opts));
    }
    while (n--) {
        sp(g);
        add_word(g);
    }
}

static void gen_printf(gen *g)
{
    static const char *const pieces[] = {
        "%s", "%d", "%i", "%x", "%o", "%u", "%c", "%b", "%q", "%f", "%e", "%g", "%5s", "%-4d",
        "%.2f", "%*d", "%.*s", "%05d", "%+d", "%#x", "%%", "\\n", "\\t", "\\\\", "\\x41",
        "\\101", "abc", " ", "-", "|", "%Q", "%10b", "\\c", "%l", "%hhd", "%z", "%n", "%(%s)T",
        "\\u00e9", "%y",
    };
    static const char *const args[] = {
        "", "0", "1", "-1", "42", "3.5", "1e3", "x", "abc", "'a", "0x10", "010", "08", "a b",
        "\\n", "\\c", "99999999999999999999", "caf\xc3\xa9", "*", "$x", "~", "nan", "-5",
    };
    strbuf fmt = STRBUF_INIT;
    unsigned n = 1 + pick(&g->r, 4), nargs = pick(&g->r, 5);

    strbuf_addstr(g->line, "printf");
    if (chance(&g->r, 5)) {
        sp(g);
        strbuf_addstr(g->line, chance(&g->r, 50) ? "-v var" : "--");
    }
    while (n--)
        strbuf_addstr(&fmt, ONE_OF(&g->r, pieces));
    if (chance(&g->r, 50))
        strbuf_addstr(&fmt, "\\n");
    sp(g);
    add_value(g, fmt.buf);
    while (nargs--) {
        sp(g);
        add_value(g, ONE_OF(&g->r, args));
    }
    strbuf_release(&fmt);
}

static void gen_producer(gen *g)
{
    if (chance(&g->r, 55))
        gen_printf(g);
    else
        gen_echo(g);
    add_redirs(g);
}

static void gen_filter(gen *g)
{
    static const char *const grep_opts[] = { "-i", "-c", "-v", "-n", "-o", "-q", "-w", "-x",
                                             "-E", "-F", "-h", "-m1", "-A1", "-B 1", "-C1", "-2",
                                             "-e x", "-ic", "-f pats", "-r", "--color=never",
                                             "-P", "-vn" };
    static const char *const grep_pats[] = { "x", "a", "hello", "^a", "b$", "[0-9]", "a|b",
                                             "-x", "", "." };
    static const char *const head_opts[] = { "-1", "-n 2", "-n1", "-c 3", "-n -1", "-q", "-5",
                                              "--lines=2", "-f" };
    static const char *const tail_opts[] = { "-1", "-n 2", "-n +2", "-c 3", "-q", "-3",
                                              "-f", "--pid=1" };
    static const char *const sort_opts[] = { "-r", "-n", "-u", "-f", "-k2", "-k1,1n", "-t:",
                                             "-t : -k2", "-b", "-V", "-h", "-s", "-o out",
                                             "--compress-program=sh", "-T /tmp", "-S 1M" };
    static const char *const uniq_opts[] = { "-c", "-d", "-u", "-i", "-f1", "-s 1", "-w2",
                                             "--all-repeated", "out.txt" };
    static const char *const cut_opts[] = { "-c1-3", "-b 2", "-d: -f2", "-d , -f1,2", "-f1",
                                            "-s -f2", "--complement -c1" };
    static const char *const tr_args[] = { "a-z A-Z", "-d a", "-s ' '", "-d '\\n'",
                                           "'[:lower:]' '[:upper:]'", "-c a x", "abc", "a b c" };
    static const char *const wc_opts[] = { "-l", "-c", "-w", "-m", "-L", "", "-l README" };
    static const char *const jq_args[] = { ".", "-r .", "-c .", ".a", "-r '.[]?'", "keys",
                                           "-n 1+1", "env", "'$ENV'", "-r input_filename",
                                           "'$__loc__'", "-f prog", ". README", "-S .",
                                           "'.x // \"none\"'" };
    unsigned k = pick(&g->r, 8);

    switch (k) {
    case 0:
        strbuf_addstr(g->line, "grep");
        if (chance(&g->r, 60)) {
            sp(g);
            strbuf_addstr(g->line, ONE_OF(&g->r, grep_opts));
        }
        sp(g);
        add_value(g, ONE_OF(&g->r, grep_pats));
        if (chance(&g->r, 5))
            strbuf_addstr(g->line, " README");
        break;
    case 1:
        strbuf_addstr(g->line, "head ");
        strbuf_addstr(g->line, ONE_OF(&g->r, head_opts));
        break;
    case 2:
        strbuf_addstr(g->line, "tail ");
        strbuf_addstr(g->line, ONE_OF(&g->r, tail_opts));
        break;
    case 3:
        strbuf_addstr(g->line, "sort ");
        strbuf_addstr(g->line, ONE_OF(&g->r, sort_opts));
        break;
    case 4:
        strbuf_addstr(g->line, "uniq ");
        strbuf_addstr(g->line, ONE_OF(&g->r, uniq_opts));
        break;
    case 5:
        strbuf_addstr(g->line, "cut ");
        strbuf_addstr(g->line, ONE_OF(&g->r, cut_opts));
        break;
    case 6:
        strbuf_addstr(g->line, "tr ");
        strbuf_addstr(g->line, ONE_OF(&g->r, tr_args));
        break;
    default:
        /* jq 1.6 takes ~45 ms to start: routed often, run rarely */
        if (chance(&g->r, 88)) {
            strbuf_addstr(g->line, "wc ");
            strbuf_addstr(g->line, ONE_OF(&g->r, wc_opts));
        } else {
            strbuf_addstr(g->line, "jq ");
            strbuf_addstr(g->line, ONE_OF(&g->r, jq_args));
        }
        break;
    }
}

/* Commands the host must never run; if one is routed there by mistake,
 * fanotify sees it run (or write). */
static void gen_danger(gen *g)
{
    static const char *const cmds[] = {
        "awk 'BEGIN{system(\"id\")}'", "find . -exec id \\;", "sed -n e", "sh -c id",
        "bash -c 'echo hi'", "touch " FUZZ_ROOT "/outside/t", "tee " FUZZ_ROOT "/home/tee",
        "rm -f README", "cat README", "env", "xargs echo", "python3 -c 1", "id",
        "ls", "make", "git status", "git commit -m x", "git config x.y z", "eval echo hi",
        "exec echo hi", "command echo hi", "builtin echo hi", "source /dev/null", ". /dev/null",
        "/usr/bin/echo hi", "./git push", "true", "false", ":", "test -f x", "[ -f x ]",
        "export A=1", "x=1", "alias git=id", "hash -r", "cd", "cd -", "kill -0 1",
    };
    strbuf_addstr(g->line, ONE_OF(&g->r, cmds));
}

static void gen_cd(gen *g)
{
    static const char *const targets[] = {
        "sub", "sub/deeper", "..", ".", "./sub", "link-in", "link-out", "/tmp", CODE,
        CODE "/sub", "nonexistent", "README", "-", "~", "sub/..", "up", "../outside", "\"\"",
        "sub extra", "-- sub", "-P sub",
    };
    strbuf_addstr(g->line, "cd ");
    strbuf_addstr(g->line, ONE_OF(&g->r, targets));
}

static void gen_git(gen *g)
{
    static const char *const subs[] = { "ls-remote", "ls-remote", "ls-remote", "fetch", "fetch",
                                        "pull", "clone", "push" };
    static const char *const repos[] = {
        "origin", "up", "./up", "file://" CODE "/up", CODE "/up", "up/.git", "../outside",
        "file://" FUZZ_ROOT "/up.git", FUZZ_ROOT "/up.git",
        "/etc", "ext::sh", "'ext::sh -c id'", "-oProxyCommand=x", "fd::3", "foo://x",
        "file:///etc", "link-out", "bare.git", "~/x", "nosuch",
    };
    static const char *const opts_ls[] = { "-q", "--heads", "--tags", "-h", "-t", "--refs",
                                           "--symref", "--get-url", "--exit-code",
                                           "--sort=refname", "--upload-pack=id", "--upload-pa=id",
                                           "-o x", "--head" };
    static const char *const opts_fetch[] = { "-q", "--dry-run", "--no-tags", "-v", "--progress",
                                              "--no-recurse-submodules", "--upload-pack=id",
                                              "-u", "--dry", "--recurse-submodules",
                                              "--stdin", "--refmap=x", "--all=1" };
    static const char *const opts_pull[] = { "-q", "--ff-only", "--no-rebase", "--rebase",
                                             "-r", "--no-edit", "--edit", "-s ours", "-X theirs",
                                             "--rebase=interactive", "-S" };
    static const char *const opts_clone[] = { "-q", "--no-checkout", "--bare", "-b main",
                                              "--single-branch", "--template=/tmp",
                                              "-c core.x=y", "--recurse-submodules", "-u id",
                                              "--reference /tmp", "--sep=/tmp" };
    static const char *const opts_push[] = { "-q", "-n", "--dry-run", "-u", "-f",
                                             "--force-with-lease", "--receive-pack=id",
                                             "--exec=id", "--rec=id", "--signed", "--repo=x" };
    static const char *const globals[] = { "-C sub", "-C ..", "-C link-out", "--no-pager", "-P",
                                           "-c x=y", "--git-dir=/tmp", "-p", "--exec-path=/tmp",
                                           "-C /tmp" };
    static const char *const refs[] = { "main", "refs/heads/main", "HEAD",
                                        "'refs/heads/*:refs/remotes/origin/*'", "--", "-x",
                                        "tags/v1", "nosuch" };
    const char *sub = ONE_OF(&g->r, subs);
    unsigned nopt = pick(&g->r, 3);

    g->git = true;
    strbuf_addstr(g->line, "git");
    if (chance(&g->r, 15)) {
        sp(g);
        strbuf_addstr(g->line, ONE_OF(&g->r, globals));
    }
    sp(g);
    strbuf_addstr(g->line, sub);
    while (nopt--) {
        sp(g);
        if (!strcmp(sub, "ls-remote"))
            strbuf_addstr(g->line, ONE_OF(&g->r, opts_ls));
        else if (!strcmp(sub, "fetch"))
            strbuf_addstr(g->line, ONE_OF(&g->r, opts_fetch));
        else if (!strcmp(sub, "pull"))
            strbuf_addstr(g->line, ONE_OF(&g->r, opts_pull));
        else if (!strcmp(sub, "clone"))
            strbuf_addstr(g->line, ONE_OF(&g->r, opts_clone));
        else
            strbuf_addstr(g->line, ONE_OF(&g->r, opts_push));
    }
    if (!strcmp(sub, "clone")) {
        static const char *const targets[] = { "c1", "c2", "sub/c3", "/tmp/c4", "../c5",
                                               "link-out/c6", "" };
        sp(g);
        strbuf_addstr(g->line, ONE_OF(&g->r, repos));
        sp(g);
        strbuf_addstr(g->line, ONE_OF(&g->r, targets));
        return;
    }
    if (chance(&g->r, 85)) {
        sp(g);
        strbuf_addstr(g->line, chance(&g->r, 60) ? "origin" : ONE_OF(&g->r, repos));
        if (chance(&g->r, 40)) {
            sp(g);
            strbuf_addstr(g->line, ONE_OF(&g->r, refs));
        }
    }
}

static void gen_prefix(gen *g)
{
    static const char *const assigns[] = {
        "GIT_TRACE=0", "GIT_TERMINAL_PROMPT=0", "GIT_TRACE=false", "LC_ALL=C", "LANG=C",
        "LD_PRELOAD=/tmp/x.so", "PATH=/tmp", "BASH_ENV=/tmp/x", "IFS=x", "FOO=bar",
        "GIT_SSH_COMMAND=id", "GIT_TRACE=" FUZZ_ROOT "/tmp/trace", "PAGER=id", "HOME=/tmp",
        "GIT_DIR=/tmp", "GIT_CONFIG_COUNT=1",
    };
    if (chance(&g->r, 12)) {
        strbuf_addstr(g->line, ONE_OF(&g->r, assigns));
        sp(g);
    }
}

/* A pipeline: a producer, then filters (or a command that must stay away
 * from the host). */
static void gen_pipeline(gen *g)
{
    unsigned kind = pick(&g->r, 100), nfilters;

    if (chance(&g->r, 4))
        strbuf_addstr(g->line, "! ");
    if (chance(&g->r, 1))
        strbuf_addstr(g->line, "time ");
    gen_prefix(g);
    if (kind < 8) {
        gen_cd(g);
        return;
    }
    if (kind < 15) {
        gen_git(g);
        add_redirs(g);
    } else if (kind < 30) {
        gen_danger(g);
    } else {
        gen_producer(g);
    }
    nfilters = chance(&g->r, 55) ? 1 + pick(&g->r, 3) : 0;
    while (nfilters--) {
        strbuf_addstr(g->line, chance(&g->r, 10) ? " |& " : " | ");
        if (chance(&g->r, 6))
            gen_danger(g);
        else
            gen_filter(g);
        if (chance(&g->r, 10))
            add_redirs(g);
    }
}

/* An item meant for the sandbox: something the host must refuse. If the
 * router takes one for the host by mistake, the line runs and the checks
 * see what it did. */
static void gen_hostile(gen *g)
{
    static const char *const bad_git[] = {
        "git fetch --upload-pack=id origin", "git fetch --upload-pa=id", "git clone ext::sh c1",
        "git push --receive-pack=id origin", "git -c core.sshCommand=id fetch",
        "git fetch -- -oProxyCommand=id", "git clone -u id " CODE "/up c1",
        "git ls-remote 'ext::sh -c id'", "git --exec-path=/tmp fetch", "git fetch --stdin",
        "git pull -s ours", "git clone --template=/tmp " CODE "/up c1", "git -C /tmp fetch",
        "git clone " CODE "/up /tmp/c1", "git fetch /etc", "git push ./up main",
        "git clone bare.git c1", "git fetch --recurse-submodules", "git push --exe=id",
    };
    static const char *const bad_prefix[] = {
        "LD_PRELOAD=/tmp/x.so", "PATH=/tmp", "BASH_ENV=/tmp/x", "IFS=x", "FOO=bar",
        "GIT_SSH_COMMAND=id", "GIT_TRACE=" FUZZ_ROOT "/tmp/trace", "PAGER=id", "HOME=/tmp",
    };
    switch (pick(&g->r, 7)) {
    case 0:
        gen_danger(g);
        break;
    case 1:
        strbuf_addstr(g->line, "echo ");
        strbuf_addstr(g->line, ONE_OF(&g->r, specials));
        break;
    case 2:
        gen_producer(g);
        strbuf_addstr(g->line, chance(&g->r, 50) ? " > " FUZZ_ROOT "/home/out" : " >> out.txt");
        break;
    case 3:
        g->git = true;
        strbuf_addstr(g->line, ONE_OF(&g->r, bad_git));
        break;
    case 4:
        gen_filter(g);      /* reads the terminal */
        break;
    case 5:
        strbuf_addstr(g->line, ONE_OF(&g->r, bad_prefix));
        sp(g);
        if (chance(&g->r, 50))
            gen_producer(g);
        else
            gen_git(g);
        break;
    default:
        strbuf_addstr(g->line, "( ");
        gen_producer(g);
        strbuf_addstr(g->line, " )");
        break;
    }
    if (chance(&g->r, 30)) {
        strbuf_addstr(g->line, " | ");
        gen_filter(g);
    }
}

static void gen_item(gen *g)
{
    unsigned k = pick(&g->r, 100);

    if (k < 90) {
        gen_pipeline(g);
    } else if (k < 93) {
        strbuf_addstr(g->line, "( ");
        gen_pipeline(g);
        strbuf_addstr(g->line, " )");
    } else if (k < 95) {
        strbuf_addstr(g->line, "{ ");
        gen_pipeline(g);
        strbuf_addstr(g->line, "; }");
    } else if (k < 97) {
        strbuf_addstr(g->line, "if true; then ");
        gen_pipeline(g);
        strbuf_addstr(g->line, "; fi");
    } else if (k < 98) {
        strbuf_addstr(g->line, "f() { ");
        gen_pipeline(g);
        strbuf_addstr(g->line, "; }");
    } else {
        gen_producer(g);
        strbuf_addstr(g->line, " <<EOF\nbody $HOME\nEOF");
    }
}

static void gen_line(rng r, strbuf *line, bool *git)
{
    static const char *const seps[] = { "; ", " && ", " || ", "\n", " & ", ";", "&&" };
    gen g = { .r = r, .line = line };
    unsigned n = 1 + pick(&g.r, 3);
    /* two lines in five are made for the host; the rest attack it */
    bool hostile = !chance(&g.r, 40);

    strbuf_reset(line);
    while (n--) {
        if (hostile)
            gen_hostile(&g);
        else
            gen_item(&g);
        if (n)
            strbuf_addstr(line, ONE_OF(&g.r, seps));
    }
    /* smuggling: a byte or sequence a validator might read differently */
    if (chance(&g.r, 3)) {
        static const char *const inject[] = { "\r", "\x01", "\x1b[2J", "\\\n", " # comment",
                                              "\r\n", "\x7f", "\v" };
        size_t at = pick(&g.r, (unsigned)line->len + 1);
        const char *s = ONE_OF(&g.r, inject);
        strbuf tail = STRBUF_INIT;
        strbuf_add(&tail, line->buf + at, line->len - at);
        strbuf_setlen(line, at);
        strbuf_addstr(line, s);
        strbuf_add(line, tail.buf, tail.len);
        strbuf_release(&tail);
    }
    *git = g.git;
}

/* ---- the namespace ------------------------------------------------------------- */

static void die(const char *fmt, ...) SBX_PRINTF(1, 2);
static void die(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "route-fuzz: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(2);
}

static void shell(const char *cmd)
{
    if (system(cmd) != 0)
        die("fixture command failed: %s", cmd);
}

/* Every mount read-only but ours; all of them watched. */
static int lock_down_and_watch(void)
{
    FILE *f = fopen("/proc/self/mountinfo", "r");
    char *ln = NULL;
    size_t cap = 0;
    int fan;

    fan = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK, O_RDONLY | O_LARGEFILE);
    if (fan < 0)
        die("fanotify_init: %s", strerror(errno));
    if (!f)
        die("mountinfo: %s", strerror(errno));
    while (getline(&ln, &cap, f) > 0) {
        char mnt[PATH_MAX];
        /* id parent major:minor root mountpoint ... */
        if (sscanf(ln, "%*s %*s %*s %*s %4095s", mnt) != 1)
            continue;
        for (char *p = mnt, *q = mnt; ; p++) {      /* undo \040-style escapes */
            if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] && p[3]) {
                *q++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
                p += 3;
            } else if (!(*q++ = *p)) {
                break;
            }
        }
        if (strcmp(mnt, FUZZ_ROOT) && strncmp(mnt, "/proc", 5) && strncmp(mnt, "/sys", 4))
            mount(NULL, mnt, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL);
        if (!strncmp(mnt, "/proc", 5) || !strncmp(mnt, "/sys", 4))
            continue;
        fanotify_mark(fan, FAN_MARK_ADD | FAN_MARK_MOUNT,
                      FAN_OPEN_EXEC | FAN_CLOSE_WRITE | FAN_MODIFY, AT_FDCWD, mnt);
    }
    free(ln);
    fclose(f);
    return fan;
}

static void make_fixture(void)
{
    if (mkdir(FUZZ_ROOT, 0755) < 0 && errno != EEXIST)
        die("mkdir %s: %s", FUZZ_ROOT, strerror(errno));
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        die("making mounts private: %s", strerror(errno));
    if (mount("route-fuzz", FUZZ_ROOT, "tmpfs", 0, "size=256m,mode=0755") < 0)
        die("mounting a tmpfs on %s: %s", FUZZ_ROOT, strerror(errno));
    /* code/up: a repository inside the code directory (file:// fetches and
     * clones); up.git: the remote origin, outside it, which pushes reach */
    shell("set -e; cd " FUZZ_ROOT "; mkdir -p home tmp outside; "
          "git config --global init.defaultBranch main; "
          "git config --global user.name fuzz; git config --global user.email f@z; "
          "git config --global protocol.file.allow always; git config --global gc.auto 0; "
          "git config --global maintenance.auto false; "
          "git config --global receive.autogc false; git config --global advice.detachedHead false; "
          "git init -q code; cd code; mkdir -p sub/deeper; echo readme > README; "
          "ln -s /etc link-out; ln -s sub link-in; git init -q --bare bare.git; "
          "git init -q up; (cd up; echo one > f; git add f; git commit -qm one; "
          "git tag v1; echo two >> f; git commit -qam two); "
          "git clone -q --bare up ../up.git; "
          "git remote add origin " FUZZ_ROOT "/up.git; git fetch -q origin; "
          "git checkout -q -b main origin/main; git branch -q --set-upstream-to=origin/main; "
          "git pack-refs --all; git -C ../up.git pack-refs --all");
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st; (void)flag; (void)ftw;
    remove(path);
    return 0;
}

static void rm_rf(const char *path)
{
    nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Removes what is in dir, keeping the names in keep. */
static void clear_dir(const char *dir, const strvec *keep)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    strbuf path = STRBUF_INIT;

    if (!d)
        return;
    while ((e = readdir(d))) {
        bool known = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
        for (size_t k = 0; keep && k < keep->n && !known; k++)
            known = !strcmp(e->d_name, keep->v[k]);
        if (known)
            continue;
        strbuf_reset(&path);
        strbuf_addf(&path, "%s/%s", dir, e->d_name);
        rm_rf(path.buf);
    }
    closedir(d);
    strbuf_release(&path);
}

/* The state runs may change, saved once and put back after each run so
 * that sbxsh and bash start from the same place. */
static strvec initial_entries;
static const char *const saved_files[] = {
    CODE "/.git/config", CODE "/.git/packed-refs", CODE "/.git/HEAD",
    FUZZ_ROOT "/up.git/packed-refs", FUZZ_ROOT "/up.git/HEAD",
};
static strbuf saved[ARRAY_SIZE(saved_files)];

static void save_state(void)
{
    DIR *d = opendir(CODE);
    struct dirent *e;
    sbx_err err;

    if (!d)
        die("opendir %s: %s", CODE, strerror(errno));
    while ((e = readdir(d)))
        strvec_push(&initial_entries, e->d_name);
    closedir(d);
    for (size_t i = 0; i < ARRAY_SIZE(saved_files); i++) {
        char *buf;
        size_t len;
        if (read_file(saved_files[i], 1 << 20, &buf, &len, &err) < 0)
            die("%s", err.msg);
        strbuf_init(&saved[i], len);
        strbuf_add(&saved[i], buf, len);
        free(buf);
    }
}

static void tidy(bool git_line)
{
    static const char *const ref_dirs[] = { CODE "/.git/refs", FUZZ_ROOT "/up.git/refs" };
    strvec keep = STRVEC_INIT;
    strbuf sub = STRBUF_INIT;

    clear_dir(CODE, &initial_entries);
    clear_dir(FUZZ_ROOT "/home", NULL);
    clear_dir(FUZZ_ROOT "/tmp", NULL);
    clear_dir(FUZZ_ROOT "/outside", NULL);
    rm_rf(CODE "/sub/c3");
    if (!git_line)
        return;
    /* every ref lives in packed-refs: loose ones are what the run made */
    strvec_push(&keep, "heads");
    strvec_push(&keep, "tags");
    for (size_t i = 0; i < ARRAY_SIZE(ref_dirs); i++) {
        clear_dir(ref_dirs[i], &keep);
        for (size_t k = 0; k < keep.n; k++) {
            strbuf_reset(&sub);
            strbuf_addf(&sub, "%s/%s", ref_dirs[i], keep.v[k]);
            clear_dir(sub.buf, NULL);
        }
    }
    strvec_clear(&keep);
    strbuf_release(&sub);
    for (size_t i = 0; i < ARRAY_SIZE(saved_files); i++) {
        int fd = open(saved_files[i], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || write_full(fd, saved[i].buf, saved[i].len) < 0)
            die("restoring %s: %s", saved_files[i], strerror(errno));
        close(fd);
    }
}

/* ---- runs ----------------------------------------------------------------------- */

typedef struct result {
    strbuf out, err;
    int status;
    bool timed_out;
} result;

typedef int (*child_fn)(void *arg);

static void reap_orphans(void)
{
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
}

static void capture(child_fn fn, void *arg, result *r)
{
    int po[2], pe[2], st;
    pid_t pid;
    struct pollfd fds[2];
    uint64_t deadline = now_ns() + (uint64_t)LINE_TIMEOUT_MS * 1000000ULL;

    if (pipe2(po, O_CLOEXEC) || pipe2(pe, O_CLOEXEC))
        die("pipe: %s", strerror(errno));
    fflush(NULL);   /* else the child's runner flushes our buffered stdout into its pipe */
    pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        int nul = open("/dev/null", O_RDONLY);
        setpgid(0, 0);
        dup2(nul, 0);
        dup2(po[1], 1);
        dup2(pe[1], 2);
        if (chdir(CODE) < 0)
            _exit(126);
        _exit(fn(arg));
    }
    setpgid(pid, pid);
    close(po[1]);
    close(pe[1]);
    fds[0] = (struct pollfd){ .fd = po[0], .events = POLLIN };
    fds[1] = (struct pollfd){ .fd = pe[0], .events = POLLIN };
    while (fds[0].fd >= 0 || fds[1].fd >= 0) {
        int left = (int)((deadline - now_ns()) / 1000000ULL);
        if (now_ns() >= deadline) {
            r->timed_out = true;
            kill(-pid, SIGKILL);
            break;
        }
        if (poll(fds, 2, left > 0 ? left : 1) < 0 && errno != EINTR)
            break;
        for (int i = 0; i < 2; i++) {
            char buf[8192];
            ssize_t n;
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            n = read(fds[i].fd, buf, sizeof(buf));
            if (n > 0) {
                strbuf_add(i ? &r->err : &r->out, buf, (size_t)n);
            } else if (n == 0 || errno != EINTR) {
                close(fds[i].fd);
                fds[i].fd = -1;
            }
        }
    }
    for (int i = 0; i < 2; i++)
        if (fds[i].fd >= 0)
            close(fds[i].fd);
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    /* the line's own background processes, if any, go too */
    kill(-pid, SIGKILL);
    reap_orphans();
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

typedef struct line_job {
    const char *line;
    const sh_parse *p;
    const route_plan *plan;
    bool skip_sandbox;
} line_job;

static const char *const code_dirs[] = { CODE };

static route_ctx fuzz_ctx(void)
{
    return (route_ctx){ .code_dirs = code_dirs, .n_code_dirs = 1, .cwd = CODE,
                        .path = getenv("PATH"), .home = getenv("HOME") };
}

static int run_ours(void *arg)
{
    const line_job *j = arg;
    return run_host_line(j->p, j->plan, fuzz_ctx(), false, j->skip_sandbox, stderr);
}

static int run_bash(void *arg)
{
    const line_job *j = arg;
    char *argv[] = { "bash", "-c", (char *)j->line, "sbxsh", NULL };
    execve("/bin/bash", argv, environ);
    return 127;
}

/* ---- what ran, what was written ---------------------------------------------------- */

static strvec allowed_filters, allowed_git;   /* real paths */
static char bash_path[PATH_MAX], git_core[PATH_MAX];

static void allow(strvec *v, const char *name)
{
    char buf[PATH_MAX], real[PATH_MAX];
    const char *path = getenv("PATH");
    while (path && *path) {
        size_t n = strcspn(path, ":");
        snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, path, name);
        if (access(buf, X_OK) == 0 && realpath(buf, real)) {
            strvec_push(v, real);
            return;
        }
        path += n + (path[n] == ':');
    }
    die("%s is not installed", name);
}

static bool exec_allowed(const char *path, bool git_line, bool is_bash)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (!strncmp(base, "ld-linux", 8))
        return true;
    if (is_bash && !strcmp(path, bash_path))
        return true;
    for (size_t i = 0; i < allowed_filters.n; i++)
        if (!strcmp(path, allowed_filters.v[i]))
            return true;
    if (git_line) {
        for (size_t i = 0; i < allowed_git.n; i++)
            if (!strcmp(path, allowed_git.v[i]))
                return true;
        if (!strncmp(path, git_core, strlen(git_core)))
            return true;
    }
    return false;
}

/* Reads the events so far; appends violations to bad. */
static void drain(int fan, bool git_line, bool is_bash, strbuf *bad)
{
    char buf[65536] __attribute__((aligned(8)));
    ssize_t n;

    while ((n = read(fan, buf, sizeof(buf))) > 0) {
        struct fanotify_event_metadata *m = (void *)buf;
        for (; FAN_EVENT_OK(m, n); m = FAN_EVENT_NEXT(m, n)) {
            char link[64], path[PATH_MAX];
            ssize_t l;
            if (m->fd < 0)
                continue;
            snprintf(link, sizeof(link), "/proc/self/fd/%d", m->fd);
            l = readlink(link, path, sizeof(path) - 1);
            path[l > 0 ? l : 0] = '\0';
            close(m->fd);
            if (!bad || m->pid == 0 || m->pid == getpid())
                continue;
            if ((m->mask & FAN_OPEN_EXEC) && !exec_allowed(path, git_line, is_bash))
                strbuf_addf(bad, "ran %s; ", path);
            if ((m->mask & (FAN_CLOSE_WRITE | FAN_MODIFY)) && strcmp(path, "/dev/null") &&
                !(git_line && (!strncmp(path, CODE "/", strlen(CODE) + 1) ||
                               !strncmp(path, FUZZ_ROOT "/up.git/", strlen(FUZZ_ROOT) + 8))))
                strbuf_addf(bad, "wrote %s; ", path);
        }
    }
}

/* ---- one line ------------------------------------------------------------------- */

typedef struct stats {
    unsigned long lines, parse_errors, all_host, mixed, sandbox, git_run, failures, late;
} stats;

static void quote_line(strbuf *out, const char *s)
{
    strbuf_add_shell_quoted(out, s, strlen(s));
}

/* In a pipeline, a command whose reader has exited dies of SIGPIPE at a
 * moment that varies from run to run, and its later messages with it:
 * then one stderr may lack lines the other has: the smaller must be a part
 * of the larger. */
static bool sub_multiset(const strbuf *small, const strbuf *large)
{
    strvec a = STRVEC_INIT, b = STRVEC_INIT;
    bool ok = true;

    for (int k = 0; k < 2; k++) {
        const strbuf *s = k ? large : small;
        strvec *v = k ? &b : &a;
        for (const char *p = s->buf; p < s->buf + s->len;) {
            const char *e = memchr(p, '\n', (size_t)(s->buf + s->len - p));
            size_t n = e ? (size_t)(e - p) : (size_t)(s->buf + s->len - p);
            strvec_pushn(v, p, n);
            p += n + 1;
        }
    }
    for (size_t i = 0; i < a.n && ok; i++) {
        ok = false;
        for (size_t k = 0; k < b.n && !ok; k++)
            if (b.v[k][0] != '\x01' && !strcmp(a.v[i], b.v[k])) {
                b.v[k][0] = '\x01';     /* used */
                ok = true;
            }
    }
    strvec_clear(&a);
    strvec_clear(&b);
    return ok;
}

/* Messages from processes of one pipeline writing to stderr at once may
 * interleave, even within a line (tr writes "tr: " and its message
 * separately): when the bytes differ, compare them as a multiset. */
static bool same_bytes(const strbuf *a, const strbuf *b)
{
    size_t count[256] = { 0 };

    if (a->len != b->len)
        return false;
    for (size_t i = 0; i < a->len; i++) {
        count[(unsigned char)a->buf[i]]++;
        count[(unsigned char)b->buf[i]]--;
    }
    for (size_t i = 0; i < 256; i++)
        if (count[i])
            return false;
    return true;
}

static void report(stats *st, unsigned long index, const char *line, const char *what,
                   const result *ours, const result *bash)
{
    strbuf msg = STRBUF_INIT;

    st->failures++;
    strbuf_addf(&msg, "FAIL seed=%llu index=%lu: %s\n  line: ", opt_seed, index, what);
    quote_line(&msg, line);
    strbuf_addf(&msg, "\n  replay: route-fuzz --seed %llu --only %lu --verbose\n", opt_seed,
                index);
    for (int k = 0; k < 2; k++) {
        const result *r = k ? bash : ours;
        if (!r)
            continue;
        strbuf_addf(&msg, "  %s: status %d%s, out ", k ? "bash" : "ours", r->status,
                    r->timed_out ? " (timed out)" : "");
        strbuf_add_shell_quoted(&msg, r->out.buf, r->out.len > 300 ? 300 : r->out.len);
        strbuf_addstr(&msg, ", err ");
        strbuf_add_shell_quoted(&msg, r->err.buf, r->err.len > 300 ? 300 : r->err.len);
        strbuf_addch(&msg, '\n');
    }
    if (opt_tap) {
        /* TAP comments on stderr, as Test::More's diag: prove shows a test's stderr even
         * when not verbose, so make check's log (CI's) says which line failed and how to
         * replay it. One write, so that the other job's report does not cut into it. */
        strbuf tap = STRBUF_INIT;
        for (char *p = msg.buf; *p; ) {
            char *nl = strchr(p, '\n');
            strbuf_addf(&tap, "# %.*s\n", (int)(nl ? nl - p : (ptrdiff_t)strlen(p)), p);
            p = nl ? nl + 1 : p + strlen(p);
        }
        fflush(stdout);
        write_full(STDERR_FILENO, tap.buf, tap.len);
        strbuf_release(&tap);
    } else {
        fputs(msg.buf, stdout);
    }
    fflush(stdout);
    strbuf_release(&msg);
}

static void one_line(int fan, unsigned long index, stats *st)
{
    uint64_t started = now_ns();
    rng r = { .s = opt_seed * 0x100000001b3ULL ^ (index + 1) * 0x9e3779b97f4a7c15ULL };
    strbuf line = STRBUF_INIT, bad = STRBUF_INIT;
    result ours = { STRBUF_INIT, STRBUF_INIT, 0, false };
    result bash = { STRBUF_INIT, STRBUF_INIT, 0, false };
    bool git, any_host = false, all_host = true;
    route_plan plan;
    sh_parse p;
    line_job job;

    splitmix(&r.s);
    gen_line(r, &line, &git);
    st->lines++;
    if (sh_parse_all(&p, line.buf, line.len, NULL, true) != SH_OK) {
        st->parse_errors++;
        sh_parse_free(&p);
        strbuf_release(&line);
        return;
    }
    route_ctx ctx = fuzz_ctx();
    route_plan_build(&plan, &p, &ctx);
    for (size_t i = 0; i < plan.n; i++) {
        any_host |= plan.parts[i].where == ROUTE_HOST;
        all_host &= plan.parts[i].where == ROUTE_HOST;
    }
    all_host &= plan.n > 0;
    if (opt_verbose) {
        strbuf shown = STRBUF_INIT;
        quote_line(&shown, line.buf);
        printf("line %lu: %s\n", index, shown.buf);
        for (size_t i = 0; i < plan.n; i++)
            printf("  %s: %s\n", plan.parts[i].where == ROUTE_HOST ? "host" : "sandbox",
                   plan.parts[i].reason);
        strbuf_release(&shown);
    }
    if (!any_host) {
        st->sandbox++;
        goto out;
    }
    job = (line_job){ .line = line.buf, .p = &p, .plan = &plan, .skip_sandbox = !all_host };
    st->git_run += git;
    drain(fan, git, false, NULL);
    capture(run_ours, &job, &ours);
    drain(fan, git, false, &bad);
    if (bad.len) {
        report(st, index, line.buf, bad.buf, &ours, NULL);
        goto out;
    }
    tidy(git);
    /* The runner's own checks at run time (a remote's name that the repository does not
     * configure, a configured local remote) send a part back to the sandbox: safe, and
     * nothing ran, so there is nothing to compare with bash. */
    if (ours.status == 125 && (!strncmp(ours.err.buf, "route-run: sandbox: ", 20) ||
                               strstr(ours.err.buf, "\nroute-run: sandbox: "))) {
        st->late++;
        goto out;
    }
    if (!all_host) {
        st->mixed++;
        goto out;
    }
    st->all_host++;
    drain(fan, git, true, NULL);
    capture(run_bash, &job, &bash);
    drain(fan, git, true, &bad);
    tidy(git);
    if (bad.len)
        report(st, index, line.buf, bad.buf, &ours, &bash);
    else if (ours.timed_out || bash.timed_out)
        report(st, index, line.buf, "timed out", &ours, &bash);
    else if (ours.status != bash.status || ours.out.len != bash.out.len ||
             memcmp(ours.out.buf, bash.out.buf, ours.out.len) ||
             (strcmp(ours.err.buf, bash.err.buf) && !same_bytes(&ours.err, &bash.err) &&
              !(strchr(line.buf, '|') && (sub_multiset(&ours.err, &bash.err) ||
                                          sub_multiset(&bash.err, &ours.err)))))
        report(st, index, line.buf, "output or status differs from bash", &ours, &bash);
    else if (opt_verbose)
        printf("  ran: status %d, %zu bytes out, %zu bytes err\n", ours.status, ours.out.len,
               ours.err.len);
out:
    if (now_ns() - started > 2000000000ULL) {
        strbuf shown = STRBUF_INIT;
        quote_line(&shown, line.buf);
        printf("%sslow line (%.1f s), index %lu: %s\n", opt_tap ? "# " : "",
               (now_ns() - started) / 1e9, index, shown.buf);
        strbuf_release(&shown);
    }
    route_plan_release(&plan);
    sh_parse_free(&p);
    strbuf_release(&line);
    strbuf_release(&bad);
    strbuf_release(&ours.out);
    strbuf_release(&ours.err);
    strbuf_release(&bash.out);
    strbuf_release(&bash.err);
}

static void on_signal(int sig)
{
    _exit(128 + sig);
}

/* One job: its own namespaces, every job-th line. Writes its stats to fd. */
static int worker(int job, int fd)
{
    stats st = { 0 };
    pid_t pid;
    int fan, wst;

    if (unshare(CLONE_NEWNS | CLONE_NEWPID) < 0)
        die("unshare(mount, pid): %s (needs root)", strerror(errno));
    pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid > 0) {
        while (waitpid(pid, &wst, 0) < 0 && errno == EINTR)
            ;
        return WIFEXITED(wst) ? WEXITSTATUS(wst) : 2;
    }
    /* pid 1 of the new namespace: signals with no handler do not reach it,
     * so give the usual ones one; and die with the process that started it
     * (the namespace's processes die with it) */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    signal(SIGHUP, on_signal);
    clearenv();
    setenv("PATH", "/usr/local/bin:/usr/bin:/bin", 1);
    setenv("HOME", FUZZ_ROOT "/home", 1);
    setenv("TMPDIR", FUZZ_ROOT "/tmp", 1);
    setenv("LANG", job % 2 ? "C" : "C.UTF-8", 1);
    setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
    setenv("GIT_CONFIG_GLOBAL", FUZZ_ROOT "/gitconfig", 1);
    make_fixture();
    save_state();
    allow(&allowed_filters, "grep");
    allow(&allowed_filters, "jq");
    allow(&allowed_filters, "head");
    allow(&allowed_filters, "tail");
    allow(&allowed_filters, "sort");
    allow(&allowed_filters, "uniq");
    allow(&allowed_filters, "cut");
    allow(&allowed_filters, "tr");
    allow(&allowed_filters, "wc");
    allow(&allowed_git, "git");
    allow(&allowed_git, "sh");     /* git's local transport runs git-upload-pack through sh */
    {
        strvec b = STRVEC_INIT;
        allow(&b, "bash");
        snprintf(bash_path, sizeof(bash_path), "%s", b.v[0]);
        strvec_clear(&b);
    }
    {
        FILE *f = popen("git --exec-path", "r");
        char tmp[PATH_MAX];
        if (!f || !fgets(tmp, sizeof(tmp), f))
            die("git --exec-path failed");
        pclose(f);
        tmp[strcspn(tmp, "\n")] = '\0';
        if (!realpath(tmp, git_core))
            die("git exec path %s: %s", tmp, strerror(errno));
        strcat(git_core, "/");
    }
    fan = lock_down_and_watch();

    for (unsigned long i = (unsigned long)job; i < opt_count; i += (unsigned long)opt_jobs) {
        if (opt_only >= 0 && i != (unsigned long)opt_only)
            continue;
        one_line(fan, i, &st);
    }
    fflush(stdout);
    if (write_full(fd, &st, sizeof(st)) < 0)
        die("write: %s", strerror(errno));
    return 0;
}

int main(int argc, char **argv)
{
    stats total = { 0 };
    uint64_t t0 = now_ns();
    int pfd[2], ret = 0;
    pid_t pids[64];

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--seed") && v)
            opt_seed = strtoull(v, NULL, 0), i++;
        else if (!strcmp(a, "--count") && v)
            opt_count = strtoul(v, NULL, 0), i++;
        else if (!strcmp(a, "--jobs") && v)
            opt_jobs = atoi(v), i++;
        else if (!strcmp(a, "--only") && v)
            opt_only = atol(v), i++;
        else if (!strcmp(a, "--verbose"))
            opt_verbose = true;
        else if (!strcmp(a, "--tap"))
            opt_tap = true;
        else
            die("usage: route-fuzz [--seed N] [--count N] [--jobs N] [--only INDEX] "
                "[--verbose] [--tap]");
    }
    if (opt_jobs < 1 || opt_jobs > 64)
        opt_jobs = 1;
    if (opt_only >= 0) {
        opt_jobs = 1;
        if ((unsigned long)opt_only >= opt_count)
            opt_count = (unsigned long)opt_only + 1;
    }
    if (geteuid() != 0)
        die("needs root (mount and PID namespaces, fanotify)");
    if (pipe(pfd) < 0)
        die("pipe: %s", strerror(errno));
    fflush(stdout);
    for (int j = 0; j < opt_jobs; j++) {
        pids[j] = fork();
        if (pids[j] == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            close(pfd[0]);
            _exit(worker(j, pfd[1]));
        }
    }
    close(pfd[1]);
    for (int j = 0; j < opt_jobs; j++) {
        stats st;
        if (read_full(pfd[0], &st, sizeof(st)) == (ssize_t)sizeof(st)) {
            total.lines += st.lines;
            total.parse_errors += st.parse_errors;
            total.all_host += st.all_host;
            total.mixed += st.mixed;
            total.sandbox += st.sandbox;
            total.git_run += st.git_run;
            total.failures += st.failures;
            total.late += st.late;
        }
    }
    for (int j = 0; j < opt_jobs; j++) {
        int wst;
        waitpid(pids[j], &wst, 0);
        if (!WIFEXITED(wst) || WEXITSTATUS(wst))
            ret = 2;
    }
    if (total.lines != (opt_only >= 0 ? 1 : opt_count))
        ret = 2;
    printf("%s route fuzzer, seed %llu: %lu lines in %.1f s: %lu all host (run by sbxsh and "
           "bash), %lu mixed (host parts run), %lu sandbox only, %lu sent to the sandbox at run "
           "time, %lu syntax errors, %lu with git; %lu failures\n",
           opt_tap ? "#" : "route-fuzz:", opt_seed, total.lines, (now_ns() - t0) / 1e9,
           total.all_host, total.mixed, total.sandbox, total.late, total.parse_errors,
           total.git_run, total.failures);
    if (opt_tap) {
        printf("%sok 1 - %lu generated lines routed, host lines run under sbxsh and bash "
               "agree and stay inside the code directory (seed %llu)\n1..1\n",
               total.failures || ret ? "not " : "", total.lines, opt_seed);
    }
    return total.failures || ret ? 1 : 0;
}
