/*
 * sbxsh's command line (options.h), parsed as bash parses its own: cli_options_parse() keeps
 * the options that change how bash runs commands, in order, for the sandbox's bash;
 * cli_options_print_help() and cli_options_print_usage() print --help and the usage line.
 * Calls only common/ (strvec, util); cli/ may call router/, shell/, session/ and common/.
 */
#include "cli/options.h"

#include <stdio.h>
#include <string.h>

/* bash's `set -o` names and `shopt` names (bash 5.2), so that a typo is
 * reported here, as bash would, rather than by the sandbox's bash later. */
static const char *const set_o_names[] = {
    "allexport", "braceexpand", "emacs", "errexit", "errtrace", "functrace", "hashall",
    "histexpand", "history", "ignoreeof", "interactive-comments", "keyword", "monitor",
    "noclobber", "noexec", "noglob", "nolog", "notify", "nounset", "onecmd", "physical",
    "pipefail", "posix", "privileged", "verbose", "vi", "xtrace",
};

static const char *const shopt_names[] = {
    "autocd", "assoc_expand_once", "cdable_vars", "cdspell", "checkhash", "checkjobs",
    "checkwinsize", "cmdhist", "compat31", "compat32", "compat40", "compat41", "compat42",
    "compat43", "compat44", "complete_fullquote", "direxpand", "dirspell", "dotglob",
    "execfail", "expand_aliases", "extdebug", "extglob", "extquote", "failglob",
    "force_fignore", "globasciiranges", "globskipdots", "globstar", "gnu_errfmt",
    "histappend", "histreedit", "histverify", "hostcomplete", "huponexit", "inherit_errexit",
    "interactive_comments", "lastpipe", "lithist", "localvar_inherit", "localvar_unset",
    "login_shell", "mailwarn", "no_empty_cmd_completion", "nocaseglob", "nocasematch",
    "noexpand_translation", "nullglob", "patsub_replacement", "progcomp", "progcomp_alias",
    "promptvars", "restricted_shell", "shift_verbose", "sourcepath", "varredir_close",
    "xpg_echo",
};

/* Single-letter options of `set`, valid at invocation too. */
static const char set_letters[] = "abefhkmnptuvxBCEHPT";

static bool in_list(const char *name, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(name, list[i]))
            return true;
    return false;
}

void cli_options_init(cli_options *o)
{
    memset(o, 0, sizeof(*o));
    strvec_init(&o->positional);
    strvec_init(&o->bash_args);
    o->argv0 = "sbxsh";
    o->progname = "sbxsh";
}

void cli_options_release(cli_options *o)
{
    strvec_clear(&o->positional);
    strvec_clear(&o->bash_args);
}

/* A long option; returns 1 if it consumed the next argument too, 0 if not,
 * -1 on error. */
static int parse_long(cli_options *o, const char *arg, const char *next, sbx_err *err)
{
    const char *val = NULL;
    size_t namelen = strcspn(arg, "=");
    char name[64];

    if (namelen >= sizeof(name))
        return sbx_errf(err, "%s: invalid option", arg);
    memcpy(name, arg, namelen);
    name[namelen] = '\0';
    if (arg[namelen] == '=')
        val = arg + namelen + 1;

    /* sbxsh's own options */
    if (!strcmp(name, "--help")) {
        o->action = SH_ACT_HELP;
        return 0;
    }
    if (!strcmp(name, "--version")) {
        o->action = SH_ACT_VERSION;
        return 0;
    }
    if (!strcmp(name, "--ast")) {
        o->action = SH_ACT_AST;
        return 0;
    }
    if (!strcmp(name, "--route")) {
        o->action = SH_ACT_ROUTE;
        return 0;
    }
    if (!strcmp(name, "--json")) {
        o->json = true;
        return 0;
    }
    if (!strcmp(name, "--session")) {
        if (val) {
            o->session = val;
            return 0;
        }
        if (!next)
            return sbx_errf(err, "--session: option requires an argument");
        o->session = next;
        return 1;
    }

    /* bash's own long options, handed on to the sandbox's bash */
    if (!strcmp(arg, "--login")) {
        o->login = true;
        strvec_push(&o->bash_args, arg);
        return 0;
    }
    if (!strcmp(arg, "--norc"))
        o->norc = true;
    if (!strcmp(arg, "--noprofile"))
        o->noprofile = true;
    if (!strcmp(arg, "--norc") || !strcmp(arg, "--noprofile") || !strcmp(arg, "--posix") ||
        !strcmp(arg, "--noediting") || !strcmp(arg, "--verbose") ||
        !strcmp(arg, "--restricted")) {
        strvec_push(&o->bash_args, arg);
        return 0;
    }
    if (!strcmp(arg, "--rcfile") || !strcmp(arg, "--init-file")) {
        if (!next)
            return sbx_errf(err, "%s: option requires an argument", arg);
        strvec_push(&o->bash_args, arg);
        strvec_push(&o->bash_args, next);
        o->rcfile = next;
        return 1;
    }
    return sbx_errf(err, "%s: invalid option", arg);
}

int cli_options_parse(cli_options *o, int argc, char **argv, bool stdin_is_tty, sbx_err *err)
{
    int i = 1;
    bool want_command = false;

    if (argc > 0 && argv[0]) {
        const char *slash;
        o->argv0 = argv[0];
        slash = strrchr(argv[0], '/');
        o->progname = slash ? slash + 1 : argv[0];
        if (o->progname[0] == '-') {
            /* login(1) and su - start a login shell this way: so is the sandbox's bash */
            o->login = true;
            o->progname++;
            strvec_push(&o->bash_args, "--login");
        }
        if (!o->progname[0])
            o->progname = "sbxsh";
    }

    /* GNU long options come first, as in bash. */
    for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-' && argv[i][2]; i++) {
        int used = parse_long(o, argv[i], i + 1 < argc ? argv[i + 1] : NULL, err);
        if (used < 0)
            return -1;
        i += used;
    }

    for (; i < argc; i++) {
        const char *arg = argv[i];
        bool on;
        if (!strcmp(arg, "--") || !strcmp(arg, "-")) {
            i++;
            break;
        }
        if ((arg[0] != '-' && arg[0] != '+') || !arg[1])
            break;
        on = arg[0] == '-';
        for (const char *p = arg + 1; *p; p++) {
            char c = *p;
            const char *name;
            switch (c) {
            case 'c':
                want_command = on;
                break;
            case 'i':
                o->interactive_flag = on;
                break;
            case 's':
                o->stdin_flag = on;
                break;
            case 'l':
                o->login = on;
                strvec_pushf(&o->bash_args, "%cl", arg[0]);
                break;
            case 'r':
            case 'D':
                if (c == 'D')
                    return sbx_errf(err, "-D: not supported by sbxsh");
                strvec_pushf(&o->bash_args, "%c%c", arg[0], c);
                break;
            case 'o':
            case 'O':
                if (i + 1 >= argc) {
                    if (c == 'O')
                        return sbx_errf(err, "%cO: option requires an argument", arg[0]);
                    /* bash -o alone lists the options; sbxsh does not. */
                    return sbx_errf(err, "%co: option requires an argument", arg[0]);
                }
                name = argv[++i];
                if (c == 'o') {
                    /* bash reports these as its `set`/`shopt` builtins would, at "line 0" */
                    if (!in_list(name, set_o_names, ARRAY_SIZE(set_o_names))) {
                        o->error_without_usage = true;
                        return sbx_errf(err, "line 0: %s: %s: invalid option name", o->progname,
                                        name);
                    }
                    if (!strcmp(name, "noexec") && on) {
                        o->action = o->action == SH_ACT_RUN ? SH_ACT_CHECK : o->action;
                        break;
                    }
                    if (!strcmp(name, "errexit"))
                        o->errexit = on;
                } else {
                    if (!in_list(name, shopt_names, ARRAY_SIZE(shopt_names))) {
                        o->error_without_usage = true;
                        return sbx_errf(err, "line 0: %s: invalid shell option name", name);
                    }
                    if (!strcmp(name, "extglob"))
                        o->extglob = on;
                }
                strvec_pushf(&o->bash_args, "%c%c", arg[0], c);
                strvec_push(&o->bash_args, name);
                /* the option name is consumed; the rest of this cluster is ignored by bash */
                goto next_arg;
            case 'n':
                if (on && o->action == SH_ACT_RUN)
                    o->action = SH_ACT_CHECK;
                break;
            default:
                if (!strchr(set_letters, c))
                    return sbx_errf(err, "%c%c: invalid option", arg[0], c);
                if (c == 'e')
                    o->errexit = on;
                strvec_pushf(&o->bash_args, "%c%c", arg[0], c);
                break;
            }
        }
    next_arg:;
    }

    if (want_command) {
        if (i >= argc) {
            o->error_without_usage = true;
            return sbx_errf(err, "-c: option requires an argument");
        }
        o->mode = SH_INPUT_COMMAND;
        o->command = argv[i++];
        if (i < argc)
            o->dollar0 = argv[i++];
    } else if (!o->stdin_flag && i < argc) {
        o->mode = SH_INPUT_SCRIPT;
        o->script = argv[i++];
        o->dollar0 = o->script;
    } else {
        /* bash: interactive with -i, or when reading a terminal with no script */
        o->mode = (o->interactive_flag || stdin_is_tty) ? SH_INPUT_INTERACTIVE : SH_INPUT_STDIN;
    }
    if (!o->dollar0)
        o->dollar0 = o->argv0;
    for (; i < argc; i++)
        strvec_push(&o->positional, argv[i]);
    return 0;
}

void cli_options_print_usage(const char *progname)
{
    fprintf(stderr,
            "Usage:\t%s [long option] [option] ...\n"
            "\t%s [long option] [option] script-file ...\n"
            "Long options:\n"
            "\t--ast --route --json --session NAME --help --version\n"
            "\t--login --noprofile --norc --posix --rcfile FILE --restricted --verbose\n"
            "Shell options:\n"
            "\t-ilrs or -c command or -O shopt_option\t\t(invocation only)\n"
            "\t-abefhkmnptuvxBCEHPT or -o option\n"
            "Type `%s --help' for more information.\n",
            progname, progname, progname);
}

void cli_options_print_help(const char *progname)
{
    printf(
        "Usage: %s [option] ... [-c command [name [arg ...]] | script-file [arg ...]]\n"
        "\n"
        "A bash-compatible shell that runs commands in a per-session sandbox (gVisor or\n"
        "bubblewrap here, or a Kubernetes pod), with git network commands and harmless glue on\n"
        "the host and the code directories synced both ways between commands.\n"
        "\n"
        "Modes:\n"
        "  -c COMMAND [NAME [ARG...]]  run COMMAND; NAME becomes $0\n"
        "  SCRIPT [ARG...]             run a script file\n"
        "  (no argument)               read commands from stdin, interactive on a terminal\n"
        "  -n                          check syntax only, as bash -n (exit 0, or 2 on an error)\n"
        "  --ast                       print the syntax tree as JSON and run nothing\n"
        "  --route [--json]            print, for each part of the line, host or sandbox and\n"
        "                              why, and run nothing (after a cd it cannot follow:\n"
        "                              \"host if the cwd is still inside the code\n"
        "                              directories, else sandbox\")\n"
        "\n"
        "bash's options are accepted and passed to the sandbox's bash: -abefhkmnptuvxBCEHPT,\n"
        "-o NAME, +o NAME, -O SHOPT, +O SHOPT, -l/--login, --norc, --noprofile, --rcfile FILE,\n"
        "--posix.\n"
        "\n"
        "At a terminal: sandbox commands run on a pty of the terminal's size (escapes pass, but\n"
        "not the clipboard, reports or file: links); the prompt is PS1 with bash's escapes\n"
        "(default [sbx:SESSION] \\w\\$ ); history in $XDG_STATE_HOME/sbxsh/history. Startup:\n"
        "~/.sbxshrc (or --rcfile FILE) runs in the session, then the sandbox's ~/.bashrc\n"
        "(--norc: neither); a login shell first takes the host profile's environment\n"
        "(--noprofile: not). Job control as bash's (Ctrl-Z, jobs, fg, bg, %%N).\n"
        "\n"
        "sbxsh options:\n"
        "  --session NAME   the session (default: $AGENT_SANDBOX_SESSION, else derived from\n"
        "                   the code directories and the state directory)\n"
        "  --help, --version\n"
        "  --policy show|check [FILE]\n"
        "                   the host-command policy (what `sbx policy` runs; sbxsh-policy(5))\n"
        "\n"
        "Environment:\n"
        "  AGENT_SANDBOX_BACKEND        local (default) or kube (a pod from a Kubernetes\n"
        "                               warm pool of agent-sandbox)\n"
        "  AGENT_SANDBOX_POOL           kube: the SandboxWarmPool to claim pods from\n"
        "  AGENT_SANDBOX_KUBECONFIG     kube: the kubeconfig (default: KUBECONFIG,\n"
        "                               ~/.kube/config, in-cluster)\n"
        "  AGENT_SANDBOX_KUBE_CONTEXT   kube: the context (default: the current one)\n"
        "  AGENT_SANDBOX_NAMESPACE      kube: the namespace (default: the context's)\n"
        "  AGENT_SANDBOX_TTL            kube: the claim's lifetime backstop (default 4h)\n"
        "  AGENT_SANDBOX_CLAIM_TIMEOUT  kube: the longest wait for a pod (default 120s)\n"
        "  AGENT_SANDBOX_LOCAL_RUNTIME  runsc or bwrap (default: runsc when installed)\n"
        "  AGENT_SANDBOX_LOCAL_NETWORK  none (default: a notice on the first lookup), host\n"
        "                               (the host's network), or allowlist (HTTP(S) through\n"
        "                               a host-side proxy to AGENT_SANDBOX_EGRESS only)\n"
        "  AGENT_SANDBOX_EGRESS         with allowlist: hosts the sandbox may reach,\n"
        "                               comma-separated (host, *.domain, host:port, CIDR)\n"
        "  AGENT_SANDBOX_CODE_DIRS      colon-separated code directories (default: the git\n"
        "                               top level of the current directory, or the directory)\n"
        "  AGENT_SANDBOX_SESSION        the session name\n"
        "  AGENT_SANDBOX_POLICY         the host-command policy file: more commands that run on\n"
        "                               the host, word by word (default\n"
        "                               ~/.config/sbxsh/policy; sbxsh-policy(5), sbx policy)\n"
        "  AGENT_SANDBOX_FORWARD_ENV    more host variables the sandbox may see: names or\n"
        "                               patterns, comma-separated (NODE_ENV,npm_*)\n"
        "  AGENT_SANDBOX_SYNC_PATHS     files outside the code directories synced both ways\n"
        "  AGENT_SANDBOX_TASK_FILES     files pushed into the sandbox only\n"
        "  AGENT_SANDBOX_CREATE_PATHS   directories pushed in, where the sandbox may add\n"
        "                               new files that come back (never change the host's)\n"
        "  AGENT_SANDBOX_SYNC_EXCLUDE   patterns never synced (also .sbxignore)\n"
        "                               (these four: colon-separated)\n"
        "  AGENT_SANDBOX_IDLE_TIMEOUT   release an idle session's sandbox after this long\n"
        "  AGENT_SANDBOX_PIDS_MAX       processes the sandbox may have (default 4096)\n"
        "  AGENT_SANDBOX_MEMORY_MAX     the sandbox's memory, e.g. 4G or 25%% (default 50%%)\n"
        "  AGENT_SANDBOX_CPUS           CPUs the sandbox may use, e.g. 1.5 (default: all)\n"
        "  AGENT_SANDBOX_DISK_MAX       what the session may write (default 10G)\n"
        "  AGENT_SANDBOX_FILES_MAX      files its pulls may make on the host (default 1000000)\n"
        "  AGENT_SANDBOX_GIT_FSMONITOR  0: git in the sandbox checks every file itself, instead\n"
        "                               of asking sbx-agent what changed (default 1)\n"
        "\n"
        "Exit status: the command's, as bash gives it; 2 for a syntax error; 125 when sbxsh\n"
        "itself fails (sandbox unreachable, sync refused, runtime missing).\n"
        "See sbxsh(1) and sbx(1).\n",
        progname);
}
