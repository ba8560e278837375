/*
 * The route table (tests/router/route-table.txt): every case is parsed,
 * routed against a fixture code directory, and checked part by part
 * against the expected host/sandbox decision and reason.
 *
 * The fixture (in a temporary directory @T@):
 *   code/            the code directory, a git repository (cwd by default)
 *     sub/deeper/    plain directories
 *     README         a file
 *     link-out -> /etc, link-in -> sub
 *     bin/git        a planted executable
 *     bare.git, bare a bare repository (the sandbox could write its config)
 *     other/         a repository with its own .git
 *     gitfile-dir/.git   a gitfile (the host's)
 *     foreign-gitfile    a gitfile under another name
 *     x.bundle       a file
 *     planted/refs/fake/   shaped like a repository (HEAD, objects/, refs/), as a
 *                    sandbox plants one under .git/refs
 *   out/repo, outside-repo   repositories outside the code directory
 *   home/            HOME
 *   host-bin/sbx     the sbx beside sbxsh (route_ctx.sbx; "@sbx PATH" changes it), and
 *   code/bin/sbx     one the sandbox planted; the session is "demo"
 *   host-bin/gh, host-bin/kubectl   programs for the policy's rules ("@policy FILE"), and
 *   code/bin/gh, code/bin/glab      ones the sandbox planted (glab is only there)
 */
#include "router/policy.h"
#include "router/route.h"
#include "tests/lib/tap.h"

#include "common/strbuf.h"
#include "common/util.h"
#include "shell/parse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char top[4096], code[4200], out_dir[4200], home_dir[4200], sys_path[8192];

static void sh(const char *fmt, ...) SBX_PRINTF(1, 2);
static void sh(const char *fmt, ...)
{
    strbuf cmd = STRBUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    strbuf_vaddf(&cmd, fmt, ap);
    va_end(ap);
    if (system(cmd.buf) != 0) {
        printf("Bail out! fixture command failed: %s\n", cmd.buf);
        exit(255);
    }
    strbuf_release(&cmd);
}

static void make_fixture(void)
{
    const char *tmp = getenv("TMPDIR");
    char templ[4096];

    snprintf(templ, sizeof(templ), "%s/sbxsh-route.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(templ) || !realpath(templ, top)) {
        printf("Bail out! mkdtemp: %s\n", strerror(errno));
        exit(255);
    }
    snprintf(code, sizeof(code), "%s/code", top);
    snprintf(out_dir, sizeof(out_dir), "%s/out", top);
    snprintf(home_dir, sizeof(home_dir), "%s/home", top);
    sh("cd '%s' && git init -q code && git init -q out/repo && git init -q outside-repo && "
       "mkdir -p home host-bin code/sub/deeper code/bin && "
       "printf '#!/bin/sh\\n' > host-bin/sbx && chmod +x host-bin/sbx && "
       "cp host-bin/sbx host-bin/gh && cp host-bin/sbx host-bin/kubectl && "
       "cd code && echo hi > README && cp ../host-bin/sbx bin/sbx && "
       "cp ../host-bin/sbx bin/gh && cp ../host-bin/sbx bin/glab && "
       "ln -s /etc link-out && ln -s sub link-in && "
       "printf '#!/bin/sh\\necho planted\\n' > bin/git && chmod +x bin/git && "
       "git init -q --bare bare.git && git init -q --bare bare && git init -q other && "
       "mkdir gitfile-dir && echo 'gitdir: /etc' > gitfile-dir/.git && "
       "echo 'gitdir: /etc/x' > foreign-gitfile && echo '# v2 git bundle' > x.bundle && "
       "mkdir -p planted/refs/fake/objects planted/refs/fake/refs && "
       "echo 'ref: refs/heads/main' > planted/refs/fake/HEAD",
       top);
}

/* Expands @CODE@, @OUT@, @T@, @PATH@ and the <NL>-style byte names. */
static void expand(const char *in, strbuf *out)
{
    static const struct { const char *name; const char *bytes; size_t n; } bytes[] = {
        { "<NL>", "\n", 1 }, { "<CR>", "\r", 1 }, { "<TAB>", "\t", 1 },
        { "<NUL>", "\0", 1 }, { "<ESC>", "\033", 1 },
    };
    strbuf_reset(out);
    while (*in) {
        bool done = false;
        for (size_t i = 0; i < ARRAY_SIZE(bytes) && !done; i++)
            if (!strncmp(in, bytes[i].name, strlen(bytes[i].name))) {
                strbuf_add(out, bytes[i].bytes, bytes[i].n);
                in += strlen(bytes[i].name);
                done = true;
            }
        if (done)
            continue;
        if (!strncmp(in, "@CODE@", 6)) {
            strbuf_addstr(out, code);
            in += 6;
        } else if (!strncmp(in, "@OUT@", 5)) {
            strbuf_addstr(out, out_dir);
            in += 5;
        } else if (!strncmp(in, "@PATH@", 6)) {
            strbuf_addstr(out, sys_path);
            in += 6;
        } else if (!strncmp(in, "@T@", 3)) {
            strbuf_addstr(out, top);
            in += 3;
        } else {
            strbuf_addch(out, *in++);
        }
    }
}

static void run_case(const route_ctx *ctx, const char *expect, const strbuf *line,
                     const char *reason, const char *shown)
{
    sh_parse p;
    route_plan plan;
    strbuf got = STRBUF_INIT, reasons = STRBUF_INIT;
    bool good;

    sh_parse_all(&p, line->buf, line->len, NULL, true);
    if (p.status != SH_OK) {
        ok(!strcmp(expect, "error"), "%s: %s", expect, shown);
        if (strcmp(expect, "error"))
            diag("syntax error: %s", p.err_msg);
        sh_parse_free(&p);
        return;
    }
    route_plan_build(&plan, &p, ctx);
    for (size_t i = 0; i < plan.n; i++) {
        strbuf_addf(&got, "%s%s", i ? "," : "",
                    plan.parts[i].where == ROUTE_HOST ? "host" : "sandbox");
        strbuf_addf(&reasons, "%s%s", i ? " / " : "", plan.parts[i].reason);
    }
    if (strchr(expect, ',')) {
        good = !strcmp(got.buf, expect);
    } else {
        good = plan.n > 0 && strcmp(expect, "error");
        for (size_t i = 0; i < plan.n; i++)
            good &= !strcmp(expect, plan.parts[i].where == ROUTE_HOST ? "host" : "sandbox");
    }
    if (good && reason && *reason && !strstr(reasons.buf, reason))
        good = false;
    if (!ok(good, "%s: %s", expect, shown))
        diag("     got: %s\n reasons: %s%s%s", got.buf, reasons.buf,
             reason ? "\nexpected reason: " : "", reason ? reason : "");
    route_plan_release(&plan);
    sh_parse_free(&p);
    strbuf_release(&got);
    strbuf_release(&reasons);
}

int main(void)
{
    const char *table = "tests/router/route-table.txt";
    char *text, *line, *next;
    size_t len;
    sbx_err err;
    strbuf cwd = STRBUF_INIT, cdpath = STRBUF_INIT, home = STRBUF_INIT, path = STRBUF_INIT;
    strbuf sbx = STRBUF_INIT;
    strbuf l = STRBUF_INIT, shown = STRBUF_INIT;
    const char *code_dirs[1], *sync_paths[1];
    char synced[4200];
    route_ctx ctx;
    route_policy *policy = NULL;
    int cases = 0;

    if (read_file(table, 1 << 20, &text, &len, &err) < 0) {
        printf("Bail out! %s (run from the top of the tree)\n", err.msg);
        return 255;
    }
    snprintf(sys_path, sizeof(sys_path), "%s", getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    make_fixture();
    snprintf(synced, sizeof(synced), "%s/synced", top);
    code_dirs[0] = code;
    sync_paths[0] = synced;
    strbuf_addstr(&cwd, code);
    strbuf_addstr(&home, home_dir);
    strbuf_addstr(&path, sys_path);
    strbuf_addf(&sbx, "%s/host-bin/sbx", top);

    for (line = text; *line; line = next) {
        char *tab1, *tab2;
        next = strchrnul(line, '\n');
        if (*next)
            *next++ = '\0';
        if (!*line || *line == '#')
            continue;
        if (*line == '@') {
            char *arg = strchr(line, ' ');
            strbuf *target = NULL;
            if (!strncmp(line, "@cwd", 4)) {
                strbuf_reset(&cwd);
                strbuf_addstr(&cwd, code);
                if (arg && strcmp(arg + 1, "."))
                    strbuf_addf(&cwd, "/%s", arg + 1);
                continue;
            }
            if (!strncmp(line, "@policy", 7)) {
                /* the rules for the cases after it (none: no policy), loaded against the
                 * context as it is now (its PATH resolves the programs) */
                char *ptext;
                size_t plen;
                route_ctx lctx = { .code_dirs = code_dirs, .n_code_dirs = 1,
                                   .sync_paths = sync_paths, .n_sync_paths = 1,
                                   .cwd = cwd.buf, .path = path.buf };
                route_policy_free(policy);
                policy = NULL;
                if (!arg)
                    continue;
                if (read_file(arg + 1, 1 << 20, &ptext, &plen, &err) < 0) {
                    printf("Bail out! %s\n", err.msg);
                    return 255;
                }
                expand(ptext, &l);
                free(ptext);
                policy = route_policy_new();
                if (route_policy_load_text(policy, strrchr(arg, '/') + 1, l.buf, l.len, &lctx) < 0) {
                    printf("Bail out! %s", route_policy_problems(policy));
                    return 255;
                }
                continue;
            }
            if (!strncmp(line, "@cdpath", 7))
                target = &cdpath;
            else if (!strncmp(line, "@home", 5))
                target = &home;
            else if (!strncmp(line, "@path", 5))
                target = &path;
            else if (!strncmp(line, "@sbx", 4))
                target = &sbx;
            if (!target) {
                printf("Bail out! unknown directive: %s\n", line);
                return 255;
            }
            expand(arg ? arg + 1 : "", target);
            continue;
        }
        tab1 = strchr(line, '\t');
        if (!tab1) {
            printf("Bail out! no tab in: %s\n", line);
            return 255;
        }
        *tab1 = '\0';
        tab2 = strchr(tab1 + 1, '\t');
        if (tab2)
            *tab2++ = '\0';
        expand(tab1 + 1, &l);
        strbuf_reset(&shown);
        strbuf_add_shell_quoted(&shown, l.buf, l.len > 120 ? 120 : l.len);
        ctx = (route_ctx){
            .code_dirs = code_dirs, .n_code_dirs = 1, .sync_paths = sync_paths,
            .n_sync_paths = 1, .cwd = cwd.buf, .path = path.buf, .home = home.buf,
            .cdpath = cdpath.len ? cdpath.buf : NULL,
            .sbx = sbx.len ? sbx.buf : NULL, .session = "demo", .policy = policy,
        };
        run_case(&ctx, line, &l, tab2, shown.buf);
        cases++;
    }
    diag("%d cases from %s", cases, table);
    route_policy_free(policy);
    sh("rm -rf '%s'", top);
    free(text);
    strbuf_release(&cwd);
    strbuf_release(&cdpath);
    strbuf_release(&home);
    strbuf_release(&path);
    strbuf_release(&sbx);
    strbuf_release(&l);
    strbuf_release(&shown);
    return done_testing();
}
