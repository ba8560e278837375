/*
 * sbx-bash-interactive.so: a bash loadable builtin (`enable -f`) that makes the persistent
 * shell of sbxsh's prompt interactive while it runs what the person typed, as `bash -i`
 * is, and a plain `bash -s` reading its script stream around that (cli/README.md,
 * "Messages").
 *
 * What a person sees of bash at a prompt hangs on two of its globals (bash 5.2):
 * `interactive_shell` (error.c `error_prolog` and `get_name_for_error`, builtins/common.c
 * `builtin_error_prolog`: `NAME: cd: nowhere: ...` with NAME argv[0]'s base name, not
 * `$0: line N: cd: ...`; subst.c's expansion errors, a failed `exec`: the line is abandoned,
 * not the shell; jobs.c `wait_for`: a Ctrl-C of a list stops the list, a job killed by a
 * signal says so) and `interactive` (jobs.c `notify_and_cleanup` after each foreground job:
 * finished foreground jobs leave the job table at once, a background job's end and a
 * stopped job are told there and then; `[1] PID` after `&`; builtins/exit.def: `exit` says
 * `exit`, or `logout` in a login shell). `forced_interactive` is the `i` of `$-` (a Debian
 * ~/.bashrc returns early without it): it stays set from the first ON, so that `$-` in a
 * report (and in PS1) has the `i` it has at bash -i's prompt, and sbxsh knows from it that
 * the marks work (cli/line.c, bash_interactive).
 *
 * The shell cannot simply be `bash -i`: it reads a script stream (bash -i SCRIPT never
 * cleans finished foreground jobs; bash -i on stdin prints prompts, runs PROMPT_COMMAND).
 * So the three are on only between two marks, each the expansion of a dynamic variable
 * (bash calls its function at every lookup), which costs no command (a simple command would
 * change `$?` and `$_` and fire a DEBUG trap) and expands to nothing, the variables being
 * invisible (unset to `set`, `${!prefix@}` and `compgen -v`; `declare -p` names them).
 * sbxsh puts `${__sbx_ion-}` in the redirection of the group that holds the typed text and
 * `${__sbx_ioff-}` in the redirection of the reports after it (cli/line.c).
 *
 * The state machine: off at load. ON (the group's redirection, before its body runs):
 * the three set; PS0 and line editing put aside so that, if an error abandons the line and
 * bash reads the next one while still on, it neither prints PS0 nor runs PROMPT_COMMAND
 * (eval.c `reader_loop`, `parse_command`); and sbxsh's own `trap : INT` (which keeps the
 * non-interactive shell alive through a Ctrl-C) taken down for bash -i's SIGINT handler, so
 * that a Ctrl-C ends the list as at bash -i. OFF (a report's redirection: the "done" report
 * after the group, else the "next" report on the line after it when an error abandoned the
 * line): first a child's end bash deferred collected (collect_children), then the job
 * notices bash -i prints before its prompt (notify_and_cleanup, which
 * also marks the finished foreground jobs told and drops them), then all restored but `$-`,
 * the `: INT` trap again unless the person set a trap of their own. Both are idempotent: a
 * mark seen twice changes nothing.
 *
 * `exit` is bash's own, put back by this object (the builtin that keeps it loaded: `enable
 * -f SO exit` copies this exit_struct over bash's, so `type`, `help`, `enable -a` show
 * nothing new); its load hook makes the marks. When it cannot be loaded (no file, another
 * bash), sbxsh's `enable -f` fails quietly and the shell is as before: the marks expand to
 * nothing.
 *
 * No bash header: the few structures used (`struct builtin` of builtins.h, `SHELL_VAR` of
 * variables.h, `WORD_LIST` of command.h, unchanged from bash 4.4 to 5.2) are declared here
 * as bash has them, so that the build needs nothing more than a C compiler.
 * Built without libsbx: it runs inside bash.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <string.h>

/* ---- bash's own, as bash 5.2 declares them ---- */
typedef struct word_desc {
    char *word;
    int flags;
} WORD_DESC;
typedef struct word_list {
    struct word_list *next;
    WORD_DESC *word;
} WORD_LIST;
typedef int sh_builtin_func_t(WORD_LIST *);
struct builtin {
    char *name;
    sh_builtin_func_t *function;
    int flags;
    char *const *long_doc;
    const char *short_doc;
    char *handle;
};
#define BUILTIN_ENABLED 0x01
#define SPECIAL_BUILTIN 0x08
typedef struct variable SHELL_VAR;
typedef SHELL_VAR *sh_var_value_func_t(SHELL_VAR *);
typedef SHELL_VAR *sh_var_assign_func_t(SHELL_VAR *, char *, long, char *);
struct variable {
    char *name;
    char *value;
    char *exportstr;
    sh_var_value_func_t *dynamic_value;
    sh_var_assign_func_t *assign_func;
    int attributes;
    int context;
};
#define att_invisible 0x0001000
#define att_nounset 0x0002000
#define att_noassign 0x0004000

extern int interactive_shell, interactive, forced_interactive, no_line_editing, startup_state;
extern char *ps0_prompt;
extern char *trap_list[];
extern struct builtin *shell_builtins;
extern int num_shell_builtins;
extern SHELL_VAR *bind_variable(const char *, char *, int);
extern void notify_and_cleanup(void);
extern int signal_is_trapped(int);
extern void set_signal(int, char *);
extern void restore_default_signal(int);
extern void *set_signal_handler(int, void *);
extern void sigint_sighandler(int);
extern int get_tty_state(void);

/* ---- the marks ---- */
static int on;                  /* between ON and OFF */
static int saved_no_line_editing;
static int saved_startup_state;
static char *saved_ps0;
static int int_trap_taken;      /* sbxsh's `: INT` trap is down while on */

static SHELL_VAR *mark_on(SHELL_VAR *v)
{
    if (on)
        return v;
    on = 1;
    interactive_shell = interactive = forced_interactive = 1;
    /* the terminal's settings as they are now, which bash -i restores after a job that
     * stopped or was killed (jobs.c wait_for); a bash started non-interactive never read
     * them, and would set the terminal to zeros */
    get_tty_state();
    saved_no_line_editing = no_line_editing;
    no_line_editing = 0;
    /* a bash started interactive (shell.c): a job that stops, or ends in the background,
     * is told when bash waits next (jobs.c notify_of_job_status), not only by `jobs` */
    saved_startup_state = startup_state;
    startup_state = 1;
    saved_ps0 = ps0_prompt;
    ps0_prompt = NULL;
    int_trap_taken = 0;
    if (signal_is_trapped(SIGINT) && trap_list[SIGINT] && !strcmp(trap_list[SIGINT], ":")) {
        restore_default_signal(SIGINT);
        set_signal_handler(SIGINT, (void *)sigint_sighandler);
        int_trap_taken = 1;
    }
    return v;
}

/*
 * A child's end that bash has not collected yet, collected now, as its SIGCHLD handler does.
 * bash defers a SIGCHLD that comes while it walks its job table (jobs.c `queue_sigchld`,
 * which notify_of_job_status raises) and collects it only at the next wait: a job killed
 * right after `kill -9 %1` (as the notices at OFF run) would stay "Stopped" until the next
 * command bash waits for, and sbxsh would refuse `exit` for it. The handler installed is
 * bash's own (set_signal_handler, no SA_SIGINFO); it waits with WNOHANG and runs a CHLD trap
 * only for children that did end. SIGCHLD is blocked meanwhile: the handler is not
 * reentrant.
 */
static void collect_children(void)
{
    struct sigaction sa;
    sigset_t set, old;

    if (sigaction(SIGCHLD, NULL, &sa) < 0 || (sa.sa_flags & SA_SIGINFO) ||
        sa.sa_handler == SIG_DFL || sa.sa_handler == SIG_IGN)
        return;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, &old);
    sa.sa_handler(SIGCHLD);
    sigprocmask(SIG_SETMASK, &old, NULL);
}

static SHELL_VAR *mark_off(SHELL_VAR *v)
{
    if (!on)
        return v;
    /* the job notices bash -i prints before its next prompt ([1]+ Done, Killed), now */
    collect_children();
    notify_and_cleanup();
    on = 0;
    interactive_shell = interactive = 0;
    no_line_editing = saved_no_line_editing;
    startup_state = saved_startup_state;
    /* a PS0 the person assigned meanwhile is theirs */
    if (!ps0_prompt)
        ps0_prompt = saved_ps0;
    /* the person's own trap stays; `trap - INT` does not end sbxsh's */
    if (int_trap_taken && !signal_is_trapped(SIGINT))
        set_signal(SIGINT, (char *)":");
    int_trap_taken = 0;
    return v;
}

static int make_mark(const char *name, sh_var_value_func_t *fn)
{
    SHELL_VAR *v = bind_variable(name, (char *)"", 0);
    if (!v)
        return -1;
    v->dynamic_value = fn;
    v->attributes |= att_invisible | att_noassign;
    return 0;
}

/* ---- exit, bash's own ---- */
static sh_builtin_func_t *bash_exit;
static char *const *bash_exit_doc;
static const char *bash_exit_short;
static int bash_exit_flags;

/* bash's exit builtin, found before this object's replaces it */
__attribute__((constructor)) static void find_bash_exit(void)
{
    for (int i = 0; shell_builtins && i < num_shell_builtins; i++) {
        if (shell_builtins[i].name && !strcmp(shell_builtins[i].name, "exit")) {
            bash_exit = shell_builtins[i].function;
            bash_exit_doc = shell_builtins[i].long_doc;
            bash_exit_short = shell_builtins[i].short_doc;
            bash_exit_flags = shell_builtins[i].flags;
            break;
        }
    }
}

static char *const no_doc[] = { NULL };

struct builtin exit_struct = {
    "exit", NULL, BUILTIN_ENABLED | SPECIAL_BUILTIN, no_doc, "exit [n]", NULL,
};

int exit_builtin_load(char *name);

/* `enable -f SO exit`: bash calls this once the object is loaded, before it copies
 * exit_struct over its own exit; a 0 leaves bash's exit, and no marks. */
int exit_builtin_load(char *name)
{
    (void)name;
    if (!bash_exit)
        return 0;
    exit_struct.function = bash_exit;
    exit_struct.flags = bash_exit_flags | BUILTIN_ENABLED;
    if (bash_exit_doc)
        exit_struct.long_doc = bash_exit_doc;
    if (bash_exit_short)
        exit_struct.short_doc = bash_exit_short;
    /* OFF first: an ON without its OFF would leave the shell interactive */
    if (make_mark("__sbx_ioff", mark_off) < 0 || make_mark("__sbx_ion", mark_on) < 0)
        return 0;
    return 1;
}
