/*
 * libFuzzer driver for the router: any bytes are parsed and routed against
 * a fixture code directory, and every part routed to the host is checked
 * again here, independently of the router's own code, for the properties
 * the host relies on:
 *   - a simple command, or a pipeline of them, no `time`;
 *   - every word and assignment value made of literal and quoted text only;
 *   - the command one of echo, printf, cd, git, or a filter after a pipe;
 *   - redirections only to /dev/null or between descriptors 1 and 2;
 *   - no NUL, CR or other control byte anywhere in the line.
 * Printing the plan (text and JSON) is exercised too. The host runner is
 * not called: running the inputs is route-fuzz's job (tests/router/).
 *
 *   make fuzz                       (runs it for FUZZ_SECONDS, seeded)
 *   build-fuzz/fuzz-route CORPUS    (by hand)
 */
#include "common/strbuf.h"
#include "router/route.h"
#include "shell/parse.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_code[256];
static const char *g_dirs[1];

static void cleanup(void)
{
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_code);
    if (system(cmd) != 0)
        fprintf(stderr, "fuzz-route: could not remove %s\n", g_code);
}

static void setup(void)
{
    char tmpl[] = "/tmp/fuzz-route.XXXXXX";
    char path[400];

    if (!mkdtemp(tmpl))
        abort();
    snprintf(g_code, sizeof(g_code), "%s", tmpl);
    snprintf(path, sizeof(path), "%s/.git", g_code);
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/sub", g_code);
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/link", g_code);
    if (symlink("/etc", path) < 0)
        abort();
    g_dirs[0] = g_code;
    atexit(cleanup);
}

static bool static_parts(const sh_wpart *w, bool quoted)
{
    for (; w; w = w->next) {
        switch (w->kind) {
        case WP_LIT:
            if (!quoted && memchr(w->text, '*', w->len))
                return false;
            break;
        case WP_ESCAPED:
        case WP_SQUOTE:
            break;
        case WP_DQUOTE:
            if (quoted || !static_parts(w->parts, true))
                return false;
            break;
        default:
            return false;
        }
    }
    return true;
}

static bool word_is(const sh_word *w, const char *want)
{
    strbuf sb = STRBUF_INIT;
    bool same = sh_word_static_value(w, &sb) && !strcmp(sb.buf, want);
    strbuf_release(&sb);
    return same;
}

static bool host_name(const sh_word *w, bool first)
{
    static const char *const any[] = { "echo", "printf", "cd", "git" };
    static const char *const filters[] = { "grep", "jq", "head", "tail", "sort", "uniq",
                                           "cut", "tr", "wc" };
    for (size_t i = 0; i < sizeof(any) / sizeof(any[0]); i++)
        if (word_is(w, any[i]))
            return true;
    for (size_t i = 0; i < sizeof(filters) / sizeof(filters[0]); i++)
        if (word_is(w, filters[i]))
            return !first;
    return false;
}

static void check_host(const sh_pipeline *pl)
{
    bool first = true;

    if (pl->timed)
        abort();
    for (const sh_cmd *c = pl->cmds; c; c = c->next, first = false) {
        if (c->kind != SH_SIMPLE || !c->words || !host_name(c->words, first))
            abort();
        for (const sh_word *w = c->words; w; w = w->next)
            if (!static_parts(w->parts, false) || w->flags & (SH_WF_EXPANSION | SH_WF_GLOB |
                                                            SH_WF_TILDE | SH_WF_BRACE |
                                                            SH_WF_ANSI))
                abort();
        for (const sh_assign *a = c->assigns; a; a = a->next)
            if (!a->value || !static_parts(a->value->parts, false) || a->is_array)
                abort();
        for (const sh_redir *r = c->redirs; r; r = r->next) {
            if (r->op == R_HEREDOC || r->op == R_HEREDOC_TAB || r->op == R_HERESTRING ||
                r->op == R_RDWR || r->op == R_DUP_IN || !r->target)
                abort();
            if (!word_is(r->target, "/dev/null") && !word_is(r->target, "1") &&
                !word_is(r->target, "2"))
                abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *src = malloc(size ? size : 1);
    route_ctx ctx;
    route_plan plan;
    sh_parse p;
    strbuf out = STRBUF_INIT;
    bool has_control = false;

    if (!g_dirs[0])
        setup();
    memcpy(src, data, size);
    for (size_t i = 0; i < size; i++)
        has_control |= (data[i] < 0x20 && data[i] != '\t' && data[i] != '\n') || data[i] == 0x7f;
    ctx = (route_ctx){ .code_dirs = g_dirs, .n_code_dirs = 1, .cwd = g_code,
                       .path = "/usr/local/bin:/usr/bin:/bin", .home = "/root" };
    if (sh_parse_all(&p, src, size, NULL, true) == SH_OK) {
        route_plan_build(&plan, &p, &ctx);
        for (size_t i = 0; i < plan.n; i++) {
            const route_part *part = &plan.parts[i];
            if (!part->reason || strchr(part->reason, '\n') || strchr(part->reason, '\t'))
                abort();
            if (part->where == ROUTE_HOST) {
                if (has_control || part->background)
                    abort();
                check_host(part->pipe);
            }
        }
        route_print(&plan, &p, &ctx, false, &out);
        route_print(&plan, &p, &ctx, true, &out);
        route_plan_release(&plan);
    }
    sh_parse_free(&p);
    strbuf_release(&out);
    free(src);
    return 0;
}
