/*
 * The user's startup files for the sandbox's HOME: the secret filter and the sourced
 * files (rcfile.h). A ~/.bashrc often exports tokens (GITHUB_TOKEN=..., an API key), and
 * what reaches the sandbox can be read by anything running there, a prompt-injected agent
 * first. So the files go in filtered, in three passes: values of assignments whose name
 * looks like a secret's, tokens of known shapes anywhere, and URL credentials. It is a
 * filter by name and shape, so in doubt it removes (a name too long to read is taken for
 * a secret's); the credential places it will not read at all are listed below.
 */
#include "sync/rcfile.h"
#include "common/urlcred.h"

#include <ctype.h>
#include <string.h>

const char *const RC_FILES[] = {
    ".bash_profile", ".bash_login", ".profile", ".bashrc", ".bash_aliases", ".bash_logout",
    NULL,
};

/* Well-known credential places of a home directory (as session/config.c's home_secrets,
 * which keeps them out of a code directory holding the home directory), and the agents'
 * own credential files: no startup file is read from under one. */
static const char *const rc_secret_places[] = {
    ".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".config/gh", ".config/hub",
    ".kube", ".docker", ".netrc", ".git-credentials", ".config/git/credentials", ".npmrc",
    ".yarnrc", ".pypirc", ".cargo/credentials", ".cargo/credentials.toml", ".gem/credentials",
    ".password-store", ".local/share/keyrings", ".vault-token", ".terraform.d",
    ".m2/settings.xml", ".config/sbxsh", ".local/state/sbxsh", ".pgpass", ".my.cnf",
    ".claude/.credentials.json", ".codex/auth.json", ".config/op", ".gitconfig",
};

#define NOTE " # sbxsh: value removed (a secret stays on the host)"

static bool is_ident_start(int c)
{
    return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

static bool is_ident(int c)
{
    return is_ident_start(c) || (c >= '0' && c <= '9');
}

static bool is_alnum(int c)
{
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

/* A byte after which a new shell word (and so a command or an assignment) may start. */
static bool word_sep(int c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '&' || c == '|' ||
           c == '(' || c == ')' || c == '{' || c == '}' || c == '`' || c == '!';
}

/* ---- secret names --------------------------------------------------------------------- */

/* Whether needle occurs in the upper-cased name. */
static bool has_sub(const char *up, const char *needle)
{
    return strstr(up, needle) != NULL;
}

/* Whether a variable's name says it holds a secret: any of parts anywhere in it, or one
 * of the short words as a whole component (KEY would otherwise match MONKEY, AUTH AUTHOR). */
bool rc_secret_name(const char *name, size_t len)
{
    char up[256];
    static const char *const parts[] = { "TOKEN", "SECRET", "PASSWORD", "PASSWD",
                                         "PASSPHRASE", "CREDENTIAL", "PRIVATE", "APIKEY",
                                         "COOKIE" };
    if (!len)
        return false;
    if (len >= sizeof(up))
        return true;   /* a name this long: fail toward removing */
    for (size_t i = 0; i < len; i++)
        up[i] = (char)toupper((unsigned char)name[i]);
    up[len] = '\0';
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
        if (has_sub(up, parts[i]))
            return true;
    /* By component (between underscores): KEY (API_KEY, AWS_SECRET_ACCESS_KEY, *_KEY),
     * AUTH (NPM_AUTH, AUTHKEY, OAUTH; not AUTHOR, as in GIT_AUTHOR_NAME), PASS (SSHPASS),
     * PAT and CREDS. */
    for (size_t i = 0; i < len;) {
        size_t j = i;
        while (j < len && up[j] != '_')
            j++;
        const char *c = up + i;
        size_t n = j - i;
#define IS(lit) (n == sizeof(lit) - 1 && !memcmp(c, lit, n))
#define ENDS(lit) (n >= sizeof(lit) - 1 && !memcmp(c + n - (sizeof(lit) - 1), lit, sizeof(lit) - 1))
#define STARTS(lit) (n >= sizeof(lit) - 1 && !memcmp(c, lit, sizeof(lit) - 1))
        if (IS("KEY") || IS("KEYS") || IS("PAT") || IS("CREDS") || ENDS("PASS") ||
            ENDS("AUTH") || (STARTS("AUTH") && !STARTS("AUTHOR")))
            return true;
#undef IS
#undef ENDS
#undef STARTS
        i = j + 1;
    }
    return false;
}

/* ---- the assignment filter --------------------------------------------------------------- */

/*
 * The end of the shell word that starts at text[i] (an assignment's value), following
 * quotes, $(...), ${...}, backquotes, backslashes and an array's (...): where an unquoted
 * blank, newline or operator ends it. With one_line, a newline always ends it (a here-
 * document's body, where quotes are text). An unterminated quote runs to the end.
 */
static size_t value_end(const char *t, size_t len, size_t i, bool one_line)
{
    int depth = 0;        /* open ( of an array, $( or ${ */
    if (i < len && t[i] == '(') {
        depth = 1;
        i++;
    }
    while (i < len) {
        char c = t[i];
        if (c == '\n' && (one_line || depth == 0))
            return i;
        if (depth == 0 && (c == ' ' || c == '\t' || c == ';' || c == '&' || c == '|' ||
                           c == ')' || c == '<' || c == '>'))
            return i;
        if (c == '\\') {
            i += 2;
            continue;
        }
        if (c == '\'') {
            i++;
            while (i < len && t[i] != '\'' && !(one_line && t[i] == '\n'))
                i++;
            if (i < len && t[i] == '\'')
                i++;
            continue;
        }
        if (c == '"' || c == '`') {
            char q = c;
            i++;
            while (i < len && t[i] != q && !(one_line && t[i] == '\n')) {
                if (t[i] == '\\')
                    i++;
                i++;
            }
            if (i < len && t[i] == q)
                i++;
            continue;
        }
        if (c == '$' && i + 1 < len && (t[i + 1] == '(' || t[i + 1] == '{')) {
            depth++;
            i += 2;
            continue;
        }
        if (depth > 0 && (c == '(' || c == '{'))
            depth++;
        else if (depth > 0 && (c == ')' || c == '}'))
            depth--;
        i++;
        if (depth == 0 && (c == ')' || c == '}') && i < len && t[i] == '\n' && !one_line)
            return i;
    }
    return i > len ? len : i;
}

/* At a word start text[i]: the length of "NAME=", "NAME+=" or "NAME[...]=" with *name_len
 * the name's, or 0. */
static size_t assignment_at(const char *t, size_t len, size_t i, size_t *name_len)
{
    size_t j = i;
    if (j >= len || !is_ident_start((unsigned char)t[j]))
        return 0;
    while (j < len && is_ident((unsigned char)t[j]))
        j++;
    *name_len = j - i;
    if (j < len && t[j] == '[') {
        while (j < len && t[j] != ']' && t[j] != '\n')
            j++;
        if (j >= len || t[j] != ']')
            return 0;
        j++;
    }
    if (j < len && t[j] == '+')
        j++;
    if (j < len && t[j] == '=')
        return j + 1 - i;
    return 0;
}

/* Removes the value at t[i..end): nothing for a one-line value, else a single-quoted string
 * of its newlines, so that the lines after it keep their numbers and the command its shape. */
static void drop_value(const char *t, size_t i, size_t end, strbuf *out)
{
    size_t nl = 0;
    for (size_t k = i; k < end; k++)
        nl += t[k] == '\n';
    if (!nl)
        return;
    strbuf_addch(out, '\'');
    while (nl--)
        strbuf_addch(out, '\n');
    strbuf_addch(out, '\'');
}

/* A here-document's delimiter after "<<" or "<<-" at t[i] (quotes removed): its length in
 * delim (0: none found). *end is where the operator and word end. */
static size_t heredoc_word(const char *t, size_t len, size_t i, char *delim, size_t cap,
                           bool *strip_tabs, size_t *end)
{
    size_t n = 0;
    i += 2;
    *strip_tabs = i < len && t[i] == '-';
    if (*strip_tabs)
        i++;
    while (i < len && (t[i] == ' ' || t[i] == '\t'))
        i++;
    while (i < len && !word_sep((unsigned char)t[i]) && t[i] != '<' && t[i] != '>') {
        char c = t[i++];
        if (c == '\'' || c == '"' || c == '\\')
            continue;
        if (n + 1 < cap)
            delim[n++] = c;
    }
    delim[n] = '\0';
    *end = i;
    return n;
}

#define MAX_HEREDOCS 8

/*
 * The assignment pass, a small shell lexer. Its states: the top level (words, quotes
 * across lines as bash reads them, comments), and here-document bodies, read line by line
 * up to their delimiter with quotes as text (an apostrophe in a here-document must not
 * open a quote that would hide the assignments after it). At every word start of either,
 * an assignment to a secret name loses its value; the note goes at the end of that line,
 * when the line neither continues (backslash) nor ends inside a quote.
 */
static size_t filter_assignments(const char *t, size_t len, strbuf *out)
{
    size_t i = 0, removed = 0;
    bool at_word = true, note = false;
    char docs[MAX_HEREDOCS][64];
    bool tabs[MAX_HEREDOCS];
    size_t ndocs = 0;

    while (i < len) {
        char c = t[i];
        if (c == '\n') {
            if (note && !(i > 0 && t[i - 1] == '\\' && !(i > 1 && t[i - 2] == '\\'))) {
                strbuf_addstr(out, NOTE);
                note = false;
            }
            strbuf_addch(out, '\n');
            i++;
            at_word = true;
            /* here-document bodies: whole lines, to their delimiters */
            for (size_t d = 0; d < ndocs && i < len; d++) {
                while (i < len) {
                    size_t e = i, s = i, k;
                    bool line_note = false;
                    while (e < len && t[e] != '\n')
                        e++;
                    if (tabs[d])
                        while (s < e && t[s] == '\t')
                            s++;
                    if (e - s == strlen(docs[d]) && !memcmp(t + s, docs[d], e - s)) {
                        strbuf_add(out, t + i, e - i);
                        if (e < len)
                            strbuf_addch(out, '\n');
                        i = e < len ? e + 1 : e;
                        break;
                    }
                    /* the body's words: assignments at word starts, quotes as text */
                    for (k = i; k < e;) {
                        size_t nlen, alen;
                        bool ws = k == i || word_sep((unsigned char)t[k - 1]);
                        if (ws && (alen = assignment_at(t, e, k, &nlen)) &&
                            rc_secret_name(t + k, nlen)) {
                            size_t v = value_end(t, e, k + alen, true);
                            strbuf_add(out, t + k, alen);
                            removed++;
                            line_note = true;
                            k = v;
                            continue;
                        }
                        strbuf_addch(out, t[k]);
                        k++;
                    }
                    if (line_note)
                        strbuf_addstr(out, NOTE);
                    if (e < len)
                        strbuf_addch(out, '\n');
                    i = e < len ? e + 1 : e;
                }
            }
            ndocs = 0;
            continue;
        }
        if (at_word && c == '#') {
            while (i < len && t[i] != '\n')
                strbuf_addch(out, t[i++]);
            continue;
        }
        if (at_word) {
            size_t nlen, alen = assignment_at(t, len, i, &nlen);
            if (alen && rc_secret_name(t + i, nlen)) {
                size_t v = value_end(t, len, i + alen, false);
                strbuf_add(out, t + i, alen);
                drop_value(t, i + alen, v, out);
                removed++;
                note = true;
                i = v;
                at_word = false;
                continue;
            }
            if (alen) {
                strbuf_add(out, t + i, alen);
                i += alen;
                at_word = false;
                continue;
            }
        }
        if (c == '\\') {
            strbuf_add(out, t + i, i + 1 < len ? 2 : 1);
            i += 2;
            at_word = false;
            continue;
        }
        if (c == '\'' || c == '"') {
            size_t e = i + 1;
            while (e < len && t[e] != c) {
                if (c == '"' && t[e] == '\\')
                    e++;
                e++;
            }
            if (e < len)
                e++;
            if (e > len)
                e = len;
            strbuf_add(out, t + i, e - i);
            i = e;
            at_word = false;
            continue;
        }
        if (c == '<' && i + 1 < len && t[i + 1] == '<' && !(i + 2 < len && t[i + 2] == '<')) {
            size_t e;
            bool strip;
            char word[64];
            if (heredoc_word(t, len, i, word, sizeof(word), &strip, &e) && ndocs < MAX_HEREDOCS) {
                memcpy(docs[ndocs], word, sizeof(word));
                tabs[ndocs++] = strip;
            }
            strbuf_add(out, t + i, e - i);
            i = e;
            at_word = false;
            continue;
        }
        strbuf_addch(out, c);
        at_word = word_sep((unsigned char)c);
        i++;
    }
    if (note)
        strbuf_addstr(out, NOTE);
    return removed;
}

/* ---- tokens of known shapes ----------------------------------------------------------- */

/* The length of the run at t[i] of letters and digits (and alphabet_extra's bytes), or of
 * upper-case letters and digits only. */
static size_t run_of(const char *t, size_t len, size_t i, const char *alphabet_extra,
                     bool upper_digits_only)
{
    size_t j = i;
    while (j < len) {
        unsigned char c = (unsigned char)t[j];
        bool ok = upper_digits_only ? ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
                                    : (is_alnum(c) || (alphabet_extra && c && strchr(alphabet_extra, c)));
        if (!ok)
            break;
        j++;
    }
    return j - i;
}

/* The length of a token of a known shape at t[i] (the byte before it is no word byte),
 * or 0. */
static size_t token_at(const char *t, size_t len, size_t i)
{
    static const char *const gh[] = { "ghp_", "gho_", "ghs_", "ghu_", "ghr_" };
    size_t n;
    for (size_t k = 0; k < sizeof(gh) / sizeof(gh[0]); k++)
        if (len - i > 4 && !memcmp(t + i, gh[k], 4) && (n = run_of(t, len, i + 4, NULL, false)) >= 20)
            return 4 + n;
    if (len - i > 11 && !memcmp(t + i, "github_pat_", 11) &&
        (n = run_of(t, len, i + 11, "_", false)) >= 20)
        return 11 + n;
    if (len - i > 6 && !memcmp(t + i, "glpat-", 6) && (n = run_of(t, len, i + 6, "_-", false)) >= 20)
        return 6 + n;
    if (len - i > 3 && !memcmp(t + i, "sk-", 3) && (n = run_of(t, len, i + 3, "_-", false)) >= 20)
        return 3 + n;
    if (len - i > 5 && !memcmp(t + i, "xox", 3) && strchr("abprs", t[i + 3]) && t[i + 3] &&
        t[i + 4] == '-' && (n = run_of(t, len, i + 5, "-", false)) >= 10)
        return 5 + n;
    if (len - i >= 20 && (!memcmp(t + i, "AKIA", 4) || !memcmp(t + i, "ASIA", 4)) &&
        run_of(t, len, i + 4, NULL, true) >= 16 && (i + 20 == len || !is_alnum((unsigned char)t[i + 20])))
        return 20;
    return 0;
}

/* The second pass: tokens of a known shape (GitHub, GitLab, OpenAI-style, Slack, AWS
 * access keys) removed wherever they stand, in an alias, a function or a comment, where
 * no variable name gives them away. Only at a word's start, so that a longer word that
 * happens to contain "sk-" is left alone. */
static size_t filter_tokens(const char *t, size_t len, strbuf *out)
{
    size_t removed = 0;
    for (size_t i = 0; i < len;) {
        size_t n = (i == 0 || !(is_alnum((unsigned char)t[i - 1]) || t[i - 1] == '_'))
                       ? token_at(t, len, i) : 0;
        if (n) {
            removed++;
            i += n;
            continue;
        }
        strbuf_addch(out, t[i++]);
    }
    return removed;
}

/* The three passes (see the top); the count of values removed. */
size_t rc_filter(const char *text, size_t len, strbuf *out)
{
    strbuf a = STRBUF_INIT, b = STRBUF_INIT;
    size_t removed = filter_assignments(text, len, &a);
    removed += filter_tokens(a.buf, a.len, &b);
    removed += urlcred_strip(b.buf, b.len, out);
    strbuf_release(&a);
    strbuf_release(&b);
    return removed;
}

/* ---- sourced files ------------------------------------------------------------------------ */

/* Whether a file a startup file sources may go into the sandbox's HOME with it: a plain
 * relative path in the home directory (no '.', '..', empty component or NUL, which could
 * name a file outside it), and not under a credential place (a `source ~/.aws/env` must
 * not carry the keys in). */
bool rc_path_allowed(const char *rel, size_t len)
{
    if (!len || rel[0] == '/' || rel[len - 1] == '/')
        return false;
    for (size_t i = 0; i < len;) {
        size_t j = i;
        while (j < len && rel[j] != '/')
            j++;
        if (j == i || (j - i == 1 && rel[i] == '.') ||
            (j - i == 2 && rel[i] == '.' && rel[i + 1] == '.'))
            return false;
        i = j + 1;
    }
    if (memchr(rel, '\0', len))
        return false;
    for (size_t k = 0; k < sizeof(rc_secret_places) / sizeof(rc_secret_places[0]); k++) {
        size_t n = strlen(rc_secret_places[k]);
        if (len >= n && !memcmp(rel, rc_secret_places[k], n) && (len == n || rel[n] == '/'))
            return false;
    }
    return true;
}

/* The next token of a line at t[*i] (words with their quotes, or an operator), or false at
 * the line's end or a comment. */
static bool next_token(const char *t, size_t len, size_t *i, size_t *s, size_t *e)
{
    size_t k = *i;
    while (k < len && (t[k] == ' ' || t[k] == '\t'))
        k++;
    if (k >= len || t[k] == '\n' || t[k] == '#')
        return false;
    *s = k;
    if (strchr(";&|(){}!", t[k])) {
        k++;
        if (k < len && (t[k] == '&' || t[k] == '|') && t[k - 1] == t[k])
            k++;
        *e = *i = k;
        return true;
    }
    while (k < len && (!t[k] || !strchr(" \t\n;&|()<>", t[k]))) {
        if (t[k] == '\\') {
            k += 2;
            continue;
        }
        if (t[k] == '\'' || t[k] == '"') {
            char q = t[k++];
            while (k < len && t[k] != q && t[k] != '\n')
                k++;
            if (k < len && t[k] == q)
                k++;
            continue;
        }
        k++;
    }
    if (k == *s)
        k++;   /* a redirection's < or >: a token of its own */
    *e = *i = k > len ? len : k;
    return true;
}

/* A `source` argument naming a file in the home directory by a literal path: the part
 * after HOME in rel ("x/y"), or false. */
static bool home_word(const char *w, size_t n, strbuf *rel)
{
    bool dq = false, home = false;
    size_t i = 0;
    strbuf_reset(rel);
    if (n >= 2 && w[0] == '~' && w[1] == '/') {
        home = true;
        i = 1;
    }
    for (; i < n; i++) {
        char c = w[i];
        if (c == '"') {
            dq = !dq;
            continue;
        }
        if (c == '\'' && !dq) {
            size_t e = i + 1;
            while (e < n && w[e] != '\'')
                e++;
            if (e >= n)
                return false;
            strbuf_add(rel, w + i + 1, e - i - 1);
            i = e;
            continue;
        }
        if (c == '$' && !home && !rel->len) {
            if (n - i >= 5 && !memcmp(w + i, "$HOME", 5) && (n - i == 5 || !is_ident((unsigned char)w[i + 5]))) {
                home = true;
                i += 4;
                continue;
            }
            if (n - i >= 7 && !memcmp(w + i, "${HOME}", 7)) {
                home = true;
                i += 6;
                continue;
            }
            return false;
        }
        if (strchr("$`\\*?[", c))
            return false;
        strbuf_addch(rel, c);
    }
    if (!home || dq || !rel->len || rel->buf[0] != '/')
        return false;
    /* "/x//y" -> "x/y" */
    {
        size_t k = 0;
        for (size_t j = 0; j < rel->len; j++) {
            if (rel->buf[j] == '/' && (k == 0 || rel->buf[k - 1] == '/'))
                continue;
            rel->buf[k++] = rel->buf[j];
        }
        while (k && rel->buf[k - 1] == '/')
            k--;
        rel->len = k;
        rel->buf[k] = '\0';
    }
    return rel->len > 0;
}

/* Whether the token after prev starts a command (so "source" there is the builtin, not an
 * argument such as `echo source`). */
static bool command_position(const char *prev, size_t n)
{
    static const char *const kw[] = { ";", "&", "&&", "||", "|", "(", "{", "!", "then",
                                      "do", "else", "elif", "if", "while", "until" };
    if (!prev)
        return true;
    for (size_t k = 0; k < sizeof(kw) / sizeof(kw[0]); k++)
        if (strlen(kw[k]) == n && !memcmp(prev, kw[k], n))
            return true;
    return false;
}

/* The files text sources by a literal path in the home directory (`. ~/.bash_env`,
 * `source "$HOME/x"`): they go in too (filtered), or the sandbox's shell would fail on a
 * missing file. Found by reading tokens, never by running anything; a path built at run
 * time is not followed. */
void rc_sourced(const char *text, size_t len, strvec *rel)
{
    strbuf p = STRBUF_INIT;
    size_t i = 0;
    while (i < len) {
        const char *prev = NULL;
        size_t prev_n = 0, s, e;
        bool want = false;
        while (next_token(text, len, &i, &s, &e)) {
            if (want) {
                want = false;
                if (home_word(text + s, e - s, &p) && rc_path_allowed(p.buf, p.len)) {
                    bool dup = false;
                    for (size_t k = 0; k < rel->n; k++)
                        dup |= !strcmp(rel->v[k], p.buf);
                    if (!dup)
                        strvec_push(rel, p.buf);
                }
            } else if (command_position(prev, prev_n) &&
                       ((e - s == 6 && !memcmp(text + s, "source", 6)) ||
                        (e - s == 1 && text[s] == '.'))) {
                want = true;
            }
            prev = text + s;
            prev_n = e - s;
        }
        while (i < len && text[i] != '\n')
            i++;
        i++;
    }
    strbuf_release(&p);
}
