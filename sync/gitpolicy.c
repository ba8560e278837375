/* .git allowlists and git config filtering; see gitpolicy.h. */
#include "sync/gitpolicy.h"
#include "sync/wire.h"
#include "common/util.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* ---- paths ------------------------------------------------------------------------------- */

static bool comp_is_dotgit(const char *s, size_t n)
{
    /* Case-insensitively: a host on a case-insensitive file system would read ".GIT". */
    return n == 4 && !strncasecmp(s, ".git", 4);
}

/* Allowed top-level entries of .git, by name; dirs allow everything below them. */
static const char *const git_dirs[] = {
    "objects", "refs", "logs", "rebase-merge", "rebase-apply", "sequencer",
};
static const char *const git_files[] = {
    "HEAD", "index", "packed-refs", "ORIG_HEAD", "FETCH_HEAD", "MERGE_HEAD", "MERGE_MSG",
    "MERGE_MODE", "MERGE_AUTOSTASH", "AUTO_MERGE", "CHERRY_PICK_HEAD", "REVERT_HEAD",
    "REBASE_HEAD", "SQUASH_MSG", "COMMIT_EDITMSG", "TAG_EDITMSG", "BISECT_LOG", "BISECT_START",
    "BISECT_TERMS", "BISECT_EXPECTED_REV", "BISECT_ANCESTORS_OK", "BISECT_NAMES",
    "BISECT_HEAD", "shallow",
};

static bool in_list(const char *const *list, size_t n, const char *s, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(list[i]) == len && !memcmp(list[i], s, len))
            return true;
    return false;
}

const char *git_pull_refusal(const char *rel, size_t len, int ftype)
{
    size_t i = 0, depth = 0;
    const char *second = NULL;
    size_t second_len = 0;
    bool in_git = false;

    while (i < len) {
        size_t j = i;
        while (j < len && rel[j] != '/')
            j++;
        if (comp_is_dotgit(rel + i, j - i)) {
            if (depth > 0)
                return "a .git below the top level of a code directory is never written "
                       "from the sandbox";
            if (j - i != 4 || memcmp(rel + i, ".git", 4))
                return "a case variant of .git is never written from the sandbox";
            in_git = true;
        }
        if (depth == 1) {
            second = rel + i;
            second_len = j - i;
        }
        depth++;
        i = j + 1;
    }
    if (!in_git)
        return NULL;
    if (depth == 1)
        return ftype == WIRE_DIR ? NULL
                                 : ".git that is not a directory (a gitfile) is never written "
                                   "from the sandbox";
    if (ftype == WIRE_LNK)
        return "symlinks inside .git are never written from the sandbox";
    if (len >= 5 && !memcmp(rel + len - 5, ".lock", 5))
        return "git lock files are not synced";
    if (in_list(git_dirs, ARRAY_SIZE(git_dirs), second, second_len)) {
        static const char alt[] = ".git/objects/info/alternates";
        static const char halt[] = ".git/objects/info/http-alternates";
        if ((len == sizeof(alt) - 1 && !memcmp(rel, alt, len)) ||
            (len == sizeof(halt) - 1 && !memcmp(rel, halt, len)))
            return "object alternates are never written from the sandbox";
        return NULL;
    }
    if (depth == 2 && ftype == WIRE_REG && in_list(git_files, ARRAY_SIZE(git_files), second,
                                                   second_len))
        return NULL;
    return "only objects, refs, logs, HEAD, index, packed-refs and merge/rebase state are "
           "written into .git from the sandbox";
}

const char *git_pull_refusal_syncpath(const char *rel, size_t len)
{
    size_t i = 0;
    while (i < len) {
        size_t j = i;
        while (j < len && rel[j] != '/')
            j++;
        if (comp_is_dotgit(rel + i, j - i))
            return "a .git inside a sync path is never written from the sandbox";
        i = j + 1;
    }
    return NULL;
}

bool git_is_repo_config(const char *rel, size_t len)
{
    size_t dir_len;
    const char *name = rel + len;
    bool under_git = false;

    while (name > rel && name[-1] != '/')
        name--;
    dir_len = (size_t)(name - rel);
    if (!((rel + len - name == 6 && !memcmp(name, "config", 6)) ||
          (rel + len - name == 15 && !memcmp(name, "config.worktree", 15))))
        return false;
    for (size_t i = 0; i < dir_len;) {
        size_t j = i;
        while (j < dir_len && rel[j] != '/')
            j++;
        if (comp_is_dotgit(rel + i, j - i))
            under_git = true;
        i = j + 1;
    }
    return under_git;
}

/* ---- credentials in URLs ----------------------------------------------------------------- */

bool git_url_has_credentials(const char *url, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        size_t start;
        if (url[i] != '@')
            continue;
        start = i;
        while (start > 0 && url[start - 1] != '/' && !isspace((unsigned char)url[start - 1]))
            start--;
        if (start < i && memchr(url + start, ':', i - start) && url[start] != ':')
            return true;
        /* A bare user on http(s) is a token. */
        if (start >= 3 && start < i && url[start - 1] == '/' && url[start - 2] == '/' &&
            url[start - 3] == ':') {
            size_t s = start - 3;
            while (s > 0 && isalpha((unsigned char)url[s - 1]))
                s--;
            if ((start - 3 - s == 5 && !strncasecmp(url + s, "https", 5)) ||
                (start - 3 - s == 4 && !strncasecmp(url + s, "http", 4)) ||
                (start - 3 - s == 3 && !strncasecmp(url + s, "ftp", 3)) ||
                (start - 3 - s == 4 && !strncasecmp(url + s, "ftps", 4)))
                return true;
        }
    }
    return false;
}

/* ---- config parsing ---------------------------------------------------------------------- */

typedef struct cfg_setting {
    char section[64];      /* lower case */
    char sub[256];         /* case kept; "" for none */
    bool has_sub;
    char key[64];          /* lower case */
    strbuf value;
    bool implicit;         /* "key" alone: boolean true */
} cfg_setting;

typedef struct cfg_parser {
    const char *p, *end;
    char section[64];
    char sub[256];
    bool has_sub;
} cfg_parser;

static bool at_end(cfg_parser *ps)
{
    return ps->p >= ps->end;
}

static void skip_blank(cfg_parser *ps)
{
    while (!at_end(ps) && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\r'))
        ps->p++;
}

static void skip_line(cfg_parser *ps)
{
    while (!at_end(ps) && *ps->p != '\n')
        ps->p++;
    if (!at_end(ps))
        ps->p++;
}

/* "[section]", "[section "sub"]" or "[section.sub]"; ps->p is just past the '['. */
static bool parse_section(cfg_parser *ps)
{
    size_t n = 0;
    ps->has_sub = false;
    ps->sub[0] = '\0';
    while (!at_end(ps) && (isalnum((unsigned char)*ps->p) || *ps->p == '-' || *ps->p == '.')) {
        if (n + 1 >= sizeof(ps->section))
            return false;
        ps->section[n++] = (char)tolower((unsigned char)*ps->p++);
    }
    ps->section[n] = '\0';
    if (!n)
        return false;
    if (!at_end(ps) && *ps->p == ']') {
        /* The deprecated [section.sub] form: the sub part is lower-cased by git. */
        char *dot = strchr(ps->section, '.');
        if (dot) {
            snprintf(ps->sub, sizeof(ps->sub), "%s", dot + 1);
            *dot = '\0';
            ps->has_sub = true;
            if (!*ps->section)
                return false;
        }
        ps->p++;
        return true;
    }
    if (strchr(ps->section, '.'))
        return false;
    skip_blank(ps);
    if (at_end(ps) || *ps->p != '"')
        return false;
    ps->p++;
    n = 0;
    for (;;) {
        char c;
        if (at_end(ps) || *ps->p == '\n' || *ps->p == '\0')
            return false;
        c = *ps->p++;
        if (c == '"')
            break;
        if (c == '\\') {
            if (at_end(ps) || *ps->p == '\n')
                return false;
            c = *ps->p++;
        }
        if (n + 1 >= sizeof(ps->sub))
            return false;
        ps->sub[n++] = c;
    }
    ps->sub[n] = '\0';
    ps->has_sub = true;
    if (at_end(ps) || *ps->p != ']')
        return false;
    ps->p++;
    return true;
}

/* A value after '=' up to the end of the line (continuations joined). */
static bool parse_value(cfg_parser *ps, strbuf *v)
{
    bool quoted = false;
    size_t trim = 0;   /* length without trailing unquoted blanks */
    skip_blank(ps);
    while (!at_end(ps)) {
        char c = *ps->p++;
        if (c == '\n') {
            if (quoted)
                return false;
            break;
        }
        if (!quoted && (c == ';' || c == '#')) {
            skip_line(ps);
            break;
        }
        if (c == '\0')
            return false;
        if (c == '"') {
            quoted = !quoted;
            trim = v->len;
            continue;
        }
        if (c == '\\') {
            if (at_end(ps))
                return false;
            c = *ps->p++;
            switch (c) {
            case '\n': continue;
            case '\r':
                if (!at_end(ps) && *ps->p == '\n') {
                    ps->p++;
                    continue;
                }
                return false;
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case 'b': c = '\b'; break;
            case '\\': case '"': break;
            default: return false;
            }
            strbuf_addch(v, c);
            trim = v->len;
            continue;
        }
        if (!quoted && (c == ' ' || c == '\t' || c == '\r')) {
            if (v->len)
                strbuf_addch(v, c);
            continue;
        }
        strbuf_addch(v, c);
        trim = v->len;
    }
    if (quoted)
        return false;
    strbuf_setlen(v, trim);
    return true;
}

typedef bool (*allow_fn)(const cfg_setting *s);

/* Parses text and calls allow() on every setting; appends the allowed ones to out. */
static int filter_config(const char *text, size_t len, strbuf *out, allow_fn allow)
{
    cfg_parser ps = { .p = text, .end = text + len };
    strbuf res = STRBUF_INIT;
    char cur_section[64] = "", cur_sub[256] = "";
    bool cur_has_sub = false, have_header = false;
    int kept = 0;

    if (len > GITCONFIG_MAX || memchr(text, '\0', len))
        return -1;
    while (!at_end(&ps)) {
        cfg_setting s;
        size_t n = 0;
        skip_blank(&ps);
        if (at_end(&ps))
            break;
        if (*ps.p == '\n') {
            ps.p++;
            continue;
        }
        if (*ps.p == '#' || *ps.p == ';') {
            skip_line(&ps);
            continue;
        }
        if (*ps.p == '[') {
            ps.p++;
            if (!parse_section(&ps))
                goto bad;
            skip_blank(&ps);
            /* A key may follow the header on the same line. */
            continue;
        }
        if (!ps.section[0] || !isalpha((unsigned char)*ps.p))
            goto bad;
        memset(&s, 0, sizeof(s));
        strbuf_init(&s.value, 0);
        while (!at_end(&ps) && (isalnum((unsigned char)*ps.p) || *ps.p == '-')) {
            if (n + 1 >= sizeof(s.key)) {
                strbuf_release(&s.value);
                goto bad;
            }
            s.key[n++] = (char)tolower((unsigned char)*ps.p++);
        }
        s.key[n] = '\0';
        skip_blank(&ps);
        if (at_end(&ps) || *ps.p == '\n' || *ps.p == '#' || *ps.p == ';') {
            s.implicit = true;
            skip_line(&ps);
        } else if (*ps.p == '=') {
            ps.p++;
            if (!parse_value(&ps, &s.value)) {
                strbuf_release(&s.value);
                goto bad;
            }
        } else {
            strbuf_release(&s.value);
            goto bad;
        }
        memcpy(s.section, ps.section, sizeof(s.section));
        memcpy(s.sub, ps.sub, sizeof(s.sub));
        s.has_sub = ps.has_sub;
        if (allow(&s) && !git_url_has_credentials(s.value.buf, s.value.len)) {
            bool ok = true;
            for (size_t i = 0; i < s.value.len; i++) {
                unsigned char c = (unsigned char)s.value.buf[i];
                if (c < 0x20 && c != '\t' && c != '\n')
                    ok = false;
            }
            if (ok) {
                if (!have_header || strcmp(cur_section, s.section) || cur_has_sub != s.has_sub ||
                    strcmp(cur_sub, s.sub)) {
                    strbuf_addf(&res, "[%s", s.section);
                    if (s.has_sub) {
                        strbuf_addstr(&res, " \"");
                        for (const char *c = s.sub; *c; c++) {
                            if (*c == '"' || *c == '\\')
                                strbuf_addch(&res, '\\');
                            strbuf_addch(&res, *c);
                        }
                        strbuf_addch(&res, '"');
                    }
                    strbuf_addstr(&res, "]\n");
                    memcpy(cur_section, s.section, sizeof(cur_section));
                    memcpy(cur_sub, s.sub, sizeof(cur_sub));
                    cur_has_sub = s.has_sub;
                    have_header = true;
                }
                if (s.implicit) {
                    strbuf_addf(&res, "\t%s\n", s.key);
                } else {
                    strbuf_addf(&res, "\t%s = \"", s.key);
                    for (size_t i = 0; i < s.value.len; i++) {
                        char c = s.value.buf[i];
                        if (c == '"' || c == '\\')
                            strbuf_addch(&res, '\\');
                        if (c == '\n')
                            strbuf_addstr(&res, "\\n");
                        else if (c == '\t')
                            strbuf_addstr(&res, "\\t");
                        else
                            strbuf_addch(&res, c);
                    }
                    strbuf_addstr(&res, "\"\n");
                }
                kept++;
            }
        }
        strbuf_release(&s.value);
    }
    strbuf_add(out, res.buf, res.len);
    strbuf_release(&res);
    return kept;
bad:
    strbuf_release(&res);
    return -1;
}

static bool key_in(const char *key, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(key, list[i]))
            return true;
    return false;
}

#define KEY_IN(key, list) key_in((key), (list), ARRAY_SIZE(list))

/* Everyday settings, allowed from both the user's and the repository's config, by
 * "section.key" (no subsection). None names a program, a file to read, or a hook. */
static const char *const everyday[] = {
    "user.name", "user.email", "author.name", "author.email", "committer.name",
    "committer.email", "init.defaultbranch", "core.autocrlf", "core.eol", "core.safecrlf",
    "core.quotepath", "core.abbrev", "color.ui", "color.diff", "color.status", "color.branch",
    "color.interactive", "color.grep", "color.decorate", "color.showbranch", "color.advice",
    "color.pager", "diff.renames", "diff.algorithm", "diff.colormoved", "diff.mnemonicprefix",
    "diff.noprefix", "diff.context", "diff.indentheuristic", "diff.submodule",
    "diff.renamelimit", "merge.conflictstyle", "merge.ff", "merge.log", "merge.renames",
    "merge.renamelimit", "pull.rebase", "pull.ff", "push.default", "push.autosetupremote",
    "push.followtags", "fetch.prune", "fetch.prunetags", "fetch.fsckobjects",
    "transfer.fsckobjects", "rebase.autosquash", "rebase.autostash", "rebase.updaterefs",
    "rebase.stat", "rerere.enabled", "rerere.autoupdate", "commit.verbose", "commit.cleanup",
    "status.short", "status.branch", "status.showuntrackedfiles", "status.submodulesummary",
    "status.relativepaths", "log.date", "log.decorate", "log.follow", "log.abbrevcommit",
    "tag.sort", "branch.sort", "branch.autosetupmerge", "branch.autosetuprebase",
    "column.ui", "grep.linenumber", "grep.patterntype", "grep.extendedregexp", "am.threeway",
    "apply.whitespace", "submodule.recurse", "protocol.version", "help.autocorrect",
    "blame.date", "safe.directory",
};

static const char *const color_subs[] = {
    "diff", "status", "branch", "grep", "interactive", "decorate", "remote", "advice",
    "blame", "transport", "push",
};

static bool allow_everyday(const cfg_setting *s)
{
    char key[140];
    if (s->has_sub) {
        return !strcmp(s->section, "color") && KEY_IN(s->sub, color_subs);
    }
    if (!strcmp(s->section, "advice"))
        return true;
    snprintf(key, sizeof(key), "%s.%s", s->section, s->key);
    return KEY_IN(key, everyday);
}

static const char *const repo_core[] = {
    "core.repositoryformatversion", "core.filemode", "core.bare", "core.logallrefupdates",
    "core.ignorecase", "core.precomposeunicode", "core.symlinks", "core.checkstat",
    "core.trustctime", "core.commitgraph", "core.multipackindex", "core.splitindex",
    "core.untrackedcache", "core.sparsecheckout", "core.sparsecheckoutcone",
    "core.protecthfs", "core.protectntfs", "core.compression", "core.bigfilethreshold",
};

static bool allow_repo(const cfg_setting *s)
{
    char key[140];
    if (s->has_sub) {
        if (!strcmp(s->section, "branch"))
            return !strcmp(s->key, "remote") || !strcmp(s->key, "merge") ||
                   !strcmp(s->key, "rebase") || !strcmp(s->key, "pushremote") ||
                   !strcmp(s->key, "description");
        if (!strcmp(s->section, "remote"))
            return !strcmp(s->key, "url") || !strcmp(s->key, "pushurl") ||
                   !strcmp(s->key, "fetch") || !strcmp(s->key, "push") ||
                   !strcmp(s->key, "tagopt") || !strcmp(s->key, "mirror") ||
                   !strcmp(s->key, "prune");
        if (!strcmp(s->section, "submodule"))
            return !strcmp(s->key, "url") || !strcmp(s->key, "active") ||
                   !strcmp(s->key, "branch");
        return allow_everyday(s);
    }
    if (!strcmp(s->section, "extensions") || !strcmp(s->section, "format"))
        return true;
    snprintf(key, sizeof(key), "%s.%s", s->section, s->key);
    return KEY_IN(key, repo_core) || allow_everyday(s);
}

int gitconfig_filter_repo(const char *text, size_t len, strbuf *out)
{
    return filter_config(text, len, out, allow_repo);
}

int gitconfig_filter_user(const char *text, size_t len, strbuf *out)
{
    return filter_config(text, len, out, allow_everyday);
}
