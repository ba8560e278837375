/*
 * Routing: a line's parts, and for each part the rules that must all hold
 * for the host. Every check that fails says why, in words for people.
 */
#include "router/builtins.h"
#include "router/policy.h"
#include "router/rules.h"

#include "common/report.h"

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void route_reason_add(strbuf *sb, const char *s, size_t len)
{
    const size_t max = 48;

    for (size_t i = 0; i < len && i < max; i++) {
        unsigned char c = (unsigned char)s[i];
        strbuf_addch(sb, c >= 0x20 && c < 0x7f ? (char)c : '?');
    }
    if (len > max)
        strbuf_addstr(sb, "...");
}

const char *route_join_text(route_join j)
{
    switch (j) {
    case ROUTE_JOIN_NONE: return "";
    case ROUTE_JOIN_SEMI: return ";";
    case ROUTE_JOIN_AMP: return "&";
    case ROUTE_JOIN_NEWLINE: return "\n";
    case ROUTE_JOIN_AND: return "&&";
    case ROUTE_JOIN_OR: return "||";
    }
    return "";
}

unsigned route_line_of(const sh_parse *p, uint32_t off)
{
    unsigned line = 1;
    for (uint32_t i = 0; i < off && i < p->len; i++)
        line += p->src[i] == '\n';
    return line;
}

/* ---- words ---------------------------------------------------------------- */

static const char *part_reason(const sh_wpart *wp)
{
    switch (wp->kind) {
    case WP_ANSI: return "$'...' quoting";
    case WP_LOCALE: return "$\"...\" quoting";
    case WP_PARAM: return NULL;     /* named by the caller */
    case WP_CMDSUB: case WP_BACKQUOTE: return "command substitution";
    case WP_ARITH: return "arithmetic expansion";
    case WP_PROCSUB_IN: case WP_PROCSUB_OUT: return "process substitution";
    case WP_TILDE: return "tilde expansion (~)";
    case WP_GLOB: case WP_EXTGLOB: return "an unquoted glob pattern";
    case WP_BRACE: return "brace expansion";
    default: return "an unexpected word part";
    }
}

/* Appends the value of static parts. The parser already marks expansions;
 * an unquoted literal holding a character bash would expand means the
 * parser and bash disagree, and that word goes to the sandbox too. */
static bool add_parts(const sh_wpart *wp, bool quoted, strbuf *out, strbuf *why)
{
    for (; wp; wp = wp->next) {
        switch (wp->kind) {
        case WP_LIT:
            if (memchr(wp->text, '$', wp->len) || memchr(wp->text, '`', wp->len) ||
                (!quoted && strpbrk(wp->text, "*?["))) {
                strbuf_addstr(why, quoted ? "a $ or ` inside double quotes"
                                          : "an unquoted special character ($ ` * ? [)");
                return false;
            }
            strbuf_add(out, wp->text, wp->len);
            break;
        case WP_ESCAPED:
        case WP_SQUOTE:
            strbuf_add(out, wp->text, wp->len);
            break;
        case WP_DQUOTE:
            if (quoted || !add_parts(wp->parts, true, out, why))
                return false;
            break;
        case WP_PARAM:
            strbuf_addstr(why, "uses $");
            if (wp->param && wp->param->name)
                route_reason_add(why, wp->param->name, wp->param->name_len);
            return false;
        default:
            strbuf_addstr(why, part_reason(wp));
            return false;
        }
    }
    return true;
}

/* ~ where bash would expand it: at the start, or after = or : (bash
 * expands name=~ even in ordinary arguments). */
static bool unquoted_tilde(const sh_word *w)
{
    bool first = true;
    for (const sh_wpart *wp = w->parts; wp; wp = wp->next, first = false) {
        if (wp->kind != WP_LIT)
            continue;
        for (size_t i = 0; i < wp->len; i++)
            if (wp->text[i] == '~' && ((first && i == 0) ||
                                       (i > 0 && (wp->text[i - 1] == '=' ||
                                                  wp->text[i - 1] == ':'))))
                return true;
    }
    return false;
}

/* {a,b} or {1..3} made of unquoted characters, which bash would expand. */
static bool unquoted_brace(const sh_word *w)
{
    strbuf v = STRBUF_INIT;
    const char *open, *close;
    bool found = false;

    for (const sh_wpart *wp = w->parts; wp; wp = wp->next)
        if (wp->kind == WP_LIT)
            strbuf_add(&v, wp->text, wp->len);
        else
            strbuf_addch(&v, '\x01');
    for (open = strchr(v.buf, '{'); open && !found; open = strchr(open + 1, '{')) {
        close = strchr(open, '}');
        if (!close)
            break;
        for (const char *q = open; q < close && !found; q++)
            found = *q == ',' || (q[0] == '.' && q[1] == '.');
    }
    strbuf_release(&v);
    return found;
}

/* The word's value after quote removal, if nothing in it expands. */
static bool word_value(const sh_word *w, strbuf *out, strbuf *why)
{
    strbuf_reset(out);
    if (w->flags & (SH_WF_EXPANSION | SH_WF_GLOB | SH_WF_TILDE | SH_WF_BRACE | SH_WF_ANSI |
                    SH_WF_ASSIGN)) {
        /* find the part to name it */
        strbuf scratch = STRBUF_INIT;
        if (add_parts(w->parts, false, &scratch, why)) {
            strbuf_addstr(why, w->flags & SH_WF_ASSIGN ? "an array assignment argument"
                                                       : "an expansion");
        }
        strbuf_release(&scratch);
        return false;
    }
    if (!add_parts(w->parts, false, out, why))
        return false;
    if (unquoted_tilde(w)) {
        strbuf_addstr(why, "tilde expansion (~)");
        return false;
    }
    if (unquoted_brace(w)) {
        strbuf_addstr(why, "brace expansion");
        return false;
    }
    if (memchr(out->buf, '\0', out->len)) {
        strbuf_addstr(why, "a NUL byte in a word");
        return false;
    }
    if (out->len > ROUTE_MAX_WORD) {
        strbuf_addf(why, "a word longer than %d bytes", ROUTE_MAX_WORD);
        return false;
    }
    return true;
}

/* ---- assignment prefixes ----------------------------------------------------- */

/* On/off switches: the only values are 0, 1, true and false, so that none
 * can name a file (GIT_TRACE=/path writes one) or a program. */
static const char *const switch_vars[] = {
    "GIT_TRACE", "GIT_TRACE_PACKET", "GIT_TRACE_SETUP", "GIT_TRACE_PERFORMANCE",
    "GIT_TRACE2", "GIT_TRACE2_EVENT", "GIT_TRACE2_PERF", "GIT_TERMINAL_PROMPT",
    "GIT_PROGRESS_DELAY", "GIT_FLUSH", "GIT_OPTIONAL_LOCKS", "GIT_NO_REPLACE_OBJECTS",
    "GIT_ADVICE",
};
/* Locale names a program can only look up, never load from a path. */
static const char *const locale_vars[] = {
    "LANG", "LC_ALL", "LC_COLLATE", "LC_CTYPE", "LC_MESSAGES", "LC_NUMERIC",
};

static const struct {
    const char *name;
    const char *why;
} bad_vars[] = {
    { "LD_", "loads code into the program" },
    { "PATH", "chooses which program runs" },
    { "BASH_ENV", "runs a startup file" },
    { "ENV", "runs a startup file" },
    { "IFS", "changes word splitting" },
    { "GIT_SSH", "runs a program" },
    { "GIT_SSH_COMMAND", "runs a program" },
    { "GIT_ASKPASS", "runs a program" },
    { "SSH_ASKPASS", "runs a program" },
    { "GIT_EXTERNAL_DIFF", "runs a program" },
    { "GIT_PAGER", "runs a program" },
    { "PAGER", "runs a program" },
    { "EDITOR", "runs a program" },
    { "VISUAL", "runs a program" },
    { "GIT_EDITOR", "runs a program" },
    { "GIT_PROXY_COMMAND", "runs a program" },
    { "GIT_EXEC_PATH", "runs git programs from another directory" },
    { "GIT_DIR", "moves the repository" },
    { "GIT_WORK_TREE", "moves the repository" },
    { "GIT_COMMON_DIR", "moves the repository" },
    { "GIT_INDEX_FILE", "moves the repository" },
    { "GIT_OBJECT_DIRECTORY", "moves the repository" },
    { "GIT_ALTERNATE_OBJECT_DIRECTORIES", "moves the repository" },
    { "GIT_CONFIG", "sets configuration" },
    { "HOME", "changes which configuration is read" },
    { "XDG_CONFIG_HOME", "changes which configuration is read" },
};

static bool in_list(const char *const *list, size_t n, const char *s, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(list[i]) == len && !strncmp(list[i], s, len))
            return true;
    return false;
}

static int check_assign(const sh_assign *a, rcmd *c, strbuf *val, strbuf *why)
{
    static const char *const onoff[] = { "0", "1", "true", "false" };
    static const char *const locales[] = { "C", "POSIX", "C.UTF-8", "C.utf8" };
    bool is_switch = in_list(switch_vars, ARRAY_SIZE(switch_vars), a->name, a->name_len);
    bool is_locale = in_list(locale_vars, ARRAY_SIZE(locale_vars), a->name, a->name_len);

    if (!is_switch && !is_locale) {
        route_reason_add(why, a->name, a->name_len);
        strbuf_addstr(why, "= before the command: ");
        for (size_t i = 0; i < ARRAY_SIZE(bad_vars); i++) {
            size_t bl = strlen(bad_vars[i].name);
            bool prefix = !strcmp(bad_vars[i].name, "LD_");
            if ((prefix ? a->name_len >= bl : a->name_len == bl) &&
                !strncmp(a->name, bad_vars[i].name, bl)) {
                strbuf_addstr(why, bad_vars[i].why);
                return -1;
            }
        }
        if (a->name_len >= 10 && !strncmp(a->name, "GIT_CONFIG", 10)) {
            strbuf_addstr(why, "sets configuration");
            return -1;
        }
        strbuf_addstr(why, "not one of the on/off switches");
        return -1;
    }
    if (a->append || a->has_subscript || a->is_array || !a->value) {
        strbuf_addstr(why, "an array or += assignment before the command");
        return -1;
    }
    if (!word_value(a->value, val, why))
        return -1;
    if (is_switch ? !in_list(onoff, ARRAY_SIZE(onoff), val->buf, val->len)
                  : !in_list(locales, ARRAY_SIZE(locales), val->buf, val->len)) {
        route_reason_add(why, a->name, a->name_len);
        strbuf_addstr(why, is_switch ? "= takes only 0, 1, true or false on the host"
                                     : "= takes only C, POSIX or C.UTF-8 on the host");
        return -1;
    }
    if (is_locale && (c->kind == RC_ECHO || c->kind == RC_PRINTF || c->kind == RC_CD)) {
        strbuf_addstr(why, "a locale before a builtin");
        return -1;
    }
    strvec_pushf(&c->env, "%.*s=%s", (int)a->name_len, a->name, val->buf);
    return 0;
}

/* ---- redirections -------------------------------------------------------------- */

static int add_redir(rcmd *c, int fd, int op, int src, strbuf *why)
{
    if (c->n_redirs >= RCMD_MAX_REDIRS) {
        strbuf_addstr(why, "too many redirections");
        return -1;
    }
    c->redirs[c->n_redirs].fd = fd;
    c->redirs[c->n_redirs].op = op;
    c->redirs[c->n_redirs].src = src;
    c->n_redirs++;
    return 0;
}

/* Only /dev/null and copies between stdout and stderr: nothing that opens
 * a file, so nothing a host part writes can land anywhere. */
static int check_redir(const sh_redir *r, rcmd *c, strbuf *val, strbuf *why)
{
    strbuf w = STRBUF_INIT;
    bool devnull;
    int fd;

    if (r->op == R_HEREDOC || r->op == R_HEREDOC_TAB) {
        strbuf_addstr(why, "a here-document");
        return -1;
    }
    if (r->op == R_HERESTRING) {
        strbuf_addstr(why, "a here-string");
        return -1;
    }
    if (r->fd_var) {
        strbuf_addstr(why, "a {var} redirection");
        return -1;
    }
    if (!r->target) {
        strbuf_addstr(why, "a redirection without a target");
        return -1;
    }
    if (!word_value(r->target, val, &w)) {
        strbuf_addf(why, "redirection: %s", w.buf);
        strbuf_release(&w);
        return -1;
    }
    strbuf_release(&w);
    devnull = !strcmp(val->buf, "/dev/null");
    switch (r->op) {
    case R_OUT:
    case R_APPEND:
    case R_CLOBBER:
        fd = r->fd < 0 ? 1 : r->fd;
        if (devnull && (fd == 1 || fd == 2))
            return add_redir(c, fd, RR_NULL_OUT, 0, why);
        break;
    case R_IN:
        fd = r->fd < 0 ? 0 : r->fd;
        if (devnull && fd == 0)
            return add_redir(c, 0, RR_NULL_IN, 0, why);
        break;
    case R_OUT_ERR:
    case R_APPEND_ERR:
        if (devnull && r->fd < 0)
            return add_redir(c, 1, RR_NULL_OUT, 0, why) < 0 ? -1
                                                            : add_redir(c, 2, RR_DUP, 1, why);
        break;
    case R_DUP_OUT:
        fd = r->fd < 0 ? 1 : r->fd;
        if ((fd == 1 || fd == 2) && (!strcmp(val->buf, "1") || !strcmp(val->buf, "2")))
            return add_redir(c, fd, RR_DUP, val->buf[0] - '0', why);
        /* >&word with a file name is &>word */
        if (devnull && r->fd < 0)
            return add_redir(c, 1, RR_NULL_OUT, 0, why) < 0 ? -1
                                                            : add_redir(c, 2, RR_DUP, 1, why);
        break;
    default:
        break;
    }
    if (r->op == R_IN || r->op == R_RDWR || r->op == R_DUP_IN)
        strbuf_addstr(why, "input from a file or descriptor");
    else if (r->op == R_DUP_OUT && (!strcmp(val->buf, "-") ||
                                    strspn(val->buf, "0123456789") == val->len))
        strbuf_addstr(why, "a redirection to another descriptor");
    else if (devnull)
        strbuf_addstr(why, "a redirection of a descriptor other than stdout and stderr");
    else
        strbuf_addstr(why, "redirection to a file");
    return -1;
}

/* ---- commands ---------------------------------------------------------------------- */

static const char *compound_name(sh_cmd_kind k)
{
    switch (k) {
    case SH_SUBSHELL: return "a subshell ( ... )";
    case SH_GROUP: return "a command group { ... }";
    case SH_IF: return "an if statement";
    case SH_WHILE: return "a while loop";
    case SH_UNTIL: return "an until loop";
    case SH_FOR: return "a for loop";
    case SH_ARITH_FOR: return "a for (( )) loop";
    case SH_SELECT: return "a select statement";
    case SH_CASE: return "a case statement";
    case SH_DBRACKET: return "a [[ ]] test";
    case SH_ARITH: return "an (( )) arithmetic command";
    case SH_FUNCDEF: return "a function definition";
    case SH_COPROC: return "a coprocess";
    case SH_SIMPLE: break;
    }
    return "a compound command";
}

/* The cwd, checked once per pipeline: relative paths are resolved from it,
 * so it must be real (no symlinks). */
static bool cwd_real(const route_ctx *ctx, const char **why)
{
    strbuf out = STRBUF_INIT;
    bool exists, ok;

    if (!ctx->cwd || ctx->cwd[0] != '/') {
        *why = "the current directory is unknown";
        return false;
    }
    ok = route_walk("/", ctx->cwd, WALK_DIR, &out, &exists, why) == 0;
    if (ok && strcmp(out.buf, ctx->cwd)) {
        *why = "the current directory is not a normalized path";
        ok = false;
    }
    strbuf_release(&out);
    return ok;
}

static int check_cd(const route_ctx *ctx, const rcmd *c, char **new_cwd, bool *project,
                    bool *view, strbuf *why)
{
    size_t i = 1;
    const char *dir, *w;
    strbuf out = STRBUF_INIT;
    bool exists;

    if (i < c->argv.n && !strcmp(c->argv.v[i], "--"))
        i++;
    if (c->argv.n - i == 0 && ctx->cd_views && ctx->home_cd && ctx->home_cd[0] == '/') {
        /* a bare cd at the prompt: HOME as the session's shell has it (route_ctx.home_cd) */
        dir = ctx->home_cd;
    } else if (c->argv.n - i != 1) {
        strbuf_addstr(why, c->argv.n - i ? "cd with more than one directory"
                                         : "cd without a directory (goes to $HOME)");
        return -1;
    } else {
        dir = c->argv.v[i];
    }
    /* `cd -` goes to OLDPWD: on the host only when the host knows it (the person's own
     * last cd, which the session's shell confirmed: route_ctx.oldpwd) and it leads out of
     * the session to another project or a plain directory's view; the runner prints it */
    if (!strcmp(dir, "-") && ctx->oldpwd && ctx->oldpwd[0] == '/' && ctx->cd_projects &&
        i == 1 && c->argv.n == 2)
        dir = ctx->oldpwd;
    else if (!*dir || dir[0] == '-') {
        strbuf_addstr(why, *dir ? "cd option (or cd - to $OLDPWD)" : "cd to an empty name");
        return -1;
    }
    /* bash searches CDPATH unless the name starts with /, ./ or ../ */
    if (ctx->cdpath && *ctx->cdpath && dir[0] != '/' && strcmp(dir, ".") && strcmp(dir, "..") &&
        strncmp(dir, "./", 2) && strncmp(dir, "../", 3)) {
        strbuf_addstr(why, "cd with CDPATH set");
        return -1;
    }
    if (dir[0] != '/' && !cwd_real(ctx, &w)) {
        strbuf_addf(why, "cd from here: %s", w);
        return -1;
    }
    if (route_walk(ctx->cwd, dir, WALK_DIR, &out, &exists, &w) < 0) {
        strbuf_addf(why, "cd: %s", w);
        strbuf_release(&out);
        return -1;
    }
    if (!route_in_code_dirs(ctx, out.buf)) {
        if (ctx->cd_projects && exists && route_in_git_work_tree(out.buf)) {
            *project = true;
            *new_cwd = strbuf_detach(&out, NULL);
            return 0;
        }
        /* a plain directory below HOME, at the prompt: the shell follows it into the
         * scratch session, whose sandbox gets a view of it (cli/view.c) */
        if (ctx->cd_projects && ctx->cd_views && exists && route_view_dir(ctx->home, out.buf)) {
            *project = *view = true;
            *new_cwd = strbuf_detach(&out, NULL);
            return 0;
        }
        strbuf_addstr(why, "cd out of the code directories");
        strbuf_release(&out);
        return -1;
    }
    if (dir == ctx->oldpwd || dir == ctx->home_cd) {
        /* within the code directories, `cd -` and a bare cd stay the sandbox's, as before */
        strbuf_addstr(why, "cd option (or cd - to $OLDPWD)");
        strbuf_release(&out);
        return -1;
    }
    *new_cwd = strbuf_detach(&out, NULL);
    return 0;
}

/* bash gives a simple command the line its parser was on when it made the
 * command: once the token after the first element (word, assignment or
 * redirection) was read. So `printf \<newline>%d x` reports line 2. */
static uint32_t command_line_off(const sh_cmd *cmd)
{
    uint32_t first = UINT32_MAX, second = UINT32_MAX, first_end = cmd->span.start;
    uint32_t second_end = 0;

#define CONSIDER(start, end)                                  \
    do {                                                      \
        if ((start) < first) {                                \
            second = first, second_end = first_end;           \
            first = (start), first_end = (end);               \
        } else if ((start) < second) {                        \
            second = (start), second_end = (end);             \
        }                                                     \
    } while (0)
    for (const sh_word *w = cmd->words; w; w = w->next)
        CONSIDER(w->span.start, w->span.end);
    for (const sh_assign *a = cmd->assigns; a; a = a->next)
        CONSIDER(a->span.start, a->span.end);
    for (const sh_redir *r = cmd->redirs; r; r = r->next)
        CONSIDER(r->span.start, r->target ? r->target->span.start : r->span.end);
#undef CONSIDER
    return second != UINT32_MAX ? second_end : first_end;
}

/* `cd ~` and `cd ~/DIR` (a leading unquoted tilde and nothing else to expand), with
 * route_ctx.home_cd: the tilde is that HOME (the one the session's shell has: cli/line.c
 * confirms it), so that the cd can be checked like any other. */
static bool cd_home_word(const route_ctx *ctx, const sh_cmd *cmd, const sh_word *w, strbuf *out)
{
    strbuf name = STRBUF_INIT, why = STRBUF_INIT;
    bool ok = ctx->cd_views && ctx->home_cd && ctx->home_cd[0] == '/' &&
              (w->flags & ~(unsigned)SH_WF_TILDE) == 0 && (w->flags & SH_WF_TILDE) && w->parts &&
              w->parts->kind == WP_TILDE && w->parts->len == 0 &&
              sh_word_static_value(cmd->words, &name) && !strcmp(name.buf, "cd");
    if (ok) {
        strbuf_reset(out);
        strbuf_addstr(out, ctx->home_cd);
        ok = add_parts(w->parts->next, false, out, &why) && !memchr(out->buf, '\0', out->len) &&
             (out->len == strlen(ctx->home_cd) || out->buf[strlen(ctx->home_cd)] == '/') &&
             out->len <= ROUTE_MAX_WORD;
    }
    strbuf_release(&name);
    strbuf_release(&why);
    return ok;
}

static route_where check_cmd(const route_ctx *ctx, const sh_cmd *cmd, rcmd *c, rpipe *rp,
                             strbuf *why)
{
    strbuf val = STRBUF_INIT;
    size_t count = 0;
    const char *name, *w;
    route_where ret = ROUTE_SANDBOX;

    if (cmd->kind != SH_SIMPLE) {
        strbuf_addstr(why, compound_name(cmd->kind));
        return ROUTE_SANDBOX;
    }
    if (!cmd->words) {
        strbuf_addstr(why, cmd->assigns ? "a variable assignment" : "a redirection alone");
        return ROUTE_SANDBOX;
    }
    for (const sh_word *wd = cmd->words; wd; wd = wd->next)
        count++;
    for (const sh_assign *a = cmd->assigns; a; a = a->next)
        count++;
    if (count > ROUTE_MAX_WORDS) {
        strbuf_addf(why, "more than %d words", ROUTE_MAX_WORDS);
        return ROUTE_SANDBOX;
    }
    for (const sh_word *wd = cmd->words; wd; wd = wd->next) {
        if (wd != cmd->words && wd == cmd->words->next && !wd->next && cd_home_word(ctx, cmd, wd, &val))
            ;   /* `cd ~` or `cd ~/DIR` at the prompt: HOME as the shell has it */
        else if (!word_value(wd, &val, why))
            goto out;
        strvec_pushn(&c->argv, val.buf, val.len);
    }
    name = c->argv.v[0];
    if (!strcmp(name, "echo"))
        c->kind = RC_ECHO;
    else if (!strcmp(name, "printf"))
        c->kind = RC_PRINTF;
    else if (!strcmp(name, "cd"))
        c->kind = RC_CD;
    else if (!strcmp(name, "git"))
        c->kind = RC_GIT;
    else if (route_is_filter(name))
        c->kind = RC_FILTER;
    else if (!strcmp(name, "sbx"))
        c->kind = RC_SBX;
    else if (strchr(name, '/')) {
        strbuf_addstr(why, "a program given by path");
        goto out;
    } else {
        /* the person's policy, after every built-in rule (router/policy.c): the words
         * must be exactly what a rule accepts */
        route_policy_match m;
        size_t start = why->len;
        if (!route_policy_match_argv(ctx->policy, ctx, c->argv.v, c->argv.n, &m, why)) {
            if (m.limit) {
                /* once per command, though the plan and the runner both check it */
                static strbuf last = STRBUF_INIT;
                if (strcmp(last.buf, why->buf + start)) {
                    sbx_warning("%s", why->buf + start);
                    strbuf_reset(&last);
                    strbuf_addstr(&last, why->buf + start);
                }
            }
            goto out;
        }
        if (cmd->assigns) {
            strbuf_addf(why, "%s: an assignment before a policy command (its environment is "
                             "the rule's)", name);
            goto out;
        }
        c->kind = RC_POLICY;
        c->prog = xstrdup(m.prog);
        c->pol_rule = m.rule;
        c->pol_file = m.file;
        c->pol_line = m.line;
        c->pol_env = m.env;
    }
    for (const sh_assign *a = cmd->assigns; a; a = a->next)
        if (check_assign(a, c, &val, why) < 0)
            goto out;
    for (const sh_redir *r = cmd->redirs; r; r = r->next)
        if (check_redir(r, c, &val, why) < 0)
            goto out;
    c->pipe_stderr = cmd->pipe_stderr;
    c->line_off = command_line_off(cmd);

    switch (c->kind) {
    case RC_ECHO:
    case RC_PRINTF: {
        bi_env env = { .err_fd = -1, .flags = BI_CHECK };
        char *const *args = c->argv.v + 1;
        size_t nargs = c->argv.n - 1;
        int st;
        if (c->kind == RC_PRINTF && nargs && args[0][0] == '-' && strcmp(args[0], "--")) {
            strbuf_addstr(why, args[0][1] == 'v' ? "printf -v assigns a shell variable"
                                                 : "a printf option");
            goto out;
        }
        st = c->kind == RC_ECHO ? route_builtin_echo(args, nargs, &env)
                                : route_builtin_printf(args, nargs, &env);
        if (st == BI_REFUSE) {
            strbuf_addf(why, "%s: %s", name, env.why);
            goto out;
        }
        break;
    }
    case RC_CD:
        if (c->env.n || c->n_redirs) {
            strbuf_addstr(why, "cd with assignments or redirections");
            goto out;
        }
        if (check_cd(ctx, c, &rp->new_cwd, &rp->cd_project, &rp->cd_view, why) < 0)
            goto out;
        break;
    case RC_GIT:
        if (!cwd_real(ctx, &w)) {
            strbuf_addf(why, "git: %s", w);
            goto out;
        }
        if (route_check_git(ctx, c, why) < 0)
            goto out;
        break;
    case RC_FILTER:
        if (route_check_filter(ctx, c, why) < 0)
            goto out;
        break;
    case RC_SBX:
        if (route_check_sbx(ctx, c, why) < 0)
            goto out;
        break;
    case RC_POLICY:
        break;
    }
    if (c->kind == RC_GIT || c->kind == RC_FILTER) {
        if (route_find_program(ctx, name, &val, &w) < 0) {
            strbuf_addf(why, "%s: %s", name, w);
            goto out;
        }
        c->prog = strbuf_detach(&val, NULL);
    }
    ret = ROUTE_HOST;
out:
    strbuf_release(&val);
    return ret;
}

void route_rpipe_release(rpipe *rp)
{
    for (size_t i = 0; i < rp->n; i++) {
        strvec_clear(&rp->cmds[i].argv);
        strvec_clear(&rp->cmds[i].env);
        rcmd *c = &rp->cmds[i];
        free(c->prog);
        free(c->git_cwd);
        free(c->git_dir);
        free(c->git_ceiling);
        free(c->clone_target);
        strvec_clear(&c->git_args);
        strvec_clear(&c->git_nicks);
        if (c->git_cwd_fd >= 0)
            close(c->git_cwd_fd);
        if (c->git_top_fd >= 0)
            close(c->git_top_fd);
        if (c->git_dir_fd >= 0)
            close(c->git_dir_fd);
    }
    free(rp->new_cwd);
    memset(rp, 0, sizeof(*rp));
}

route_where route_check(const sh_parse *p, const sh_pipeline *pl, const route_ctx *ctx,
                        rpipe *rp, strbuf *reason)
{
    size_t n = 0;

    memset(rp, 0, sizeof(*rp));
    {
        /* A git command with a URL secret runs nowhere (route_git_secret()): in the sandbox
         * the secret is the sandbox's, and on the host git writes it into the reflog. Before
         * every other rule, so that no reason to send it away sends the secret along. */
        strbuf sub = STRBUF_INIT;
        if (route_git_secret(p, pl, &sub)) {
            rp->git_secret = true;
            strbuf_addf(reason, "git%s%s: " ROUTE_GIT_SECRET_WHY, sub.len ? " " : "", sub.buf);
            strbuf_release(&sub);
            return ROUTE_HOST;
        }
        strbuf_release(&sub);
    }
    if (pl->timed) {
        strbuf_addstr(reason, "time");
        return ROUTE_SANDBOX;
    }
    for (const sh_cmd *cmd = pl->cmds; cmd; cmd = cmd->next)
        n++;
    if (n > ROUTE_MAX_CMDS) {
        strbuf_addf(reason, "a pipeline of more than %d commands", ROUTE_MAX_CMDS);
        return ROUTE_SANDBOX;
    }
    rp->bang = pl->bang;
    for (const sh_cmd *cmd = pl->cmds; cmd; cmd = cmd->next) {
        rcmd *c = &rp->cmds[rp->n++];
        size_t pos = rp->n - 1;

        strvec_init(&c->argv);
        strvec_init(&c->env);
        strvec_init(&c->git_args);
        strvec_init(&c->git_nicks);
        c->git_cwd_fd = c->git_top_fd = c->git_dir_fd = -1;
        c->clone_arg = -1;
        if (check_cmd(ctx, cmd, c, rp, reason) != ROUTE_HOST)
            goto sandbox;
        if (c->kind == RC_FILTER && pos == 0) {
            strbuf_addf(reason, "%s reads the terminal: filters run on the host only when "
                                "fed by a pipe", c->argv.v[0]);
            goto sandbox;
        }
        if (c->kind == RC_GIT && pos > 0) {
            strbuf_addstr(reason, "git inside a pipeline");
            goto sandbox;
        }
        if (c->kind == RC_SBX && (pos > 0 || (c->sbx_sub == SBX_EXEC && n > 1))) {
            strbuf_addstr(reason, "sbx inside a pipeline");
            goto sandbox;
        }
        if (c->kind == RC_CD && (n > 1 || pl->bang)) {
            strbuf_addstr(reason, "cd in a pipeline or after ! (it would not change the "
                                  "directory)");
            goto sandbox;
        }
    }
    (void)p;
    for (size_t i = 0; i < rp->n; i++) {
        const rcmd *c = &rp->cmds[i];
        if (i)
            strbuf_addstr(reason, " | ");
        strbuf_addstr(reason, c->argv.v[0]);
        if (c->kind == RC_GIT)
            strbuf_addf(reason, " %s", route_git_sub_names[c->git_sub]);
        if (c->kind == RC_SBX)
            strbuf_addf(reason, " %s", route_sbx_sub_names[c->sbx_sub]);
        if (c->kind == RC_POLICY) {
            /* "gh: policy rule gh-pr-view (~/.config/sbxsh/policy:12)": which rule, where */
            strbuf_addstr(reason, ": policy rule ");
            strbuf_addstr(reason, c->pol_rule);
            strbuf_addstr(reason, " (");
            sbx_sanitize(reason, c->pol_file, strlen(c->pol_file));
            strbuf_addf(reason, ":%u)", c->pol_line);
        }
    }
    if (rp->n == 1) {
        switch (rp->cmds[0].kind) {
        case RC_SBX:
            strbuf_addstr(reason, rp->cmds[0].sbx_sub == SBX_EXEC
                                      ? ": not run; sbxsh says to type the command itself (it "
                                        "runs in the sandbox already)"
                                      : ": sbxsh's own command, on the host");
            break;
        case RC_GIT: strbuf_addstr(reason, ": network command, options allowed"); break;
        case RC_CD:
            strbuf_addstr(reason, rp->cd_view      ? ": into a plain directory (the sandbox gets "
                                                     "a view of it)"
                                  : rp->cd_project ? ": into another project (the shell moves to "
                                                     "its session)"
                                                   : ": within the code directories");
            break;
        case RC_POLICY: break;
        default: strbuf_addstr(reason, ": builtin glue"); break;
        }
    } else {
        strbuf_addstr(reason, ": glue fed by pipes");
    }
    return ROUTE_HOST;

sandbox:
    route_rpipe_release(rp);
    return ROUTE_SANDBOX;
}

/* route_classify, and whether a HOST part is a cd into another project */
static route_where classify(const sh_parse *p, const sh_pipeline *pl, const route_ctx *ctx,
                            strbuf *reason, strbuf *new_cwd, bool *cd_project)
{
    rpipe rp;
    route_where w = route_check(p, pl, ctx, &rp, reason);

    *cd_project = false;
    if (w == ROUTE_HOST) {
        if (new_cwd && rp.new_cwd)
            strbuf_addstr(new_cwd, rp.new_cwd);
        *cd_project = rp.cd_project;
        route_rpipe_release(&rp);
    }
    return w;
}

route_where route_classify(const sh_parse *p, const sh_pipeline *pl, const route_ctx *ctx,
                           strbuf *reason, strbuf *new_cwd)
{
    bool cd_project;
    return classify(p, pl, ctx, reason, new_cwd, &cd_project);
}

/* ---- the plan --------------------------------------------------------------------- */

/* Whole-line refusals: the parser and bash must not be given a chance to
 * disagree about where a part ends. */
static const char *line_refusal(const sh_parse *p, strbuf *why)
{
    if (p->len > ROUTE_MAX_LINE) {
        strbuf_addf(why, "a line longer than %d bytes", ROUTE_MAX_LINE);
        return why->buf;
    }
    for (size_t i = 0; i < p->len; i++) {
        unsigned char c = (unsigned char)p->src[i];
        if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f) {
            if (c == 0)
                strbuf_addstr(why, "a NUL byte in the line");
            else if (c == '\r')
                strbuf_addstr(why, "a carriage return (CR) in the line");
            else
                strbuf_addf(why, "a control character (0x%02x) in the line", c);
            return why->buf;
        }
    }
    return NULL;
}

static route_join join_of_sep(sh_sep s)
{
    switch (s) {
    case SH_SEP_AMP: return ROUTE_JOIN_AMP;
    case SH_SEP_NEWLINE: return ROUTE_JOIN_NEWLINE;
    default: return ROUTE_JOIN_SEMI;
    }
}

/* A sandbox part that can change what a command name means (a function,
 * alias, hash or enable, sourcing, eval, or a compound command that may
 * hold any of them): bash would run the new meaning of a later `git` or
 * `echo` in the line, so the rest of the line stays with bash. */
bool route_may_redefine(const sh_pipeline *pl)
{
    static const char *const names[] = { "alias", "hash", "enable", "source", ".", "eval",
                                         "shopt" };

    for (const sh_cmd *c = pl->cmds; c; c = c->next) {
        strbuf v = STRBUF_INIT, why = STRBUF_INIT;
        bool hit = false;
        /* a subshell's definitions die with it; [[ ]] and (( )) define nothing */
        if (c->kind == SH_SUBSHELL || c->kind == SH_DBRACKET || c->kind == SH_ARITH)
            continue;
        if (c->kind != SH_SIMPLE)
            return true;
        if (c->words && word_value(c->words, &v, &why))
            for (size_t i = 0; i < ARRAY_SIZE(names) && !hit; i++)
                hit = !strcmp(v.buf, names[i]);
        else if (c->words)
            hit = true;     /* a command name that expands: could be any of them */
        strbuf_release(&v);
        strbuf_release(&why);
        if (hit)
            return true;
    }
    return false;
}

/* Where a SANDBOX part leaves the shell's cwd, for the parts after it: the
 * sandbox's bash reports its $PWD after each chunk, and the line executor checks
 * later host parts again from there (route_run_host), so a plan that kept the
 * old cwd would show `host` for a part that then runs in the sandbox. A `cd`
 * (or pushd) with one literal directory lands where bash's logical cd puts it:
 * *cwd becomes that path (normalized by name; bash's cd -L does no more). Any
 * other cd, pushd or popd (a variable, `cd -`, no argument with HOME unknown,
 * CDPATH, options) leaves the cwd unknown (*known = false). Other parts do not
 * move it: a cd in a pipeline, a subshell or the background runs in a child,
 * and whatever can hide one (functions, source, eval, compound commands)
 * make the cwd unknown to the plan from there on (route_may_redefine). */
static void follow_sandbox_cd(const sh_pipeline *pl, const route_ctx *ctx, strbuf *cwd,
                              bool *known)
{
    const sh_cmd *c = pl->cmds;
    strbuf name = STRBUF_INIT, dir = STRBUF_INIT, out = STRBUF_INIT;
    const sh_word *arg;
    bool literal = true;
    size_t nargs = 0;

    if (!c || c->next || c->kind != SH_SIMPLE || !c->words ||
        !sh_word_static_value(c->words, &name) ||
        (strcmp(name.buf, "cd") && strcmp(name.buf, "pushd") && strcmp(name.buf, "popd")))
        goto out;
    for (arg = c->words->next; arg; arg = arg->next)
        nargs++;
    arg = c->words->next;
    if (!strcmp(name.buf, "popd") || nargs > 1)
        literal = false;
    else if (nargs == 0)
        /* bare cd goes to $HOME; bare pushd swaps the top two directories */
        literal = !strcmp(name.buf, "cd") && ctx->home && ctx->home[0] == '/';
    else if (!sh_word_static_value(arg, &dir) || !dir.len || dir.buf[0] == '-')
        literal = false;
    else if (ctx->cdpath && *ctx->cdpath && dir.buf[0] != '/')
        literal = false;    /* bash may search CDPATH */
    if (!literal || (nargs && dir.buf[0] != '/' && !*known)) {
        *known = false;
        goto out;
    }
    if (!nargs)
        strbuf_addstr(&dir, ctx->home);
    if (dir.buf[0] != '/')
        strbuf_addf(&out, "%s/", cwd->buf);
    strbuf_add(&out, dir.buf, dir.len);
    /* by name: "." and ".." components and repeated slashes */
    strbuf_reset(cwd);
    for (char *s = out.buf, *e; *s; s = e) {
        while (*s == '/')
            s++;
        e = s + strcspn(s, "/");
        if (e == s)
            break;
        if (e - s == 1 && s[0] == '.')
            continue;
        if (e - s == 2 && s[0] == '.' && s[1] == '.') {
            char *slash = strrchr(cwd->buf, '/');
            strbuf_setlen(cwd, slash ? (size_t)(slash - cwd->buf) : 0);
            continue;
        }
        strbuf_addch(cwd, '/');
        strbuf_add(cwd, s, (size_t)(e - s));
    }
    if (!cwd->len)
        strbuf_addch(cwd, '/');
out:
    strbuf_release(&name);
    strbuf_release(&dir);
    strbuf_release(&out);
}

/* A git command with a URL secret (route_part.secret). */
static bool has_git_secret(const sh_parse *p, const sh_pipeline *pl)
{
    strbuf sub = STRBUF_INIT;
    bool hit = route_git_secret(p, pl, &sub);
    strbuf_release(&sub);
    return hit;
}

void route_part_commands(const sh_pipeline *pl, strvec *out)
{
    for (const sh_cmd *c = pl->cmds; c; c = c->next) {
        strbuf name = STRBUF_INIT;
        if (c->kind == SH_SIMPLE && c->words && sh_word_static_value(c->words, &name)) {
            bool builtin = !strcmp(name.buf, "echo") || !strcmp(name.buf, "printf") ||
                           !strcmp(name.buf, "cd");
            strvec_push(out, name.buf);
            strvec_push(out, builtin ? "builtin" : "file");
        }
        strbuf_release(&name);
    }
}

/* Whether pl is `eval WORD...` whose text is known before it runs: literal words (no
 * expansion), no assignment before it, not negated, and no redirection but `< /dev/null`
 * (*stdin_null). text gets the words joined by spaces, as eval joins them. */
static bool eval_text(const sh_pipeline *pl, strbuf *text, bool *stdin_null)
{
    const sh_cmd *c = pl->cmds;
    strbuf v = STRBUF_INIT;
    bool ok = false;

    *stdin_null = false;
    strbuf_reset(text);
    if (pl->bang || !c || c->next || c->kind != SH_SIMPLE || c->assigns || !c->words ||
        !c->words->next || !sh_word_static_value(c->words, &v) || strcmp(v.buf, "eval"))
        goto out;
    if (c->redirs) {
        const sh_redir *r = c->redirs;
        strbuf_reset(&v);
        if (r->next || r->op != R_IN || (r->fd != -1 && r->fd != 0) || r->fd_var ||
            !sh_word_static_value(r->target, &v) || strcmp(v.buf, "/dev/null"))
            goto out;
        *stdin_null = true;
    }
    for (const sh_word *w = c->words->next; w; w = w->next) {
        strbuf_reset(&v);
        if (!sh_word_static_value(w, &v) || memchr(v.buf, '\0', v.len))
            goto out;
        if (text->len)
            strbuf_addch(text, ' ');
        strbuf_add(text, v.buf, v.len);
    }
    ok = true;
out:
    strbuf_release(&v);
    return ok;
}

static void plan_build(route_plan *plan, const sh_parse *p, const route_ctx *ctx,
                       bool redefined, bool cwd_known, unsigned depth);
static void eval_free(route_eval *ev);

/*
 * An agent's wrapper, seen through (Claude Code runs `eval 'CMD' < /dev/null`): an eval
 * whose text is known (eval_text) is parsed as bash would parse it when it runs (the
 * same parse with extglob on and off: a text whose meaning depends on it stays whole, as
 * does one that does not parse: bash reports that error itself) and planned as a line of
 * its own, from where this part runs and with what the line so far may have redefined.
 * Kept on the part when that plan has a HOST part; the executor then runs the text part by
 * part, where bash runs it as one command. NULL otherwise.
 */
static route_eval *see_through_eval(const sh_pipeline *pl, const route_ctx *ctx,
                                    bool redefined, bool cwd_known, unsigned depth)
{
    route_eval *ev;
    sh_parse other;
    sh_status st;
    bool host = false;

    if (depth >= ROUTE_EVAL_DEPTH)
        return NULL;
    ev = xcalloc(1, sizeof(*ev));
    strbuf_init(&ev->text, 0);
    if (!eval_text(pl, &ev->text, &ev->stdin_null) ||
        ev->text.len > ROUTE_MAX_LINE) {
        strbuf_release(&ev->text);
        free(ev);
        return NULL;
    }
    st = sh_parse_all(&other, ev->text.buf, ev->text.len, &(sh_parse_opts){ .extglob = true },
                      true);
    sh_parse_free(&other);
    if (st != SH_OK || sh_parse_all(&ev->parse, ev->text.buf, ev->text.len,
                                    &(sh_parse_opts){ .extglob = false }, true) != SH_OK ||
        !ev->parse.root) {
        sh_parse_free(&ev->parse);
        strbuf_release(&ev->text);
        free(ev);
        return NULL;
    }
    plan_build(&ev->plan, &ev->parse, ctx, redefined, cwd_known, depth + 1);
    for (size_t i = 0; i < ev->plan.n && !host; i++)
        host = (ev->plan.parts[i].where == ROUTE_HOST && !ev->plan.parts[i].background) ||
               ev->plan.parts[i].eval;
    if (!host) {
        eval_free(ev);
        return NULL;
    }
    return ev;
}

void route_plan_build(route_plan *plan, const sh_parse *p, const route_ctx *ctx)
{
    plan_build(plan, p, ctx, false, true, 0);
}

static void plan_build(route_plan *plan, const sh_parse *p, const route_ctx *ctx,
                       bool redefined, bool cwd_known, unsigned depth)
{
    /* redefined: after a sandbox part that may redefine commands */
    strbuf why = STRBUF_INIT, reason = STRBUF_INIT, cwd = STRBUF_INIT, newcwd = STRBUF_INIT;
    const char *whole = line_refusal(p, &why);
    route_ctx lctx = *ctx;
    size_t n = 0, k = 0;
    unsigned andor = 0;
    sh_sep prev_sep = SH_SEP_NONE;
    /* cwd_known: false after a sandbox cd the plan cannot follow */

    memset(plan, 0, sizeof(*plan));
    arena_init(&plan->mem);
    if (!p->root)
        goto done;
    for (const sh_andor *ao = p->root->items; ao; ao = ao->next)
        for (const sh_pipeline *pl = ao->pipes; pl; pl = pl->next)
            n++;
    if (!whole && n > ROUTE_MAX_PARTS) {
        strbuf_addf(&why, "a line of more than %d parts", ROUTE_MAX_PARTS);
        whole = why.buf;
    }
    plan->parts = arena_alloc(&plan->mem, (n ? n : 1) * sizeof(*plan->parts));
    strbuf_addstr(&cwd, ctx->cwd ? ctx->cwd : "");
    for (const sh_andor *ao = p->root->items; ao; ao = ao->next, andor++) {
        bool first = true;
        for (const sh_pipeline *pl = ao->pipes; pl; pl = pl->next, first = false) {
            route_part *part = &plan->parts[k++];

            memset(part, 0, sizeof(*part));     /* the arena's memory is not zeroed */
            part->pipe = pl;
            part->span = pl->span;
            part->andor = andor;
            part->background = ao->sep == SH_SEP_AMP;
            part->secret = has_git_secret(p, pl);
            if (first)
                part->join = andor ? join_of_sep(prev_sep) : ROUTE_JOIN_NONE;
            else
                part->join = pl->op == SH_OP_OR ? ROUTE_JOIN_OR : ROUTE_JOIN_AND;
            strbuf_reset(&reason);
            if (whole) {
                strbuf_addstr(&reason, whole);
                part->where = ROUTE_SANDBOX;
            } else if (part->background) {
                strbuf_addstr(&reason, "runs in the background (&)");
                part->where = ROUTE_SANDBOX;
            } else {
                strbuf_reset(&newcwd);
                lctx.cwd = cwd.buf;
                part->where = classify(p, pl, &lctx, &reason, &newcwd, &part->cd_project);
                /* later parts are checked from where a host cd goes; the
                 * runner checks again from wherever they really run */
                if (part->where == ROUTE_HOST && newcwd.len) {
                    strbuf_reset(&cwd);
                    strbuf_add(&cwd, newcwd.buf, newcwd.len);
                }
                if (part->where == ROUTE_HOST && !cwd_known) {
                    /* Host from the last cwd the plan knows. Whether it is host
                     * from anywhere: checked from "/", outside every code
                     * directory (the sandbox cannot run there, so that is where
                     * an unknown cd that matters goes). */
                    strbuf probe = STRBUF_INIT, both = STRBUF_INIT;
                    route_ctx pctx = lctx;
                    pctx.cwd = "/";
                    if (route_classify(p, pl, &pctx, &probe, NULL) != ROUTE_HOST) {
                        part->cwd_unknown = true;
                        strbuf_addf(&both, "%s (%s)", ROUTE_CWD_UNKNOWN, reason.buf);
                        strbuf_reset(&reason);
                        strbuf_add(&reason, both.buf, both.len);
                    }
                    strbuf_release(&probe);
                    strbuf_release(&both);
                }
                /* After a part that may have redefined commands, bash runs a later
                 * `git` as whatever the sandbox's shell now calls git: host only while
                 * that is still the program (checked by the runner when it gets there,
                 * from the shell itself). Its status and cwd are the sandbox's report. */
                if (part->where == ROUTE_HOST && redefined && !part->secret) {
                    strbuf both = STRBUF_INIT;
                    part->names_unknown = true;
                    strbuf_addf(&both, "%s (%s)", ROUTE_NAMES_UNKNOWN, reason.buf);
                    strbuf_reset(&reason);
                    strbuf_add(&reason, both.buf, both.len);
                    strbuf_release(&both);
                }
                if (part->where == ROUTE_SANDBOX && !part->background &&
                    (part->eval = see_through_eval(pl, &lctx, redefined, cwd_known, depth))) {
                    strbuf_reset(&reason);
                    strbuf_addstr(&reason, ROUTE_EVAL);
                }
                if (part->where == ROUTE_SANDBOX)
                    follow_sandbox_cd(pl, &lctx, &cwd, &cwd_known);
            }
            if (part->secret && part->where == ROUTE_SANDBOX) {
                /* in the background, or in a line sent whole to the sandbox: the executor
                 * gives it to the host runner all the same, to be refused there */
                strbuf_reset(&reason);
                strbuf_addstr(&reason, "git with a password or token in a URL: not run, "
                                       "on the host or in the sandbox");
                part->where = ROUTE_HOST;
            }
            part->reason = arena_strndup(&plan->mem, reason.buf, reason.len);
            /* a function, source or eval may cd where the plan cannot follow */
            if (part->where == ROUTE_SANDBOX && route_may_redefine(pl)) {
                redefined = true;
                cwd_known = false;
            }
        }
        prev_sep = ao->sep;
    }
done:
    plan->n = k;
    strbuf_release(&why);
    strbuf_release(&reason);
    strbuf_release(&cwd);
    strbuf_release(&newcwd);
}

static void eval_free(route_eval *ev)
{
    if (!ev)
        return;
    route_plan_release(&ev->plan);
    sh_parse_free(&ev->parse);
    strbuf_release(&ev->text);
    free(ev);
}

void route_plan_to_sandbox(route_plan *plan)
{
    for (size_t i = 0; i < plan->n; i++) {
        route_part *part = &plan->parts[i];
        part->where = ROUTE_SANDBOX;
        part->cd_project = false;
        part->names_unknown = false;
        eval_free(part->eval);
        part->eval = NULL;
    }
}

void route_plan_release(route_plan *plan)
{
    for (size_t i = 0; i < plan->n; i++)
        eval_free(plan->parts[i].eval);
    arena_free(&plan->mem);
    memset(plan, 0, sizeof(*plan));
}
