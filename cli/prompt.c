/*
 * bash's prompt escapes (prompt.h), pure: prompt_expand() expands them on the host and makes
 * bash's second pass, prompt_needs_shell() says when the sandbox's bash must expand a prompt
 * instead (an unescaped `$` or backquote), prompt_filter() passes the text through
 * session/termfilter.h for the terminal. Calls only that and common/ (cli/ may call router/,
 * shell/, session/ and common/).
 */
#include "cli/prompt.h"
#include "session/termfilter.h"

#include <string.h>

/* A value an escape stands for (\u, \w, a time...), as bash's decode_prompt_string adds it
 * when promptvars is on: with a backslash before each character that is special inside
 * double quotes, so that the second pass (undo_dquote_backslashes) gives it back unchanged. */
static void add_quoted(strbuf *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (strchr("\"$`\\", s[i]) && s[i])
            strbuf_addch(out, '\\');
        strbuf_addch(out, s[i]);
    }
}

static void add_quoted_str(strbuf *out, const char *s)
{
    add_quoted(out, s, strlen(s));
}

/* \w: the cwd with the home directory shown as ~ (only a whole leading component). */
static void add_dir(const prompt_ctx *c, bool base, strbuf *out)
{
    const char *cwd = c->cwd ? c->cwd : "";
    size_t hl = c->home ? strlen(c->home) : 0;

    if (hl > 1 && c->home[hl - 1] == '/')
        hl--;
    if (hl > 1 && !strncmp(cwd, c->home, hl) && (cwd[hl] == '\0' || cwd[hl] == '/')) {
        if (base && cwd[hl] == '\0') {
            strbuf_addch(out, '~');
            return;
        }
        if (!base) {
            strbuf_addch(out, '~');
            add_quoted_str(out, cwd + hl);
            return;
        }
    }
    if (base) {
        const char *slash = strrchr(cwd, '/');
        add_quoted_str(out, slash && slash[1] ? slash + 1 : cwd);
    } else {
        add_quoted_str(out, cwd);
    }
}

static void add_time(const prompt_ctx *c, const char *fmt, strbuf *out)
{
    char buf[256];
    struct tm tm;
    size_t n;
    localtime_r(&c->now, &tm);
    n = strftime(buf, sizeof(buf), fmt, &tm);
    add_quoted(out, buf, n);
}

/* bash's expansion of the decoded prompt (promptvars on, its default) as it acts on a prompt
 * that needs no shell: in double quotes, a backslash before $ ` " or \ goes and a backslash
 * before a newline goes with it; any other backslash stays. So PS1='a\\"b' shows a"b,
 * which OpenHands' JSON prompt relies on. */
static void undo_dquote_backslashes(const char *s, size_t n, strbuf *out)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\' && i + 1 < n && strchr("$`\"\\\n", s[i + 1])) {
            if (s[i + 1] != '\n')
                strbuf_addch(out, s[i + 1]);
            i++;
            continue;
        }
        strbuf_addch(out, s[i]);
    }
}

/* The first pass, bash's decode_prompt_string: escapes replaced, values quoted (add_quoted). */
static void decode_prompt(const char *ps, const prompt_ctx *c, strbuf *out)
{
    for (const char *p = ps; *p; p++) {
        if (*p != '\\' || !p[1]) {
            strbuf_addch(out, *p);
            continue;
        }
        p++;
        switch (*p) {
        case 'a': strbuf_addch(out, '\a'); break;
        case 'e': strbuf_addch(out, 0x1b); break;
        case 'n': strbuf_addch(out, '\n'); break;
        case 'r': strbuf_addch(out, '\r'); break;
        case '\\': strbuf_addch(out, '\\'); break;
        case '[': strbuf_addch(out, '\001'); break;
        case ']': strbuf_addch(out, '\002'); break;
        /* bash: \$ for a user is a quoted $, which the second pass leaves as $ */
        case '$': strbuf_addstr(out, c->root ? "#" : "\\$"); break;
        case 'u': add_quoted_str(out, c->user ? c->user : ""); break;
        case 'H': add_quoted_str(out, c->host ? c->host : ""); break;
        case 'h': {
            const char *h = c->host ? c->host : "";
            add_quoted(out, h, strcspn(h, "."));
            break;
        }
        case 's': add_quoted_str(out, c->shell ? c->shell : "sbxsh"); break;
        case 'v': add_quoted_str(out, c->version ? c->version : ""); break;
        case 'V': add_quoted_str(out, c->release ? c->release : ""); break;
        case 'l': add_quoted_str(out, c->tty ? c->tty : "tty"); break;
        case 'j': strbuf_addf(out, "%u", c->jobs); break;
        case '!': strbuf_addf(out, "%u", c->history_number); break;
        case '#': strbuf_addf(out, "%u", c->command_number); break;
        case 'w': add_dir(c, false, out); break;
        case 'W': add_dir(c, true, out); break;
        case 't': add_time(c, "%H:%M:%S", out); break;
        case 'T': add_time(c, "%I:%M:%S", out); break;
        case '@': add_time(c, "%I:%M %p", out); break;
        case 'A': add_time(c, "%H:%M", out); break;
        case 'd': add_time(c, "%a %b %d", out); break;
        case 'D': {
            const char *end = p[1] == '{' ? strchr(p + 2, '}') : NULL;
            if (!end) {
                strbuf_addstr(out, "\\D");
                break;
            }
            char fmt[128];
            size_t n = (size_t)(end - (p + 2));
            if (n >= sizeof(fmt))
                n = sizeof(fmt) - 1;
            memcpy(fmt, p + 2, n);
            fmt[n] = '\0';
            /* bash: an empty format is the locale's time */
            add_time(c, n ? fmt : "%X", out);
            p = end;
            break;
        }
        case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': {
            int v = 0, k = 0;
            while (k < 3 && p[k] >= '0' && p[k] <= '7')
                v = v * 8 + (p[k++] - '0');
            strbuf_addch(out, (char)v);
            p += k - 1;
            break;
        }
        default:
            strbuf_addch(out, '\\');
            strbuf_addch(out, *p);
            break;
        }
    }
}

/* bash's two passes (decode_prompt_string, then the expansion of its result in double
 * quotes), for a prompt with nothing left to expand (prompt_needs_shell is false). */
void prompt_expand(const char *ps, const prompt_ctx *c, strbuf *out)
{
    strbuf mid = STRBUF_INIT;
    decode_prompt(ps, c, &mid);
    undo_dquote_backslashes(mid.buf ? mid.buf : "", mid.len, out);
    strbuf_release(&mid);
}

bool prompt_needs_shell(const char *ps)
{
    for (const char *p = ps; *p; p++) {
        if (*p == '\\' && p[1]) {
            p++;
            continue;
        }
        if (*p == '$' || *p == '`')
            return true;
    }
    return false;
}

/*
 * What of a prompt may reach the terminal. PS1 and PS2 are the sandbox's to choose (its
 * ~/.bashrc, a process writing to its shell), and bash's prompt is where people put
 * colours and a window title, so those pass: text, SGR (the plain terminal filter) and OSC
 * 0, 1 and 2, the titles (judged by the pty filter, which drops one holding a control).
 * Nothing else does: not the clipboard (OSC 52), nor a query whose answer the terminal
 * would type into the line being read (DSR `ESC [ 6 n`, DA, DECRQSS: the pty filter keeps
 * DSR for full-screen programs, which a prompt is not), nor cursor movement. readline's
 * markers \001 and \002 (\[ \]) are kept: they only tell readline what takes no room.
 */
void prompt_filter(const char *ps, size_t len, strbuf *out)
{
    size_t i = 0;
    while (i < len) {
        size_t j = i;
        sbx_termfilter tf;
        /* a run of text and non-OSC sequences, up to a marker or an OSC */
        while (j < len && ps[j] != '\001' && ps[j] != '\002' &&
               !(ps[j] == '\033' && j + 1 < len && ps[j + 1] == ']'))
            j++;
        if (j > i) {
            /* a sequence cut by a marker is left half in the filter: dropped */
            session_termfilter_init(&tf);
            session_termfilter_feed(&tf, ps + i, j - i, out);
            i = j;
            continue;
        }
        if (ps[i] != '\033') {
            strbuf_addch(out, ps[i++]);
            continue;
        }
        /* an OSC, through its end: BEL or ST (ESC \\), else the end of the prompt */
        for (j = i + 2; j < len && ps[j] != '\007' && !(ps[j] == '\033' && j + 1 < len && ps[j + 1] == '\\'); j++)
            ;
        j = j >= len ? len : j + (ps[j] == '\007' ? 1 : 2);
        if ((ps[i + 2] == '0' || ps[i + 2] == '1' || ps[i + 2] == '2') && i + 3 < len &&
            ps[i + 3] == ';') {
            session_termfilter_init_pty(&tf);
            session_termfilter_feed(&tf, ps + i, j - i, out);
        }
        i = j;
    }
}
