/*
 * route-bench: the time to parse and route typical agent command lines
 * (the target: well under 100 microseconds). For each line: the parse
 * alone (the baseline), then parse + route, each the median of many runs
 * against a real code directory (a temporary git repository), so that the
 * filesystem checks (cwd, cd targets, PATH lookups) are counted.
 *
 * The last lines are the host-command policy's (router/policy.h): rules of
 * doc/policy.example's kind for a stand-in gh, a match, a near miss, and a pattern with
 * catastrophic backtracking stopped by pcre2's match limit.
 *
 *   make bench-route        or        build/bench/route-bench [ROUNDS]
 */
#include "bench/bench.h"
#include "common/strbuf.h"
#include "common/util.h"
#include "router/policy.h"
#include "router/route.h"
#include "shell/parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const lines[] = {
    "git push origin HEAD",
    "git push -u origin feature/login-form",
    "cd sub && git fetch origin main",
    "git ls-remote --heads origin | grep -c main",
    "printf '%s\\n' x | grep -c x",
    "make test && git push origin HEAD",
    "npm run build 2>&1 | tail -20",
    "git add -A && git commit -m 'fix: handle empty input' && git push",
    "echo '{\"a\":1}' | jq -r .a",
    "cd sub && python3 -m pytest -q tests/test_api.py -k 'not slow' ; echo exit=$?",
    "git fetch --upload-pa=/tmp/evil origin",
    "GIT_TERMINAL_PROMPT=0 git pull --rebase origin main >/dev/null 2>&1",
    "gh pr view 12 --repo acme/app --json title,body",
    "gh pr create --title 'Fix the login form' --body 'It failed on empty input.' --draft",
    "gh pr view 12 --web",
    "gh api aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!",
};

static const char policy_text[] =
    "rule gh-pr-view\n    program gh\n    subcommand pr view\n    flag --comments\n"
    "    option --repo ^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$\n"
    "    option --json [a-zA-Z]+(,[a-zA-Z]+)*\n    operand [0-9]{1,7}\n    env GH_TOKEN\n"
    "rule gh-pr-create\n    program gh\n    subcommand pr create\n"
    "    option --title [^\\n]{1,256}\n    option --body (?s).*\n    flag --draft\n"
    "rule gh-api-slow\n    program gh\n    subcommand api\n    operand (a|aa)+$\n";

int main(int argc, char **argv)
{
    size_t rounds = argc > 1 ? strtoul(argv[1], NULL, 0) : 20000;
    char tmpl[] = "/tmp/route-bench.XXXXXX", cmd[512];
    const char *dirs[1];
    uint64_t *t_parse, *t_route, worst = 0, limit = 0;
    route_ctx ctx;
    route_policy *pol;
    strbuf path = STRBUF_INIT;

    if (rounds < 10)
        rounds = 10;
    if (!mkdtemp(tmpl)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(cmd, sizeof(cmd), "git init -q %s && mkdir %s/sub %s-bin && printf '#!/bin/sh\\n' "
             "> %s-bin/gh && chmod 755 %s-bin/gh", tmpl, tmpl, tmpl, tmpl, tmpl);
    if (system(cmd) != 0)
        return 1;
    dirs[0] = tmpl;
    /* the stand-in gh outside the code directory, first on PATH */
    strbuf_addf(&path, "%s-bin:%s", tmpl, getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    ctx = (route_ctx){ .code_dirs = dirs, .n_code_dirs = 1, .cwd = tmpl,
                       .path = path.buf, .home = getenv("HOME") };
    pol = route_policy_new();
    if (route_policy_load_text(pol, "bench", policy_text, strlen(policy_text), &ctx) < 0) {
        fprintf(stderr, "route-bench: %s", route_policy_problems(pol));
        return 1;
    }
    ctx.policy = pol;
    t_parse = xmalloc(rounds * sizeof(*t_parse));
    t_route = xmalloc(rounds * sizeof(*t_route));

    printf("# parse and route, median of %zu runs each (code dir %s)\n", rounds, tmpl);
    printf("%-72s %10s %12s %7s\n", "line", "parse us", "+route us", "ratio");
    for (size_t i = 0; i < ARRAY_SIZE(lines); i++) {
        const char *l = lines[i];
        size_t len = strlen(l);
        uint64_t mp, mr;
        route_plan plan;
        sh_parse p;

        for (size_t r = 0; r < rounds; r++) {
            uint64_t t0 = now_ns();
            sh_parse_all(&p, l, len, NULL, true);
            t_parse[r] = now_ns() - t0;
            sh_parse_free(&p);

            t0 = now_ns();
            sh_parse_all(&p, l, len, NULL, true);
            route_plan_build(&plan, &p, &ctx);
            t_route[r] = now_ns() - t0;
            route_plan_release(&plan);
            sh_parse_free(&p);
        }
        mp = bench_median_u64(t_parse, rounds);
        mr = bench_median_u64(t_route, rounds);
        /* the last line is the policy's worst case on purpose: reported on its own */
        if (i + 1 == ARRAY_SIZE(lines))
            limit = mr;
        else if (mr > worst)
            worst = mr;
        printf("%-72.72s %10.2f %12.2f %7.1f\n", l, mp / 1e3, mr / 1e3, (double)mr / (double)mp);
    }
    printf("# slowest line: %.2f us to parse and route (target: well under 100 us)\n",
           worst / 1e3);
    printf("# a policy pattern with catastrophic backtracking, stopped at pcre2's match limit "
           "(%d): %.2f us\n", ROUTE_POLICY_MATCH_LIMIT, limit / 1e3);
    snprintf(cmd, sizeof(cmd), "rm -rf %s %s-bin", tmpl, tmpl);
    if (system(cmd) != 0)
        return 1;
    free(t_parse);
    free(t_route);
    route_policy_free(pol);
    strbuf_release(&path);
    return 0;
}
