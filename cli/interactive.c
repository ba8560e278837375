/*
 * sbxsh at a terminal (interactive.h): the prompt, readline with the history file, history
 * expansion, the `history` and `fc` builtins, Tab completion, Ctrl-C and the keys typed ahead;
 * interactive_new(), interactive_read(), interactive_builtin(), interactive_free(). May call, as
 * all of cli/: router/, shell/, session/ (config, the client library, termfilter, the backend
 * registry's lookup) and common/; never a backend nor sync/ (tests/layers.sh).
 */
#include "cli/interactive.h"
#include "cli/prompt.h"
#include "common/run.h"
#include "common/util.h"
#include "session/termfilter.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <pwd.h>
#include <readline/history.h>
#include <readline/readline.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define SBXSH_PROMPT_VERSION "0.1"
#define SBXSH_PROMPT_RELEASE "0.1.0"

struct interactive {
    const cli_options *o;
    line_exec *x;
    char *histfile;           /* NULL: no history file (no HOME, no state directory) */
    int added;                /* entries this session added: what is appended at exit */
    strbuf entry;             /* the lines of the command being read, for the history */
    bool entry_done;          /* ... already added (or not to be) */
    unsigned commands;        /* \#: commands read so far */
    bool cur_added;           /* the command just seen went into the history (its last entry) */
    strbuf rerun;             /* what fc has the shell run next, as if typed */
    bool has_rerun;
    char user[256], host[256];
    bool hup;
    /* The variables below as the person set them (typed_vars), by index in typed_names:
     * what the host acts on. Never the sandbox shell's report of them. */
    int typed_state[5];       /* TYPED_NONE, TYPED_SET or TYPED_UNSET */
    char *typed_value[5];
};

/*
 * The variables whose values act on the host: the history's settings (how many entries the
 * host's history file keeps, what goes into it) and PROMPT_COMMAND (what runs before each
 * prompt, where sbxsh's own `history` and `fc` and the host's git can run). Their values
 * come only from the host: sbxsh's environment, and the assignments on lines the person
 * typed (or sbxsh's own startup file), read from the parsed line here. The sandbox's shell
 * has its own copies, which it reports after each command, but what it reports is the
 * sandbox's to choose (its ~/.bashrc, or a process in it writing to its script pipe), so
 * it is data: shown at most, never obeyed (the attack: `HISTFILESIZE=0` there truncating
 * the host's history file, a PROMPT_COMMAND there running `fc -e CMD` on the host).
 * HISTFILE is not among them: the history file is sbxsh's own (history_path), whatever
 * either side assigns.
 */
static const char *const typed_names[] = { "PROMPT_COMMAND", "HISTSIZE", "HISTFILESIZE",
                                           "HISTCONTROL", "HISTIGNORE" };
enum { TYPED_NONE, TYPED_SET, TYPED_UNSET };
enum { TYPED_PROMPT_COMMAND = 0 };

/* readline's state is global, and so is the one session it serves */
static interactive *the_ia;
static strbuf keys = STRBUF_INIT;      /* keys typed ahead during the last command */
static size_t keys_at;
static volatile sig_atomic_t got_hup;

/* ---- settings: as the person typed them, else the environment's, else bash's ------- */

static int typed_index(const char *name, size_t len)
{
    for (size_t i = 0; i < ARRAY_SIZE(typed_names); i++)
        if (strlen(typed_names[i]) == len && !memcmp(typed_names[i], name, len))
            return (int)i;
    return -1;
}

static void typed_set(interactive *ia, int i, int state, char *value)
{
    free(ia->typed_value[i]);
    ia->typed_state[i] = state;
    ia->typed_value[i] = value;
}

/* One assignment of the person's line. Only a plain one whose value sbxsh can know without
 * the sandbox (fixed text: no expansion) is kept; any other (`+=`, an element, `$X`) makes
 * the value one only the sandbox knows: then the host falls back to its environment, and
 * PROMPT_COMMAND runs in the sandbox alone. PROMPT_COMMAND is kept as the report gives it
 * (PROMPT_POST in line.c: each element followed by \001), so that the two compare. */
static void typed_assign(interactive *ia, const sh_assign *a)
{
    int i = typed_index(a->name, a->name_len);
    strbuf v = STRBUF_INIT;
    bool known = !a->has_subscript && !a->append;

    if (i < 0)
        return;
    if (known && a->is_array) {
        if (i != TYPED_PROMPT_COMMAND)
            known = false;
        for (const sh_word *w = a->elements; known && w; w = w->next) {
            known = !w->assign && sh_word_static_value(w, &v);
            strbuf_addch(&v, '\001');
        }
    } else if (known) {
        known = a->value && sh_word_static_value(a->value, &v);
        if (i == TYPED_PROMPT_COMMAND)
            strbuf_addch(&v, '\001');
    }
    if (known)
        typed_set(ia, i, TYPED_SET, strbuf_detach(&v, NULL));
    else
        typed_set(ia, i, TYPED_NONE, NULL);
    strbuf_release(&v);
}

/* The assignments and unsets of one simple command run by the shell itself (not in a
 * pipeline's subshell, not a prefix to a command's environment). */
static void typed_simple(interactive *ia, const sh_cmd *c)
{
    strbuf name = STRBUF_INIT;
    const sh_word *w = c->words;

    if (!w) {
        for (const sh_assign *a = c->assigns; a; a = a->next)
            typed_assign(ia, a);
        return;
    }
    if (c->assigns || !sh_word_static_value(w, &name)) {
        strbuf_release(&name);
        return;
    }
    if (!strcmp(name.buf, "export") || !strcmp(name.buf, "declare") ||
        !strcmp(name.buf, "typeset") || !strcmp(name.buf, "readonly")) {
        for (w = w->next; w; w = w->next)
            if ((w->flags & SH_WF_ASSIGN) && w->assign)
                typed_assign(ia, w->assign);
    } else if (!strcmp(name.buf, "unset")) {
        bool vars = true;
        for (w = w->next; w; w = w->next) {
            strbuf_reset(&name);
            if (!sh_word_static_value(w, &name))
                continue;
            if (name.buf[0] == '-') {
                vars = !strchr(name.buf, 'f');
                continue;
            }
            int i = typed_index(name.buf, name.len);
            if (vars && i >= 0)
                typed_set(ia, i, TYPED_UNSET, NULL);
        }
    }
    strbuf_release(&name);
}

static void typed_list(interactive *ia, const sh_list *l)
{
    for (const sh_andor *ao = l ? l->items : NULL; ao; ao = ao->next) {
        if (ao->sep == SH_SEP_AMP)
            continue;   /* a background job: a subshell of its own */
        for (const sh_pipeline *pl = ao->pipes; pl; pl = pl->next) {
            const sh_cmd *c = pl->cmds;
            if (!c || c->next)
                continue;   /* a pipeline's commands run in subshells */
            if (c->kind == SH_SIMPLE)
                typed_simple(ia, c);
            else if (c->kind == SH_GROUP)
                typed_list(ia, c->body);
        }
    }
}

void interactive_note_typed(interactive *ia, const sh_parse *p)
{
    if (ia && p->status == SH_OK)
        typed_list(ia, p->root);
}

const char *interactive_typed_prompt_command(const interactive *ia)
{
    return ia->typed_state[TYPED_PROMPT_COMMAND] == TYPED_SET
               ? ia->typed_value[TYPED_PROMPT_COMMAND]
               : NULL;
}

static const char *setting(const interactive *ia, const char *name)
{
    int i = typed_index(name, strlen(name));
    if (i >= 0 && ia->typed_state[i] == TYPED_SET)
        return ia->typed_value[i][0] ? ia->typed_value[i] : NULL;
    if (i >= 0 && ia->typed_state[i] == TYPED_UNSET)
        return NULL;
    return getenv(name);
}

/* A number of entries: bash's rules (unset: 500; not a number or negative: no limit). */
static long hist_number(const interactive *ia, const char *name, long dflt)
{
    const char *s = setting(ia, name);
    char *end;
    long v;
    if (!s || !*s)
        return dflt;
    v = strtol(s, &end, 10);
    return *end || v < 0 ? -1 : v;
}

static void apply_histsize(const interactive *ia)
{
    long n = hist_number(ia, "HISTSIZE", 500);
    if (n < 0)
        unstifle_history();
    else
        stifle_history((int)(n > INT_MAX ? INT_MAX : n));
}

/* ---- the history file -------------------------------------------------------------- */

/* $XDG_STATE_HOME/sbxsh/history, else ~/.local/state/sbxsh/history; the directory made
 * private (0700), the file 0600. */
static char *history_path(void)
{
    const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    char *dir, *path;
    if (state && state[0] == '/')
        dir = xasprintf("%s/sbxsh", state);
    else if (home && home[0] == '/')
        dir = xasprintf("%s/.local/state/sbxsh", home);
    else
        return NULL;
    for (char *p = dir + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(dir, 0700);
            *p = '/';
        }
    }
    mkdir(dir, 0700);
    path = xasprintf("%s/history", dir);
    free(dir);
    return path;
}

static void history_save(interactive *ia)
{
    int fd;
    long filesize;
    if (!ia->histfile || ia->added <= 0)
        return;
    /* append_history() does not create the file */
    fd = open(ia->histfile, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return;
    close(fd);
    append_history(ia->added < history_length ? ia->added : history_length, ia->histfile);
    ia->added = 0;
    /* HISTFILESIZE: by default what HISTSIZE is */
    filesize = hist_number(ia, "HISTFILESIZE", hist_number(ia, "HISTSIZE", 500));
    if (filesize >= 0)
        history_truncate_file(ia->histfile, (int)(filesize > INT_MAX ? INT_MAX : filesize));
}

/* HISTCONTROL (ignorespace, ignoredups, ignoreboth, erasedups) and HISTIGNORE (patterns,
 * colon-separated; & is the previous entry), as bash applies them. */
static bool history_add(interactive *ia, const char *line)
{
    const char *ctl = setting(ia, "HISTCONTROL"), *ign = setting(ia, "HISTIGNORE");
    bool ignspace = false, igndups = false, erasedups = false;
    HIST_ENTRY *last = history_length ? history_get(history_base + history_length - 1) : NULL;

    if (!*line)
        return false;
    for (const char *p = ctl ? ctl : ""; *p;) {
        size_t n = strcspn(p, ":");
        if (n == 11 && !strncmp(p, "ignorespace", n))
            ignspace = true;
        else if (n == 10 && !strncmp(p, "ignoredups", n))
            igndups = true;
        else if (n == 10 && !strncmp(p, "ignoreboth", n))
            ignspace = igndups = true;
        else if (n == 9 && !strncmp(p, "erasedups", n))
            erasedups = true;
        p += n + (p[n] == ':');
    }
    if (ignspace && (line[0] == ' ' || line[0] == '\t'))
        return false;
    if (igndups && last && !strcmp(last->line, line))
        return false;
    for (const char *p = ign ? ign : ""; *p;) {
        size_t n = strcspn(p, ":");
        char pat[1024];
        if (n < sizeof(pat)) {
            memcpy(pat, p, n);
            pat[n] = '\0';
            if (!strcmp(pat, "&") ? last && !strcmp(last->line, line)
                                  : fnmatch(pat, line, 0) == 0)
                return false;
        }
        p += n + (p[n] == ':');
    }
    if (erasedups) {
        for (int i = history_length - 1; i >= 0; i--) {
            HIST_ENTRY *e = history_get(history_base + i);
            if (e && !strcmp(e->line, line)) {
                HIST_ENTRY *gone = remove_history(i);
                if (gone)
                    free_history_entry(gone);
            }
        }
    }
    apply_histsize(ia);
    add_history(line);
    ia->added++;
    return true;
}

/* ---- the prompt ----------------------------------------------------------------------- */

/* PS1 or PS2 as bash would show it: the shell's (as last reported), else sbxsh's default
 * PS1, `[sbx:SESSION] \w\$ `. PS1 and PS2 are the sandbox's data: expanded by
 * prompt_expand (escapes only: nothing runs here) or by the sandbox's own bash (a $ or `),
 * and shown through prompt_filter. */
static char *make_prompt(interactive *ia, bool continuation)
{
    const line_shell_vars *v = line_exec_vars(ia->x);
    strbuf ps = STRBUF_INIT, out = STRBUF_INIT;
    prompt_ctx c = {
        .user = ia->user,
        .host = ia->host,
        .cwd = line_exec_cwd(ia->x),
        .home = getenv("HOME"),
        .shell = ia->o->dollar0,
        .version = SBXSH_PROMPT_VERSION,
        .release = SBXSH_PROMPT_RELEASE,
        .history_number = (unsigned)(history_base + history_length),
        .command_number = ia->commands + 1,
        .jobs = line_exec_jobs(ia->x),
        .root = geteuid() == 0,
        .now = time(NULL),
    };
    const char *t = ttyname(0), *slash;

    if (c.shell && (slash = strrchr(c.shell, '/')))
        c.shell = slash + 1;
    c.tty = t ? (strncmp(t, "/dev/", 5) ? t : t + 5) : NULL;
    if (continuation) {
        prompt_expand(v->ps2 ? v->ps2 : "> ", &c, &ps);
    } else if (v->ps1 && v->ps1_expanded) {
        strbuf_addstr(&ps, v->ps1_expanded);
    } else if (v->ps1) {
        prompt_expand(v->ps1, &c, &ps);
    } else {
        strbuf fmt = STRBUF_INIT;
        strbuf_addf(&fmt, "[sbx:%s] \\w\\$ ", line_exec_session(ia->x));
        prompt_expand(fmt.buf, &c, &ps);
        strbuf_release(&fmt);
    }
    prompt_filter(ps.buf, ps.len, &out);
    strbuf_release(&ps);
    return strbuf_detach(&out, NULL);
}

/* ---- reading a line ---------------------------------------------------------------- */

/* Ctrl-C at the prompt drops the line being typed, as in bash; it is not a
 * signal for the sandbox (the prompt swaps out the session's forwarding). */
static void on_prompt_interrupt(int sig)
{
    (void)sig;
    if (write(2, "\n", 1) < 0) {
        /* nothing to do: the terminal went away */
    }
    rl_on_new_line();
    rl_replace_line("", 0);
    rl_redisplay();
}

/* SIGHUP at the prompt: the terminal is gone; the read in progress ends (no SA_RESTART),
 * the session ends as at Ctrl-D, with the history saved, and sbxsh dies of SIGHUP. */
static void on_prompt_hup(int sig)
{
    (void)sig;
    got_hup = 1;
}

/* readline's input: the keys typed ahead first, then the terminal, a byte at a time. */
static int ia_getc(FILE *f)
{
    unsigned char c;
    if (keys_at < keys.len)
        return (unsigned char)keys.buf[keys_at++];
    for (;;) {
        ssize_t n;
        if (got_hup)
            return EOF;
        n = read(fileno(f), &c, 1);
        if (n == 1)
            return c;
        if (n == 0 || errno != EINTR)
            return EOF;     /* end of input, or EIO: the terminal went away */
        rl_check_signals();
    }
}

/* bash's exceptions to history expansion: `${!name}`, `$!`, `[!...]` and extglob's `!(`. */
static int inhibit_expansion(char *s, int i)
{
    if (i > 0 && (s[i - 1] == '[' || s[i - 1] == '$'))
        return 1;
    if (i > 1 && s[i - 1] == '{' && s[i - 2] == '$')
        return 1;
    return s[i + 1] == '(';
}

static char *read_line(interactive *ia, const char *prompt)
{
    struct sigaction sa, ign, old_int, old_hup, old_term, old_quit;
    char *line;

    memset(&sa, 0, sizeof(sa));
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_prompt_interrupt;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, &old_int);
    sa.sa_handler = on_prompt_hup;
    sa.sa_flags = 0;
    sigaction(SIGHUP, &sa, &old_hup);
    /* at its prompt bash ignores SIGTERM and SIGQUIT */
    ign = sa;
    ign.sa_handler = SIG_IGN;
    sigaction(SIGTERM, &ign, &old_term);
    sigaction(SIGQUIT, &ign, &old_quit);
    /* readline's file name completion works from where the next command runs: the synced
     * tree is the same on both sides */
    int here = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    bool moved = here >= 0 && chdir(line_exec_cwd(ia->x)) == 0;
    line = readline(prompt);
    if (moved && fchdir(here) < 0) {
        /* the directory sbxsh started in is gone: nothing of sbxsh depends on it */
    }
    if (here >= 0)
        close(here);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGHUP, &old_hup, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGQUIT, &old_quit, NULL);
    if (got_hup) {
        /* a line half typed when the terminal went away is not run */
        free(line);
        ia->hup = true;
        return NULL;
    }
    return line;
}

/* One more line of the command for its history entry: bash's cmdhist joins the lines of a
 * multi-line command with "; ", or a space after what a command continues from. */
static void entry_add(interactive *ia, const char *line)
{
    static const char *const cont[] = { "then", "do", "else", "{", "(", "|", "&&", "||", "in" };
    if (ia->entry.len) {
        bool joins = false;
        size_t n = ia->entry.len;
        while (n && (ia->entry.buf[n - 1] == ' ' || ia->entry.buf[n - 1] == '\t'))
            n--;
        for (size_t i = 0; i < ARRAY_SIZE(cont); i++) {
            size_t k = strlen(cont[i]);
            if (n >= k && !memcmp(ia->entry.buf + n - k, cont[i], k) &&
                (n == k || strchr(" \t;|&({", ia->entry.buf[n - k - 1]) || !isalnum((unsigned char)cont[i][0])))
                joins = true;
        }
        strbuf_addstr(&ia->entry, joins ? " " : "; ");
    }
    strbuf_addstr(&ia->entry, line);
}

int interactive_read(interactive *ia, bool continuation, strbuf *buf)
{
    char *prompt, *line, *expanded = NULL;
    int r;

    if (!continuation) {
        /* keys typed during the last command come first, as bash reads them */
        if (keys_at >= keys.len) {
            strbuf_reset(&keys);
            keys_at = 0;
        }
        line_exec_take_typeahead(ia->x, &keys);
        strbuf_reset(&ia->entry);
        ia->entry_done = false;
        apply_histsize(ia);
    }
    prompt = make_prompt(ia, continuation);
    line = read_line(ia, prompt);
    free(prompt);
    if (!line)
        return 0;
    /* history expansion, as bash does it on each line read while set -H is on: the result is
     * shown, and an error (an event not found) or :p runs nothing */
    r = *line && line_exec_histexpand(ia->x) ? history_expand(line, &expanded) : 0;
    if (r < 0 || r == 2) {
        if (r < 0)
            fprintf(stderr, "%s: %s\n", ia->o->progname, expanded);
        else
            fprintf(stderr, "%s\n", expanded);
        if (r == 2)
            history_add(ia, expanded);
        free(expanded);
        free(line);
        ia->entry_done = true;
        strbuf_addch(buf, '\n');
        return 1;
    }
    if (r == 1) {
        fprintf(stderr, "%s\n", expanded);
        free(line);
        line = expanded;
    } else {
        free(expanded);
    }
    entry_add(ia, line);
    strbuf_addstr(buf, line);
    strbuf_addch(buf, '\n');
    free(line);
    return 1;
}

void interactive_command_seen(interactive *ia)
{
    if (ia->entry_done)
        return;
    ia->entry_done = true;
    ia->commands++;
    ia->cur_added = history_add(ia, ia->entry.buf);
}

void interactive_command_replayed(interactive *ia, const char *text, size_t len)
{
    /* the blank lines before a command (the editor's file may have some) are not its */
    while (len && (*text == '\n' || *text == ' ' || *text == '\t')) {
        text++;
        len--;
    }
    strbuf_reset(&ia->entry);
    for (const char *p = text, *end = text + len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        char *line = xstrndup(p, n);
        if (n)
            entry_add(ia, line);
        free(line);
        p += n + 1;
    }
    /* bash echoes what fc runs, then adds it to the history in place of the fc */
    fprintf(stderr, "%.*s\n", (int)(len && text[len - 1] == '\n' ? len - 1 : len), text);
    fflush(stderr);
    ia->cur_added = history_add(ia, ia->entry.buf);
    ia->entry_done = true;
}

void interactive_prompt_command_starts(interactive *ia)
{
    ia->cur_added = false;
}

bool interactive_take_rerun(interactive *ia, strbuf *text)
{
    if (!ia->has_rerun)
        return false;
    strbuf_add(text, ia->rerun.buf, ia->rerun.len);
    strbuf_reset(&ia->rerun);
    ia->has_rerun = false;
    return true;
}

/* ---- `history` ---------------------------------------------------------------------- */

static void history_print(long last)
{
    int from = 0;
    if (last >= 0 && last < history_length)
        from = history_length - (int)last;
    for (int i = from; i < history_length; i++) {
        HIST_ENTRY *e = history_get(history_base + i);
        if (e)
            printf("%5d  %s\n", history_base + i, e->line);
    }
}

static int history_builtin(interactive *ia, const strvec *args)
{
    const char *name = ia->o->progname;
    size_t i = 1;

    if (i < args->n && !strcmp(args->v[i], "--"))
        i++;
    if (i == args->n) {
        history_print(-1);
        return 0;
    }
    const char *a = args->v[i];
    if (a[0] != '-' || !a[1]) {
        char *end;
        long n = strtol(a, &end, 10);
        if (*end || n < 0) {
            fprintf(stderr, "%s: history: %s: numeric argument required\n", name, a);
            return 1;
        }
        if (i + 1 < args->n) {
            fprintf(stderr, "%s: history: too many arguments\n", name);
            return 1;
        }
        history_print(n);
        return 0;
    }
    if (!strcmp(a, "-c")) {
        clear_history();
        ia->added = 0;
        return 0;
    }
    if (!strcmp(a, "-d") && i + 1 < args->n) {
        char *end;
        long off = strtol(args->v[i + 1], &end, 10);
        if (*end || off < history_base || off >= history_base + history_length) {
            fprintf(stderr, "%s: history: %s: history position out of range\n", name,
                    args->v[i + 1]);
            return 1;
        }
        HIST_ENTRY *gone = remove_history((int)(off - history_base));
        if (gone)
            free_history_entry(gone);
        if (ia->added > 0)
            ia->added--;
        return 0;
    }
    if (!strcmp(a, "-a")) {
        history_save(ia);
        return 0;
    }
    if (!strcmp(a, "-w")) {
        if (ia->histfile && write_history(ia->histfile) == 0)
            chmod(ia->histfile, 0600);
        ia->added = 0;
        return 0;
    }
    if (!strcmp(a, "-r")) {
        if (ia->histfile)
            read_history(ia->histfile);
        return 0;
    }
    fprintf(stderr, "%s: history: %s: invalid option\n"
            "history: usage: history [-c] [-d offset] [n] or history -awr\n", name, a);
    return 2;
}

/* ---- `fc` ---------------------------------------------------------------------------- */

/*
 * fc as bash has it, on the person's history: -l lists, -s re-runs (with pat=rep), and
 * without either the commands go to an editor and what it leaves is run. fc works on the
 * commands before it: its own entry, already added (cmdhist), is not one of them, and when
 * fc re-runs something its entry is replaced by what it runs.
 *
 * The editor runs on the host. The history is the person's and lives here; what the editor
 * leaves becomes a command line sbxsh routes, so it must be the person's text, which a file
 * in the sandbox is not (its programs could rewrite it between the editor's exit and the
 * read, into a host `git push` to a URL of their choosing). So the file is in a private
 * temporary directory on the host (0700, outside the code directories), the editor is the
 * host's program named by sbxsh's own FCEDIT, else EDITOR, else vi (the sandbox's shell
 * variables are not read: the sandbox could name any program), found on PATH as host
 * parts find theirs (never inside the code directories), and it starts in that directory.
 */
static const char fc_usage[] = "fc: usage: fc [-e ename] [-lnr] [first] [last] or fc -s "
                               "[pat=rep] [command]\n";

/* The commands fc works on: the history without fc's own entry. */
static int fc_count(const interactive *ia)
{
    return history_length - (ia->cur_added ? 1 : 0);
}

/* An fc operand: a number (negative: counted back from fc, whose own number is
 * history_base + fc_count), or the last command starting with the string. The index into
 * the history, or -1; clamp (for -l) moves a number out of range to the nearest end. */
static int fc_find(const interactive *ia, const char *s, bool clamp)
{
    int n = fc_count(ia);
    char *end;
    long v;

    if (n <= 0)
        return -1;
    errno = 0;
    v = strtol(s, &end, 10);
    if (*s && !*end && !errno) {
        long idx = v < 0 ? n + v : v == 0 ? n - 1 : v - history_base;
        if (idx < 0 || idx >= n) {
            if (!clamp)
                return -1;
            idx = idx < 0 ? 0 : n - 1;
        }
        return (int)idx;
    }
    for (int i = n - 1; i >= 0; i--) {
        HIST_ENTRY *e = history_get(history_base + i);
        if (e && !strncmp(e->line, s, strlen(s)))
            return i;
    }
    return -1;
}

static const char *fc_line(int idx)
{
    HIST_ENTRY *e = history_get(history_base + idx);
    return e ? e->line : "";
}

/* fc runs something in its own place: its entry goes (what runs is added when it runs). */
static void fc_drop_own_entry(interactive *ia)
{
    if (!ia->cur_added || !history_length)
        return;
    HIST_ENTRY *gone = remove_history(history_length - 1);
    if (gone)
        free_history_entry(gone);
    if (ia->added > 0)
        ia->added--;
    ia->cur_added = false;
}

/* Removes the editor's directory and what it left there (a backup, a swap file). */
static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            unlinkat(dirfd(d), e->d_name, 0);
    if (d)
        closedir(d);
    rmdir(dir);
}

extern char **environ;

/* Runs the editor (words split on blanks, as bash splits $FCEDIT) on file, at the terminal,
 * in dir; its exit status, or 127/126 after a message. */
static int fc_run_editor(interactive *ia, const char *editor, const char *dir, const char *file)
{
    const char *name = ia->o->progname, *why;
    strvec argv = STRVEC_INIT, env = STRVEC_INIT;
    strbuf prog = STRBUF_INIT, path = STRBUF_INIT;
    struct sigaction ign, old_int, old_quit;
    sigset_t dfl;
    route_ctx ctx;
    sbx_err err;
    int st = 127, ws = 0;
    pid_t pid;

    for (const char *p = editor; *p;) {
        size_t n;
        p += strspn(p, " \t\n");
        n = strcspn(p, " \t\n");
        if (n)
            strvec_pushn(&argv, p, n);
        p += n;
    }
    if (!argv.n) {
        fprintf(stderr, "%s: fc: no editor\n", name);
        goto out;
    }
    line_exec_route_ctx(ia->x, &ctx);
    if (route_find_host_program(&ctx, argv.v[0], &prog, &why) < 0) {
        fprintf(stderr, "%s: fc: %s: %s\n", name, argv.v[0], why);
        goto out;
    }
    strvec_push(&argv, file);
    for (char **e = environ; e && *e; e++)
        if (strncmp(*e, "PATH=", 5) && strncmp(*e, "PWD=", 4))
            strvec_push(&env, *e);
    if (ctx.path) {
        route_host_path(&ctx, &path);
        strvec_pushf(&env, "PATH=%s", path.buf);
    }
    strvec_pushf(&env, "PWD=%s", dir);
    fflush(NULL);
    /* as system(): the person's Ctrl-C is the editor's, not sbxsh's */
    memset(&ign, 0, sizeof(ign));
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGINT, &ign, &old_int);
    sigaction(SIGQUIT, &ign, &old_quit);
    /* at the terminal, with our fds; SIGINT, SIGQUIT and SIGPIPE the editor's own, Ctrl-Z
     * still ignored (as for sandbox commands): nothing here would resume it. The directory
     * is held by an O_PATH fd (a search permission is all a chdir needs too). */
    sigemptyset(&dfl);
    sigaddset(&dfl, SIGINT);
    sigaddset(&dfl, SIGQUIT);
    sigaddset(&dfl, SIGPIPE);
    sbx_run run = { .argv = argv.v, .file = prog.buf, .env = env.v, .stdin_inherit = true,
                    .stderr_to = SBX_RUN_ERR_INHERIT, .keep_fds = true, .sig_inherit = true,
                    .sig_default = &dfl,
                    .cwd_fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC) };
    if (run.cwd_fd < 0) {
        st = 126;
    } else if (sbx_run_start(&run, &pid, NULL, &err) < 0) {
        fprintf(stderr, "%s: fc: %s: %s\n", name, prog.buf, strerror(errno));
        st = errno == ENOENT ? 127 : 126;
    } else {
        sbx_run_wait(pid, &ws, &err);
        st = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
    }
    if (run.cwd_fd >= 0)
        close(run.cwd_fd);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGQUIT, &old_quit, NULL);
out:
    strvec_clear(&argv);
    strvec_clear(&env);
    strbuf_release(&prog);
    strbuf_release(&path);
    return st;
}

/* The editor path of fc: the commands [first, last] in a file, the editor, then what it
 * left, to be run. */
static int fc_edit(interactive *ia, const char *editor, int first, int last)
{
    const char *name = ia->o->progname, *tmp = getenv("TMPDIR");
    char dir[PATH_MAX], file[PATH_MAX + 16], real[PATH_MAX];
    strbuf text = STRBUF_INIT;
    route_ctx ctx;
    char *buf = NULL;
    size_t len = 0;
    sbx_err err;
    int fd, st, step = first <= last ? 1 : -1;

    line_exec_route_ctx(ia->x, &ctx);
    if (!tmp || tmp[0] != '/' || !realpath(tmp, real) || route_sandbox_writable(&ctx, real))
        tmp = "/tmp";
    snprintf(dir, sizeof(dir), "%s/sbxsh-fc.XXXXXX", tmp);
    if (!mkdtemp(dir) || !realpath(dir, real) || route_sandbox_writable(&ctx, real)) {
        fprintf(stderr, "%s: fc: cannot make a temporary directory in %s: %s\n", name, tmp,
                strerror(errno));
        if (dir[0] && strcmp(dir + strlen(dir) - 6, "XXXXXX"))
            rmdir(dir);
        return 1;
    }
    snprintf(file, sizeof(file), "%s/sbxsh-fc", dir);
    for (int i = first;; i += step) {
        strbuf_addf(&text, "%s\n", fc_line(i));
        if (i == last)
            break;
    }
    fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 || write_full(fd, text.buf, text.len) < 0) {
        fprintf(stderr, "%s: fc: %s: %s\n", name, file, strerror(errno));
        if (fd >= 0)
            close(fd);
        remove_dir(dir);
        strbuf_release(&text);
        return 1;
    }
    close(fd);
    st = fc_run_editor(ia, editor, dir, file);
    /* fc's own entry goes whatever the editor did, as in bash */
    fc_drop_own_entry(ia);
    /* by name: the editor may have replaced the file (vi writes a new one and renames
     * it); the directory is sbxsh's alone */
    if (st == 0 && read_file(file, (size_t)1 << 20, &buf, &len, &err) < 0) {
        fprintf(stderr, "%s: fc: %s\n", name, err.msg);
        st = 1;
    }
    remove_dir(dir);
    if (st == 0 && len) {
        strbuf_reset(&ia->rerun);
        strbuf_add(&ia->rerun, buf, len);
        if (buf[len - 1] != '\n')
            strbuf_addch(&ia->rerun, '\n');
        ia->has_rerun = true;
    }
    free(buf);
    strbuf_release(&text);
    return st;
}

static int fc_builtin(interactive *ia, const strvec *args)
{
    const char *name = ia->o->progname, *editor = NULL, *ops[2] = { NULL, NULL };
    bool list = false, nonum = false, reverse = false, subst = false;
    size_t i = 1, nops = 0;
    int first, last;

    for (; i < args->n; i++) {
        const char *a = args->v[i];
        if (a[0] != '-' || !a[1] || isdigit((unsigned char)a[1]))
            break;
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        for (const char *c = a + 1; *c; c++) {
            switch (*c) {
            case 'l': list = true; break;
            case 'n': nonum = true; break;
            case 'r': reverse = true; break;
            case 's': subst = true; break;
            case 'e':
                if (c[1] || i + 1 >= args->n) {
                    fprintf(stderr, "%s: fc: -e: option requires an argument\n%s", name,
                            fc_usage);
                    return 2;
                }
                editor = args->v[++i];
                goto next;
            default:
                fprintf(stderr, "%s: fc: -%c: invalid option\n%s", name, *c, fc_usage);
                return 2;
            }
        }
    next:;
    }
    if (editor && !strcmp(editor, "-"))
        subst = true;

    if (subst && !list) {
        /* fc -s [pat=rep] [command] */
        const char *pat = NULL, *cmd = "-1";
        strbuf out = STRBUF_INIT;
        if (i < args->n && strchr(args->v[i], '='))
            pat = args->v[i++];
        if (i < args->n)
            cmd = args->v[i++];
        int idx = fc_find(ia, cmd, false);
        if (idx < 0) {
            fprintf(stderr, "%s: fc: no command found\n", name);
            return 1;
        }
        const char *line = fc_line(idx);
        size_t pl = pat ? (size_t)(strchr(pat, '=') - pat) : 0;
        for (const char *p = line; *p;) {
            if (pl && !strncmp(p, pat, pl)) {
                strbuf_addstr(&out, pat + pl + 1);
                p += pl;
            } else {
                strbuf_addch(&out, *p++);
            }
        }
        fc_drop_own_entry(ia);
        strbuf_reset(&ia->rerun);
        strbuf_addf(&ia->rerun, "%s\n", out.buf);
        ia->has_rerun = true;
        strbuf_release(&out);
        return 0;
    }
    for (; i < args->n && nops < 2; i++)
        ops[nops++] = args->v[i];
    if (i < args->n) {
        fprintf(stderr, "%s: fc: too many arguments\n%s", name, fc_usage);
        return 2;
    }
    if (list) {
        if (fc_count(ia) <= 0)
            return 0;
        first = fc_find(ia, ops[0] ? ops[0] : "-16", true);
        last = fc_find(ia, ops[1] ? ops[1] : "-1", true);
    } else {
        first = fc_find(ia, ops[0] ? ops[0] : "-1", false);
        last = ops[1] ? fc_find(ia, ops[1], false) : first;
    }
    if (first < 0 || last < 0) {
        fprintf(stderr, "%s: fc: history specification out of range\n", name);
        return 1;
    }
    if (first > last) {
        int t = first;
        first = last;
        last = t;
        reverse = !reverse;
    }
    if (reverse) {
        int t = first;
        first = last;
        last = t;
    }
    if (list) {
        for (int k = first;; k += first <= last ? 1 : -1) {
            if (nonum)
                printf("\t %s\n", fc_line(k));
            else
                printf("%d\t %s\n", history_base + k, fc_line(k));
            if (k == last)
                break;
        }
        return 0;
    }
    if (!editor)
        editor = getenv("FCEDIT") && *getenv("FCEDIT") ? getenv("FCEDIT")
               : getenv("EDITOR") && *getenv("EDITOR") ? getenv("EDITOR")
                                                        : "vi";
    return fc_edit(ia, editor, first, last);
}

bool interactive_builtin(interactive *ia, const sh_parse *p)
{
    strvec args = STRVEC_INIT;
    bool is;
    int status;

    if (!line_lone_command(p, &args))
        return false;
    is = !strcmp(args.v[0], "history") || !strcmp(args.v[0], "fc");
    if (is) {
        fflush(stdout);
        status = args.v[0][0] == 'h' ? history_builtin(ia, &args) : fc_builtin(ia, &args);
        fflush(stdout);
        line_exec_set_status(ia->x, status);
    }
    strvec_clear(&args);
    return is;
}


/* ---- completion ----------------------------------------------------------------------- */

/*
 * Tab completes, as bash would at this prompt: a variable after `$`, a git subcommand after
 * `git`, a branch after the git commands that take one, a command name where a command goes
 * (the shell's builtins and keywords, the session's functions and aliases, the programs in
 * the sandbox's PATH), else a file name, relative to where the next command runs (the synced
 * tree is the same on both sides). Names that come from the sandbox are offered only when
 * printable: readline shows them as they are.
 */
static const char *const shell_words[] = {
    "alias", "bg", "bind", "break", "builtin", "caller", "case", "cd", "command", "compgen",
    "complete", "compopt", "continue", "coproc", "declare", "dirs", "disown", "do", "done",
    "echo", "elif", "else", "enable", "esac", "eval", "exec", "exit", "export", "false", "fc",
    "fg", "fi", "for", "function", "getopts", "hash", "help", "history", "if", "in", "jobs",
    "kill", "let", "local", "logout", "mapfile", "popd", "printf", "pushd", "pwd", "read",
    "readarray", "readonly", "return", "select", "set", "shift", "shopt", "source", "suspend",
    "test", "then", "time", "times", "trap", "true", "type", "typeset", "ulimit", "umask",
    "unalias", "unset", "until", "wait", "while",
};
static const char *const git_commands[] = {
    "add", "am", "apply", "archive", "bisect", "blame", "branch", "bundle", "checkout",
    "cherry-pick", "clean", "clone", "commit", "config", "describe", "diff", "fetch",
    "format-patch", "gc", "grep", "init", "log", "ls-files", "merge", "mv", "notes", "pull",
    "push", "range-diff", "rebase", "reflog", "remote", "reset", "restore", "revert", "rm",
    "shortlog", "show", "sparse-checkout", "stash", "status", "submodule", "switch", "tag",
    "worktree",
};
static const char *const git_takes_branch[] = {
    "checkout", "switch", "merge", "rebase", "branch", "log", "diff", "push", "pull", "reset",
    "cherry-pick", "show", "rev-parse", "tag", "fetch", "worktree",
};

static strvec cands = STRVEC_INIT;
static size_t cand_at;

/*
 * Completion puts names the sandbox made (its files, functions, variables, the branches in
 * a .git it can write) into the line the person is about to run, and the host runs its
 * host parts: a file named `zz; git push origin HEAD:x` inserted as it is would turn
 * `ls zz<Tab><Enter>` into a host git push. So a completed word is always one word, as
 * bash makes it: file names are quoted with backslashes where the shell would read a
 * character as syntax (filename_quote, readline's filename quoting, which knows the
 * quotes the word was opened with), and the other names, which readline does not quote,
 * are offered only when they need no quoting at all (plain_name). A name with a control
 * byte is never offered: readline would write it to the terminal in its list, and the
 * line would hold it (sbx_text_shows_plain).
 */
static const char filename_quote_chars[] = " \t\n\\\"'@<>=;|&()#$`?*[]!:{}~^,";

/* A name that is one word as it is: shown safely, nothing the shell reads as syntax. */
static bool plain_name(const char *s, size_t n)
{
    if (!n || !sbx_text_shows_plain(s, n))
        return false;
    for (size_t i = 0; i < n; i++)
        if (strchr(filename_quote_chars, s[i]) && s[i] != ':' && s[i] != ',' && s[i] != '@' &&
            s[i] != '=' && (s[i] != '~' || i > 0))
            return false;
    return true;
}

/* Does the word being completed start with ~ (a tilde the person typed, to be expanded)? */
static bool word_has_tilde;

/* readline's rl_filename_quoting_function: the name with a backslash before each character
 * the shell would take as syntax, as bash quotes a completed file name. Always this style,
 * also after an opening quote the person typed: *qcp is cleared, so readline replaces that
 * quote too and adds no closing one. A leading ~ the person typed stays a tilde. */
static char *filename_quote(char *text, int match_type, char *qcp)
{
    strbuf out = STRBUF_INIT;
    (void)match_type;
    if (qcp)
        *qcp = '\0';
    for (const char *p = text; *p; p++) {
        if (strchr(filename_quote_chars, *p) && !(p == text && *p == '~' && word_has_tilde))
            strbuf_addch(&out, '\\');
        strbuf_addch(&out, *p);
    }
    return strbuf_detach(&out, NULL);
}

/* readline's rl_filename_dequoting_function: the word as the shell will see it, for
 * looking up files (backslashes and quotes removed, as bash's quote removal). */
static char *filename_dequote(char *text, int quote_char)
{
    strbuf out = STRBUF_INIT;
    char q = (char)quote_char;
    for (const char *p = text; *p; p++) {
        if (*p == '\\' && q != '\'' && p[1]) {
            p++;
        } else if (q && *p == q) {
            q = '\0';
            continue;
        } else if (!q && (*p == '\'' || *p == '"')) {
            q = *p;
            continue;
        }
        strbuf_addch(&out, *p);
    }
    strbuf_addch(&out, '\0');
    strbuf_setlen(&out, out.len - 1);
    return strbuf_detach(&out, NULL);
}

/* readline's rl_char_is_quoted_p: is line[idx] quoted (after a backslash, inside quotes),
 * so not where a word breaks? As bash reads the line. */
static int char_is_quoted(char *line, int idx)
{
    char q = '\0';
    for (int i = 0; i < idx && line[i]; i++) {
        if (q == '\'') {
            if (line[i] == '\'')
                q = '\0';
        } else if (line[i] == '\\') {
            if (i + 1 == idx)
                return 1;
            if (line[i + 1])
                i++;
        } else if (q == '"') {
            if (line[i] == '"')
                q = '\0';
        } else if (line[i] == '\'' || line[i] == '"') {
            q = line[i];
        }
    }
    return q != '\0';
}

/* readline's rl_ignore_some_completions_function (file names): drops the names that
 * cannot be shown safely, as bash's FIGNORE drops names (matches[0] is the common prefix
 * of several, or the one match). */
/* Is the file name being completed a cd's argument (set by ia_complete)? */
static bool completing_cd_arg;

/* A name the sandbox's commands do not see (a host name below HOME, outside the code
 * directories and the views the scratch sandbox got: line_exec_sandbox_sees) is dropped
 * like an unsafe one: Tab offers what the sandbox has. */
static bool name_offered(const char *m)
{
    return sbx_text_shows_plain(m, strlen(m)) &&
           (!the_ia || line_exec_sandbox_sees(the_ia->x, m, completing_cd_arg));
}

static int drop_unsafe_names(char **matches)
{
    size_t n = 0, kept = 1;
    if (!matches || !matches[0])
        return 0;
    if (!matches[1]) {
        if (!name_offered(matches[0])) {
            free(matches[0]);
            matches[0] = NULL;
        }
        return 0;
    }
    for (n = 1; matches[n]; n++) {
        if (name_offered(matches[n]))
            matches[kept++] = matches[n];
        else
            free(matches[n]);
    }
    matches[kept] = NULL;
    if (kept == 1) {
        free(matches[0]);
        matches[0] = NULL;
    } else if (kept == 2) {
        free(matches[0]);
        matches[0] = matches[1];
        matches[1] = NULL;
    } else {
        /* the common prefix of the names kept (a dropped one may have shortened it) */
        size_t lcd = strlen(matches[1]);
        for (n = 2; n < kept; n++) {
            size_t k = 0;
            while (k < lcd && matches[n][k] == matches[1][k])
                k++;
            lcd = k;
        }
        if (lcd > strlen(matches[0])) {
            free(matches[0]);
            matches[0] = xstrndup(matches[1], lcd);
        }
    }
    return 0;
}

static bool printable_name(const char *s, size_t n)
{
    return plain_name(s, n);
}

static void cand_add(const char *text, const char *name, size_t n, const char *prefix)
{
    size_t tl = strlen(text);
    if (!printable_name(name, n) || n < tl || strncmp(name, text, tl))
        return;
    for (size_t i = 0; i < cands.n; i++)
        if (strlen(cands.v[i]) == n + strlen(prefix) && !strncmp(cands.v[i] + strlen(prefix), name, n))
            return;
    strvec_pushf(&cands, "%s%.*s", prefix, (int)n, name);
}

static void cand_add_lines(const char *text, const char *lines, const char *prefix)
{
    for (const char *p = lines; *p;) {
        size_t n = strcspn(p, "\n");
        cand_add(text, p, n, prefix);
        p += n + (p[n] == '\n');
    }
}

static char *cand_next(const char *text, int state)
{
    (void)text;
    if (!state)
        cand_at = 0;
    return cand_at < cands.n ? xstrdup(cands.v[cand_at++]) : NULL;
}

/* The programs in each directory of the sandbox's PATH (the same files on the host for the
 * local runtimes: the sandbox's system directories are the host's, read-only). */
static void add_path_commands(const char *text, const char *path)
{
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, ":");
        char *dir = xstrndup(p, n);
        DIR *d = dir[0] == '/' ? opendir(dir) : NULL;
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (e->d_name[0] == '.' || strncmp(e->d_name, text, strlen(text)))
                continue;
            if (faccessat(dirfd(d), e->d_name, X_OK, 0) == 0)
                cand_add(text, e->d_name, strlen(e->d_name), "");
        }
        if (d)
            closedir(d);
        free(dir);
        p += n + (p[n] == ':');
    }
}

/* The git directory of the repository holding dir, or NULL. Read as files, without running
 * git: the repository's config is one the sandbox's commits pass through. */
static char *git_dir_of(const char *dir)
{
    char *d = xstrdup(dir);
    for (;;) {
        char *g = xasprintf("%s/.git", d);
        struct stat st;
        if (stat(g, &st) == 0 && S_ISDIR(st.st_mode)) {
            free(d);
            return g;
        }
        free(g);
        char *slash = strrchr(d, '/');
        if (!slash || slash == d) {
            free(d);
            return NULL;
        }
        *slash = '\0';
    }
}

static void add_refs_under(const char *text, const char *root, const char *rel, size_t strip)
{
    char *path = xasprintf("%s/%s", root, rel);
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char *sub = xasprintf("%s/%s", rel, e->d_name);
        char *full = xasprintf("%s/%s", root, sub);
        struct stat st;
        if (lstat(full, &st) == 0 && S_ISDIR(st.st_mode))
            add_refs_under(text, root, sub, strip);
        else if (S_ISREG(st.st_mode))
            cand_add(text, sub + strip, strlen(sub + strip), "");
        free(sub);
        free(full);
    }
    if (d)
        closedir(d);
    free(path);
}

static void add_branches(const char *text, const char *cwd)
{
    char *gd = git_dir_of(cwd), *packed, *buf = NULL;
    size_t len;
    sbx_err err;
    if (!gd)
        return;
    add_refs_under(text, gd, "refs/heads", strlen("refs/heads/"));
    add_refs_under(text, gd, "refs/remotes", strlen("refs/remotes/"));
    add_refs_under(text, gd, "refs/tags", strlen("refs/tags/"));
    packed = xasprintf("%s/packed-refs", gd);
    if (read_file(packed, (size_t)16 << 20, &buf, &len, &err) == 0) {
        for (char *line = buf; line && *line;) {
            char *nl = strchr(line, '\n'), *ref = strchr(line, ' ');
            if (nl)
                *nl = '\0';
            if (line[0] != '#' && line[0] != '^' && ref) {
                ref++;
                static const char *const pre[] = { "refs/heads/", "refs/remotes/", "refs/tags/" };
                for (size_t i = 0; i < ARRAY_SIZE(pre); i++)
                    if (!strncmp(ref, pre[i], strlen(pre[i])))
                        cand_add(text, ref + strlen(pre[i]), strlen(ref + strlen(pre[i])), "");
            }
            line = nl ? nl + 1 : NULL;
        }
        free(buf);
    }
    free(packed);
    free(gd);
}

/* The words of the simple command the cursor is in, before the word being completed. */
static int words_before(int start, strvec *words)
{
    int from = start;
    while (from > 0 && !strchr(";|&(`\n", rl_line_buffer[from - 1]))
        from--;
    for (int i = from; i < start;) {
        while (i < start && (rl_line_buffer[i] == ' ' || rl_line_buffer[i] == '\t'))
            i++;
        int b = i;
        while (i < start && rl_line_buffer[i] != ' ' && rl_line_buffer[i] != '\t')
            i++;
        if (i > b)
            strvec_pushf(words, "%.*s", i - b, rl_line_buffer + b);
    }
    return (int)words->n;
}

static char **ia_complete(const char *text, int start, int end)
{
    interactive *ia = the_ia;
    strvec words = STRVEC_INIT;

    (void)end;

    strvec_clear(&cands);
    if (!ia)
        return NULL;
    word_has_tilde = rl_line_buffer[start] == '~';
    words_before(start, &words);
    completing_cd_arg = words.n == 1 && !strcmp(words.v[0], "cd");
    rl_attempted_completion_over = 1;
    if (text[0] == '~' && !strchr(text, '/')) {
        /* ~user, as bash completes it: the users of the host's passwd database (the sandbox
         * sees the same /etc/passwd), each a directory for readline to add the slash to */
        strvec_clear(&words);
        return rl_completion_matches(text, rl_username_completion_function);
    }
    if (text[0] == '$' || (start > 0 && rl_line_buffer[start - 1] == '$')) {
        strbuf fn = STRBUF_INIT, vars = STRBUF_INIT;
        sbx_err err;
        bool dollar = text[0] == '$';
        if (line_exec_names(ia->x, &fn, &vars, &err) == 0)
            cand_add_lines(dollar ? text + 1 : text, vars.buf ? vars.buf : "", dollar ? "$" : "");
        strbuf_release(&fn);
        strbuf_release(&vars);
        rl_completion_append_character = ' ';
    } else if (words.n == 1 && !strcmp(words.v[0], "git") && text[0] != '-') {
        for (size_t i = 0; i < ARRAY_SIZE(git_commands); i++)
            cand_add(text, git_commands[i], strlen(git_commands[i]), "");
    } else if (words.n >= 2 && !strcmp(words.v[0], "git") && text[0] != '-' &&
               !strchr(text, '/' ) ) {
        for (size_t i = 0; i < ARRAY_SIZE(git_takes_branch); i++)
            if (!strcmp(words.v[1], git_takes_branch[i]))
                add_branches(text, line_exec_cwd(ia->x));
        if (!cands.n)
            goto files;
    } else if (words.n == 0 && !strchr(text, '/') && text[0]) {
        strbuf fn = STRBUF_INIT, vars = STRBUF_INIT;
        sbx_err err;
        for (size_t i = 0; i < ARRAY_SIZE(shell_words); i++)
            cand_add(text, shell_words[i], strlen(shell_words[i]), "");
        if (line_exec_names(ia->x, &fn, &vars, &err) == 0 && fn.len)
            cand_add_lines(text, fn.buf, "");
        strbuf_release(&fn);
        strbuf_release(&vars);
        add_path_commands(text, line_exec_sandbox_path(ia->x));
    } else {
files:
        /* file names, from where the next command runs (read_line is there) */
        strvec_clear(&words);
        rl_attempted_completion_over = 0;
        return NULL;
    }
    strvec_clear(&words);
    if (!cands.n)
        return NULL;
    return rl_completion_matches(text, cand_next);
}

/* ---- the session ---------------------------------------------------------------------- */

interactive *interactive_new(const cli_options *o, line_exec *x)
{
    interactive *ia = xcalloc(1, sizeof(*ia));
    struct passwd *pw = getpwuid(geteuid());

    ia->o = o;
    ia->x = x;
    strbuf_init(&ia->entry, 0);
    strbuf_init(&ia->rerun, 0);
    snprintf(ia->user, sizeof(ia->user), "%s", pw ? pw->pw_name : "");
    if (gethostname(ia->host, sizeof(ia->host)) < 0)
        ia->host[0] = '\0';
    ia->host[sizeof(ia->host) - 1] = '\0';
    the_ia = ia;
    got_hup = 0;
    rl_catch_signals = 0;
    rl_readline_name = "sbxsh";
    /* as bash: the prompt and the line being edited go to stderr, so `sbxsh >log` still
     * shows them */
    rl_outstream = stderr;
    rl_getc_function = ia_getc;
    rl_attempted_completion_function = ia_complete;
    /* completed names are quoted as bash quotes them (see filename_quote) */
    rl_completer_quote_characters = "'\"";
    rl_filename_quote_characters = filename_quote_chars;
    rl_filename_quoting_function = filename_quote;
    rl_filename_dequoting_function = filename_dequote;
    rl_char_is_quoted_p = char_is_quoted;
    rl_ignore_some_completions_function = drop_unsafe_names;
    using_history();
    history_inhibit_expansion_function = inhibit_expansion;
    ia->histfile = history_path();
    if (ia->histfile)
        read_history(ia->histfile);
    apply_histsize(ia);
    /* As interactive bash: Ctrl-Z, and reads or writes from the background, do not stop
     * the shell itself (a sandbox command at a terminal has its own pty). */
    signal(SIGTSTP, SIG_IGN);
    signal(SIGTTIN, SIG_IGN);
    signal(SIGTTOU, SIG_IGN);
    return ia;
}

bool interactive_hung_up(const interactive *ia)
{
    return ia->hup;
}

void interactive_free(interactive *ia)
{
    if (!ia)
        return;
    history_save(ia);
    strbuf_release(&ia->entry);
    strbuf_release(&ia->rerun);
    for (size_t i = 0; i < ARRAY_SIZE(typed_names); i++)
        free(ia->typed_value[i]);
    free(ia->histfile);
    if (the_ia == ia)
        the_ia = NULL;
    free(ia);
}
